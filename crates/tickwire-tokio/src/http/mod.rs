//! The async HTTP/1.1 client: keep-alive connections to one origin (`http://` or `https://`),
//! pooled for concurrent requests, on the same sans-IO codecs as the blocking
//! [`tickwire::HttpClient`].
//!
//! This module owns the I/O: connecting (through the crate's `net`, TLS included), writing a
//! request, reading its response under the per-read timeouts and the request's total deadline,
//! and the pool of warm connections. Every protocol decision is the codec's: requests are built
//! by [`RequestWriter`](tickwire_codec::rest::RequestWriter) straight into the handle's write
//! buffer, responses parsed by [`ResponseReader`](tickwire_codec::http::ResponseReader) in the
//! connection's read buffer, gzip bodies inflated by
//! [`GzipBody`](tickwire_codec::rest::GzipBody), and when a connection may be reused, must be
//! checked, or a failed request may be sent again is
//! [`ClientSession`](tickwire_codec::http::ClientSession)'s answer. Errors are the blocking
//! client's [`HttpClientError`](tickwire::HttpClientError): one set of variants for both.
//!
//! ```no_run
//! # async fn run() -> Result<(), tickwire::HttpClientError> {
//! use tickwire_tokio::HttpClient;
//!
//! let mut client = HttpClient::builder("https://api.example.com/api/v3")
//!     .default_header("X-API-Key", "secret")
//!     .build()?;
//! let response = client.get("/ticker").query("symbol", "BTC-USD").send().await?;
//! assert!(response.status().is_success());
//! println!("{}", String::from_utf8_lossy(response.body()));
//! // Concurrent requests: one handle per task, all sharing the pool.
//! let mut other = client.clone();
//! tokio::spawn(async move { other.get("/time").send().await.map(|r| r.status()) });
//! # Ok(()) }
//! ```
//!
//! # The pool
//!
//! Each [`HttpClient`] handle (cheap to clone, one per task) shares one pool per origin:
//!
//! - A request takes the most recently returned idle connection (LIFO: the warmest, whose
//!   congestion window and caches are hottest, and the least likely to have been closed by the
//!   server). Idle connections older than
//!   [`idle_timeout`](HttpClientBuilder::idle_timeout) are closed when the pool is next used.
//! - At most [`max_connections`](HttpClientBuilder::max_connections) connections exist at once
//!   (idle, in use or being opened); a request beyond that waits for one to come back, within
//!   its deadline.
//! - A connection lost while in use (an error, `Connection: close`, a request abandoned
//!   part-way) is replaced by a task spawned on the current runtime that opens a new one and
//!   puts it in the pool: the next request finds it warm instead of connecting. A request
//!   connects itself only when there is no idle connection and the cap allows one more.
//! - A connection comes back to the pool when its [`ClientResponse`] is dropped.
//!
//! # Cancel safety
//!
//! Every future here may be dropped at any await point (a `select!` branch that lost, a
//! timeout around it). What that leaves:
//!
//! | method | dropped before it completes |
//! |---|---|
//! | [`ClientRequest::send`], [`send_body`](ClientRequest::send_body), [`send_body_with`](ClientRequest::send_body_with) | The request may be partly or wholly written, and its response partly read or not at all. The connection is closed, never returned to the pool (the codec's `ClientSession` records the request as started until its response completes, and refuses reuse until then), so no later request can receive this one's response. A replacement connection is opened in the background. A POST may or may not have reached the server: nothing is resent. The handle stays usable: its write buffer is cleared by the next request. |
//! | [`HttpClient::connect`] | A connection being opened is closed and its place in the pool freed; nothing else changes. |
//! | a request waiting for a connection (the pool at its cap) | It leaves the queue; a connection returned meanwhile goes to the next waiter. |
//!
//! A [`ClientResponse`] is complete when `send` returns it: reading it never awaits.
//! Dropping it returns the connection to the pool.
//!
//! The request's total deadline ([`request_deadline`](HttpClientBuilder::request_deadline))
//! is this same drop, made by the client: the request fails with
//! [`HttpClientError::DeadlineExceeded`](tickwire::HttpClientError::DeadlineExceeded) and its
//! connection is closed.
//!
//! Works on the current_thread and the multi_thread runtime: handles and futures are `Send`,
//! and the pool's lock is never held across an await.

mod client;
mod conn;
mod pool;
mod request;
mod response;

pub use client::{HttpClient, HttpClientBuilder};
pub use request::ClientRequest;
pub use response::ClientResponse;
