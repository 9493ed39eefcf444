//! A request being built on a client: the codec's typestate builder plus the session that
//! sends it.

use std::fmt::Display;

use tickwire_codec::http::{Method, WriteError};
use tickwire_codec::rest::{BodyWriter, Query, RequestBuilder, WithHeaders};

use super::HttpClientError;
use super::response::ClientResponse;
use super::session::Session;

/// A request under construction, written straight into the client's write buffer.
///
/// Query parameters come first (they belong to the request line), then headers, then one of
/// the `send` methods. A header that cannot be written (CR, LF or NUL in it) is reported by
/// `send`, and nothing is sent.
#[must_use = "a request does nothing until it is sent"]
pub struct ClientRequest<'c, S> {
    session: &'c mut Session,
    builder: Result<RequestBuilder<'c, S>, WriteError>,
    method: Method,
}

impl<'c> ClientRequest<'c, Query> {
    pub(crate) fn new(
        session: &'c mut Session,
        builder: Result<RequestBuilder<'c, Query>, WriteError>,
        method: Method,
    ) -> Self {
        Self {
            session,
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
            session: self.session,
            builder: self.builder.and_then(|b| b.header(name, value.as_ref())),
            method: self.method,
        }
    }

    /// Adds a header formatted with `Display`, without allocating.
    pub fn header_display(self, name: &str, value: impl Display) -> ClientRequest<'c, WithHeaders> {
        ClientRequest {
            session: self.session,
            builder: self.builder.and_then(|b| b.header_display(name, value)),
            method: self.method,
        }
    }

    /// Sends the request without a body (`Content-Length: 0` for POST, PUT and PATCH).
    pub fn send(self) -> Result<ClientResponse<'c>, HttpClientError> {
        let builder = self.builder?;
        let (wbuf, _) = builder.finish_into();
        self.session.execute(wbuf, self.method)
    }

    /// Sends the request with `body`; Content-Length is computed.
    pub fn send_body(self, body: impl AsRef<[u8]>) -> Result<ClientResponse<'c>, HttpClientError> {
        let builder = self.builder?;
        let (wbuf, _) = builder.body_into(body.as_ref());
        self.session.execute(wbuf, self.method)
    }

    /// Sends the request with a body written by `write` straight into the wire buffer (for
    /// example `|w| serde_json::to_writer(w, &order)`); Content-Length is computed after.
    /// An error from `write` is [`HttpClientError::Body`], and nothing is sent.
    pub fn send_body_with<E>(
        self,
        write: impl FnOnce(&mut BodyWriter<'_>) -> Result<(), E>,
    ) -> Result<ClientResponse<'c>, HttpClientError>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let builder = self.builder?;
        let (wbuf, _) = builder
            .body_with_into(write)
            .map_err(|e| HttpClientError::Body(e.into()))?;
        self.session.execute(wbuf, self.method)
    }

    /// The request's method.
    pub fn method(&self) -> Method {
        self.method
    }
}
