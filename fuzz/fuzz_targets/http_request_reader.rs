//! RequestReader on arbitrary bytes. Oracle: fed whole, in arbitrary pieces or byte by byte,
//! the reader returns the same requests (or the same typed error), never panics, hands out
//! nothing past its limits, and while it waits for more the buffer holds no more than the
//! limits allow.
//!
//! Input: a control byte (bit 2: the peer closes at the end; high nibble: how many piece
//! sizes follow), the piece sizes, then the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickwire_codec::buf::ReadBuf;
use tickwire_codec::http::{HttpError, Limits, Parsed, Request, RequestReader};

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
    Request(String),
    Error(HttpError),
    Closed,
}

fn describe(request: &Request<'_>) -> Seen {
    assert!(request.body().len() as u64 <= LIMITS.max_body_bytes);
    assert!(request.headers().len() <= LIMITS.max_headers);
    assert!(request.head_len() <= LIMITS.max_head_bytes);
    Seen::Request(format!(
        "{:?} {:?} {:?} {:?} body={:?} trailers={:?} keep_alive={} chunked={} head={}",
        request.method_token(),
        request.target(),
        request.version(),
        request.headers(),
        request.body(),
        request.trailers(),
        request.keep_alive(),
        request.is_chunked(),
        request.head_len(),
    ))
}

fn run(eof: bool, data: &[u8], pieces: &[u8]) -> Vec<Seen> {
    let mut reader = RequestReader::new(LIMITS);
    let mut buf = ReadBuf::with_capacity(64);
    let mut seen = Vec::new();
    let mut at = 0;
    let mut piece = pieces.iter().cycle();
    loop {
        loop {
            match reader.read(&mut buf) {
                Ok(Parsed::Complete(request)) => seen.push(describe(&request)),
                Ok(Parsed::NeedMore) => {
                    assert!(buf.len() <= BOUND, "{} bytes held while waiting", buf.len());
                    break;
                }
                Err(error) => {
                    // Every request error has a status to answer with.
                    assert!(error.status().is_some(), "{error:?}");
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
                Ok(Some(request)) => seen.push(describe(&request)),
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
    let eof = control & 4 != 0;
    let pieces_len = usize::from(control >> 4).min(rest.len());
    let (pieces, data) = rest.split_at(pieces_len);
    let whole = run(eof, data, &[]);
    let split = run(eof, data, pieces);
    assert_eq!(whole, split);
    let bytewise = run(eof, data, &[1]);
    assert_eq!(whole, bytewise);
});
