//! A request being built on a handle: the codec's typestate builder, writing into the handle's
//! buffer, and the pool that sends it.

use std::fmt::Display;
use std::sync::Arc;

use tickwire_codec::http::{Method, WriteError};
use tickwire_codec::rest::{BodyWriter, Query, RequestBuilder, WithHeaders};
use tickwire_core::http::HttpClientError;

use super::pool::Shared;
use super::response::ClientResponse;

/// A request under construction, written straight into the handle's write buffer.
///
/// Query parameters come first (they belong to the request line), then headers, then one of
/// the `send` methods, whose future completes with the whole response. A header that cannot
/// be written (CR, LF or NUL in it) is reported by `send`, and nothing is sent. What dropping
/// a `send` future leaves is in [`HttpClient`'s cancel safety](super::HttpClient#cancel-safety).
#[must_use = "a request does nothing until it is sent"]
pub struct ClientRequest<'c, S> {
    shared: &'c Arc<Shared>,
    builder: Result<RequestBuilder<'c, S>, WriteError>,
    method: Method,
}

impl<'c> ClientRequest<'c, Query> {
    pub(crate) fn new(
        shared: &'c Arc<Shared>,
        builder: Result<RequestBuilder<'c, Query>, WriteError>,
        method: Method,
    ) -> Self {
        Self {
            shared,
            builder,
            method,
        }
    }

    /// Appends a query parameter, percent-encoded.
    pub fn query(self, key: &str, value: &str) -> Self {
        Self {
            builder: self.builder.map(|b| b.query(key, value)),
            ..self
        }
    }

    /// Appends a query parameter formatted with `Display` (numbers, without allocating),
    /// percent-encoded.
    pub fn query_display(self, key: &str, value: impl Display) -> Self {
        Self {
            builder: self.builder.map(|b| b.query_display(key, value)),
            ..self
        }
    }
}

impl<'c, S> ClientRequest<'c, S> {
    /// Adds a header. Names must be tokens; values must not contain CR, LF or NUL.
    pub fn header(self, name: &str, value: impl AsRef<[u8]>) -> ClientRequest<'c, WithHeaders> {
        ClientRequest {
            shared: self.shared,
            builder: self.builder.and_then(|b| b.header(name, value.as_ref())),
            method: self.method,
        }
    }

    /// Adds a header formatted with `Display`, without allocating.
    pub fn header_display(self, name: &str, value: impl Display) -> ClientRequest<'c, WithHeaders> {
        ClientRequest {
            shared: self.shared,
            builder: self.builder.and_then(|b| b.header_display(name, value)),
            method: self.method,
        }
    }

    /// Sends the request without a body (`Content-Length: 0` for POST, PUT and PATCH) and
    /// reads the whole response.
    pub async fn send(self) -> Result<ClientResponse, HttpClientError> {
        let (wbuf, _) = self.builder?.finish_into();
        self.shared.execute(wbuf, self.method).await
    }

    /// Sends the request with `body`; Content-Length is computed.
    pub async fn send_body(
        self,
        body: impl AsRef<[u8]>,
    ) -> Result<ClientResponse, HttpClientError> {
        let (wbuf, _) = self.builder?.body_into(body.as_ref());
        self.shared.execute(wbuf, self.method).await
    }

    /// Sends the request with a body written by `write` straight into the wire buffer (for
    /// example `|w| serde_json::to_writer(w, &order)`); Content-Length is computed after.
    /// An error from `write` is [`HttpClientError::Body`], and nothing is sent.
    pub async fn send_body_with<E>(
        self,
        write: impl FnOnce(&mut BodyWriter<'_>) -> Result<(), E>,
    ) -> Result<ClientResponse, HttpClientError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (wbuf, _) = self
            .builder?
            .body_with_into(write)
            .map_err(|e| HttpClientError::Body(e.into()))?;
        self.shared.execute(wbuf, self.method).await
    }

    /// The request's method.
    pub fn method(&self) -> Method {
        self.method
    }
}
