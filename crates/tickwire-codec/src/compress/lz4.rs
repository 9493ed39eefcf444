//! LZ4 block format (no frame: the packet header carries the lengths): compressed by
//! `lz4_flex` (its unchecked encoder, 1.2x its checked one, the same blocks), decompressed by
//! the reference C library (lz4 1.10, built by `lz4-sys`).
//!
//! Why the two: on 64 KiB of JSON order books and of binary ticks (docs/PACKET.md), the C
//! decoder reads `lz4_flex`'s blocks 1.18-1.22x faster than `lz4_flex` reads them, and
//! `lz4_flex`'s blocks decode 1.4-1.7x faster than the C compressor's (which finds more short
//! matches: 3% smaller, 25-30% slower to decode, about as fast to make). The wire format is
//! the same block format either way. The C decoder is the library's entry point for untrusted
//! input (`LZ4_decompress_safe`: reads and writes only inside the lengths it is given),
//! fuzzed upstream and here (`fuzz/fuzz_targets/packet_decompress_lz4.rs`). The `unsafe` of
//! this module is listed in docs/UNSAFE.md.
#![expect(unsafe_code, reason = "calls of the C LZ4 decoder, docs/UNSAFE.md")]

use std::ffi::{c_char, c_int};

use super::{BoundedDecompress, DecompressError};

// A stable lz4.h function not declared by `lz4-sys` (which links the whole library).
unsafe extern "C" {
    fn LZ4_decompress_safe_partial(
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        target_output_size: c_int,
        dst_capacity: c_int,
    ) -> c_int;
}

/// The largest input the library takes (`LZ4_MAX_INPUT_SIZE`).
const MAX_INPUT: usize = 0x7E00_0000;

/// Decompresses one LZ4 block. Stateless; a unit value is all a connection needs.
///
/// An LZ4 block does not say how long its output is, so the output window is
/// `min(limit, bound)`, where `bound` is the most `input` could possibly expand to (an LZ4
/// sequence turns one input byte into at most 255 output bytes). A caller that knows the exact
/// length (the packet reader does, from the header) passes it as `limit` and pays for nothing
/// more. The window is reserved, never zeroed: the decoder writes it and the output's length
/// covers only what it wrote.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lz4Decompressor;

impl Lz4Decompressor {
    /// A decompressor.
    pub const fn new() -> Self {
        Self
    }
}

impl BoundedDecompress for Lz4Decompressor {
    fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<usize, DecompressError> {
        let start = out.len();
        self.decompress_at(input, out, start, limit)
    }

    /// Decodes straight into `out`'s spare capacity at `start`: nothing is zeroed, and a
    /// stream of similar-sized packets reuses the capacity the previous one left.
    fn decompress_at(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        start: usize,
        limit: usize,
    ) -> Result<usize, DecompressError> {
        if out.len() < start {
            out.resize(start, 0);
        }
        out.truncate(start);
        // The library counts in `int`s; a block that long is longer than any packet anyway.
        if input.len() > MAX_INPUT {
            return Err(DecompressError::Corrupt);
        }
        let window = limit.min(max_expansion(input.len())).min(MAX_INPUT);
        out.reserve_exact(window);
        let src = input.as_ptr().cast::<c_char>();
        // The decoder reads and writes nothing outside the two ranges it is given, whatever
        // `input` holds (its contract for untrusted input); both lengths fit an `int`.
        // SAFETY: `dst` points at the `window` writable bytes of spare capacity after the
        // `start` initialised ones (`reserve_exact` above); `src` at `input.len()` bytes.
        let decoded = unsafe {
            let dst = out.as_mut_ptr().add(start).cast::<c_char>();
            lz4_sys::LZ4_decompress_safe(src, dst, input.len() as c_int, window as c_int)
        };
        if let Ok(len) = usize::try_from(decoded) {
            // SAFETY: the decoder wrote `len <= window` bytes at `start`, and the bytes before
            // `start` were initialised already.
            unsafe { out.set_len(start + len) };
            return Ok(len);
        }
        if window < limit {
            // The window was the most this input can produce, so it is not a size problem.
            return Err(DecompressError::Corrupt);
        }
        // Too large, or corrupt? Decode again, stopping at the limit: a block that yields all
        // `limit` bytes without error, yet failed above, wanted more room than the limit.
        // SAFETY: the same buffers and bounds as the first call.
        let reached = unsafe {
            let dst = out.as_mut_ptr().add(start).cast::<c_char>();
            LZ4_decompress_safe_partial(
                src,
                dst,
                input.len() as c_int,
                window as c_int,
                window as c_int,
            )
        };
        Err(if reached == window as c_int {
            DecompressError::TooLarge { limit }
        } else {
            DecompressError::Corrupt
        })
    }
}

/// Compresses into LZ4 blocks. Stateless: `lz4_flex` allocates its hash table in each call
/// (the one allocation per packet `tests/packet_zero_alloc.rs` allows).
#[derive(Debug, Clone, Copy, Default)]
pub struct Lz4Compressor;

impl Lz4Compressor {
    /// A compressor.
    pub const fn new() -> Self {
        Self
    }

    /// The most bytes [`compress_into`](Self::compress_into) can write for `len` input bytes.
    pub fn max_output_len(len: usize) -> usize {
        lz4_flex::block::get_maximum_output_size(len)
    }

    /// Compresses `input` into the front of `output` and returns the compressed length, or
    /// `None` when `output` is too small (give it [`max_output_len`](Self::max_output_len)
    /// bytes and it never is).
    pub fn compress_into(&mut self, input: &[u8], output: &mut [u8]) -> Option<usize> {
        lz4_flex::block::compress_into(input, output).ok()
    }
}

/// The most output an LZ4 block of `len` bytes can produce: each byte of a match-length
/// extension adds 255 bytes, every other byte adds fewer (LZ4 block format: a sequence is a
/// token, literals, a 2-byte offset and length bytes of 255 each), plus the 19 bytes a
/// token's own nibbles and minimum match can add.
fn max_expansion(len: usize) -> usize {
    len.saturating_mul(255).saturating_add(19)
}
