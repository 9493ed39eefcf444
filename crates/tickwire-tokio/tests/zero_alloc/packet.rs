//! Proves rule 6 of docs/ARCHITECTURE.md for the tokio packet client: after warm-up, a round trip (one
//! request, or 8 pipelined) allocates nothing on the runtime's thread, with the buffers kept
//! while idle and with them lent out (`release_idle_buffers`). The echo peer is the
//! blocking packet server on its own threads, which are not counted.

use std::net::TcpListener;

use tickwire_blocking::packet::PacketServer;
use tickwire_tokio::packet::{PacketClient, PacketClientBuilder};

use crate::ALLOC;

const ROUNDS: usize = 1_000;
const PAYLOAD: &[u8] = br#"{"op":"order","id":"8c1e2f","px":"101.25","qty":"0.5"}"#;

/// Allocations on this thread while `work` runs.
fn counted(work: impl FnOnce()) -> u64 {
    let counting = ALLOC.start();
    work();
    counting.stop().allocations
}

async fn rounds(client: &mut PacketClient, n: usize) {
    for _ in 0..n {
        assert_eq!(client.request(PAYLOAD).await.unwrap(), PAYLOAD);
        for _ in 0..8 {
            client.send_request(PAYLOAD).unwrap();
        }
        for _ in 0..8 {
            assert_eq!(client.recv_response().await.unwrap().1, PAYLOAD);
        }
    }
}

pub(crate) fn run() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = PacketServer::new()
        .spawn(listener, |_, request, responder| {
            responder.respond(request).unwrap();
        })
        .unwrap();
    let mut counts = Vec::new();
    for release in [false, true] {
        let builder = PacketClientBuilder::new().release_idle_buffers(release);
        let mut client = runtime
            .block_on(builder.connect("127.0.0.1", port))
            .unwrap();
        runtime.block_on(rounds(&mut client, 100));
        counts.push(counted(|| runtime.block_on(rounds(&mut client, ROUNDS))));
    }
    server.shutdown();
    println!(
        "packet: allocations for {ROUNDS} rounds of 1 + 8 pipelined requests: buffers kept {}, lent out while idle {}",
        counts[0], counts[1]
    );
    assert_eq!(counts, [0, 0], "allocations per packet round trip");
}
