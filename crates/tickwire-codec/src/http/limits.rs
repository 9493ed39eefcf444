//! The size limits every HTTP reader checks, on partial data as well as on whole messages.
//!
//! This module owns [`Limits`] and its two presets. It does not enforce anything itself: the
//! readers in [`reader`](super::reader) and the [`ChunkedDecoder`](super::ChunkedDecoder) do,
//! each as soon as the bytes seen so far prove a limit exceeded.

/// Bounds on one HTTP message, checked while it arrives (rule 4 of docs/ARCHITECTURE.md).
///
/// Memory a reader holds for one message is bounded by these: the head by
/// `max_head_bytes`, a Content-Length body by `max_body_bytes`, a chunked body by twice
/// `max_body_bytes` (data plus framing, see [`ChunkedDecoder`](super::ChunkedDecoder)) plus
/// `max_trailer_bytes`.
///
/// `#[non_exhaustive]` so that a limit can be added without breaking callers: start from
/// [`Limits::client`] or [`Limits::server`] and change fields with the `with_*` methods
/// (`const`, so a `const` of limits can be built too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// Largest head (start line to blank line, inclusive). Exceeded as soon as that many bytes
    /// arrived without the blank line. Answered with 431.
    pub max_head_bytes: usize,
    /// Most header fields in a head (and field lines in a trailer section). Answered with 431.
    pub max_headers: usize,
    /// Largest body: an announced Content-Length, or the chunked data or read-until-close
    /// bytes received so far. Answered with 413.
    pub max_body_bytes: u64,
    /// Most hex digits in a chunk size, leading zeros included.
    pub max_chunk_size_digits: usize,
    /// Longest chunk extension (everything between the chunk size and its CRLF).
    pub max_chunk_extension_bytes: usize,
    /// Largest trailer section after the last chunk, its final CRLF included.
    pub max_trailer_bytes: usize,
}

impl Limits {
    /// For reading responses (a client): head 64 KiB, 100 headers, body 64 MiB, 16 chunk-size
    /// digits, extensions 1 KiB, trailers 16 KiB.
    pub const fn client() -> Self {
        Self {
            max_head_bytes: 64 << 10,
            max_headers: 100,
            max_body_bytes: 64 << 20,
            max_chunk_size_digits: 16,
            max_chunk_extension_bytes: 1 << 10,
            max_trailer_bytes: 16 << 10,
        }
    }

    /// For reading requests (a server): head 16 KiB, 64 headers, body 1 MiB, 16 chunk-size
    /// digits, extensions 256 bytes, trailers 4 KiB.
    pub const fn server() -> Self {
        Self {
            max_head_bytes: 16 << 10,
            max_headers: 64,
            max_body_bytes: 1 << 20,
            max_chunk_size_digits: 16,
            max_chunk_extension_bytes: 256,
            max_trailer_bytes: 4 << 10,
        }
    }

    with_methods! {
        const_set with_max_head_bytes => max_head_bytes: usize,
        const_set with_max_headers => max_headers: usize,
        const_set with_max_body_bytes => max_body_bytes: u64,
        const_set with_max_chunk_size_digits => max_chunk_size_digits: usize,
        const_set with_max_chunk_extension_bytes => max_chunk_extension_bytes: usize,
        const_set with_max_trailer_bytes => max_trailer_bytes: usize,
    }
}

impl Default for Limits {
    /// [`Limits::client`].
    fn default() -> Self {
        Self::client()
    }
}
