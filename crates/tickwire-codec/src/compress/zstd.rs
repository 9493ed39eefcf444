//! Zstd through the reference library (`zstd` crate's `zstd_safe` layer): one-shot
//! compression and decompression with reusable contexts, optionally with a shared dictionary.

use core::fmt;
use std::sync::Arc;

use zstd::zstd_safe::{self, CCtx, CDict, DCtx, DDict};

use super::{BoundedDecompress, DecompressError, zeroed_tail};

/// A dictionary shared by both ends of a link, named on the wire by `id`.
///
/// Built once (the dictionary is digested for compression at `level` and for decompression)
/// and cloned cheaply into every connection's configuration: the digested forms are shared,
/// not copied.
#[derive(Clone)]
pub struct ZstdDictionary {
    id: u32,
    level: i32,
    compress: Arc<CDict<'static>>,
    decompress: Arc<DDict<'static>>,
}

impl fmt::Debug for ZstdDictionary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZstdDictionary")
            .field("id", &self.id)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

impl ZstdDictionary {
    /// Digests `dictionary` (raw content, or a trained dictionary from `zstd --train`) for
    /// compression at `level` and for decompression. Both peers must use the same bytes under
    /// the same `id`; a packet naming another id is refused by the reader.
    pub fn new(id: u32, dictionary: &[u8], level: i32) -> Self {
        Self {
            id,
            level,
            compress: Arc::new(zstd_safe::create_cdict(dictionary, level)),
            decompress: Arc::new(zstd_safe::create_ddict(dictionary)),
        }
    }

    /// The id that names this dictionary on the wire.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The compression level the dictionary was digested for.
    pub fn level(&self) -> i32 {
        self.level
    }
}

/// Decompresses Zstd frames, with a reusable context (about 100 KiB, allocated on first use)
/// and optionally a [`ZstdDictionary`].
///
/// The input is one complete frame. Its declared content size, when present (the packet
/// writer always records it), is checked against the limit before any work and sizes the
/// output window; without one the window starts small and doubles, up to the limit, as the
/// frame needs it. No window is larger than the input could expand to.
#[derive(Default)]
pub struct ZstdDecompressor {
    context: Option<DCtx<'static>>,
    dictionary: Option<Arc<DDict<'static>>>,
}

impl fmt::Debug for ZstdDecompressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZstdDecompressor")
            .field("dictionary", &self.dictionary.is_some())
            .finish_non_exhaustive()
    }
}

impl ZstdDecompressor {
    /// A decompressor without a dictionary.
    pub fn new() -> Self {
        Self::default()
    }

    /// A decompressor for frames compressed with `dictionary`.
    pub fn with_dictionary(dictionary: &ZstdDictionary) -> Self {
        Self {
            context: None,
            dictionary: Some(Arc::clone(&dictionary.decompress)),
        }
    }
}

impl BoundedDecompress for ZstdDecompressor {
    fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<usize, DecompressError> {
        // No window beyond what the input can possibly produce, whatever the limit.
        let cap = limit.min(max_expansion(input.len()));
        let mut window = match zstd_safe::get_frame_content_size(input) {
            Ok(Some(size)) if size > limit as u64 => {
                return Err(DecompressError::TooLarge { limit });
            }
            // One more byte than declared, so a frame that lies about its size is seen.
            Ok(Some(size)) => (size as usize).saturating_add(1).min(cap),
            // No declared size, or not a frame header (decompressing then fails on the header
            // and says which): start small and double.
            Ok(None) | Err(_) => input.len().saturating_mul(4).max(MIN_WINDOW).min(cap),
        };
        let context = self.context.get_or_insert_with(DCtx::create);
        loop {
            let start = zeroed_tail(out, window);
            let result = match &self.dictionary {
                Some(dictionary) => {
                    context.decompress_using_ddict(&mut out[start..], input, dictionary)
                }
                None => context.decompress(&mut out[start..], input),
            };
            match result {
                Ok(len) => {
                    out.truncate(start + len);
                    return Ok(len);
                }
                Err(code) => {
                    out.truncate(start);
                    if zstd_safe::get_error_name(code) == DST_TOO_SMALL && window < cap {
                        window = window.saturating_mul(2).min(cap);
                        continue;
                    }
                    return Err(classify(code, window == limit, limit));
                }
            }
        }
    }
}

/// The first output window of a frame without a declared size.
const MIN_WINDOW: usize = 4 << 10;

/// The name zstd gives a too-small output buffer (`error_private.c`).
const DST_TOO_SMALL: &str = "Destination buffer is too small";

/// The most output `len` bytes of Zstd frames can produce: a block takes at least 4 bytes
/// (a 3-byte header and one RLE byte) and produces at most 128 KiB (RFC 8878 §3.1.1.2), so
/// 32 KiB per input byte, plus one block of slack.
fn max_expansion(len: usize) -> usize {
    len.saturating_mul(32 << 10).saturating_add(128 << 10)
}

/// zstd reports errors by name only through the safe layer; the names are fixed strings of
/// `error_private.c`.
fn classify(code: zstd_safe::ErrorCode, at_limit: bool, limit: usize) -> DecompressError {
    match zstd_safe::get_error_name(code) {
        DST_TOO_SMALL if at_limit => DecompressError::TooLarge { limit },
        // The input ends inside a frame header or block.
        "Src size is incorrect" => DecompressError::Truncated,
        _ => DecompressError::Corrupt,
    }
}

/// Compresses into Zstd frames (content size recorded, no frame checksum: the packet header
/// has its own), with a reusable context allocated on first use.
#[derive(Default)]
pub struct ZstdCompressor {
    context: Option<CCtx<'static>>,
}

impl fmt::Debug for ZstdCompressor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ZstdCompressor").finish_non_exhaustive()
    }
}

impl ZstdCompressor {
    /// A compressor.
    pub fn new() -> Self {
        Self::default()
    }

    /// The most bytes a compression of `len` input bytes can write.
    pub fn max_output_len(len: usize) -> usize {
        zstd_safe::compress_bound(len)
    }

    /// Compresses `input` at `level` into the front of `output` and returns the compressed
    /// length, or `None` when `output` is too small.
    pub fn compress_into(&mut self, input: &[u8], output: &mut [u8], level: i32) -> Option<usize> {
        let context = self.context.get_or_insert_with(CCtx::create);
        context.compress(output, input, level).ok()
    }

    /// Compresses `input` with `dictionary` (at the level it was digested for) into the front
    /// of `output` and returns the compressed length, or `None` when `output` is too small.
    pub fn compress_with_dictionary_into(
        &mut self,
        input: &[u8],
        output: &mut [u8],
        dictionary: &ZstdDictionary,
    ) -> Option<usize> {
        let context = self.context.get_or_insert_with(CCtx::create);
        context
            .compress_using_cdict(output, input, &dictionary.compress)
            .ok()
    }
}
