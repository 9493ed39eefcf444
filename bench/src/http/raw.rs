//! The raw floor's two halves, shared by the in-memory and the loopback workloads: the request
//! written with `write!` into a reused `Vec`, and a response head parsed by
//! `httparse::Response::parse` with its Content-Length body located. No validation beyond
//! what httparse does, no limits, no state: the least work that still speaks HTTP/1.1.

use std::io::Write as _;
use std::ops::Range;

use super::fixtures::{HEADERS, ORDER_JSON, PATH};

/// Appends the order POST to `out` (Host `host`, the four headers, Content-Length, body).
pub(super) fn write_request(out: &mut Vec<u8>, host: &str) {
    // Writes into a Vec cannot fail.
    let _ = write!(out, "POST {PATH} HTTP/1.1\r\nHost: {host}\r\n");
    for (name, value) in HEADERS {
        let _ = write!(out, "{name}: {value}\r\n");
    }
    let _ = write!(out, "Content-Length: {}\r\n\r\n", ORDER_JSON.len());
    out.extend_from_slice(ORDER_JSON);
}

/// The status and the body's range in `bytes` once a whole Content-Length response is there;
/// `None` while the head or the body is incomplete. Panics on a head httparse rejects or a
/// response without a valid Content-Length (the server always sends one).
pub(super) fn parse_response(bytes: &[u8]) -> Option<(u16, Range<usize>)> {
    let mut headers = [httparse::EMPTY_HEADER; 16];
    let mut response = httparse::Response::new(&mut headers);
    let head = match response.parse(bytes) {
        Ok(httparse::Status::Complete(head)) => head,
        Ok(httparse::Status::Partial) => return None,
        Err(e) => panic!("raw: httparse rejected the response head: {e}"),
    };
    let length = response
        .headers
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("content-length"))
        .and_then(|h| digits(h.value))
        .expect("raw: a response without a valid Content-Length");
    let end = head + length;
    (bytes.len() >= end).then(|| (response.code.unwrap_or(0), head..end))
}

/// A decimal Content-Length value (1 to 19 digits).
fn digits(value: &[u8]) -> Option<usize> {
    if value.is_empty() || value.len() > 19 {
        return None;
    }
    value.iter().try_fold(0usize, |n, &b| {
        b.is_ascii_digit().then(|| n * 10 + usize::from(b - b'0'))
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{RESPONSE_BODY, response};
    use super::*;

    #[test]
    fn the_request_parses_and_the_response_is_found_whole_only() {
        let mut out = Vec::new();
        write_request(&mut out, "127.0.0.1:80");
        let mut headers = [httparse::EMPTY_HEADER; 16];
        let mut request = httparse::Request::new(&mut headers);
        let head = request.parse(&out).unwrap().unwrap();
        assert_eq!(request.headers.len(), 6);
        assert_eq!(&out[head..], ORDER_JSON);

        let bytes = response();
        let (status, body) = parse_response(&bytes).unwrap();
        assert_eq!((status, &bytes[body]), (200, RESPONSE_BODY));
        assert!(parse_response(&bytes[..bytes.len() - 1]).is_none());
        assert!(parse_response(&bytes[..20]).is_none());
    }
}
