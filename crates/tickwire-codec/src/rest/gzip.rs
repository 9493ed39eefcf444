//! gzip response bodies (RFC 9110 §8.4.1.3) for REST clients: the one path by which every
//! tickwire HTTP client, blocking or async, turns a `Content-Encoding: gzip` body into the
//! bytes its caller reads.
//!
//! It owns the decision (is this body gzip?) and the inflation into a reused buffer under the
//! body limit; it does not send `Accept-Encoding` (a default header of the client's
//! [`RequestWriter`](super::RequestWriter)) or own a response.

use crate::deflate::{InflateError, PayloadInflater};
use crate::http::Response;

/// A reused gzip inflater and its output buffer, bounded by a body limit. Keep one per
/// connection: the inflater's state and the buffer are allocated once, not per response.
#[derive(Debug)]
pub struct GzipBody {
    inflater: PayloadInflater,
    out: Vec<u8>,
    limit: usize,
}

impl GzipBody {
    /// A decoder whose output may hold at most `limit` bytes (usually the reader's
    /// `Limits::max_body_bytes`).
    pub fn new(limit: u64) -> Self {
        Self {
            inflater: PayloadInflater::new(),
            out: Vec::new(),
            limit: usize::try_from(limit).unwrap_or(usize::MAX),
        }
    }

    /// The body of `response` inflated, when it is gzip on the wire (`Content-Encoding: gzip`,
    /// compared case-insensitively, and not empty): `Ok(Some(inflated))`, valid until the
    /// next call. `Ok(None)` when it is not: the body is [`Response::body`] as sent.
    ///
    /// One gzip member, its CRC-32 and length checked. A body that inflates past the limit
    /// ([`InflateError::TooLarge`], stopped at the first byte past it), is not gzip or has
    /// bytes after the member ([`InflateError::Corrupt`]), or ends early
    /// ([`InflateError::Truncated`]) is an error.
    pub fn decode(&mut self, response: &Response<'_>) -> Result<Option<&[u8]>, InflateError> {
        let body = response.body();
        // Looked up only when decoding is on and there is a body: the walk over every field
        // cost about 130 instructions per request on the bench's loopback POST
        // (`tickwire-bench http --callgrind`, client-side table).
        if body.is_empty() || !is_gzip(response) {
            return Ok(None);
        }
        self.out.clear();
        self.inflater.gzip(body, &mut self.out, self.limit)?;
        Ok(Some(&self.out))
    }

    /// What the last [`decode`](Self::decode) that returned `Ok(Some(..))` inflated, for a
    /// caller that keeps the decoder and the response side by side (an owned response);
    /// unspecified after any other outcome.
    pub fn inflated(&self) -> &[u8] {
        &self.out
    }
}

/// Whether the response's content coding is gzip.
fn is_gzip(response: &Response<'_>) -> bool {
    response
        .headers()
        .get("content-encoding")
        .is_some_and(|v| v.trim_ascii().eq_ignore_ascii_case(b"gzip"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buf::ReadBuf;
    use crate::http::{Limits, Parsed, ResponseReader};

    /// `hello` as one gzip member (zlib, level 6).
    const HELLO_GZ: [u8; 25] = [
        0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xcb, 0x48, 0xcd, 0xc9, 0xc9,
        0x07, 0x00, 0x86, 0xa6, 0x10, 0x36, 0x05, 0x00, 0x00, 0x00,
    ];

    fn decoded(head: &str, body: &[u8], limit: u64) -> Result<Option<Vec<u8>>, InflateError> {
        let mut buf = ReadBuf::with_capacity(256);
        buf.extend_from_slice(head.as_bytes());
        buf.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
        buf.extend_from_slice(body);
        let mut reader = ResponseReader::new(Limits::client());
        let Parsed::Complete(response) = reader.read(&mut buf).unwrap() else {
            panic!("incomplete")
        };
        let mut gzip = GzipBody::new(limit);
        gzip.decode(&response).map(|b| b.map(<[u8]>::to_vec))
    }

    #[test]
    fn a_gzip_body_is_inflated_and_others_are_left_as_sent() {
        let gz = "HTTP/1.1 200 OK\r\nContent-Encoding:  GZip \r\n";
        assert_eq!(decoded(gz, &HELLO_GZ, 100).unwrap().unwrap(), b"hello");
        let plain = "HTTP/1.1 200 OK\r\n";
        assert_eq!(decoded(plain, &HELLO_GZ, 100).unwrap(), None);
        let br = "HTTP/1.1 200 OK\r\nContent-Encoding: br\r\n";
        assert_eq!(decoded(br, b"xyz", 100).unwrap(), None);
        assert_eq!(decoded(gz, b"", 100).unwrap(), None);
    }

    #[test]
    fn a_bad_or_oversized_gzip_body_is_an_error() {
        let gz = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n";
        assert_eq!(
            decoded(gz, &HELLO_GZ, 4),
            Err(InflateError::TooLarge { limit: 4 })
        );
        assert_eq!(
            decoded(gz, &HELLO_GZ[..20], 100),
            Err(InflateError::Truncated)
        );
        assert_eq!(
            decoded(gz, b"plainly not a gzip member", 100),
            Err(InflateError::Corrupt)
        );
    }
}
