//! `compress::Lz4Decompressor` on arbitrary input (first byte even) or on the LZ4 block of
//! arbitrary data (first byte odd). Oracle: a result or a typed error, never a panic, never
//! output past the limit, the caller's output untouched on error; well-formed blocks come
//! back exactly under their exact length and are refused one byte under it. Differential on
//! arbitrary input: when lz4_flex (a second, independent decoder) also accepts the block, both
//! produce the same bytes.
#![no_main]

#[path = "packet/bounded.rs"]
mod bounded;
#[path = "input.rs"]
mod input;

use libfuzzer_sys::fuzz_target;
use tickwire_codec::compress::{BoundedDecompress, Lz4Compressor, Lz4Decompressor};

use crate::input::Bytes;

fuzz_target!(|data: &[u8]| {
    let mut input = Bytes(data);
    let mut decompressor = Lz4Decompressor::new();
    if input.byte() % 2 == 0 {
        let raw = input.0;
        bounded::check(&mut decompressor, input);
        const LIMIT: usize = 1 << 16;
        let mut ours = Vec::new();
        let mut theirs = vec![0; LIMIT];
        if let (Ok(n), Ok(m)) = (
            decompressor.decompress(raw, &mut ours, LIMIT),
            lz4_flex::block::decompress_into(raw, &mut theirs),
        ) {
            assert_eq!(n, m, "both decoders accepted the block: the same length");
            assert_eq!(ours, theirs[..m], "both decoders accepted the block: the same bytes");
        }
    } else {
        let plain = input.0;
        let mut compressed = vec![0; Lz4Compressor::max_output_len(plain.len())];
        let len = Lz4Compressor::new()
            .compress_into(plain, &mut compressed)
            .expect("room for the worst case");
        bounded::round_trip(&mut decompressor, plain, &compressed[..len]);
    }
});
