//! LZ4 block format (no frame: the packet header carries the lengths) through `lz4_flex`,
//! whose safe decoder bounds-checks every copy.

use lz4_flex::block::{self, DecompressError as Lz4Error};

use super::{BoundedDecompress, DecompressError, zeroed_tail};

/// Decompresses one LZ4 block. Stateless; a unit value is all a connection needs.
///
/// An LZ4 block does not say how long its output is, so the output window is
/// `min(limit, bound)`, where `bound` is the most `input` could possibly expand to (an LZ4
/// sequence turns one input byte into at most 255 output bytes). A caller that knows the exact
/// length (the packet reader does, from the header) passes it as `limit` and pays for nothing
/// more.
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
        let window = limit.min(max_expansion(input.len()));
        let start = zeroed_tail(out, window);
        let result = block::decompress_into(input, &mut out[start..]);
        finish(out, start, result, window == limit, limit)
    }

    /// Decodes into the bytes `out` already holds past `start`: only the part of the window
    /// past `out.len()` is zeroed first (none at all when the previous packet was as long).
    fn decompress_at(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        start: usize,
        limit: usize,
    ) -> Result<usize, DecompressError> {
        let window = limit.min(max_expansion(input.len()));
        let end = start.saturating_add(window);
        if out.len() < end {
            zeroed_tail(out, end - out.len());
        }
        let result = block::decompress_into(input, &mut out[start..end]);
        finish(out, start, result, window == limit, limit)
    }
}

/// Cuts `out` to what the block produced after `start`, or back to `start` on an error, and
/// names the error. `at_limit`: the window was the caller's limit, so a block wanting more
/// than it is too large rather than corrupt.
fn finish(
    out: &mut Vec<u8>,
    start: usize,
    result: Result<usize, Lz4Error>,
    at_limit: bool,
    limit: usize,
) -> Result<usize, DecompressError> {
    match result {
        Ok(len) => {
            out.truncate(start + len);
            Ok(len)
        }
        Err(error) => {
            out.truncate(start);
            Err(match error {
                Lz4Error::OutputTooSmall { .. } if at_limit => DecompressError::TooLarge { limit },
                Lz4Error::ExpectedAnotherByte => DecompressError::Truncated,
                _ => DecompressError::Corrupt,
            })
        }
    }
}

/// Compresses into LZ4 blocks. Stateless: `lz4_flex` keeps its hash table on the stack.
#[derive(Debug, Clone, Copy, Default)]
pub struct Lz4Compressor;

impl Lz4Compressor {
    /// A compressor.
    pub const fn new() -> Self {
        Self
    }

    /// The most bytes [`compress_into`](Self::compress_into) can write for `len` input bytes.
    pub fn max_output_len(len: usize) -> usize {
        block::get_maximum_output_size(len)
    }

    /// Compresses `input` into the front of `output` and returns the compressed length, or
    /// `None` when `output` is too small (give it [`max_output_len`](Self::max_output_len)
    /// bytes and it never is).
    pub fn compress_into(&mut self, input: &[u8], output: &mut [u8]) -> Option<usize> {
        block::compress_into(input, output).ok()
    }
}

/// The most output an LZ4 block of `len` bytes can produce: each byte of a match-length
/// extension adds 255 bytes, every other byte adds fewer (LZ4 block format: a sequence is a
/// token, literals, a 2-byte offset and length bytes of 255 each), plus the 19 bytes a
/// token's own nibbles and minimum match can add.
fn max_expansion(len: usize) -> usize {
    len.saturating_mul(255).saturating_add(19)
}
