//! Proves DESIGN rule 6 for REST: after warm-up, a POST with four headers and a ~100 B JSON
//! body, answered with a Content-Length JSON response, allocates nothing on the client's
//! thread: building the request, writing it, reading and parsing the response. A counting
//! allocator counts only the thread that asks it to (the loopback server thread is not
//! counted).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};

use tickwire::HttpClient;

struct ThreadCounting;

thread_local! {
    static COUNT_THIS_THREAD: Cell<bool> = const { Cell::new(false) };
}

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

fn note_allocation() {
    if COUNT_THIS_THREAD.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to `System` unchanged; the counter has no effect on the
// memory returned.
unsafe impl GlobalAlloc for ThreadCounting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation();
        // SAFETY: same layout contract as our caller's.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation();
        // SAFETY: `ptr` came from this allocator (System underneath) with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator (System underneath) with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: ThreadCounting = ThreadCounting;

const RESPONSE_BODY: &[u8] =
    br#"{"orderId":"8c1e2f","status":"NEW","symbol":"BTC-USD","price":"101.25","qty":"0.5","ts":1732390000123}"#;

/// A keep-alive server answering every request with the same Content-Length JSON response,
/// after checking it received a complete POST with the JSON body.
fn server() -> (u16, std::thread::JoinHandle<usize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_nodelay(true).unwrap();
        let mut response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            RESPONSE_BODY.len()
        )
        .into_bytes();
        response.extend_from_slice(RESPONSE_BODY);
        let mut buf = vec![0u8; 64 * 1024];
        let mut have = 0;
        let mut served = 0;
        loop {
            let n = stream.read(&mut buf[have..]).unwrap();
            if n == 0 {
                return served;
            }
            have += n;
            loop {
                let mut headers = [httparse::EMPTY_HEADER; 16];
                let mut request = httparse::Request::new(&mut headers);
                let httparse::Status::Complete(head) = request.parse(&buf[..have]).unwrap() else {
                    break;
                };
                let length: usize = request
                    .headers
                    .iter()
                    .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                    .map(|h| std::str::from_utf8(h.value).unwrap().parse().unwrap())
                    .unwrap();
                assert_eq!(request.method, Some("POST"));
                if have < head + length {
                    break;
                }
                let body = &buf[head..head + length];
                assert!(body.starts_with(b"{\"symbol\":\"BTC-USD\""), "{body:?}");
                buf.copy_within(head + length..have, 0);
                have -= head + length;
                stream.write_all(&response).unwrap();
                served += 1;
            }
        }
    });
    (port, handle)
}

struct Order<'a> {
    symbol: &'a str,
    side: &'a str,
    price: &'a str,
    qty: &'a str,
    client_id: u64,
}

/// Writes the order as ~100 B of JSON without allocating, as a serializer into the wire
/// buffer would.
fn write_order(w: &mut impl Write, order: &Order<'_>) -> std::io::Result<()> {
    write!(
        w,
        r#"{{"symbol":"{}","side":"{}","type":"LIMIT","price":"{}","quantity":"{}","clientOrderId":{}}}"#,
        order.symbol, order.side, order.price, order.qty, order.client_id
    )
}

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
    let order = Order {
        symbol: "BTC-USD",
        side: "BUY",
        price: "101.25",
        qty: "0.5",
        client_id: 1_732_390_000,
    };
    for _ in 0..100 {
        post(&mut client, &order);
    }
    COUNT_THIS_THREAD.with(|c| c.set(true));
    let rounds = 1_000;
    let mut bytes = 0;
    for _ in 0..rounds {
        bytes += post(&mut client, &order);
    }
    COUNT_THIS_THREAD.with(|c| c.set(false));
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    assert_eq!(client.connections_opened(), 1, "one keep-alive connection");
    assert_eq!(bytes, rounds * RESPONSE_BODY.len());
    drop(client);
    assert_eq!(
        server.join().unwrap(),
        1_100,
        "every request reached the server"
    );
    assert_eq!(
        allocations, 0,
        "{allocations} allocations in {rounds} POST round trips after warm-up"
    );
    println!("http_zero_alloc: {rounds} POST round trips after warm-up, 0 allocations");
}
