//! The HTTP client builder both transports share: [`HttpClientBuilder<T>`], generic over a
//! transport marker, with every setter written once, and the [`HttpClientOptions`] it fills.
//!
//! This module owns the options, their defaults and their documentation, and the check of
//! the base URL and default headers every `build` starts with
//! ([`HttpClientOptions::origin_and_writer`]). It does not own building a client: each
//! transport's marker implements [`BuildHttpClient`] (tickwire-blocking's `Blocking`,
//! tickwire-tokio's `Tokio`), and names the builder
//! `pub type HttpClientBuilder = tickwire_core::http::HttpClientBuilder<Marker>`, so users
//! call `HttpClient::builder(url).default_header(..).build()` without importing a trait.
//! Settings only a pooled client applies are setters of `impl<T: PooledHttpClient>`, so they
//! appear on the tokio builder only.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use tickwire_codec::http::{ClientSession, Limits};
use tickwire_codec::rest::{BaseUrl, Origin, RequestWriter};

use super::{HttpClientError, HttpSocketOptions};

/// Options for an HTTP client, as its builder collected them; read by a transport's
/// [`BuildHttpClient::build`]. Defaults: TCP_NODELAY on, a 10 s connect timeout, 30 s read
/// and write timeouts, a 60 s total deadline per request, [`Limits::client`], no gzip, a
/// `User-Agent: tickwire/<version>` header, a 16 KiB read and a 4 KiB write buffer, a probe
/// after 500 ms idle; for pooled clients at most 8 connections, idle ones closed after 30 s.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpClientOptions {
    /// The base URL every request path is joined to; checked by
    /// [`origin_and_writer`](Self::origin_and_writer).
    pub base_url: String,
    /// Headers sent with every request, in order, after `User-Agent`.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The `User-Agent` header (`None`: none).
    pub user_agent: Option<String>,
    /// Response limits.
    pub limits: Limits,
    /// Ask for gzip and inflate gzip bodies.
    #[cfg(feature = "deflate")]
    pub gzip: bool,
    /// Initial read buffer size, per connection.
    pub read_buffer: usize,
    /// Initial write buffer size, per client handle.
    pub write_buffer: usize,
    /// Idle time after which a connection is checked before reuse.
    pub probe_after: Duration,
    /// Socket, timeout and TLS options of each connection.
    pub socket: HttpSocketOptions,
    /// Pooled clients only (tickwire-tokio): the most connections open at once, at least 1.
    pub max_connections: usize,
    /// Pooled clients only (tickwire-tokio): how long an idle connection is kept.
    pub idle_timeout: Duration,
}

impl HttpClientOptions {
    /// The defaults, for `base_url`.
    pub fn new(base_url: &str) -> Self {
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
            max_connections: 8,
            idle_timeout: Duration::from_secs(30),
        }
    }

    /// Whether the client asks for gzip (always false without the `deflate` feature).
    pub fn gzip(&self) -> bool {
        let gzip = false;
        #[cfg(feature = "deflate")]
        let gzip = gzip || self.gzip;
        gzip
    }

    /// Where the client connects and the writer of its requests: the base URL checked
    /// ([`HttpClientError::InvalidUrl`], and `https://` refused without the `tls` feature
    /// as [`HttpClientError::UnsupportedScheme`]), the default headers in order after
    /// `User-Agent` and, when gzip is asked for, `Accept-Encoding`.
    pub fn origin_and_writer(&self) -> Result<(Origin, RequestWriter), HttpClientError> {
        let url = BaseUrl::parse(&self.base_url)
            .map_err(|invalid| HttpClientError::InvalidUrl(invalid.0))?;
        #[cfg(not(feature = "tls"))]
        if url.origin.secure {
            return Err(HttpClientError::UnsupportedScheme("https".into()));
        }
        let headers = self.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice()));
        let writer = url.request_writer(self.user_agent.as_deref(), self.gzip(), headers)?;
        Ok((url.origin, writer))
    }
}

/// A transport that can build an HTTP client from [`HttpClientOptions`]: implemented by each
/// transport's marker type, which users never name.
pub trait BuildHttpClient {
    /// The client built.
    type Client;

    /// Checks `options` (starting with
    /// [`origin_and_writer`](HttpClientOptions::origin_and_writer)) and makes the client; no
    /// connection is opened yet.
    fn build(options: HttpClientOptions) -> Result<Self::Client, HttpClientError>;
}

/// A transport whose client keeps a pool of connections, so the pool's setters
/// ([`max_connections`](HttpClientBuilder::max_connections),
/// [`idle_timeout`](HttpClientBuilder::idle_timeout)) apply to it.
pub trait PooledHttpClient: BuildHttpClient {}

/// The builder of an HTTP client on transport `T`; each transport names it
/// `HttpClientBuilder`. Defaults: those of [`HttpClientOptions`].
pub struct HttpClientBuilder<T> {
    options: HttpClientOptions,
    transport: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for HttpClientBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClientBuilder")
            .field("options", &self.options)
            .finish()
    }
}

impl<T: BuildHttpClient> HttpClientBuilder<T> {
    /// Checks the URL and headers and makes the client; no connection is opened yet.
    pub fn build(self) -> Result<T::Client, HttpClientError> {
        T::build(self.options)
    }
}

impl<T: PooledHttpClient> HttpClientBuilder<T> {
    /// The most connections open to the origin at once, idle, in use or being opened
    /// (default 8; at least 1). A request beyond it waits for one to come back.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.options.max_connections = max.max(1);
        self
    }

    /// How long an idle connection is kept before the pool closes it (default 30 s).
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.options.idle_timeout = idle;
        self
    }
}

impl<T> HttpClientBuilder<T> {
    /// A builder for `base_url` with the defaults; `HttpClient::builder` calls this.
    pub fn new(base_url: &str) -> Self {
        Self {
            options: HttpClientOptions::new(base_url),
            transport: PhantomData,
        }
    }

    /// The options set so far.
    pub fn options(&self) -> &HttpClientOptions {
        &self.options
    }

    /// A header sent with every request (an API key, `Accept`). Checked when building.
    pub fn default_header(mut self, name: &str, value: impl AsRef<[u8]>) -> Self {
        self.options
            .headers
            .push((name.to_owned(), value.as_ref().to_vec()));
        self
    }

    /// The `User-Agent` header (`None`: send none).
    pub fn user_agent(mut self, agent: Option<&str>) -> Self {
        self.options.user_agent = agent.map(str::to_owned);
        self
    }

    /// Response limits (head size, header count, body size, chunk framing).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.options.limits = limits;
        self
    }

    /// Sends `Accept-Encoding: gzip` and inflates gzip bodies (bounded by the body limit)
    /// into a reused buffer. Needs the `deflate` feature; without it no `Accept-Encoding`
    /// is sent and bodies come back as sent.
    #[cfg(feature = "deflate")]
    pub fn gzip(mut self, gzip: bool) -> Self {
        self.options.gzip = gzip;
        self
    }

    /// Initial read buffer size (per connection) and write buffer size (per client
    /// handle); both grow as needed, within the limits.
    pub fn buffer_sizes(mut self, read: usize, write: usize) -> Self {
        self.options.read_buffer = read;
        self.options.write_buffer = write;
        self
    }

    /// How long a keep-alive connection may sit idle before it is checked (one
    /// non-blocking `recv(MSG_PEEK)`) for a close by the server before the next request
    /// goes on it (default 500 ms). Back-to-back requests skip the check; `Duration::ZERO`
    /// checks before every reuse. The check keeps a request that may not be resent (a
    /// POST) from being written into a connection the server already closed while it was
    /// idle.
    pub fn probe_idle_after(mut self, idle: Duration) -> Self {
        self.options.probe_after = idle;
        self
    }

    /// TCP_NODELAY (default on).
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.options.socket.nodelay = nodelay;
        self
    }

    /// Timeout of the TCP connect per address attempted, and of the TLS handshake.
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.socket.connect_timeout = timeout;
        self
    }

    /// How each TCP connection is opened (see
    /// [`ConnectOptions`](crate::connect::ConnectOptions)).
    pub fn connect_options(mut self, options: crate::connect::ConnectOptions) -> Self {
        self.options.socket.connect = options;
        self
    }

    /// Longest wait for response bytes; on expiry the request fails with
    /// [`HttpClientError::is_timeout`] and the connection is closed, never reused.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.socket.read_timeout = timeout;
        self
    }

    /// Longest wait for the socket to accept request bytes.
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.socket.write_timeout = timeout;
        self
    }

    /// The total time one request may take: connecting (when it needs a connection; for a
    /// pooled client, waiting for one too), writing the request and reading the response
    /// to the end of its body, an automatic resend included. The per-read timeout bounds
    /// one wait for bytes, so a server that sends a byte every few milliseconds would hold
    /// a request forever without this. On expiry the request fails with
    /// [`HttpClientError::DeadlineExceeded`] and its connection is closed, never reused.
    /// `None` disables it (only the per-call timeouts remain).
    ///
    /// Default: on, 60 s ([`ClientSession::DEFAULT_REQUEST_DEADLINE`] says why); set a
    /// tighter one for orders. The blocking client cannot interrupt name resolution, so its
    /// deadline does not cover it; the async client's does.
    pub fn request_deadline(mut self, deadline: Option<Duration>) -> Self {
        self.options.socket.request_deadline = deadline;
        self
    }

    /// Bounds the automatic resends (of an idempotent request, or one marked
    /// [`idempotent`](super::ClientRequest::idempotent), on a reused connection the server
    /// closed before answering) by a [`RetryBudget`](tickwire_codec::http::RetryBudget),
    /// which several clients may share: a resend the budget refuses fails the request as it
    /// stood ([`HttpClientError::NoResponse`] or the socket's error). Default: none, every
    /// resend the rules allow (at most one per request).
    pub fn retry_budget(
        mut self,
        budget: Option<std::sync::Arc<tickwire_codec::http::RetryBudget>>,
    ) -> Self {
        self.options.socket.retry_budget = budget;
        self
    }

    /// TLS configuration for `https://` (default: Mozilla's roots, session resumption).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: crate::ClientTlsConfig) -> Self {
        self.options.socket.tls = Some(config);
        self
    }
}
