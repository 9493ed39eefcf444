//! rule 6 of docs/ARCHITECTURE.md on the packet client: after warm-up, a round trip allocates nothing on the
//! client thread, one at a time (`request`) or pipelined (`send_request` /
//! `recv_response`, 8 in flight). A counting allocator counts only the client thread (the
//! spawned echo server is not counted).

mod packet_support;
#[expect(
    dead_code,
    reason = "the HTTP server and order of the REST tests are not used here"
)]
mod zero_alloc_support;

use std::sync::atomic::Ordering;

use packet_support::echo_server;
use tickwire_blocking::packet::{PacketClient, PacketClientBuilder, PacketServer, RequestId};
use zero_alloc_support::{ALLOCATIONS, COUNT_THIS_THREAD};

const ORDER: &[u8] = br#"{"op":"new","symbol":"BTC-USD","side":"buy","px":"101.25","qty":"0.5"}"#;

/// One request alone, then 8 pipelined; every answer checked against its request.
fn round(client: &mut PacketClient) {
    assert_eq!(client.request(ORDER).unwrap(), ORDER);
    let mut ids = [RequestId(0); 8];
    for id in &mut ids {
        *id = client.send_request(ORDER).unwrap();
    }
    for _ in ids {
        let (id, answer) = client.recv_response().unwrap();
        assert!(ids.contains(&id) && answer == ORDER);
    }
}

fn main() {
    let (server, port) = echo_server(PacketServer::new());
    let mut client = PacketClientBuilder::new()
        .connect("127.0.0.1", port)
        .unwrap();
    for _ in 0..100 {
        round(&mut client);
    }
    COUNT_THIS_THREAD.with(|c| c.set(true));
    let rounds = 1_000;
    for _ in 0..rounds {
        round(&mut client);
    }
    COUNT_THIS_THREAD.with(|c| c.set(false));
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    drop(client);
    server.shutdown();
    assert_eq!(
        allocations, 0,
        "{allocations} allocations in {rounds} rounds of 1 + 8 pipelined requests"
    );
    println!("packet_zero_alloc: {rounds} rounds of 1 + 8 pipelined requests, 0 allocations");
}
