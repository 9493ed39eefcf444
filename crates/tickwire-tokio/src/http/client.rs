//! [`HttpClient`], a handle on one origin's pool, and its builder.

use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant};

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::http::{ClientSession, Failure, Limits, Method};
use tickwire_codec::rest::Query;
use tickwire_core::http::{HttpClientError, HttpSocketOptions};

use super::conn::Attempt;
use super::pool::Shared;
use super::request::ClientRequest;
use super::response::ClientResponse;

/// An async HTTP/1.1 client for one origin (`http://` or `https://` host and port): a handle
/// on a pool of keep-alive connections (see [the pool](#the-pool) and, for what dropping
/// each future leaves, [cancel safety](#cancel-safety)).
///
/// A handle builds one request at a time into its own write buffer (`&mut self`, as the
/// blocking `tickwire_blocking::HttpClient`); for concurrent requests, [`clone`](Clone::clone) it,
/// one handle per task: clones share the pool, the options and the counters, and each has its
/// own buffer. A request allocates nothing once the buffers have grown to fit.
///
/// - A request takes the warmest idle connection; before reuse after an idle spell, one
///   non-blocking peek (`recv(MSG_PEEK)`) tells whether the server closed it. A request that
///   finds it closed anyway (a race with the server's idle timeout) is sent again on a fresh
///   connection when its method is idempotent; a POST or PATCH is never resent.
/// - Every request is bounded by one total deadline (connect, write, and read to the end of
///   the body) on top of the per-read and per-write timeouts; it is on by default. The reads'
///   and writes' timeouts and the deadline run on one timer thread the client starts on first
///   use, on the real clock rather than tokio's: an armed timeout does not make the runtime
///   park with a timeout, and pausing tokio's clock (`tokio::time::pause`) does not advance
///   them.
/// - Redirects are reported ([`ClientResponse::is_redirect`]), not followed.
///
/// ```no_run
/// # async fn run() -> Result<(), tickwire_core::http::HttpClientError> {
/// use tickwire_tokio::HttpClient;
///
/// let mut client = HttpClient::builder("https://api.example.com/api/v3")
///     .default_header("X-API-Key", "secret")
///     .build()?;
/// let response = client.get("/ticker").query("symbol", "BTC-USD").send().await?;
/// assert!(response.status().is_success());
/// println!("{}", String::from_utf8_lossy(response.body()));
/// // Concurrent requests: one handle per task, all sharing the pool.
/// let mut other = client.clone();
/// tokio::spawn(async move { other.get("/time").send().await.map(|r| r.status()) });
/// # Ok(()) }
/// ```
///
///
/// # The pool
///
/// Each handle (cheap to clone, one per task) shares one pool per origin:
///
/// - A request takes the most recently returned idle connection (LIFO: the warmest, whose
///   congestion window and caches are hottest, and the least likely to have been closed by the
///   server). Idle connections older than
///   [`idle_timeout`](HttpClientBuilder::idle_timeout) are closed when the pool is next used.
/// - At most [`max_connections`](HttpClientBuilder::max_connections) connections exist at once
///   (idle, in use or being opened); a request beyond that waits for one to come back, within
///   its deadline.
/// - A connection lost while in use (an error, `Connection: close`, a request abandoned
///   part-way) is replaced by a task spawned on the current runtime that opens a new one and
///   puts it in the pool: the next request finds it warm instead of connecting. A request
///   connects itself only when there is no idle connection and the cap allows one more.
/// - A connection comes back to the pool when its [`ClientResponse`] is dropped.
///
/// # Cancel safety
///
/// Every future here may be dropped at any await point (a `select!` branch that lost, a
/// timeout around it). What that leaves:
///
/// | method | dropped before it completes |
/// |---|---|
/// | [`ClientRequest::send`], [`send_body`](ClientRequest::send_body), [`send_body_with`](ClientRequest::send_body_with) | The request may be partly or wholly written, and its response partly read or not at all. The connection is closed, never returned to the pool (the codec's `ClientSession` records the request as started until its response completes, and refuses reuse until then), so no later request can receive this one's response. A replacement connection is opened in the background. A POST may or may not have reached the server: nothing is resent. The handle stays usable: its write buffer is cleared by the next request. |
/// | [`connect`](Self::connect) | A connection being opened is closed and its place in the pool freed; nothing else changes. |
/// | a request waiting for a connection (the pool at its cap) | It leaves the queue; a connection returned meanwhile goes to the next waiter. |
///
/// A [`ClientResponse`] is complete when `send` returns it: reading it never awaits.
/// Dropping it returns the connection to the pool.
///
/// The request's total deadline ([`request_deadline`](HttpClientBuilder::request_deadline))
/// is this same drop, made by the client: the request fails with
/// [`HttpClientError::DeadlineExceeded`](tickwire_core::http::HttpClientError::DeadlineExceeded) and its
/// connection is closed.
///
/// Works on the current_thread and the multi_thread runtime: handles and futures are `Send`,
/// and the pool's lock is never held across an await.
#[derive(Debug)]
pub struct HttpClient {
    shared: Arc<Shared>,
    wbuf: WriteBuf,
}

impl Clone for HttpClient {
    /// Another handle on the same pool, with a write buffer of its own.
    fn clone(&self) -> Self {
        Self {
            shared: Arc::clone(&self.shared),
            wbuf: WriteBuf::new(self.shared.options.write_buffer, 0),
        }
    }
}

impl HttpClient {
    /// A client for `base_url` with the default options. The URL's path becomes the base path
    /// every request path is joined to. No connection is opened yet.
    pub fn new(base_url: &str) -> Result<Self, HttpClientError> {
        Self::builder(base_url).build()
    }

    /// A builder for `base_url`.
    pub fn builder(base_url: &str) -> HttpClientBuilder {
        HttpClientBuilder::new(base_url)
    }

    /// Starts a request with any method.
    pub fn request(&mut self, method: Method, path: &str) -> ClientRequest<'_, Query> {
        // A send future dropped part-way leaves its request here: it is never sent.
        self.wbuf.clear();
        let Self { shared, wbuf } = self;
        let builder = shared.writer.request(wbuf, method, path);
        ClientRequest::new(shared, builder, method)
    }

    tickwire_core::__http_client_request_methods!(ClientRequest);

    /// Makes sure one warm connection waits in the pool (a warm-up before the first order):
    /// opens one unless an idle one is there, bounded by the connect timeout. With the pool at
    /// its cap, waits for a connection to come back.
    pub async fn connect(&self) -> Result<(), HttpClientError> {
        // The place goes back to the pool, with its connection, when dropped.
        self.shared.checkout().await.map(drop)
    }

    /// How many connections this client (all its handles, and the background reconnects)
    /// has opened: 1 after any number of sequential requests that reused the first one.
    pub fn connections_opened(&self) -> u64 {
        self.shared.connections_opened()
    }

    /// How many open connections wait in the pool now.
    pub fn idle_connections(&self) -> usize {
        self.shared.idle_connections()
    }
}

impl Shared {
    /// Sends the request in `wbuf` and reads its final response, all within the request's
    /// deadline. `wbuf` is empty afterwards, whatever the outcome.
    pub(crate) async fn execute(
        self: &Arc<Self>,
        wbuf: &mut WriteBuf,
        method: Method,
    ) -> Result<ClientResponse, HttpClientError> {
        let now = Instant::now();
        let deadline = (self.options.socket.request_deadline).map(|total| now + total);
        let result = self.exchange(wbuf.as_slice(), method, now, deadline).await;
        wbuf.clear();
        result
    }

    /// The request on a connection from the pool. The deadline bounds the wait for a pooled
    /// connection and the connect (with a timer of their own, only when they have to wait)
    /// and every write and read (the connection's timer). A request stopped by the deadline
    /// leaves its connection unusable, so the pool closes it (see `Checkout`).
    async fn exchange(
        self: &Arc<Self>,
        request: &[u8],
        method: Method,
        now: Instant,
        deadline: Option<Instant>,
    ) -> Result<ClientResponse, HttpClientError> {
        let socket = &self.options.socket;
        let mut place = match self.checkout_idle(now) {
            Some(place) => place,
            None => self.by_deadline(deadline, self.checkout()).await?,
        };
        let attempt = place
            .conn_mut()
            .attempt(request, method, socket, deadline)
            .await?;
        if let Attempt::ClosedBeforeResponse(e) = attempt {
            if !place
                .conn()
                .may_resend(method, Failure::ClosedBeforeResponse)
            {
                return Err(e);
            }
            self.by_deadline(deadline, place.reconnect()).await?;
            let retried = place
                .conn_mut()
                .attempt(request, method, socket, deadline)
                .await?;
            if let Attempt::ClosedBeforeResponse(e) = retried {
                return Err(e);
            }
        }
        place.conn_mut().decode_body()?;
        Ok(ClientResponse::new(place))
    }

    /// `step`, stopped at `deadline`. Polled once first: a step done at once (an idle pooled
    /// connection) makes no timer.
    async fn by_deadline<T>(
        &self,
        deadline: Option<Instant>,
        step: impl Future<Output = Result<T, HttpClientError>>,
    ) -> Result<T, HttpClientError> {
        let mut step = std::pin::pin!(step);
        let Some(deadline) = deadline else {
            return step.await;
        };
        if let Poll::Ready(done) =
            std::future::poll_fn(|cx| Poll::Ready(step.as_mut().poll(cx))).await
        {
            return done;
        }
        let total = self.options.socket.request_deadline.unwrap_or_default();
        tokio::time::timeout_at(deadline.into(), step)
            .await
            .unwrap_or(Err(HttpClientError::DeadlineExceeded { deadline: total }))
    }
}

/// Options fixed at build time, shared by every handle and connection: the blocking client's
/// socket options, and what the pool and each connection add.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) socket: HttpSocketOptions,
    pub(crate) limits: Limits,
    #[cfg(feature = "deflate")]
    pub(crate) gzip: bool,
    pub(crate) read_buffer: usize,
    pub(crate) write_buffer: usize,
    pub(crate) probe_after: Duration,
    pub(crate) max_connections: usize,
    pub(crate) idle_timeout: Duration,
}

/// Options for an [`HttpClient`]. Defaults: TCP_NODELAY on, a 10 s connect timeout, 30 s read
/// and write timeouts, a 60 s total deadline per request
/// ([`request_deadline`](Self::request_deadline)), at most 8 connections, idle connections
/// closed after 30 s, [`Limits::client`], no gzip, a `User-Agent: tickwire/<version>` header:
/// the blocking client's defaults, plus the pool's.
#[derive(Debug)]
#[non_exhaustive]
pub struct HttpClientBuilder {
    // From `base_url` to `socket`: the fields the shared setters and base-URL check name
    // (`tickwire_core::__http_client_builder_options`).
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
    max_connections: usize,
    idle_timeout: Duration,
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
            max_connections: 8,
            idle_timeout: Duration::from_secs(30),
        }
    }

    tickwire_core::__http_client_builder_options!();

    /// The most connections open to the origin at once, idle, in use or being opened
    /// (default 8; at least 1). A request beyond it waits for one to come back.
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }

    /// How long an idle connection is kept before the pool closes it (default 30 s).
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// Checks the URL and headers and makes the client; no connection is opened yet.
    pub fn build(self) -> Result<HttpClient, HttpClientError> {
        let (origin, writer) = self.origin_and_writer()?;
        let options = Options {
            socket: self.socket,
            limits: self.limits,
            #[cfg(feature = "deflate")]
            gzip: self.gzip,
            read_buffer: self.read_buffer,
            write_buffer: self.write_buffer,
            probe_after: self.probe_after,
            max_connections: self.max_connections,
            idle_timeout: self.idle_timeout,
        };
        Ok(HttpClient {
            shared: Arc::new(Shared::new(writer, origin, options)),
            wbuf: WriteBuf::new(self.write_buffer, 0),
        })
    }
}
