//! ChunkedDecoder on its own: in place and through the callback, split invariant.

use super::super::ChunkedDecoder;
use super::*;

#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    data: Vec<u8>,
    /// Input bytes taken in total, and whether the body ended.
    consumed: usize,
    done: bool,
    error: Option<HttpError>,
}

/// Decodes `input` through the callback, cut at `cuts`.
fn streamed(input: &[u8], cuts: &[usize], limits: Limits) -> Outcome {
    let mut decoder = ChunkedDecoder::new(limits);
    let mut outcome = Outcome {
        data: Vec::new(),
        consumed: 0,
        done: false,
        error: None,
    };
    for piece in pieces(input, cuts) {
        match decoder.decode(piece, |data| outcome.data.extend_from_slice(data)) {
            Ok(step) => {
                outcome.consumed += step.consumed;
                outcome.done = step.done;
                if step.done {
                    break;
                }
            }
            Err(error) => {
                return failed(error);
            }
        }
    }
    outcome
}

/// After an error only the error matters: data already handed out is discarded.
fn failed(error: HttpError) -> Outcome {
    Outcome {
        data: Vec::new(),
        consumed: 0,
        done: false,
        error: Some(error),
    }
}

/// Decodes `input` in place in a growing buffer, cut at `cuts`.
fn in_place(input: &[u8], cuts: &[usize], limits: Limits) -> Outcome {
    let mut decoder = ChunkedDecoder::new(limits);
    let mut buf = Vec::new();
    let (mut read, mut out) = (0, 0);
    let mut outcome = Outcome {
        data: Vec::new(),
        consumed: 0,
        done: false,
        error: None,
    };
    for piece in pieces(input, cuts) {
        buf.extend_from_slice(piece);
        match decoder.decode_in_place(&mut buf, out, read) {
            Ok(step) => {
                read += step.consumed;
                out += step.produced;
                outcome.done = step.done;
                if step.done {
                    break;
                }
            }
            Err(error) => {
                return failed(error);
            }
        }
    }
    outcome.data = buf[..out].to_vec();
    outcome.consumed = read;
    outcome
}

/// Both ways, all splits, must agree; returns the outcome.
fn decode_with(input: &[u8], limits: Limits) -> Outcome {
    let whole = streamed(input, &[], limits);
    let bytewise: Vec<usize> = (1..input.len()).collect();
    let mut all_cuts = vec![Vec::new(), bytewise];
    all_cuts.extend((1..input.len()).map(|cut| vec![cut]));
    for cuts in &all_cuts {
        assert_eq!(
            streamed(input, cuts, limits),
            whole,
            "streamed, cuts {cuts:?}"
        );
        assert_eq!(
            in_place(input, cuts, limits),
            whole,
            "in place, cuts {cuts:?}"
        );
    }
    whole
}

fn decode(input: &[u8]) -> Outcome {
    decode_with(input, Limits::client())
}

fn error_of(input: &[u8]) -> Option<HttpError> {
    decode(input).error
}

#[test]
fn decodes_chunks_and_stops_after_the_trailers() {
    let outcome = decode(b"3\r\nabc\r\nA\r\n0123456789\r\n0\r\n\r\nNEXT");
    assert_eq!(outcome.data, b"abc0123456789");
    assert!(outcome.done);
    assert_eq!(outcome.consumed, 28, "bytes after the body are not taken");
    assert_eq!(outcome.error, None);
}

#[test]
fn upper_and_lower_hex_and_leading_zeros() {
    let outcome = decode(b"0000a\r\n0123456789\r\n00B\r\nabcdefghijk\r\n000\r\n\r\n");
    assert_eq!(outcome.data, b"0123456789abcdefghijk");
    assert!(outcome.done);
}

#[test]
fn extensions_with_tokens_quoted_strings_and_whitespace() {
    let outcome = decode(b"1;a\r\nx\r\n1 ; b = c ;d=\"q \\\" s\"\r\ny\r\n0;last\r\n\r\n");
    assert_eq!(outcome.data, b"xy");
    assert!(outcome.done);
}

#[test]
fn trailer_range_covers_the_trailer_section() {
    let input = b"1\r\nx\r\n0\r\nA: 1\r\nB: two\r\n\r\n";
    let mut decoder = ChunkedDecoder::new(Limits::client());
    let mut buf = input.to_vec();
    let step = decoder.decode_in_place(&mut buf, 0, 0).unwrap();
    assert!(step.done);
    assert_eq!(decoder.trailer_range(), Some(9..input.len()));
    assert_eq!(&buf[9..], b"A: 1\r\nB: two\r\n\r\n");
    assert_eq!(decoder.body_len(), 1);
}

#[test]
fn invalid_chunk_sizes() {
    for input in [
        &b"\r\n"[..],
        b"-1\r\n",
        b"+1\r\n",
        b" 1\r\n",
        b"g\r\n",
        b"1x\r\n",
        b"1 \r\n",
        b"1;\r\n",
        b"1;=v\r\n",
        b"1;a=\r\n",
        b"1;a=\"open\r\n",
        b"1;a b\r\n",
    ] {
        assert_eq!(
            error_of(input),
            Some(HttpError::InvalidChunkSize),
            "{}",
            String::from_utf8_lossy(input)
        );
    }
}

#[test]
fn chunk_size_digit_limit_counts_leading_zeros() {
    assert_eq!(
        error_of(b"00000000000000001\r\n"),
        Some(HttpError::ChunkSizeTooLong { limit: 16 })
    );
    let outcome = decode(b"0000000000000001\r\nx\r\n0\r\n\r\n");
    assert_eq!(outcome.data, b"x");
}

#[test]
fn chunk_size_beyond_u64_or_body_limit() {
    assert_eq!(
        error_of(b"ffffffffffffffff\r\n"),
        Some(HttpError::BodyTooLarge { limit: 64 << 20 })
    );
    let wide = Limits {
        max_chunk_size_digits: 40,
        max_body_bytes: u64::MAX,
        ..Limits::client()
    };
    assert_eq!(
        decode_with(b"10000000000000000\r\n", wide).error,
        Some(HttpError::BodyTooLarge { limit: u64::MAX })
    );
    // The running total counts: two chunks of 3 under a limit of 5.
    let small = Limits {
        max_body_bytes: 5,
        ..Limits::client()
    };
    assert_eq!(
        decode_with(b"3\r\nabc\r\n3\r\n", small).error,
        Some(HttpError::BodyTooLarge { limit: 5 })
    );
}

#[test]
fn extension_length_limit() {
    let limits = Limits {
        max_chunk_extension_bytes: 8,
        ..Limits::client()
    };
    assert!(decode_with(b"1;abcdefg\r\nx\r\n0\r\n\r\n", limits).done);
    assert_eq!(
        decode_with(b"1;abcdefgh\r\nx\r\n", limits).error,
        Some(HttpError::ChunkExtensionTooLong { limit: 8 })
    );
}

#[test]
fn crlf_required_after_size_and_data() {
    assert_eq!(error_of(b"1\nx\r\n"), Some(HttpError::BareLfInChunk));
    assert_eq!(error_of(b"1;a\nx\r\n"), Some(HttpError::BareLfInChunk));
    assert_eq!(error_of(b"1\rx"), Some(HttpError::MissingChunkCrlf));
    assert_eq!(error_of(b"1\r\nx\n"), Some(HttpError::BareLfInChunk));
    assert_eq!(error_of(b"1\r\nxy"), Some(HttpError::MissingChunkCrlf));
    assert_eq!(error_of(b"1\r\nx\rz"), Some(HttpError::MissingChunkCrlf));
    assert_eq!(error_of(b"0\r\n\n"), Some(HttpError::BareLfInChunk));
    assert_eq!(error_of(b"0\r\n\rx"), Some(HttpError::MissingChunkCrlf));
}

#[test]
fn trailer_rules() {
    assert_eq!(
        error_of(b"0\r\nA: 1\r\n folded\r\n\r\n"),
        Some(HttpError::InvalidTrailer)
    );
    assert_eq!(
        error_of(b"0\r\nA 1\r\n\r\n"),
        Some(HttpError::InvalidTrailer)
    );
    assert_eq!(
        error_of(b"0\r\n: 1\r\n\r\n"),
        Some(HttpError::InvalidTrailer)
    );
    assert_eq!(
        error_of(b"0\r\nA: \x001\r\n\r\n"),
        Some(HttpError::InvalidTrailer)
    );
    assert_eq!(error_of(b"0\r\nA: 1\n\r\n"), Some(HttpError::BareLfInChunk));
    let limits = Limits {
        max_trailer_bytes: 11,
        ..Limits::client()
    };
    assert!(decode_with(b"0\r\nA: 1234\r\n\r\n", limits).done);
    assert_eq!(
        decode_with(b"0\r\nA: 12345\r\n\r\n", limits).error,
        Some(HttpError::TrailerTooLarge { limit: 11 })
    );
    let limits = Limits {
        max_headers: 1,
        ..Limits::client()
    };
    assert_eq!(
        decode_with(b"0\r\nA: 1\r\nB: 2\r\n\r\n", limits).error,
        Some(HttpError::TooManyHeaders { limit: 1 })
    );
}

#[test]
fn framing_overhead_is_bounded_by_the_body_limit() {
    let limits = Limits {
        max_body_bytes: 2048,
        ..Limits::client()
    };
    // One byte per chunk costs five framing bytes: the framing allowance (2048) runs out
    // long before the data limit.
    let input = b"1\r\nx\r\n".repeat(500);
    assert_eq!(
        decode_with(&input[..], limits).error,
        Some(HttpError::BodyTooLarge { limit: 2048 })
    );
}

#[test]
fn errors_are_sticky() {
    let mut decoder = ChunkedDecoder::new(Limits::client());
    assert_eq!(
        decoder.decode(b"z", |_| {}).unwrap_err(),
        HttpError::InvalidChunkSize
    );
    assert_eq!(
        decoder.decode(b"0\r\n\r\n", |_| {}).unwrap_err(),
        HttpError::InvalidChunkSize
    );
}
