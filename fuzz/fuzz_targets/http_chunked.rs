//! ChunkedDecoder on arbitrary bytes, through both entry points. Oracle: `decode` fed whole,
//! `decode` in arbitrary pieces and `decode_in_place` in arbitrary pieces agree on the data,
//! the bytes consumed, the end and the error; never a panic; never more data than the body
//! limit; the trailer range lies inside what was consumed.
//!
//! Input: a control byte (high nibble: how many piece sizes follow; low nibble: the chunk-size
//! digit limit), the piece sizes, then the bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tickwire_codec::http::{ChunkedDecoder, HttpError, Limits};

#[derive(Debug, PartialEq)]
struct Outcome {
    data: Vec<u8>,
    consumed: usize,
    done: bool,
    trailers: Option<core::ops::Range<usize>>,
}

fn limits(digits: usize) -> Limits {
    Limits::client()
        .with_max_head_bytes(512)
        .with_max_headers(8)
        .with_max_body_bytes(512)
        .with_max_chunk_size_digits(digits)
        .with_max_chunk_extension_bytes(32)
        .with_max_trailer_bytes(128)
}

fn sizes<'a>(data: &[u8], pieces: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    let total = data.len();
    let mut at = 0;
    let mut piece = pieces.iter().cycle();
    core::iter::from_fn(move || {
        if at == total {
            return None;
        }
        let want = if pieces.is_empty() {
            usize::MAX
        } else {
            usize::from(*piece.next().unwrap_or(&1)).max(1)
        };
        let n = want.min(total - at);
        at += n;
        Some(n)
    })
}

fn streamed(limits: Limits, data: &[u8], pieces: &[u8]) -> Result<Outcome, HttpError> {
    let mut decoder = ChunkedDecoder::new(limits);
    let mut out = Vec::new();
    let (mut at, mut consumed) = (0, 0);
    for n in sizes(data, pieces) {
        let step = decoder.decode(&data[at..at + n], |d| out.extend_from_slice(d))?;
        assert!(step.consumed <= n);
        consumed += step.consumed;
        at += n;
        if step.done {
            break;
        }
        assert_eq!(step.consumed, n, "input left over before the end");
    }
    Ok(Outcome {
        data: out,
        consumed,
        done: decoder.is_done(),
        trailers: decoder.trailer_range(),
    })
}

fn in_place(limits: Limits, data: &[u8], pieces: &[u8]) -> Result<Outcome, HttpError> {
    let mut decoder = ChunkedDecoder::new(limits);
    let mut buf = Vec::new();
    let (mut at, mut read, mut out) = (0, 0, 0);
    for n in sizes(data, pieces) {
        buf.extend_from_slice(&data[at..at + n]);
        at += n;
        let step = decoder.decode_in_place(&mut buf, out, read)?;
        read += step.consumed;
        out += step.produced;
        assert!(out <= read && read <= buf.len());
        if step.done {
            break;
        }
    }
    if let Some(range) = decoder.trailer_range() {
        // The trailer bytes are intact in the buffer.
        assert_eq!(&buf[range.clone()], &data[range]);
    }
    buf.truncate(out);
    Ok(Outcome {
        data: buf,
        consumed: read,
        done: decoder.is_done(),
        trailers: decoder.trailer_range(),
    })
}

fuzz_target!(|input: &[u8]| {
    let Some((&control, rest)) = input.split_first() else {
        return;
    };
    let limits = limits(usize::from(control & 0x0f) + 1);
    let pieces_len = usize::from(control >> 4).min(rest.len());
    let (pieces, data) = rest.split_at(pieces_len);
    let whole = streamed(limits, data, &[]);
    if let Ok(outcome) = &whole {
        assert!(outcome.data.len() as u64 <= limits.max_body_bytes);
        assert!(outcome.consumed <= data.len());
        if let Some(range) = &outcome.trailers {
            assert!(range.start <= range.end && range.end == outcome.consumed);
            assert!(range.len() <= limits.max_trailer_bytes);
        }
    }
    assert_eq!(streamed(limits, data, pieces), whole);
    assert_eq!(in_place(limits, data, pieces), whole);
    assert_eq!(in_place(limits, data, &[1]), whole);
});
