//! [`HttpClient`], a handle on one origin's pool, and the transport marker its builder is
//! built with (`Tokio`).

use crate::Tokio;
use std::sync::Arc;

use tickwire_core::http::{BuildHttpClient, HttpClientError, HttpClientOptions, PooledHttpClient};

use super::exchange::HttpPool;
use super::options::Options;
use super::pool::Shared;

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
/// - Redirects are reported ([`ClientResponse::is_redirect`](crate::ClientResponse::is_redirect)), not followed.
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
/// - A connection comes back to the pool when its [`ClientResponse`](crate::ClientResponse) is dropped.
///
/// # Cancel safety
///
/// Every future here may be dropped at any await point (a `select!` branch that lost, a
/// timeout around it). What that leaves:
///
/// | method | dropped before it completes |
/// |---|---|
/// | [`ClientRequest::send`](super::ClientRequest::send), [`send_body`](super::ClientRequest::send_body), [`send_body_with`](super::ClientRequest::send_body_with) (their [`ResponseFuture`](super::ResponseFuture)) | The request may be partly or wholly written, and its response partly read or not at all. The connection is closed, never returned to the pool (the codec's `ClientSession` records the request as started until its response completes, and refuses reuse until then), so no later request can receive this one's response. A replacement connection is opened in the background. A POST may or may not have reached the server: nothing is resent. The handle stays usable: its write buffer is cleared by the next request. |
/// | [`connect`](HttpPool::connect) | A connection being opened is closed and its place in the pool freed; nothing else changes. |
/// | a request waiting for a connection (the pool at its cap) | It leaves the queue; a connection returned meanwhile goes to the next waiter. |
///
/// A [`ClientResponse`](crate::ClientResponse) is complete when `send` returns it: reading it never awaits.
/// Dropping it returns the connection to the pool.
///
/// The request's total deadline ([`request_deadline`](HttpClientBuilder::request_deadline))
/// is this same drop, made by the client: the request fails with
/// [`HttpClientError::DeadlineExceeded`](tickwire_core::http::HttpClientError::DeadlineExceeded) and its
/// connection is closed.
///
/// Works on the current_thread and the multi_thread runtime: handles and futures are `Send`,
/// and the pool's lock is never held across an await.
///
/// The request methods ([`get`](tickwire_core::http::HttpClient::get), ...,
/// [`request`](tickwire_core::http::HttpClient::request)) are tickwire-core's, shared with
/// the blocking client; [`connect`](HttpPool::connect),
/// [`connections_opened`](HttpPool::connections_opened) and
/// [`idle_connections`](HttpPool::idle_connections) are this transport's, on the
/// [`HttpPool`] handle the client dereferences to.
pub type HttpClient = tickwire_core::http::HttpClient<HttpPool>;

impl HttpPool {
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

/// Options for an [`HttpClient`], the builder both transports share, with the pool's setters
/// ([`max_connections`](tickwire_core::http::HttpClientBuilder::max_connections),
/// [`idle_timeout`](tickwire_core::http::HttpClientBuilder::idle_timeout)). Defaults:
/// TCP_NODELAY on, a 10 s connect timeout, 30 s read and write timeouts, a 60 s total deadline
/// per request ([`request_deadline`](tickwire_core::http::HttpClientBuilder::request_deadline)),
/// at most 8 connections, idle connections closed after 30 s,
/// [`Limits::client`](tickwire_codec::http::Limits::client), no gzip, a
/// `User-Agent: tickwire/<version>` header: the blocking client's defaults, plus the pool's.
pub type HttpClientBuilder = tickwire_core::http::HttpClientBuilder<Tokio>;

impl BuildHttpClient for Tokio {
    type Client = HttpClient;

    fn build(options: HttpClientOptions) -> Result<HttpClient, HttpClientError> {
        let (origin, writer) = options.origin_and_writer()?;
        let write_buffer = options.write_buffer;
        let options = Options::from(options);
        let pool = HttpPool {
            shared: Arc::new(Shared::new(origin, options)),
        };
        Ok(HttpClient::from_parts(writer, (write_buffer, 0), pool))
    }
}

impl PooledHttpClient for Tokio {}
