//! ResponseReader on arbitrary bytes. Oracle: fed whole or in arbitrary pieces, the reader
//! returns the same responses (or the same typed error), never panics, hands out nothing past
//! its limits, and while it waits for more the buffer holds no more than the limits allow.
//!
//! Input: a control byte (bits 0-1: the request answered, GET / HEAD / CONNECT / GET; bit 2:
//! the peer closes at the end; high nibble: how many piece sizes follow), the piece sizes,
//! then the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickwire_codec::buf::ReadBuf;
use tickwire_codec::http::{HttpError, Limits, Method, Parsed, Response, ResponseReader};

const LIMITS: Limits = Limits::client()
    .with_max_head_bytes(512)
    .with_max_headers(8)
    .with_max_body_bytes(512)
    .with_max_chunk_size_digits(8)
    .with_max_chunk_extension_bytes(32)
    .with_max_trailer_bytes(128);

/// The most a message may hold while incomplete: head, chunked data plus its framing
/// allowance (at least 1 KiB), trailers.
const BOUND: usize = 512 + 512 + 1024 + 128;

#[derive(Debug, PartialEq)]
enum Seen {
    Response(String),
    Error(HttpError),
    Closed,
}

fn describe(response: &Response<'_>) -> Seen {
    assert!(response.body().len() as u64 <= LIMITS.max_body_bytes);
    assert!(response.headers().len() <= LIMITS.max_headers);
    assert!(response.trailers().len() <= LIMITS.max_headers);
    assert!(response.head_len() <= LIMITS.max_head_bytes);
    Seen::Response(format!(
        "{} {:?} {:?} {:?} body={:?} trailers={:?} keep_alive={} chunked={} head={}",
        response.status(),
        response.version(),
        response.reason(),
        response.headers(),
        response.body(),
        response.trailers(),
        response.keep_alive(),
        response.is_chunked(),
        response.head_len(),
    ))
}

fn run(method: Method, eof: bool, data: &[u8], pieces: &[u8]) -> Vec<Seen> {
    let mut reader = ResponseReader::new(LIMITS);
    reader.expect(method);
    let mut buf = ReadBuf::with_capacity(64);
    let mut seen = Vec::new();
    let mut at = 0;
    let mut piece = pieces.iter().cycle();
    loop {
        loop {
            match reader.read(&mut buf) {
                Ok(Parsed::Complete(response)) => {
                    let described = describe(&response);
                    let status = response.status();
                    seen.push(described);
                    if !status.is_informational() || status.0 == 101 {
                        reader.expect(method);
                    }
                }
                Ok(Parsed::NeedMore) => {
                    assert!(buf.len() <= BOUND, "{} bytes held while waiting", buf.len());
                    break;
                }
                Err(error) => {
                    seen.push(Seen::Error(error));
                    return seen;
                }
            }
        }
        if at == data.len() {
            break;
        }
        let want = if pieces.is_empty() {
            usize::MAX
        } else {
            usize::from(*piece.next().unwrap_or(&1)).max(1)
        };
        let n = want.min(data.len() - at);
        buf.extend_from_slice(&data[at..at + n]);
        at += n;
    }
    if eof {
        loop {
            match reader.read_eof(&mut buf) {
                Ok(Some(response)) => {
                    seen.push(describe(&response));
                    reader.expect(method);
                }
                Ok(None) => {
                    seen.push(Seen::Closed);
                    break;
                }
                Err(error) => {
                    seen.push(Seen::Error(error));
                    break;
                }
            }
        }
    }
    seen
}

fuzz_target!(|input: &[u8]| {
    let Some((&control, rest)) = input.split_first() else {
        return;
    };
    let method = match control & 3 {
        1 => Method::Head,
        2 => Method::Connect,
        _ => Method::Get,
    };
    let eof = control & 4 != 0;
    let pieces_len = usize::from(control >> 4).min(rest.len());
    let (pieces, data) = rest.split_at(pieces_len);
    let whole = run(method, eof, data, &[]);
    let split = run(method, eof, data, pieces);
    assert_eq!(whole, split);
    let bytewise = run(method, eof, data, &[1]);
    assert_eq!(whole, bytewise);
});
