//! What the zero-allocation REST tests share (the blocking client's `http_zero_alloc.rs`
//! here, and the async client's in `tickwire-tokio`, which includes this file): a counting
//! allocator that counts only the thread that asks it to, a keep-alive loopback server that
//! answers every order POST with the same Content-Length JSON response, and the order.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};

struct ThreadCounting;

thread_local! {
    pub(crate) static COUNT_THIS_THREAD: Cell<bool> = const { Cell::new(false) };
}

pub(crate) static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

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

pub(crate) const RESPONSE_BODY: &[u8] =
    br#"{"orderId":"8c1e2f","status":"NEW","symbol":"BTC-USD","price":"101.25","qty":"0.5","ts":1732390000123}"#;

/// A keep-alive server answering every request with the same Content-Length JSON response,
/// after checking it received a complete POST with the JSON body.
pub(crate) fn server() -> (u16, std::thread::JoinHandle<usize>) {
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

pub(crate) struct Order<'a> {
    pub(crate) symbol: &'a str,
    pub(crate) side: &'a str,
    pub(crate) price: &'a str,
    pub(crate) qty: &'a str,
    pub(crate) client_id: u64,
}

/// The order every round trip sends.
pub(crate) const ORDER: Order<'static> = Order {
    symbol: "BTC-USD",
    side: "BUY",
    price: "101.25",
    qty: "0.5",
    client_id: 1_732_390_000,
};

/// Writes the order as ~100 B of JSON without allocating, as a serializer into the wire
/// buffer would.
pub(crate) fn write_order(w: &mut impl Write, order: &Order<'_>) -> std::io::Result<()> {
    write!(
        w,
        r#"{{"symbol":"{}","side":"{}","type":"LIMIT","price":"{}","quantity":"{}","clientOrderId":{}}}"#,
        order.symbol, order.side, order.price, order.qty, order.client_id
    )
}
