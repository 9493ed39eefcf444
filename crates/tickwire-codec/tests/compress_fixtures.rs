//! Decompressor inputs that fuzzing found, kept as named fixtures (tests/data/).

use tickwire_codec::compress::{BoundedDecompress, DecompressError, ZstdDecompressor};

/// A 9-byte Zstd frame header with no content size and a truncated block, under no limit
/// (`usize::MAX`): the output window used to be the limit itself, and reserving it overflowed
/// (a panic). Now a frame without a declared size starts with a small window that doubles,
/// never past what the input could expand to.
#[test]
fn fuzz_zstd_unsized_frame_unbounded_limit() {
    let input = include_bytes!("data/fuzz-zstd-unsized-frame-unbounded-limit.bin");
    let mut out = Vec::new();
    let result = ZstdDecompressor::new().decompress(input, &mut out, usize::MAX);
    assert!(
        matches!(
            result,
            Err(DecompressError::Truncated | DecompressError::Corrupt)
        ),
        "{result:?}"
    );
    assert!(out.is_empty());
    assert!(out.capacity() < 1 << 20, "capacity {}", out.capacity());
}

/// A frame without a declared size whose output is larger than the first window: the window
/// doubles until it fits, and the limit still holds.
#[test]
fn unsized_frames_grow_their_window_up_to_the_limit() {
    use std::io::Write;
    let plain: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
    encoder.write_all(&plain).unwrap();
    let frame = encoder.finish().unwrap();
    let mut out = vec![1, 2, 3];
    let mut decompressor = ZstdDecompressor::new();
    assert_eq!(
        decompressor.decompress(&frame, &mut out, plain.len()),
        Ok(plain.len())
    );
    assert_eq!(&out[3..], &plain[..]);
    let mut out = Vec::new();
    assert_eq!(
        decompressor.decompress(&frame, &mut out, plain.len() - 1),
        Err(DecompressError::TooLarge {
            limit: plain.len() - 1
        })
    );
    assert!(out.is_empty());
}
