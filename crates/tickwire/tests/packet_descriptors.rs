//! A finished connection of a spawned packet server holds no file descriptor (the server
//! keeps a second handle on each socket to shut it down, and must let it go). Alone in its
//! binary: it counts the process's descriptors, which other tests would change.
#![cfg(target_os = "linux")]

use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use tickwire::packet::{PacketClientBuilder, PacketServer};

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn finished_connections_hold_no_descriptor() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = PacketServer::new()
        .spawn(listener, |_, request, responder| {
            responder.respond(request).unwrap()
        })
        .unwrap();
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
