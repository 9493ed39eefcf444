//! [`HttpClient`] and its builder.

use std::time::Duration;

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::http::{ClientSession, Limits, Method, ResponseReader};
use tickwire_codec::rest::{BaseUrl, InvalidBaseUrl, Query, RequestWriter};

#[cfg(feature = "tls")]
use tickwire_tls::ClientTlsConfig;

use super::error::HttpClientError;
#[cfg(feature = "deflate")]
use super::gunzip::Gunzip;
use super::request::ClientRequest;
use super::session::{Options, Origin, Session};

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

    /// Starts a GET.
    pub fn get(&mut self, path: &str) -> ClientRequest<'_, Query> {
        self.request(Method::Get, path)
    }

    /// Starts a HEAD.
    pub fn head(&mut self, path: &str) -> ClientRequest<'_, Query> {
        self.request(Method::Head, path)
    }

    /// Starts a POST (never resent automatically).
    pub fn post(&mut self, path: &str) -> ClientRequest<'_, Query> {
        self.request(Method::Post, path)
    }

    /// Starts a PUT.
    pub fn put(&mut self, path: &str) -> ClientRequest<'_, Query> {
        self.request(Method::Put, path)
    }

    /// Starts a PATCH (never resent automatically).
    pub fn patch(&mut self, path: &str) -> ClientRequest<'_, Query> {
        self.request(Method::Patch, path)
    }

    /// Starts a DELETE.
    pub fn delete(&mut self, path: &str) -> ClientRequest<'_, Query> {
        self.request(Method::Delete, path)
    }

    /// Starts an OPTIONS.
    pub fn options(&mut self, path: &str) -> ClientRequest<'_, Query> {
        self.request(Method::Options, path)
    }

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
    options: Options,
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
            options: Options {
                connect_timeout: Some(Duration::from_secs(10)),
                read_timeout: Some(Duration::from_secs(30)),
                write_timeout: Some(Duration::from_secs(30)),
                request_deadline: Some(ClientSession::DEFAULT_REQUEST_DEADLINE),
                nodelay: true,
                #[cfg(feature = "tls")]
                tls: None,
            },
        }
    }

    /// A header sent with every request (an API key, `Accept`). Checked when building.
    pub fn default_header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.headers
            .push((name.to_owned(), value.as_ref().to_vec()));
        self
    }

    /// The `User-Agent` header (`None`: send none).
    pub fn user_agent(mut self, agent: Option<&str>) -> Self {
        self.user_agent = agent.map(str::to_owned);
        self
    }

    /// Response limits (head size, header count, body size, chunk framing).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Sends `Accept-Encoding: gzip` and inflates gzip bodies (bounded by the body limit)
    /// into a buffer the client reuses. Needs the `deflate` feature; without it no
    /// `Accept-Encoding` is sent and bodies come back as sent.
    #[cfg(feature = "deflate")]
    pub fn gzip(mut self, gzip: bool) -> Self {
        self.gzip = gzip;
        self
    }

    /// Initial read and write buffer sizes (they grow as needed, within the limits).
    pub fn buffer_sizes(mut self, read: usize, write: usize) -> Self {
        self.read_buffer = read;
        self.write_buffer = write;
        self
    }

    /// How long a keep-alive connection may sit idle before it is checked (one non-blocking
    /// `recv(MSG_PEEK)`) for a close by the server before the next request goes on it
    /// (default 500 ms). Back-to-back requests skip the check; `Duration::ZERO` checks before
    /// every reuse. The check keeps a request that may not be resent (a POST) from being
    /// written into a connection the server already closed while it was idle.
    pub fn probe_idle_after(mut self, idle: Duration) -> Self {
        self.probe_after = idle;
        self
    }

    /// TCP_NODELAY (default on).
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.options.nodelay = nodelay;
        self
    }

    /// Timeout of the TCP connect per resolved address, and of the TLS handshake.
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.connect_timeout = timeout;
        self
    }

    /// Longest wait for response bytes; on expiry the request fails with
    /// [`HttpClientError::is_timeout`] and the connection is dropped.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.read_timeout = timeout;
        self
    }

    /// Longest wait for the socket to accept request bytes.
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.write_timeout = timeout;
        self
    }

    /// The total time one request may take: connecting (when it needs a connection), writing
    /// the request and reading the response to the end of its body, an automatic resend
    /// included. The per-read timeout bounds one wait for bytes, so a server that sends a
    /// byte every few milliseconds would hold a request forever without this. On expiry the
    /// request fails with [`HttpClientError::DeadlineExceeded`] and its connection is dropped,
    /// never reused. `None` disables it (only the per-call timeouts remain).
    ///
    /// Default: on, 60 s ([`ClientSession::DEFAULT_REQUEST_DEADLINE`], which says why); set a
    /// tighter one for orders. Name resolution is not covered: it cannot be interrupted.
    pub fn request_deadline(mut self, deadline: Option<Duration>) -> Self {
        self.options.request_deadline = deadline;
        self
    }

    /// TLS configuration for `https://` (default: Mozilla's roots, session resumption).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: ClientTlsConfig) -> Self {
        self.options.tls = Some(config);
        self
    }

    /// Checks the URL and headers and makes the client; no connection is opened yet.
    pub fn build(self) -> Result<HttpClient, HttpClientError> {
        let url = BaseUrl::parse(&self.base_url)
            .map_err(|InvalidBaseUrl(reason)| HttpClientError::InvalidUrl(reason))?;
        #[cfg(not(feature = "tls"))]
        if url.secure {
            return Err(HttpClientError::UnsupportedScheme("https".into()));
        }
        #[cfg(feature = "deflate")]
        let gzip = self.gzip;
        #[cfg(not(feature = "deflate"))]
        let gzip = false;
        let headers = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice()));
        let writer = url.request_writer(self.user_agent.as_deref(), gzip, headers)?;
        let origin = Origin {
            secure: url.secure,
            host: url.host,
            port: url.port,
        };
        #[cfg(feature = "deflate")]
        let gunzip = self.gzip.then(|| Gunzip::new(self.limits.max_body_bytes));
        #[cfg(not(feature = "deflate"))]
        let gunzip = None;
        Ok(HttpClient {
            writer,
            wbuf: WriteBuf::new(self.write_buffer, 64),
            session: Session::new(
                origin,
                self.options,
                ResponseReader::new(self.limits),
                self.read_buffer,
                gunzip,
                self.probe_after,
            ),
        })
    }
}
