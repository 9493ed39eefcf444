//! Proves rule 6 of docs/ARCHITECTURE.md for REST: after warm-up, a POST with four headers and a ~100 B JSON
//! body, answered with a Content-Length JSON response, allocates nothing on the client's
//! thread: building the request, writing it, reading and parsing the response. The counting
//! allocator counts only the thread that asks it to (the loopback server thread is not
//! counted); the server and the order are tickwire-test-support's, shared with the async
//! client's test.

use tickwire_blocking::HttpClient;
use tickwire_test_support::alloc::CountingAlloc;
use tickwire_test_support::rest::{ORDER, Order, RESPONSE_BODY, server, write_order};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::per_thread();

fn post(client: &mut HttpClient, order: &Order<'_>) -> usize {
    let response = client
        .post("/api/v3/order")
        .header("X-API-Key", "k-3f9a2b")
        .header("X-Timestamp", "1732390000123")
        .header("X-Signature", "9f86d081884c7d659a2feaa0c55ad015")
        .header("Content-Type", "application/json")
        .send_body_with(|w| write_order(w, order))
        .expect("order accepted");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.body(), RESPONSE_BODY);
    response.body().len()
}

fn main() {
    let (port, server) = server();
    let mut client = HttpClient::builder(&format!("http://127.0.0.1:{port}"))
        .build()
        .unwrap();
    let order = ORDER;
    for _ in 0..100 {
        post(&mut client, &order);
    }
    let counting = ALLOC.start();
    let rounds = 1_000;
    let mut bytes = 0;
    for _ in 0..rounds {
        bytes += post(&mut client, &order);
    }
    let counts = counting.stop();
    assert_eq!(client.connections_opened(), 1, "one keep-alive connection");
    assert_eq!(bytes, rounds * RESPONSE_BODY.len());
    drop(client);
    assert_eq!(
        server.join().unwrap(),
        1_100,
        "every request reached the server"
    );
    assert_eq!(
        counts.allocations, 0,
        "{counts:?} in {rounds} POST round trips after warm-up"
    );
    println!("http_zero_alloc: {rounds} POST round trips after warm-up, 0 allocations");
}
