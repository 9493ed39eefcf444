//! Proves rule 6 of docs/ARCHITECTURE.md for REST requests: after warm-up, building a POST with query
//! parameters, four headers and a JSON body serialised by serde_json straight into the wire
//! buffer (`body_with`) allocates nothing. A counting global allocator wraps the system
//! allocator for this test binary only.

use serde::Serialize;
use tickwire_codec::buf::WriteBuf;
use tickwire_codec::rest::RequestWriter;
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

#[derive(Serialize)]
struct Order<'a> {
    symbol: &'a str,
    side: &'a str,
    order_type: &'a str,
    quantity: &'a str,
    price: f64,
    time_in_force: &'a str,
    client_order_id: u64,
}

/// Builds one request into `buf` and drains it as a transport would. Returns its length.
fn one_request(api: &RequestWriter, buf: &mut WriteBuf, n: u64) -> usize {
    let order = Order {
        symbol: "BTC-USD",
        side: "buy",
        order_type: "limit",
        quantity: "0.015",
        price: 101_250.5,
        time_in_force: "GTC",
        client_order_id: 1_700_000_000_000 + n,
    };
    let len = api
        .post(buf, "orders")
        .expect("valid path")
        .query_display("recvWindow", 5000)
        .query("test", "true")
        .header("Content-Type", b"application/json")
        .and_then(|b| b.header("X-Api-Key", b"k3y-0123456789abcdef"))
        .and_then(|b| b.header_display("X-Timestamp", 1_700_000_000_123u64 + n))
        .and_then(|b| b.header("X-Signature", b"9f86d081884c7d659a2feaa0c55ad015"))
        .expect("valid headers")
        .body_with(|w| serde_json::to_writer(w, &order))
        .expect("serialisable");
    assert_eq!(len, buf.len());
    buf.consume(len);
    len
}

fn main() {
    let mut api = RequestWriter::new("api.example.com", "/api/v3").expect("valid host");
    api.default_header("User-Agent", b"tickwire/0.1")
        .expect("valid")
        .default_header("Accept", b"application/json")
        .expect("valid");
    let mut buf = WriteBuf::new(1024, 0);
    let mut total = 0;
    for n in 0..100 {
        total += one_request(&api, &mut buf, n);
    }
    let region = ALLOC.heap_region();
    for n in 0..10_000 {
        total += one_request(&api, &mut buf, n);
    }
    let change = region.change();
    assert!(total > 0);
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "steady-state POST with four headers and a serde_json body allocated"
    );
    println!(
        "rest_zero_alloc: POST + 4 headers + JSON body via body_with, 10 000 requests, 0 allocations"
    );
    println!("rest_zero_alloc: 1 passed, 0 failed");
}
