//! [`HttpClient`] and its builder.

use std::time::Duration;

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::http::{ClientSession, Limits, Method, ResponseReader};
use tickwire_codec::rest::{Query, RequestWriter};

use super::HttpClientError;
#[cfg(feature = "deflate")]
use super::gunzip::Gunzip;
use super::request::ClientRequest;
use super::session::Session;
use tickwire_core::http::HttpSocketOptions;

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
#[derive(Debug)]
pub struct HttpClient {
    writer: RequestWriter,
    wbuf: WriteBuf,
    session: Session,
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

    /// Starts a request with any method.
    pub fn request(&mut self, method: Method, path: &str) -> ClientRequest<'_, Query> {
        let builder = self.writer.request(&mut self.wbuf, method, path);
        ClientRequest::new(&mut self.session, builder, method)
    }

    tickwire_core::__http_client_request_methods!(ClientRequest);

    /// Opens the connection now instead of on the first request (a warm-up before the first
    /// order). Does nothing when one is open.
    pub fn connect(&mut self) -> Result<(), HttpClientError> {
        self.session.connect()
    }

    /// How many connections this client has opened: 1 after any number of requests that
    /// reused the first one.
    pub fn connections_opened(&self) -> u64 {
        self.session.connections_opened()
    }

    /// True while a connection is open.
    pub fn is_connected(&self) -> bool {
        self.session.is_connected()
    }

    /// Closes the connection; the next request opens a new one.
    pub fn disconnect(&mut self) {
        self.session.disconnect();
    }
}

/// Options for an [`HttpClient`]. Defaults: TCP_NODELAY on, a 10 s connect timeout, 30 s read
/// and write timeouts, a 60 s total deadline per request
/// ([`request_deadline`](Self::request_deadline)), [`Limits::client`], no gzip, a
/// `User-Agent: tickwire/<version>` header.
#[derive(Debug)]
pub struct HttpClientBuilder {
    base_url: String,
    headers: Vec<(String, Vec<u8>)>,
    user_agent: Option<String>,
    limits: Limits,
    #[cfg(feature = "deflate")]
    gzip: bool,
    read_buffer: usize,
    write_buffer: usize,
    probe_after: Duration,
    socket: HttpSocketOptions,
}

impl HttpClientBuilder {
    fn new(base_url: &str) -> Self {
        Self {
            base_url: base_url.to_owned(),
            headers: Vec::new(),
            user_agent: Some(concat!("tickwire/", env!("CARGO_PKG_VERSION")).to_owned()),
            limits: Limits::client(),
            #[cfg(feature = "deflate")]
            gzip: false,
            read_buffer: 16 * 1024,
            write_buffer: 4 * 1024,
            probe_after: ClientSession::DEFAULT_PROBE_AFTER,
            socket: HttpSocketOptions::default(),
        }
    }

    tickwire_core::__http_client_builder_options!();

    /// Checks the URL and headers and makes the client; no connection is opened yet.
    pub fn build(self) -> Result<HttpClient, HttpClientError> {
        let (origin, writer) = self.origin_and_writer()?;
        #[cfg(feature = "deflate")]
        let gunzip = self.gzip.then(|| Gunzip::new(self.limits.max_body_bytes));
        #[cfg(not(feature = "deflate"))]
        let gunzip = None;
        Ok(HttpClient {
            writer,
            wbuf: WriteBuf::new(self.write_buffer, 64),
            session: Session::new(
                origin,
                self.socket,
                ResponseReader::new(self.limits),
                self.read_buffer,
                gunzip,
                self.probe_after,
            ),
        })
    }
}
