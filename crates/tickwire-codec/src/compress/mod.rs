//! Bounded decompression: the one interface every decompressor in this crate implements.
//!
//! This module owns [`BoundedDecompress`] and its error, [`DecompressError`], and, behind their
//! features, the LZ4 and Zstd implementations (`Lz4Decompressor`, `ZstdDecompressor`) and
//! their compressing counterparts used by the packet writer. The deflate family (gzip, raw
//! deflate, zlib) implements the trait in the `deflate` module, which sits above this one. This
//! module knows no protocol: it does not parse packet headers or WebSocket frames, and it does
//! no I/O.
//!
//! The contract every implementation keeps: output is appended to a caller-lent `Vec`, never
//! more than the `limit` given to the call, and a stream that would produce more is refused
//! with [`DecompressError::TooLarge`] after at most `limit + 1` bytes of output memory (and
//! the work to produce them). A decompression bomb therefore costs what the limit says.

use core::fmt;

#[cfg(feature = "lz4")]
mod lz4;
#[cfg(feature = "zstd")]
mod zstd;

#[cfg(feature = "lz4")]
pub use lz4::{Lz4Compressor, Lz4Decompressor};
#[cfg(feature = "zstd")]
pub use zstd::{ZstdCompressor, ZstdDecompressor, ZstdDictionary};

/// Why compressed input could not be decompressed.
///
/// Every variant is the peer's fault when the input came from the network; a transport closes
/// the connection (the stream cannot be resynchronised after a corrupt payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DecompressError {
    /// The decompressed data would exceed the limit; decompression stopped at (or before) the
    /// first byte past it.
    TooLarge {
        /// The limit in force.
        limit: usize,
    },
    /// The input is not a valid stream of the expected format (bad block, bad header, bad
    /// checksum, or bytes after the end of the stream).
    Corrupt,
    /// The input ended before the compressed stream did.
    Truncated,
}

impl fmt::Display for DecompressError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { limit } => {
                write!(f, "decompressed data exceeds the limit of {limit}")
            }
            Self::Corrupt => f.write_str("corrupt compressed data"),
            Self::Truncated => f.write_str("compressed data ends early"),
        }
    }
}

impl std::error::Error for DecompressError {}

/// A decompressor whose output is bounded by a limit given with each call.
///
/// Implemented by the deflate family (`deflate::Inflater`, feature `deflate`),
/// `Lz4Decompressor` (feature `lz4`) and `ZstdDecompressor` (feature `zstd`). Each holds
/// whatever reusable state its format needs; keep one per connection.
pub trait BoundedDecompress {
    /// Decompresses all of `input` (one complete compressed unit of this format), appending
    /// the output to `out`. Returns how many bytes were appended, at most `limit`.
    ///
    /// On error `out` is left exactly as it was given (its length; its spare capacity may
    /// have grown, by at most `limit + 1` bytes). Output past `limit` is
    /// [`DecompressError::TooLarge`], refused before more than `limit + 1` bytes of output are
    /// held.
    fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<usize, DecompressError>;

    /// Like [`decompress`](Self::decompress), but the output goes at `out[start..]`,
    /// replacing what `out` held from there on (`out` is zero-extended to `start` first if
    /// shorter; the bytes before `start` are kept): after `Ok(n)`, `out.len()` is
    /// `start + n`; after an error it is `start`. The same limit and memory bound apply to
    /// the output. A caller picks `start` to place the output (the packet reader aligns it
    /// to a cache line).
    ///
    /// A decoder that can write into reserved capacity overrides this to decode straight at
    /// `start` (`Lz4Decompressor` does, zeroing nothing), so a stream of similar-sized
    /// packets pays nothing to prepare the output.
    fn decompress_at(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        start: usize,
        limit: usize,
    ) -> Result<usize, DecompressError> {
        out.resize(start, 0);
        self.decompress(input, out, limit)
    }
}

/// Appends `len` zeroed bytes to `out` without letting its capacity grow past what they need
/// (`reserve_exact`, unlike `resize`, does not double), and returns where they start.
#[cfg(feature = "zstd")]
fn zeroed_tail(out: &mut Vec<u8>, len: usize) -> usize {
    let start = out.len();
    out.reserve_exact(len);
    out.resize(start + len, 0);
    start
}
