//! The HTTP client both transports share, written once: [`HttpClient`] (the per-method
//! shortcuts) and [`ClientRequest`] (query, headers, body, send), generic over the
//! transport's side of a client, an [`Exchange`].
//!
//! This module owns the shape of a request as the user builds it. It does not own sending:
//! `send` hands the written request to the transport's [`Exchange::send`], whose result is
//! the transport's own type (a `Result` on the blocking transport, a named future on tokio),
//! so `.send()?` and `.send().await?` both work with no trait imported and no allocation.

use std::fmt::Display;
use std::ops::{Deref, DerefMut};

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::http::{Method, Sending, WriteError};
use tickwire_codec::rest::{BodyWriter, Query, RequestBuilder, RequestWriter, WithHeaders};

use super::{BuildHttpClient, HttpClientBuilder, HttpClientError};

/// A transport's side of an HTTP client: what carries out a request once it is written (a
/// connection on the blocking transport, a handle on the pool on tokio). Implemented by the
/// transports; a user never calls it. A client dereferences to it: its inherent methods are
/// the transport's own (connecting, counters).
pub trait Exchange {
    /// The transport's marker, whose builder makes the client.
    type Marker;

    /// What sending a request gives: the response (or its error) on a blocking transport, a
    /// future of it on an async one. It may borrow the exchange and the request's buffer.
    type Sent<'c>
    where
        Self: 'c;

    /// Sends the request written in `wbuf` (complete: head and body) as `sending` says (its
    /// method, and whether it may be resent), and gives the transport's result. `wbuf` is
    /// left empty once the exchange is over.
    fn send<'c>(&'c mut self, wbuf: &'c mut WriteBuf, sending: Sending) -> Self::Sent<'c>;

    /// The result of a request that failed before anything was sent (a header or body that
    /// could not be written), in the transport's form.
    fn fail<'c>(&'c mut self, error: HttpClientError) -> Self::Sent<'c>;
}

/// An HTTP/1.1 client for one origin, on the transport whose side of it is `X` (each
/// transport names it `HttpClient`): its request writer (the origin's Host line and default
/// headers, serialised once), its write buffer, and the transport's [`Exchange`].
///
/// The request methods are here, written once; the transport's own methods (connecting,
/// counters) are `X`'s, which the client dereferences to, so `client.get(path)` and
/// `client.connections_opened()` both work with no trait imported.
#[derive(Debug)]
pub struct HttpClient<X> {
    writer: RequestWriter,
    wbuf: WriteBuf,
    /// The write buffer's initial capacity and headroom, for a clone's own buffer.
    write_buffer: (usize, usize),
    exchange: X,
}

impl<X: Exchange> HttpClient<X> {
    /// A client for `base_url` with the default options. The URL's path becomes the base path
    /// every request path is joined to. No connection is opened yet.
    pub fn new(base_url: &str) -> Result<Self, HttpClientError>
    where
        X::Marker: BuildHttpClient<Client = Self>,
    {
        Self::builder(base_url).build()
    }

    /// A builder for `base_url`.
    pub fn builder(base_url: &str) -> HttpClientBuilder<X::Marker>
    where
        X::Marker: BuildHttpClient<Client = Self>,
    {
        HttpClientBuilder::new(base_url)
    }

    /// A client whose requests `writer` writes into a buffer of `capacity` bytes with
    /// `headroom` in front, carried out by `exchange` (for a transport's
    /// [`BuildHttpClient::build`]).
    pub fn from_parts(
        writer: RequestWriter,
        (capacity, headroom): (usize, usize),
        exchange: X,
    ) -> Self {
        Self {
            writer,
            wbuf: WriteBuf::new(capacity, headroom),
            write_buffer: (capacity, headroom),
            exchange,
        }
    }

    /// Starts a request with any method.
    pub fn request(&mut self, method: Method, path: &str) -> ClientRequest<'_, Query, X> {
        // A request left by a send that did not finish (an async one dropped part-way) is
        // never sent: it goes here.
        self.wbuf.clear();
        let Self {
            writer,
            wbuf,
            exchange,
            ..
        } = self;
        ClientRequest {
            exchange,
            builder: writer.request(wbuf, method, path),
            sending: Sending::new(method),
        }
    }

    /// Starts a GET.
    pub fn get(&mut self, path: &str) -> ClientRequest<'_, Query, X> {
        self.request(Method::Get, path)
    }

    /// Starts a HEAD.
    pub fn head(&mut self, path: &str) -> ClientRequest<'_, Query, X> {
        self.request(Method::Head, path)
    }

    /// Starts a POST (never resent automatically, unless marked
    /// [`idempotent`](ClientRequest::idempotent)).
    pub fn post(&mut self, path: &str) -> ClientRequest<'_, Query, X> {
        self.request(Method::Post, path)
    }

    /// Starts a PUT.
    pub fn put(&mut self, path: &str) -> ClientRequest<'_, Query, X> {
        self.request(Method::Put, path)
    }

    /// Starts a PATCH (never resent automatically, unless marked
    /// [`idempotent`](ClientRequest::idempotent)).
    pub fn patch(&mut self, path: &str) -> ClientRequest<'_, Query, X> {
        self.request(Method::Patch, path)
    }

    /// Starts a DELETE.
    pub fn delete(&mut self, path: &str) -> ClientRequest<'_, Query, X> {
        self.request(Method::Delete, path)
    }

    /// Starts an OPTIONS.
    pub fn options(&mut self, path: &str) -> ClientRequest<'_, Query, X> {
        self.request(Method::Options, path)
    }
}

impl<X: Exchange + Clone> Clone for HttpClient<X> {
    /// Another handle on the same transport side (a pool's clones share it), with a write
    /// buffer of its own.
    fn clone(&self) -> Self {
        Self::from_parts(
            self.writer.clone(),
            self.write_buffer,
            self.exchange.clone(),
        )
    }
}

impl<X> Deref for HttpClient<X> {
    type Target = X;

    /// The transport's side of the client, whose methods are the transport's own.
    fn deref(&self) -> &X {
        &self.exchange
    }
}

impl<X> DerefMut for HttpClient<X> {
    fn deref_mut(&mut self) -> &mut X {
        &mut self.exchange
    }
}

/// A request under construction, written straight into the client's write buffer.
///
/// Query parameters come first (they belong to the request line), then headers, then one of
/// the `send` methods. A header that cannot be written (CR, LF or NUL in it) is reported by
/// `send`, and nothing is sent. `S` is the builder's stage ([`Query`], [`WithHeaders`]), `X`
/// the transport's [`Exchange`], which gives `send` its result.
#[must_use = "a request does nothing until it is sent"]
pub struct ClientRequest<'c, S, X> {
    exchange: &'c mut X,
    builder: Result<RequestBuilder<'c, S>, WriteError>,
    sending: Sending,
}

impl<'c, X> ClientRequest<'c, Query, X> {
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

impl<'c, S, X: Exchange> ClientRequest<'c, S, X> {
    /// Adds a header. Names must be tokens; values must not contain CR, LF or NUL.
    pub fn header(self, name: &str, value: impl AsRef<[u8]>) -> ClientRequest<'c, WithHeaders, X> {
        ClientRequest {
            exchange: self.exchange,
            builder: self.builder.and_then(|b| b.header(name, value.as_ref())),
            sending: self.sending,
        }
    }

    /// Adds a header formatted with `Display`, without allocating.
    pub fn header_display(
        self,
        name: &str,
        value: impl Display,
    ) -> ClientRequest<'c, WithHeaders, X> {
        ClientRequest {
            exchange: self.exchange,
            builder: self.builder.and_then(|b| b.header_display(name, value)),
            sending: self.sending,
        }
    }

    /// Sends the request without a body (`Content-Length: 0` for POST, PUT and PATCH):
    /// the response on a blocking client, a future of it on an async one.
    pub fn send(self) -> X::Sent<'c> {
        match self.builder {
            Ok(builder) => self.exchange.send(builder.finish_into().0, self.sending),
            Err(e) => self.exchange.fail(e.into()),
        }
    }

    /// Sends the request with `body`; Content-Length is computed.
    pub fn send_body(self, body: impl AsRef<[u8]>) -> X::Sent<'c> {
        match self.builder {
            Ok(builder) => (self.exchange).send(builder.body_into(body.as_ref()).0, self.sending),
            Err(e) => self.exchange.fail(e.into()),
        }
    }

    /// Sends the request with a body written by `write` straight into the wire buffer (for
    /// example `|w| serde_json::to_writer(w, &order)`); Content-Length is computed after.
    /// An error from `write` is [`HttpClientError::Body`], and nothing is sent.
    pub fn send_body_with<E>(
        self,
        write: impl FnOnce(&mut BodyWriter<'_>) -> Result<(), E>,
    ) -> X::Sent<'c>
    where
        E: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let written = self.builder.map(|builder| builder.body_with_into(write));
        match written {
            Ok(Ok((wbuf, _))) => self.exchange.send(wbuf, self.sending),
            Ok(Err(e)) => self.exchange.fail(HttpClientError::Body(e.into())),
            Err(e) => self.exchange.fail(e.into()),
        }
    }

    /// The request's method.
    pub fn method(&self) -> Method {
        self.sending.method
    }

    /// Marks the request idempotent: sending it twice does what sending it once does (a
    /// POST of an order carrying a client order id, which the exchange refuses as a
    /// duplicate). It may then be resent once, as a GET may, when a reused connection was
    /// closed before any byte of its answer, within the client's
    /// [`retry_budget`](super::HttpClientBuilder::retry_budget). An unmarked POST or PATCH
    /// is never resent.
    pub fn idempotent(mut self) -> Self {
        self.sending = self.sending.marked_idempotent();
        self
    }
}
