//! rule 6 of docs/ARCHITECTURE.md for the async REST client: after warm-up, an order POST (four headers, a
//! ~100 B JSON body serialised into the wire buffer) answered with a Content-Length JSON
//! response allocates nothing on the client's thread (a current_thread runtime, so every poll
//! of the request runs there): taking the pooled connection, the deadline and read timers,
//! writing, reading, parsing, and returning the connection. The same server, order and
//! counting allocator as the blocking client's `http_zero_alloc`.

use tickwire_test_support::rest::{ORDER, Order, RESPONSE_BODY, server, write_order};
use tickwire_tokio::HttpClient;

use crate::ALLOC;

async fn post(client: &mut HttpClient, order: &Order<'_>) -> usize {
    let response = client
        .post("/api/v3/order")
        .header("X-API-Key", "k-3f9a2b")
        .header("X-Timestamp", "1732390000123")
        .header("X-Signature", "9f86d081884c7d659a2feaa0c55ad015")
        .header("Content-Type", "application/json")
        .send_body_with(|w| write_order(w, order))
        .await
        .expect("order accepted");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.body(), RESPONSE_BODY);
    response.body().len()
}

pub(crate) fn run() {
    let (port, server) = server();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (allocations, rounds) = runtime.block_on(async {
        // The default deadline and read timeout stay on: their timers are part of the cost.
        let mut client = HttpClient::builder(&format!("http://127.0.0.1:{port}"))
            .build()
            .unwrap();
        for _ in 0..100 {
            post(&mut client, &ORDER).await;
        }
        let counting = ALLOC.start();
        let rounds = 1_000;
        let mut bytes = 0;
        for _ in 0..rounds {
            bytes += post(&mut client, &ORDER).await;
        }
        let allocations = counting.stop().allocations;
        assert_eq!(client.connections_opened(), 1, "one keep-alive connection");
        assert_eq!(bytes, rounds * RESPONSE_BODY.len());
        (allocations, rounds)
    });
    drop(runtime);
    assert_eq!(
        server.join().unwrap(),
        1_100,
        "every request reached the server"
    );
    assert_eq!(
        allocations, 0,
        "{allocations} allocations in {rounds} async POST round trips after warm-up"
    );
    println!("http_zero_alloc (tokio): {rounds} POST round trips after warm-up, 0 allocations");
}
