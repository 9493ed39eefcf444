//! The oracle both decompressor targets share: arbitrary input into a `BoundedDecompress`
//! with an arbitrary limit, appending to a prefilled output with or without spare capacity.

use tickwire_codec::compress::{BoundedDecompress, DecompressError};

use crate::input::Bytes;

/// Runs `decompressor` on the rest of `input` under a limit and prefill read from its front.
/// Never a panic; on success at most `limit` bytes appended and the prefill intact; on error
/// the output exactly as it was given.
pub(crate) fn check(decompressor: &mut dyn BoundedDecompress, mut input: Bytes<'_>) {
    let limit = match input.byte() % 4 {
        0 => usize::from(input.byte()),
        1 => usize::from(input.u16()),
        2 => 1 << 20,
        _ => usize::MAX,
    };
    let prefill = usize::from(input.byte() % 32);
    let spare = usize::from(input.u16());
    let mut out = Vec::with_capacity(prefill + spare);
    out.extend((0..prefill).map(|i| i as u8));
    let data = input.0;
    match decompressor.decompress(data, &mut out, limit) {
        Ok(len) => {
            assert!(len <= limit, "{len} bytes past the limit {limit}");
            assert_eq!(out.len(), prefill + len);
        }
        Err(DecompressError::TooLarge { limit: reported }) => {
            assert_eq!(reported, limit);
            assert_eq!(out.len(), prefill, "output left as it was");
        }
        Err(_) => assert_eq!(out.len(), prefill, "output left as it was"),
    }
    assert!(
        out[..prefill]
            .iter()
            .enumerate()
            .all(|(i, &b)| b == i as u8)
    );
    // Output memory stays within the limit (plus the prefill, spare capacity lent, and one
    // byte the contract allows).
    assert!(
        out.capacity() <= (prefill + spare).max(prefill.saturating_add(limit).saturating_add(1))
    );
}

/// Compresses `data` with `compress` and checks that it comes back under an exact limit and
/// is refused one byte under it.
pub(crate) fn round_trip(decompressor: &mut dyn BoundedDecompress, data: &[u8], compressed: &[u8]) {
    let mut out = Vec::new();
    assert_eq!(
        decompressor.decompress(compressed, &mut out, data.len()),
        Ok(data.len())
    );
    assert_eq!(out, data);
    if let Some(under) = data.len().checked_sub(1) {
        let mut out = Vec::new();
        assert_eq!(
            decompressor.decompress(compressed, &mut out, under),
            Err(DecompressError::TooLarge { limit: under })
        );
        assert!(out.is_empty());
    }
    // At an offset, over what a reused buffer held, shorter or longer than the output.
    for (start, held) in [(0, data.len() / 2), (3, data.len() + 7)] {
        let mut out = vec![0x5A; held];
        assert_eq!(
            decompressor.decompress_at(compressed, &mut out, start, data.len()),
            Ok(data.len())
        );
        assert_eq!(&out[start..], data);
    }
}
