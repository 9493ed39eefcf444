//! The zero-allocation REST tests' peer and payload, shared by the blocking client's
//! `http_zero_alloc` and the async client's `zero_alloc`: a keep-alive loopback server that
//! answers every order POST with the same Content-Length JSON response, and the order they
//! send, written without allocating.
//!
//! Owns the server's side of the exchange only; what a client may allocate is the tests'.

use std::io::{Read, Write};
use std::net::TcpListener;

/// The JSON body of every response [`server`] sends.
pub const RESPONSE_BODY: &[u8] =
    br#"{"orderId":"8c1e2f","status":"NEW","symbol":"BTC-USD","price":"101.25","qty":"0.5","ts":1732390000123}"#;

/// A keep-alive server answering every request with the same Content-Length JSON response,
/// after checking it received a complete POST with the JSON body. Returns its port and its
/// thread, which ends with the number of requests served once the client closes.
pub fn server() -> (u16, std::thread::JoinHandle<usize>) {
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

/// A limit order's fields, as an exchange's order endpoint takes them.
#[derive(Debug, Clone, Copy)]
pub struct Order<'a> {
    /// The instrument.
    pub symbol: &'a str,
    /// `BUY` or `SELL`.
    pub side: &'a str,
    /// Limit price, as a decimal string.
    pub price: &'a str,
    /// Quantity, as a decimal string.
    pub qty: &'a str,
    /// The client's order id.
    pub client_id: u64,
}

/// The order every round trip sends.
pub const ORDER: Order<'static> = Order {
    symbol: "BTC-USD",
    side: "BUY",
    price: "101.25",
    qty: "0.5",
    client_id: 1_732_390_000,
};

/// Writes the order as ~100 B of JSON without allocating, as a serializer into the wire
/// buffer would.
pub fn write_order(w: &mut impl Write, order: &Order<'_>) -> std::io::Result<()> {
    write!(
        w,
        r#"{{"symbol":"{}","side":"{}","type":"LIMIT","price":"{}","quantity":"{}","clientOrderId":{}}}"#,
        order.symbol, order.side, order.price, order.qty, order.client_id
    )
}
