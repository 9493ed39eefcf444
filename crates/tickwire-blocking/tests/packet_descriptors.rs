//! A finished connection of a spawned packet server holds no file descriptor (the server
//! keeps a second handle on each socket to shut it down, and must let it go). Alone in its
//! binary: it counts the process's descriptors, which other tests would change.
#![cfg(target_os = "linux")]

mod packet_support;

use std::thread;
use std::time::{Duration, Instant};

use packet_support::echo_server;
use tickwire_blocking::packet::{PacketClientBuilder, PacketServer};

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn finished_connections_hold_no_descriptor() {
    let (server, port) = echo_server(PacketServer::new());
    let before = open_descriptors();
    for n in 0..20u8 {
        let mut client = PacketClientBuilder::new()
            .connect("127.0.0.1", port)
            .unwrap();
        assert_eq!(client.request(&[n]).unwrap(), [n]);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while open_descriptors() > before && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(open_descriptors(), before);
    server.shutdown();
}
