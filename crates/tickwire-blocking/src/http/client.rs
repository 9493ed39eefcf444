//! [`HttpClient`] and its builder.

use std::ops::{Deref, DerefMut};

use crate::Blocking;
use tickwire_codec::buf::WriteBuf;
use tickwire_codec::http::ResponseReader;

use super::HttpClientError;
#[cfg(feature = "deflate")]
use super::gunzip::Gunzip;
use super::session::HttpConnection;
use tickwire_core::http::{BuildHttpClient, HttpClientOptions, Requests};

/// A blocking HTTP/1.1 client for one origin (`http://` or `https://` host and port) over one
/// keep-alive connection.
///
/// - The connection opens on the first request and is reused while the server keeps it.
///   Before reuse, one non-blocking peek tells whether the server closed it while idle; a
///   request that finds it closed anyway (a race with the server's idle timeout) is sent again
///   on a fresh connection when its method is idempotent. A POST or PATCH is never resent.
/// - Responses are borrowed: a [`ClientResponse`](super::ClientResponse) lives until the next
///   request on this client. With a Content-Length body, a request and its response allocate
///   nothing once the buffers have grown to fit.
/// - Every request is bounded by one total deadline (connect, write, and read to the end of
///   the body) on top of the per-read and per-write timeouts: on by default, 60 s
///   ([`HttpClientBuilder::request_deadline`]); on expiry the request fails with
///   [`HttpClientError::DeadlineExceeded`] and its connection is dropped.
/// - Redirects are reported ([`is_redirect`](super::ClientResponse::is_redirect)), not
///   followed.
///
/// The request methods ([`get`](Requests::get), [`post`](Requests::post), ...,
/// [`request`](Requests::request)) are the shared [`Requests`] the client dereferences to.
#[derive(Debug)]
pub struct HttpClient {
    requests: Requests<HttpConnection>,
}

impl Deref for HttpClient {
    type Target = Requests<HttpConnection>;

    fn deref(&self) -> &Self::Target {
        &self.requests
    }
}

impl DerefMut for HttpClient {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.requests
    }
}

impl HttpClient {
    /// A client for `base_url` with the default options. The URL's path becomes the base path
    /// every request path is joined to.
    pub fn new(base_url: &str) -> Result<Self, HttpClientError> {
        Self::builder(base_url).build()
    }

    /// A builder for `base_url`.
    pub fn builder(base_url: &str) -> HttpClientBuilder {
        HttpClientBuilder::new(base_url)
    }

    /// Opens the connection now instead of on the first request (a warm-up before the first
    /// order). Does nothing when one is open.
    pub fn connect(&mut self) -> Result<(), HttpClientError> {
        self.requests.exchange_mut().connect()
    }

    /// How many connections this client has opened: 1 after any number of requests that
    /// reused the first one.
    pub fn connections_opened(&self) -> u64 {
        self.requests.exchange().connections_opened()
    }

    /// True while a connection is open.
    pub fn is_connected(&self) -> bool {
        self.requests.exchange().is_connected()
    }

    /// Closes the connection; the next request opens a new one.
    pub fn disconnect(&mut self) {
        self.requests.exchange_mut().disconnect();
    }
}

/// Options for an [`HttpClient`], the builder both transports share. Defaults: TCP_NODELAY
/// on, a 10 s connect timeout, 30 s read and write timeouts, a 60 s total deadline per request
/// ([`request_deadline`](tickwire_core::http::HttpClientBuilder::request_deadline)),
/// [`Limits::client`](tickwire_codec::http::Limits::client), no gzip, a
/// `User-Agent: tickwire/<version>` header.
pub type HttpClientBuilder = tickwire_core::http::HttpClientBuilder<Blocking>;

impl BuildHttpClient for Blocking {
    type Client = HttpClient;

    fn build(options: HttpClientOptions) -> Result<HttpClient, HttpClientError> {
        let (origin, writer) = options.origin_and_writer()?;
        #[cfg(feature = "deflate")]
        let gunzip = options
            .gzip()
            .then(|| Gunzip::new(options.limits.max_body_bytes));
        #[cfg(not(feature = "deflate"))]
        let gunzip = None;
        let connection = HttpConnection::new(
            origin,
            options.socket,
            ResponseReader::new(options.limits),
            options.read_buffer,
            gunzip,
            options.probe_after,
        );
        let wbuf = WriteBuf::new(options.write_buffer, 64);
        Ok(HttpClient {
            requests: Requests::new(writer, wbuf, connection),
        })
    }
}
