//! The `BoundedDecompress` contract, held by every implementation compiled in: the output is
//! appended after what `out` held (or put at an offset, through `decompress_at`), at most
//! `limit` bytes of it; one byte over the limit is `TooLarge` with `out` as it was (cut back to
//! the offset); corrupt input is a typed error with `out` as it was.
#![cfg(any(feature = "deflate", feature = "lz4", feature = "zstd"))]

use tickwire_codec::compress::{BoundedDecompress, DecompressError};

/// Compressible text of `len` bytes.
fn text(len: usize) -> Vec<u8> {
    br#"{"e":"trade","s":"ETHUSDT","p":"3200.55","q":"1.250"},"#
        .iter()
        .copied()
        .cycle()
        .take(len)
        .collect()
}

/// Checks the contract for one decompressor on `compressed`, the encoding of `plain`.
fn holds(name: &str, decompressor: &mut dyn BoundedDecompress, plain: &[u8], compressed: &[u8]) {
    holds_within_limits(name, decompressor, plain, compressed);
    let mut damaged = compressed.to_vec();
    damaged.truncate(compressed.len() / 2);
    let prefix = b"already here".to_vec();
    let mut out = prefix.clone();
    let result = decompressor.decompress(&damaged, &mut out, usize::MAX);
    assert!(
        matches!(
            result,
            Err(DecompressError::Truncated | DecompressError::Corrupt)
        ),
        "{name}: half a stream gave {result:?}"
    );
    assert_eq!(out, prefix, "{name}: out as it was after {result:?}");
}

/// The limit half of the contract (raw deflate has no end marker it must reach: a stream cut
/// short is what permessage-deflate sends, so only this half applies to it).
fn holds_within_limits(
    name: &str,
    decompressor: &mut dyn BoundedDecompress,
    plain: &[u8],
    compressed: &[u8],
) {
    let prefix = b"already here".to_vec();
    let mut out = prefix.clone();
    assert_eq!(
        decompressor.decompress(compressed, &mut out, plain.len()),
        Ok(plain.len()),
        "{name}: exact limit"
    );
    assert_eq!(&out[..prefix.len()], &prefix[..], "{name}");
    assert_eq!(&out[prefix.len()..], plain, "{name}");

    let mut out = prefix.clone();
    let under = plain.len() - 1;
    assert_eq!(
        decompressor.decompress(compressed, &mut out, under),
        Err(DecompressError::TooLarge { limit: under }),
        "{name}: one byte under"
    );
    assert_eq!(out, prefix, "{name}: out as it was");

    // At an offset: whatever `out` held past it before, shorter or longer than the output
    // (a reader reusing one buffer across packets), the output replaces it and what came
    // before the offset stays.
    for start in [0, 5, 64] {
        for held in [0, 1, plain.len() / 2, plain.len(), plain.len() + 100] {
            let mut out = vec![0xA5; held];
            let kept: Vec<u8> = out.iter().copied().chain([0; 64]).take(start).collect();
            assert_eq!(
                decompressor.decompress_at(compressed, &mut out, start, plain.len()),
                Ok(plain.len()),
                "{name}: at {start} over {held} bytes"
            );
            assert_eq!(
                &out[..start],
                &kept[..],
                "{name}: at {start} over {held} bytes"
            );
            assert_eq!(&out[start..], plain, "{name}: at {start} over {held} bytes");
            let mut out = vec![0xA5; held];
            assert_eq!(
                decompressor.decompress_at(compressed, &mut out, start, under),
                Err(DecompressError::TooLarge { limit: under }),
                "{name}: at {start} over {held} bytes, one byte under"
            );
            assert_eq!(
                out.len(),
                start,
                "{name}: cut back to the offset after the error"
            );
        }
    }
}

#[cfg(feature = "deflate")]
#[test]
fn deflate_family() {
    use std::io::Write;
    use tickwire_codec::deflate::{DeflateFormat, Inflater};
    let plain = text(50_000);
    let level = flate2::Compression::default();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), level);
    gzip.write_all(&plain).unwrap();
    let mut raw = flate2::write::DeflateEncoder::new(Vec::new(), level);
    raw.write_all(&plain).unwrap();
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), level);
    zlib.write_all(&plain).unwrap();
    for (format, compressed) in [
        (DeflateFormat::Gzip, gzip.finish().unwrap()),
        (DeflateFormat::Raw, raw.finish().unwrap()),
        (DeflateFormat::Zlib, zlib.finish().unwrap()),
    ] {
        let mut inflater = Inflater::new(format);
        assert_eq!(inflater.format(), format);
        let name = format!("{format:?}");
        if format == DeflateFormat::Raw {
            holds_within_limits(&name, &mut inflater, &plain, &compressed);
        } else {
            holds(&name, &mut inflater, &plain, &compressed);
        }
    }
}

#[cfg(feature = "lz4")]
#[test]
fn lz4() {
    use tickwire_codec::compress::{Lz4Compressor, Lz4Decompressor};
    let plain = text(50_000);
    let mut compressed = vec![0; Lz4Compressor::max_output_len(plain.len())];
    let len = Lz4Compressor::new()
        .compress_into(&plain, &mut compressed)
        .unwrap();
    holds(
        "lz4",
        &mut Lz4Decompressor::new(),
        &plain,
        &compressed[..len],
    );
}

#[cfg(feature = "zstd")]
#[test]
fn zstd_with_and_without_a_dictionary() {
    use tickwire_codec::compress::{ZstdCompressor, ZstdDecompressor, ZstdDictionary};
    let plain = text(50_000);
    let mut compressed = vec![0; ZstdCompressor::max_output_len(plain.len())];
    let mut compressor = ZstdCompressor::new();
    let len = compressor
        .compress_into(&plain, &mut compressed, 1)
        .unwrap();
    holds(
        "zstd",
        &mut ZstdDecompressor::new(),
        &plain,
        &compressed[..len],
    );
    let dictionary = ZstdDictionary::new(3, &text(2000), 3);
    let len = compressor
        .compress_with_dictionary_into(&plain, &mut compressed, &dictionary)
        .unwrap();
    holds(
        "zstd+dictionary",
        &mut ZstdDecompressor::with_dictionary(&dictionary),
        &plain,
        &compressed[..len],
    );
}
