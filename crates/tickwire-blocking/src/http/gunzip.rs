//! gzip response bodies (RFC 9110 §8.4.1.3) through the codec's [`GzipBody`], the one gzip
//! path of the tickwire HTTP clients; this module only gives it this client's
//! error type.
//!
//! With the `deflate` feature off there is no inflater: the client never sends
//! `Accept-Encoding: gzip`, no [`Gunzip`] value can exist, and a body the server gzipped
//! anyway is handed over as sent, its `Content-Encoding` header left for the caller to see.

use tickwire_codec::http::Response;
#[cfg(feature = "deflate")]
use tickwire_codec::rest::GzipBody;

use super::HttpClientError;

/// The codec's reused gzip decoder, bounded by the body size limit.
#[cfg(feature = "deflate")]
#[derive(Debug)]
pub(crate) struct Gunzip(GzipBody);

#[cfg(feature = "deflate")]
impl Gunzip {
    pub(crate) fn new(limit: u64) -> Self {
        Self(GzipBody::new(limit))
    }

    /// The body inflated when it is gzip on the wire, `None` when it is not. A body that
    /// inflates past the limit, is not gzip, has bytes after the member, or ends early is
    /// [`HttpClientError::Decompress`].
    pub(crate) fn decode(
        &mut self,
        response: &Response<'_>,
    ) -> Result<Option<&[u8]>, HttpClientError> {
        Ok(self.0.decode(response)?)
    }
}

/// Without the `deflate` feature: no inflater, and no value of this type.
#[cfg(not(feature = "deflate"))]
#[derive(Debug)]
pub(crate) enum Gunzip {}

#[cfg(not(feature = "deflate"))]
impl Gunzip {
    /// Unreachable: there is no value to call it on.
    pub(crate) fn decode(
        &mut self,
        _response: &Response<'_>,
    ) -> Result<Option<&[u8]>, HttpClientError> {
        match *self {}
    }
}
