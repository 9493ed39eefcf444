//! What an HTTP reader rejects, the rule it enforces, and the status a server answers with.
//!
//! This module owns [`HttpError`]. Writers have their own error (`WriteError`): a reader error
//! is always the peer's fault or a configured limit, never local API misuse.

use core::fmt;

use super::types::StatusCode;

/// A message the peer sent that a reader will not accept. After any of these the connection
/// cannot be trusted to be in sync: answer (see [`status`](Self::status)) and close.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HttpError {
    /// The head did not end within [`Limits::max_head_bytes`](super::Limits) (RFC 9112 §2.3:
    /// a server answers an over-long head with 431, RFC 6585 §5; or 414 for the target).
    HeadTooLarge {
        /// The configured limit.
        limit: usize,
    },
    /// More header fields than [`Limits::max_headers`](super::Limits) (RFC 6585 §5).
    TooManyHeaders {
        /// The configured limit.
        limit: usize,
    },
    /// The announced Content-Length, or the body received so far, exceeds
    /// [`Limits::max_body_bytes`](super::Limits) (RFC 9110 §15.5.14, 413).
    BodyTooLarge {
        /// The configured limit.
        limit: u64,
    },
    /// The head does not follow the RFC 9112 §2-§5 grammar (start line, field names that are
    /// RFC 9110 §5.6.2 tokens, field values without CTLs, no whitespace between a field name
    /// and its colon, §5.1); the text says which part.
    InvalidHead(&'static str),
    /// A line in a request head ends with LF alone (RFC 9112 §2.2: a server rejects bare LF in
    /// the request rather than guess; accepted in responses).
    BareLf,
    /// A request header line starts with whitespace: obsolete line folding (RFC 9112 §5.2, a
    /// server rejects it with 400; folded into one value in responses).
    ObsFold,
    /// The start line names a version other than HTTP/1.0 or HTTP/1.1 (RFC 9112 §2.3, 505).
    UnsupportedVersion,
    /// An HTTP/1.1 request without a Host field (RFC 9112 §3.2, 400).
    MissingHost,
    /// A request with more than one Host field (RFC 9112 §3.2, 400).
    MultipleHost,
    /// A Content-Length that is not 1 to 19 decimal digits (RFC 9110 §8.6; RFC 9112 §6.3
    /// item 5: an invalid length is unrecoverable).
    InvalidContentLength,
    /// Content-Length fields with differing values (RFC 9110 §8.6, RFC 9112 §6.3 item 5).
    ConflictingContentLength,
    /// A request with both Transfer-Encoding and Content-Length (RFC 9112 §6.1: such a
    /// message may be an attempt at request smuggling; we reject it, §6.3 item 3).
    TransferEncodingWithContentLength,
    /// A request Transfer-Encoding whose final coding is not `chunked`, or that applies
    /// `chunked` more than once (RFC 9112 §6.1, §6.3 item 4: 400).
    ChunkedNotLast,
    /// A request transfer coding other than `chunked` (RFC 9112 §6.1: 501), or
    /// Transfer-Encoding on an HTTP/1.0 request (§6.1, faulty framing).
    UnsupportedTransferEncoding,
    /// A chunk-size line that is not hex digits optionally followed by well-formed
    /// `;name[=value]` extensions (RFC 9112 §7.1, §7.1.1): empty, signed, spaced or otherwise
    /// malformed.
    InvalidChunkSize,
    /// A chunk size with more hex digits than
    /// [`Limits::max_chunk_size_digits`](super::Limits) (RFC 9112 §7.1: recipients must guard
    /// against overflow).
    ChunkSizeTooLong {
        /// The configured limit.
        limit: usize,
    },
    /// Chunk extensions longer than [`Limits::max_chunk_extension_bytes`](super::Limits)
    /// (RFC 9112 §7.1.1: a recipient limits extension length).
    ChunkExtensionTooLong {
        /// The configured limit.
        limit: usize,
    },
    /// A line of chunked framing ends with LF alone (RFC 9112 §7.1: CRLF is required).
    BareLfInChunk,
    /// Chunk data or a chunk-size line not followed by CRLF (RFC 9112 §7.1).
    MissingChunkCrlf,
    /// A trailer field line that is not `name: value` (RFC 9112 §7.1.2, RFC 9110 §5).
    InvalidTrailer,
    /// A trailer section longer than [`Limits::max_trailer_bytes`](super::Limits)
    /// (RFC 9112 §7.1.2).
    TrailerTooLarge {
        /// The configured limit.
        limit: usize,
    },
    /// The peer closed before the head was complete (RFC 9112 §8).
    IncompleteHead,
    /// The peer closed before the body announced by Content-Length or chunked framing was
    /// complete (RFC 9112 §8: an incomplete message).
    IncompleteBody,
}

impl HttpError {
    /// The status a server answers a bad request with (400, 413, 431, 501, 505); `None` when
    /// there is nobody to answer (the peer closed mid-message).
    pub fn status(&self) -> Option<StatusCode> {
        Some(match self {
            Self::HeadTooLarge { .. }
            | Self::TooManyHeaders { .. }
            | Self::TrailerTooLarge { .. } => StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            Self::BodyTooLarge { .. } => StatusCode::CONTENT_TOO_LARGE,
            Self::UnsupportedVersion => StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            Self::UnsupportedTransferEncoding => StatusCode::NOT_IMPLEMENTED,
            Self::InvalidHead(_)
            | Self::BareLf
            | Self::ObsFold
            | Self::MissingHost
            | Self::MultipleHost
            | Self::InvalidContentLength
            | Self::ConflictingContentLength
            | Self::TransferEncodingWithContentLength
            | Self::ChunkedNotLast
            | Self::InvalidChunkSize
            | Self::ChunkSizeTooLong { .. }
            | Self::ChunkExtensionTooLong { .. }
            | Self::BareLfInChunk
            | Self::MissingChunkCrlf
            | Self::InvalidTrailer => StatusCode::BAD_REQUEST,
            Self::IncompleteHead | Self::IncompleteBody => return None,
        })
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::HeadTooLarge { limit } => write!(f, "HTTP head larger than {limit} bytes"),
            Self::TooManyHeaders { limit } => write!(f, "more than {limit} header fields"),
            Self::BodyTooLarge { limit } => write!(f, "HTTP body larger than {limit} bytes"),
            Self::InvalidHead(what) => write!(f, "invalid HTTP head: {what}"),
            Self::BareLf => f.write_str("bare LF line ending in a request head"),
            Self::ObsFold => f.write_str("obsolete line folding in a request head"),
            Self::UnsupportedVersion => f.write_str("unsupported HTTP version"),
            Self::MissingHost => f.write_str("HTTP/1.1 request without a Host field"),
            Self::MultipleHost => f.write_str("request with more than one Host field"),
            Self::InvalidContentLength => f.write_str("invalid Content-Length"),
            Self::ConflictingContentLength => f.write_str("conflicting Content-Length values"),
            Self::TransferEncodingWithContentLength => {
                f.write_str("request with both Transfer-Encoding and Content-Length")
            }
            Self::ChunkedNotLast => f.write_str("chunked is not the final transfer coding"),
            Self::UnsupportedTransferEncoding => f.write_str("unsupported transfer coding"),
            Self::InvalidChunkSize => f.write_str("invalid chunk-size line"),
            Self::ChunkSizeTooLong { limit } => {
                write!(f, "chunk size longer than {limit} hex digits")
            }
            Self::ChunkExtensionTooLong { limit } => {
                write!(f, "chunk extensions longer than {limit} bytes")
            }
            Self::BareLfInChunk => f.write_str("bare LF in chunked framing"),
            Self::MissingChunkCrlf => f.write_str("missing CRLF in chunked framing"),
            Self::InvalidTrailer => f.write_str("invalid trailer field"),
            Self::TrailerTooLarge { limit } => {
                write!(f, "trailer section larger than {limit} bytes")
            }
            Self::IncompleteHead => f.write_str("connection closed inside an HTTP head"),
            Self::IncompleteBody => f.write_str("connection closed inside an HTTP body"),
        }
    }
}

impl std::error::Error for HttpError {}
