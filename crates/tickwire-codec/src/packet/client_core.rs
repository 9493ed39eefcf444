//! [`ClientCore`]: what a packet client decides, for every transport: the glue between the
//! connection's [`Session`](super::Session) and its [`mux::Client`].
//!
//! It owns the meaning of what arrives for which request (a response, a busy refusal, a
//! pong, a passed deadline), the request deadlines (through the multiplexer), the rule that
//! a connection lost or closed fails every request in flight exactly once, and which
//! response was returned last. It owns no socket, no clock (`now` is passed in) and no
//! waiting: a transport reads and writes, turns each [`SessionEvent`](super::SessionEvent)
//! into an [`Incoming`] (adding [`Incoming::Deadline`] when the wait it was given by
//! [`poll_timeout`](ClientCore::poll_timeout) ends), and hands it to
//! [`handle`](ClientCore::handle).
//!
//! # Contract
//!
//! - [`begin`](ClientCore::begin) issues an id (or refuses with nothing changed); the
//!   transport then queues the packet and, if that fails, calls
//!   [`cancel`](ClientCore::cancel).
//! - [`handle`](ClientCore::handle) returns `Ok(Some(header))` for the response of a request
//!   in flight (remembered as [`last`](ClientCore::last)), `Ok(None)` to keep waiting (a
//!   pong, a late answer, a deadline with nothing expired), and `Err` for an outcome: a
//!   request's own ([`ClientFailure::TimedOut`], [`ClientFailure::Busy`]; the connection
//!   carries on) or a peer violation ([`ClientFailure::Close`]: every request in flight has
//!   been failed; the transport closes the connection).
//! - [`connection_lost`](ClientCore::connection_lost) after a fatal transport error.
//!
//! Every request begun ends in exactly one outcome: its response, its deadline, a busy
//! refusal, a cancel, or the connection's end. Nothing is ever resent.

use std::time::{Duration, Instant};

use super::{Header, Session, SessionEvent};
use crate::mux::{self, ClientConfig, Disconnect, RequestId, Response};

/// What a packet transport's wait found, for a [`ClientCore`] or a
/// [`ServerCore`](super::ServerCore) to decide on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Incoming {
    /// A packet on a request id (not 0): its payload is the session's until the next poll.
    Packet(Header),
    /// A "busy" control packet refusing this request.
    Busy(RequestId),
    /// The pong to the last ping: its deadline is disarmed.
    Pong,
    /// The deadline the transport was waiting for passed.
    Deadline,
}

impl Incoming {
    /// The session's event as an [`Incoming`]; `None` for
    /// [`SessionEvent::NeedMore`] (read more).
    pub fn from_event(event: SessionEvent) -> Option<Self> {
        match event {
            SessionEvent::Packet(header) => Some(Self::Packet(header)),
            SessionEvent::Busy(id) => Some(Self::Busy(RequestId(id))),
            SessionEvent::Pong => Some(Self::Pong),
            SessionEvent::NeedMore => None,
        }
    }
}

/// An outcome of [`ClientCore::handle`] other than a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientFailure {
    /// This request's deadline passed; it is finished, the connection carries on.
    TimedOut(RequestId),
    /// The server refused this request as busy; it is finished, the connection carries on.
    Busy(RequestId),
    /// The peer broke the multiplexing rules: every request in flight is failed, and the
    /// transport must close the connection.
    Close(mux::Error),
}

/// A core with requests in flight on one connection ([`ClientCore`], [`ServerCore`]): they
/// all end when the connection is lost.
///
/// [`ServerCore`]: super::ServerCore
pub trait InFlight {
    /// The connection failed or closed: every request in flight ends with it (a client's
    /// fail with [`Disconnect::ConnectionLost`], a server's are dropped unanswered).
    fn connection_lost(&mut self);
}

impl InFlight for ClientCore {
    fn connection_lost(&mut self) {
        ClientCore::connection_lost(self);
    }
}

/// A packet client's decisions over one connection. See the module docs.
#[derive(Debug)]
pub struct ClientCore {
    mux: mux::Client<()>,
    request_timeout: Option<Duration>,
    /// The header of the response last returned, whose payload the session still holds.
    last: Option<Header>,
}

impl ClientCore {
    /// A client with these multiplexer caps, each request given `request_timeout` (`None`:
    /// no deadline).
    pub fn new(config: ClientConfig, request_timeout: Option<Duration>) -> Self {
        Self {
            mux: mux::Client::new(config),
            request_timeout,
            last: None,
        }
    }

    /// A request of `len` payload bytes begins at `now`: its id, or the refusal (past the
    /// in-flight cap or the request size) with nothing changed.
    pub fn begin(&mut self, now: Instant, len: usize) -> Result<RequestId, mux::Error> {
        self.mux
            .begin(now, len, self.request_timeout, ())
            .map_err(|refused| refused.error)
    }

    /// Finishes a request in flight without an answer (a later answer is dropped as late).
    /// [`mux::Error::NotInFlight`] when it is not in flight.
    pub fn cancel(&mut self, id: RequestId) -> Result<(), mux::Error> {
        self.mux.cancel(id)
    }

    /// The earliest request deadline: how long a wait for responses may last.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.mux.poll_timeout()
    }

    /// Decides what `incoming`, found at `now` while waiting for responses, means. See the
    /// module docs. An answer already received wins over its deadline: transports read what
    /// arrived before they report [`Incoming::Deadline`].
    pub fn handle(
        &mut self,
        incoming: Incoming,
        now: Instant,
    ) -> Result<Option<Header>, ClientFailure> {
        let (id, len) = match incoming {
            Incoming::Pong => return Ok(None),
            Incoming::Deadline => {
                return match self.mux.handle_timeout(now).next() {
                    Some(expired) => Err(ClientFailure::TimedOut(expired.id)),
                    None => Ok(None),
                };
            }
            Incoming::Busy(id) => (id, 0),
            Incoming::Packet(header) => (RequestId(header.request_id), header.payload_len as usize),
        };
        match self.mux.on_response(id, len, now) {
            Ok(Response::Completed(_)) => match incoming {
                Incoming::Packet(header) => {
                    self.last = Some(header);
                    Ok(Some(header))
                }
                _ => Err(ClientFailure::Busy(id)),
            },
            Ok(_) => Ok(None),
            Err(error) => Err(self.close(error)),
        }
    }

    /// Decides what `incoming` means while a ping waits for its pong with nothing in flight:
    /// any answer is to an id this client never issued, a violation
    /// ([`ClientFailure::Close`]); anything else is `Ok` (keep waiting while the session
    /// awaits the pong).
    pub fn handle_while_pinging(&mut self, incoming: Incoming) -> Result<(), ClientFailure> {
        let id = match incoming {
            Incoming::Deadline | Incoming::Pong => return Ok(()),
            Incoming::Busy(id) => id,
            Incoming::Packet(header) => RequestId(header.request_id),
        };
        Err(self.close(mux::Error::UnknownId { id }))
    }

    /// The connection failed (a fatal transport error): every request in flight ends with
    /// it.
    pub fn connection_lost(&mut self) {
        for _ in self.mux.fail_all(Disconnect::ConnectionLost) {}
    }

    /// The header of the response [`handle`](Self::handle) returned last.
    pub fn last(&self) -> Option<Header> {
        self.last
    }

    /// The id and payload (held by `session`) of the response [`handle`](Self::handle)
    /// returned last; [`RequestId::RESERVED`] and an empty payload before the first.
    pub fn last_response<'s>(&self, session: &'s Session) -> (RequestId, &'s [u8]) {
        match self.last {
            Some(header) => (RequestId(header.request_id), session.payload(&header)),
            None => (RequestId::RESERVED, &[]),
        }
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.mux.in_flight()
    }

    /// The multiplexer's counters.
    pub fn stats(&self) -> mux::ClientStats {
        self.mux.stats()
    }

    /// A peer violation: every request in flight fails, the connection must close.
    fn close(&mut self, error: mux::Error) -> ClientFailure {
        for _ in self.mux.fail_all(Disconnect::Closed(error)) {}
        ClientFailure::Close(error)
    }
}
