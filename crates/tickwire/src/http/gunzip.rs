//! gzip response bodies (RFC 9110 §8.4.1.3), inflated into a buffer the client reuses.
//!
//! With the `deflate` feature off there is no inflater: the client never sends
//! `Accept-Encoding: gzip`, no [`Gunzip`] value can exist, and a body the server gzipped
//! anyway is handed over as sent, its `Content-Encoding` header left for the caller to see.

#[cfg(feature = "deflate")]
use tickwire_codec::deflate::{InflateError, PayloadInflater};

use super::error::HttpClientError;

/// A reused gzip inflater (the codec's, shared with permessage-deflate's payload helpers) and
/// its output buffer, bounded by the body size limit.
#[cfg(feature = "deflate")]
#[derive(Debug)]
pub(crate) struct Gunzip {
    inflater: PayloadInflater,
    out: Vec<u8>,
    limit: u64,
}

#[cfg(feature = "deflate")]
impl Gunzip {
    pub(crate) fn new(limit: u64) -> Self {
        Self {
            inflater: PayloadInflater::new(),
            out: Vec::new(),
            limit,
        }
    }

    /// Inflates one gzip member into the reused buffer, its CRC-32 and length checked. A body
    /// that inflates past the limit, is not gzip, has bytes after the member, or ends early is
    /// [`HttpClientError::Decompress`].
    pub(crate) fn decode(&mut self, input: &[u8]) -> Result<&[u8], HttpClientError> {
        self.out.clear();
        let limit = usize::try_from(self.limit).unwrap_or(usize::MAX);
        match self.inflater.gzip(input, &mut self.out, limit) {
            Ok(()) => Ok(&self.out),
            Err(InflateError::TooLarge { limit }) => Err(HttpClientError::Decompress(format!(
                "gzip body inflates past the {limit}-byte limit"
            ))),
            Err(InflateError::Truncated) => {
                Err(HttpClientError::Decompress("gzip body ends early".into()))
            }
            Err(e) => Err(HttpClientError::Decompress(format!("gzip body: {e}"))),
        }
    }
}

/// Without the `deflate` feature: no inflater, and no value of this type.
#[cfg(not(feature = "deflate"))]
#[derive(Debug)]
pub(crate) enum Gunzip {}

#[cfg(not(feature = "deflate"))]
impl Gunzip {
    /// Unreachable: there is no value to call it on.
    pub(crate) fn decode(&mut self, _input: &[u8]) -> Result<&[u8], HttpClientError> {
        match *self {}
    }
}
