//! Request multiplexing over one connection, sans-IO, both sides: request ids, responses
//! matched out of order, caps, per-request timeouts, cancellation, and a circuit breaker for a
//! pool of connections.
//!
//! This module owns the bookkeeping of requests: which ids are in flight, which answer goes
//! to which request, when a request times out, what happens to the requests of a connection
//! that is lost. It works on request ids and payload lengths, never on bytes: the packet
//! framing (a header carrying the `u64` request id and the payload length) lives elsewhere,
//! and a transport glues the two together, reads no clock of its own here (time is passed
//! in) and never allocates per request (the tables are allocated once, at the caps).
//!
//! - [`Client`]: `begin` a request (an id to put in the header), `on_response` when a
//!   response header arrives, `cancel`, `poll_timeout` / `handle_timeout`, and `fail_all`
//!   when the connection goes away. Every begun request finishes exactly once: by its
//!   response, its deadline, a cancel, or `fail_all`; none ever receives another request's
//!   response.
//! - [`Server`]: `on_request` when a request header arrives, `respond` when its answer is
//!   queued, in any order; `reset` when the connection goes away.
//! - [`Breaker`]: a circuit breaker a pool consults before using a connection, given a
//!   [`Verdict`] per request; [`Reconnect`] and [`Backoff`]: when a pool's slot may try to
//!   connect again.
//!
//! # Example
//!
//! What a transport does around its packet reader and writer, both sides in one place:
//!
//! ```
//! use std::time::{Duration, Instant};
//! use tickwire_codec::mux::{Client, ClientConfig, Disconnect, Outcome, Response};
//! use tickwire_codec::mux::{Server, ServerConfig};
//!
//! let now = Instant::now();
//! let mut client = Client::new(ClientConfig::new());
//! let mut server = Server::new(ServerConfig::new());
//!
//! // Client: an id for the header of a 5-byte request that may wait 2 s for its answer.
//! let timeout = Some(Duration::from_secs(2));
//! let id = client.begin(now, 5, timeout, "order 1").map_err(|refused| refused.error)?;
//! // Server: the request header arrives; later its answer is queued.
//! server.on_request(id, 5)?;
//! server.respond(id)?;
//! // Client: the response header arrives, with a 3-byte payload behind it.
//! let Response::Completed(done) = client.on_response(id, 3, now)? else {
//!     panic!("a late answer: read and drop the payload");
//! };
//! assert_eq!(done.token, "order 1");
//!
//! // The transport's loop sleeps until `poll_timeout`, then runs the timers.
//! client.begin(now, 5, timeout, "order 2").map_err(|refused| refused.error)?;
//! let deadline = client.poll_timeout().expect("one deadline armed");
//! for expired in client.handle_timeout(deadline) {
//!     assert_eq!((expired.token, expired.outcome), ("order 2", Outcome::TimedOut));
//! }
//!
//! // The connection is lost: every request still in flight fails, once.
//! client.begin(now, 5, None, "order 3").map_err(|refused| refused.error)?;
//! for failed in client.fail_all(Disconnect::ConnectionLost) {
//!     assert_eq!(failed.token, "order 3");
//! }
//! server.reset();
//! # Ok::<(), tickwire_codec::mux::Error>(())
//! ```
//!
//! # Request ids
//!
//! A client's id packs the index of the request's slot (the low `b` bits, where
//! `b = ceil(log2(max_in_flight))`, at most 24) and the slot's generation (the high `64 - b`
//! bits: 54 at the default cap of 1 024, at least 40), which advances each time the slot is
//! reused. An id is therefore not issued again while a response to it could still arrive: a
//! late response carries an old generation and cannot reach the slot's new request. Freed
//! slots are reused oldest first, which spreads reuse over the table. A generation would wrap
//! only after 2^(64 - b) reuses of one slot (2^54 at the default cap: centuries at millions of
//! requests a second); past that, ids would repeat.
//!
//! **Id 0 is reserved**: a client never issues it (generations start at 1) and a server
//! refuses a request carrying it ([`Error::ReservedId`]). The framing may use 0 for packets
//! that are not requests.
//!
//! A response to an id whose request was cancelled or timed out is *late*: not the peer's
//! fault, dropped and counted ([`Response::Late`]). Each slot remembers which of its last 64
//! generations ended that way and were not yet answered, so a second answer to a request is
//! told apart ([`Error::DuplicateResponse`]). An answer to a generation older than that is
//! counted late, unchecked: it can no longer reach any request.
//!
//! # Caps and their defaults
//!
//! | cap | client ([`ClientConfig`]) | server ([`ServerConfig`]) | past it |
//! |---|---|---|---|
//! | requests in flight | 1 024 | 256 | client: [`Error::TooManyInFlight`] (back-pressure); server: [`Error::Busy`] |
//! | request payload | 16 MiB | 1 MiB | client: [`Error::RequestTooLarge`]; server: [`Error::IncomingRequestTooLarge`] |
//! | response payload | 16 MiB | – | [`Error::ResponseTooLarge`] |
//!
//! Each side allocates its table once, in `new`, sized by `max_in_flight`.
//!
//! # What an error means for the transport
//!
//! [`Error::fault`] says whose fault; [`Error::must_close`] says whether the connection can
//! carry on:
//!
//! - Peer violations ([`Fault::Peer`]: an unknown id, a duplicate response, a duplicate
//!   request, id 0) and payloads over a receive limit: close the connection, then
//!   [`Client::fail_all`] with [`Disconnect::Closed`] (or [`Server::reset`]).
//! - [`Error::TooManyInFlight`]: nothing was sent; wait for a request to finish, or use
//!   another connection. [`Error::Busy`] (server): answer the refused id "busy" at once.
//! - [`Error::RequestTooLarge`] and [`Error::NotInFlight`]: the caller's own mistake; nothing
//!   changed.
//! - [`Response::Late`] is not an error: drop the payload and carry on.
//!
//! # Timeouts
//!
//! Per-request deadlines sit in a binary min-heap indexed by slot, allocated at the cap:
//! arming and disarming are O(log n), the earliest deadline is O(1), which is what
//! [`Client::poll_timeout`] is asked on every turn of a transport's loop (a hashed wheel arms
//! in O(1) but must scan for its earliest deadline). A response that arrives after its
//! deadline but before [`Client::handle_timeout`] ran completes the request: the answer is
//! there.

mod breaker;
mod client;
pub(crate) mod deadlines;
mod error;
mod reconnect;
mod server;

#[cfg(test)]
mod breaker_tests;
#[cfg(test)]
mod tests;

use core::fmt;

pub use breaker::{Breaker, BreakerConfig, BreakerState, Permit, Rejected};
pub use client::{
    Client, ClientConfig, ClientStats, Completed, Expired, Failed, MAX_IN_FLIGHT, Outcome, Refused,
    Response,
};
pub use error::{Disconnect, Error, Fault};
pub use reconnect::{Backoff, Jitter, Reconnect, Verdict};
pub use server::{Server, ServerConfig, ServerStats};

/// A request id as it travels in the packet header. An open newtype: a server receives
/// whatever the peer sent. See the module docs for how a [`Client`] builds them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId(pub u64);

impl RequestId {
    /// Id 0: never issued by a [`Client`], refused by a [`Server`].
    pub const RESERVED: Self = Self(0);
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request {:#x}", self.0)
    }
}
