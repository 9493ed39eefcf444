//! `compress::ZstdDecompressor` on arbitrary input (first byte 0 mod 3), on a valid Zstd
//! frame of arbitrary data with arbitrary bytes flipped (1 mod 3), or round trip with and
//! without a dictionary (2 mod 3). Oracle: a result or a typed error, never a panic, never
//! output past the limit, the caller's output untouched on error; well-formed frames come back
//! exactly under their exact length and are refused one byte under it.
#![no_main]

#[path = "packet/bounded.rs"]
mod bounded;
#[path = "input.rs"]
mod input;

use libfuzzer_sys::fuzz_target;
use tickwire_codec::compress::{ZstdCompressor, ZstdDecompressor, ZstdDictionary};

use crate::input::Bytes;

fn compress(plain: &[u8], dictionary: Option<&ZstdDictionary>) -> Vec<u8> {
    let mut compressed = vec![0; ZstdCompressor::max_output_len(plain.len())];
    let mut compressor = ZstdCompressor::new();
    let len = match dictionary {
        Some(dictionary) => {
            compressor.compress_with_dictionary_into(plain, &mut compressed, dictionary)
        }
        None => compressor.compress_into(plain, &mut compressed, 1),
    }
    .expect("room for the worst case");
    compressed.truncate(len);
    compressed
}

fuzz_target!(|data: &[u8]| {
    let mut input = Bytes(data);
    match input.byte() % 3 {
        0 => bounded::check(&mut ZstdDecompressor::new(), input),
        1 => {
            let flips = input.pieces();
            let header = [input.byte(), input.byte(), input.byte(), input.byte()];
            let mut frame = compress(input.0, None);
            let len = frame.len();
            for flip in flips {
                frame[flip % len] ^= 0x5a;
            }
            let mut attack = header.to_vec();
            attack.extend_from_slice(&frame);
            bounded::check(&mut ZstdDecompressor::new(), Bytes(&attack));
        }
        _ => {
            let split = usize::from(input.byte());
            let (dictionary_bytes, plain) = input.0.split_at(split.min(input.0.len()));
            let dictionary = ZstdDictionary::new(1, dictionary_bytes, 3);
            bounded::round_trip(&mut ZstdDecompressor::new(), plain, &compress(plain, None));
            bounded::round_trip(
                &mut ZstdDecompressor::with_dictionary(&dictionary),
                plain,
                &compress(plain, Some(&dictionary)),
            );
        }
    }
});
