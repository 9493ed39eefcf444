//! The bytes every HTTP workload moves: one order-entry POST (four headers, a ~100 B JSON
//! body) and its answer (a Content-Length JSON response of ~200 B with six headers).
//!
//! Owns the request's parts, the response's bytes and the one check every client applies to
//! every response it receives ([`check`]). It does not own how a library builds or parses
//! them (the workload modules).

use serde::Serialize;

/// The request target of every request.
pub(crate) const PATH: &str = "/api/v3/order";

/// The Host the in-memory workloads write (loopback clients write `127.0.0.1:PORT`).
pub(super) const MEMORY_HOST: &str = "api.example.com";

/// The four per-request headers, set through each library's per-request header API (the same
/// names and values for every library; each may add its own defaults such as Accept or
/// User-Agent, as it would in real use).
pub(crate) const HEADERS: [(&str, &str); 4] = [
    ("Content-Type", "application/json"),
    (
        "X-MBX-APIKEY",
        "vmPUZE6mv9SD5VNHk4HlWFsOr6aKE2zvsw0MuIgwCIPy6utIco14y7Ju91duEh8A",
    ),
    ("X-MBX-TIMESTAMP", "1700000000000"),
    (
        "X-MBX-SIGNATURE",
        "c8db56825ae71d6d79447849e617115f4a920fa2acdcab2b053c4b2838bd6b71",
    ),
];

/// The order, as a user's type: serialised by `serde_json::to_writer` in the `body_with`
/// rows, and pre-serialised as [`ORDER_JSON`] everywhere else.
#[derive(Serialize)]
pub(super) struct Order<'a> {
    symbol: &'a str,
    side: &'a str,
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(rename = "timeInForce")]
    time_in_force: &'a str,
    quantity: &'a str,
    price: &'a str,
}

/// The order every request carries.
pub(super) const ORDER: Order<'static> = Order {
    symbol: "BTCUSDT",
    side: "BUY",
    kind: "LIMIT",
    time_in_force: "GTC",
    quantity: "0.001",
    price: "67234.50",
};

/// [`ORDER`] as JSON: the request body (106 B). The server compares every body with it.
pub(crate) const ORDER_JSON: &[u8] = br#"{"symbol":"BTCUSDT","side":"BUY","type":"LIMIT","timeInForce":"GTC","quantity":"0.001","price":"67234.50"}"#;

/// The response body (228 B), the same for every request; every client compares what it
/// receives with it.
pub(crate) const RESPONSE_BODY: &[u8] = br#"{"symbol":"BTCUSDT","orderId":28457,"clientOrderId":"6gCrw2kRUAF9CvJDGP16IP","transactTime":1700000000000,"price":"67234.50","origQty":"0.001","executedQty":"0.000","status":"NEW","timeInForce":"GTC","type":"LIMIT","side":"BUY"}"#;

/// The whole response: a status line, six headers (Content-Length among them) and
/// [`RESPONSE_BODY`].
pub(crate) fn response() -> Vec<u8> {
    let mut bytes = format!(
        "HTTP/1.1 200 OK\r\n\
         Content-Type: application/json;charset=UTF-8\r\n\
         Content-Length: {}\r\n\
         Date: Mon, 23 Nov 2026 10:00:00 GMT\r\n\
         Server: tickwire-bench\r\n\
         X-MBX-USED-WEIGHT-1M: 12\r\n\
         X-MBX-ORDER-COUNT-10S: 1\r\n\
         \r\n",
        RESPONSE_BODY.len()
    )
    .into_bytes();
    bytes.extend_from_slice(RESPONSE_BODY);
    bytes
}

/// The answer to a request the server rejects (wrong method, target or body): a client's
/// [`check`] fails on it.
pub(super) const REJECTION: &[u8] =
    b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\nContent-Type: text/plain\r\n\r\nbad request";

/// The check every client applies to every response: status 200 and exactly
/// [`RESPONSE_BODY`]. Panics naming `library` otherwise (a number taken over wrong answers
/// would be worse than none).
#[inline]
pub(crate) fn check(library: &str, status: u16, body: &[u8]) {
    if status != 200 || body != RESPONSE_BODY {
        wrong(library, status, body);
    }
}

#[cold]
#[inline(never)]
fn wrong(library: &str, status: u16, body: &[u8]) -> ! {
    panic!(
        "{library}: wrong response: status {status}, body {:?}",
        String::from_utf8_lossy(body)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_serialises_to_the_body() {
        assert_eq!(serde_json::to_vec(&ORDER).unwrap(), ORDER_JSON);
    }

    #[test]
    fn the_response_parses() {
        let bytes = response();
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut parsed = httparse::Response::new(&mut headers);
        let head = parsed.parse(&bytes).unwrap().unwrap();
        assert_eq!(parsed.headers.len(), 6);
        assert_eq!(&bytes[head..], RESPONSE_BODY);
    }
}
