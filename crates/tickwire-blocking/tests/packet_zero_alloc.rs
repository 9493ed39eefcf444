//! rule 6 of docs/ARCHITECTURE.md on the packet client: after warm-up, a round trip allocates nothing on the
//! client thread, one at a time (`request`) or pipelined (`send_request` /
//! `recv_response`, 8 in flight). The counting allocator counts only the client thread (the
//! spawned echo server is not counted).

mod packet_support;

use packet_support::echo_server;
use tickwire_blocking::packet::{PacketClient, PacketClientBuilder, PacketServer, RequestId};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::per_thread();

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
    let counting = ALLOC.start();
    let rounds = 1_000;
    for _ in 0..rounds {
        round(&mut client);
    }
    let counts = counting.stop();
    drop(client);
    server.shutdown();
    assert_eq!(
        counts.allocations, 0,
        "{counts:?} in {rounds} rounds of 1 + 8 pipelined requests"
    );
    println!("packet_zero_alloc: {rounds} rounds of 1 + 8 pipelined requests, 0 allocations");
}
