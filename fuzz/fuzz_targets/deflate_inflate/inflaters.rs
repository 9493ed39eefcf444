//! Mode 2: the standalone inflaters (PayloadInflater and `inflate_gzip` / `inflate_raw` /
//! `inflate_zlib`) on arbitrary or well-formed streams. It owns the limit, prefill, reuse and
//! limit-versus-no-limit oracles; it does not touch frames or negotiation.

use std::io::Write;

use flate2::FlushCompress;
use tickwire_codec::deflate::{
    InflateError, PayloadInflater, inflate_gzip, inflate_raw, inflate_zlib,
};

use crate::common::Bytes;

// --- mode 2: the standalone inflaters ---

pub(crate) fn run(mut input: Bytes<'_>) {
    let flags = input.byte();
    let format = flags % 3;
    let limit = usize::from(input.u16());
    // "No limit".
    let limit = if flags & 0x80 != 0 { usize::MAX } else { limit };
    let prefill = vec![0xa5; usize::from(input.byte() % 32)];
    // A reused output buffer: spare capacity past the limit must not let inflation run on.
    let spare = if flags & 0x40 != 0 { 1 << 16 } else { 0 };
    let output = || {
        let mut out = Vec::with_capacity(prefill.len() + spare);
        out.extend_from_slice(&prefill);
        out
    };
    let mut plain = None;
    let stream = if flags & 4 != 0 {
        // A well-formed stream of the format.
        let level = flate2::Compression::new(u32::from(input.byte() % 10));
        let len = usize::from(input.byte());
        let body = input.take(len);
        let text = body.repeat(1 + usize::from(input.byte()) * 4);
        let stream = match format {
            0 => {
                let mut builder = flate2::GzBuilder::new();
                if flags & 8 != 0 {
                    builder = builder.filename(b"name".to_vec());
                }
                if flags & 16 != 0 {
                    builder = builder.comment(b"comment".to_vec());
                }
                if flags & 32 != 0 {
                    builder = builder.extra(body.to_vec());
                }
                let mut encoder = builder.write(Vec::new(), level);
                encoder.write_all(&text).unwrap();
                encoder.finish().unwrap()
            }
            1 if flags & 8 != 0 => {
                // Sync-flushed, no final block, as permessage-deflate sends.
                let mut compress = flate2::Compress::new(level, false);
                let mut out = Vec::with_capacity(text.len() + 1024);
                compress
                    .compress_vec(&text, &mut out, FlushCompress::Sync)
                    .unwrap();
                assert_eq!(compress.total_in(), text.len() as u64);
                out
            }
            1 => {
                let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), level);
                encoder.write_all(&text).unwrap();
                encoder.finish().unwrap()
            }
            _ => {
                let mut encoder = flate2::write::ZlibEncoder::new(Vec::new(), level);
                encoder.write_all(&text).unwrap();
                encoder.finish().unwrap()
            }
        };
        plain = Some(text);
        stream
    } else {
        input.0.to_vec()
    };
    let fresh = |max_len: usize| {
        let mut out = output();
        let result = match format {
            0 => inflate_gzip(&stream, &mut out, max_len),
            1 => inflate_raw(&stream, &mut out, max_len),
            _ => inflate_zlib(&stream, &mut out, max_len),
        };
        (result, out)
    };
    let limited = fresh(limit);
    // A reused inflater, dirtied by the other formats first, agrees with a fresh one.
    let mut reused = PayloadInflater::new();
    let _ = reused.gzip(&stream, &mut Vec::new(), 100);
    let _ = reused.raw(&stream, &mut Vec::new(), 100);
    let _ = reused.zlib(&stream, &mut Vec::new(), 100);
    let mut out = output();
    let result = match format {
        0 => reused.gzip(&stream, &mut out, limit),
        1 => reused.raw(&stream, &mut out, limit),
        _ => reused.zlib(&stream, &mut out, limit),
    };
    assert_eq!((result, out), limited, "reused inflater");

    let (result, out) = &limited;
    assert_eq!(
        &out[..prefill.len()],
        &prefill[..],
        "the prefilled bytes changed"
    );
    match result {
        Ok(()) => assert!(
            out.len() <= limit,
            "{} bytes past the limit {limit}",
            out.len()
        ),
        Err(InflateError::TooLarge { limit: l }) => {
            assert_eq!(*l, limit);
            // Documented: at most max_len + 1 bytes on error, unless the caller's own bytes
            // were more already.
            let most = limit.saturating_add(1).max(prefill.len());
            assert!(out.len() <= most, "{} bytes on error", out.len());
        }
        Err(_) => {}
    }
    if let Some(plain) = &plain {
        if prefill.len() + plain.len() <= limit {
            assert_eq!(result, &Ok(()), "well-formed stream");
            assert_eq!(&out[prefill.len()..], &plain[..]);
        } else {
            assert_eq!(result, &Err(InflateError::TooLarge { limit }));
        }
    }
    // The limit only cuts the same inflation short.
    let big = 1 << 22;
    let (u_result, u_out) = fresh(big);
    if u_result == Err(InflateError::TooLarge { limit: big }) {
        return;
    }
    match result {
        Ok(()) => assert_eq!((&u_result, &u_out), (&Ok(()), out), "verdict changed"),
        Err(InflateError::TooLarge { .. }) => {
            assert!(
                u_out.len() > limit,
                "too large at {limit}, {} without",
                u_out.len()
            );
            assert_eq!(
                &u_out[..out.len()],
                &out[..],
                "different bytes under the limit"
            );
        }
        Err(error) => assert_eq!((&u_result, &u_out), (&Err(*error), out), "verdict changed"),
    }
}
