//! What an RPC session tells its user ([`Event`], [`Outcome`]) and its driver
//! ([`Transmit`], [`Absorbed`]), its refusals and its figures.

use core::fmt;
use std::time::Duration;

use super::ids::IdError;
use super::limits::LimitExceeded;
use crate::feed::{self, ConnId};

/// A request's handle: the id it went out with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Ticket(pub u64);

impl fmt::Display for Ticket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request {}", self.0)
    }
}

/// How a request ended. Each request made ends exactly once, in one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome<'a> {
    /// Its response.
    Response(&'a [u8]),
    /// Written, and no response came by its deadline. The exchange may have acted on it; a
    /// response that comes later is an [`Event::Late`].
    TimedOut,
    /// Never written: the exchange cannot have seen it, and it is safe to send again.
    NotSent(NotSent),
    /// Written, then its connection failed before a response came: the exchange may or may
    /// not have acted on it. Never sent again by the session; find out (an order's status by
    /// its client order id) before sending it again.
    OutcomeUnknown,
    /// Refused by a local limit before anything was done (the async handle's form of
    /// [`RpcSession::submit`](super::RpcSession::submit)'s error).
    Rejected(Rejected),
}

impl Outcome<'_> {
    /// Its name in the CLI's output: `response`, `timed_out`, `not_sent`,
    /// `outcome_unknown`, `rejected`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Response(_) => "response",
            Self::TimedOut => "timed_out",
            Self::NotSent(_) => "not_sent",
            Self::OutcomeUnknown => "outcome_unknown",
            Self::Rejected(_) => "rejected",
        }
    }

    /// The same outcome with the response copied: for a handle that outlives the message.
    pub fn into_owned(self) -> OwnedOutcome {
        match self {
            Self::Response(bytes) => OwnedOutcome::Response(bytes.to_vec()),
            Self::TimedOut => OwnedOutcome::TimedOut,
            Self::NotSent(why) => OwnedOutcome::NotSent(why),
            Self::OutcomeUnknown => OwnedOutcome::OutcomeUnknown,
            Self::Rejected(why) => OwnedOutcome::Rejected(why),
        }
    }
}

/// An [`Outcome`] that owns its response.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum OwnedOutcome {
    /// See [`Outcome::Response`].
    Response(Vec<u8>),
    /// See [`Outcome::TimedOut`].
    TimedOut,
    /// See [`Outcome::NotSent`].
    NotSent(NotSent),
    /// See [`Outcome::OutcomeUnknown`].
    OutcomeUnknown,
    /// See [`Outcome::Rejected`].
    Rejected(Rejected),
}

impl OwnedOutcome {
    /// The borrowed form.
    pub fn as_outcome(&self) -> Outcome<'_> {
        match self {
            Self::Response(bytes) => Outcome::Response(bytes),
            Self::TimedOut => Outcome::TimedOut,
            Self::NotSent(why) => Outcome::NotSent(*why),
            Self::OutcomeUnknown => Outcome::OutcomeUnknown,
            Self::Rejected(why) => Outcome::Rejected(why.clone()),
        }
    }
}

/// Why a request was never written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotSent {
    /// Its deadline passed while it waited (for a connection, the login, the in-flight cap
    /// or a rate limit).
    Deadline,
    /// With [`WhileDown::Fail`](super::WhileDown::Fail): the last ready connection went
    /// while it waited.
    Disconnected,
    /// The session ended while it waited.
    Ended,
    /// [`RpcSession::cancel`](super::RpcSession::cancel).
    Cancelled,
}

/// A request refused when it was made: nothing was sent, nothing charged.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejected {
    /// [`RpcConfig::max_queued`](super::RpcConfig::max_queued) requests already wait.
    QueueFull {
        /// The cap.
        max_queued: usize,
    },
    /// With [`WhileDown::Fail`](super::WhileDown::Fail): no connection is ready.
    NotReady,
    /// A rate limit: which, and how long until it would fit (with
    /// [`OverLimit::Refuse`](super::OverLimit::Refuse), or when it never fits).
    Limit(LimitExceeded),
    /// The session ended.
    Ended,
    /// The request's text could not carry an id (not a JSON object).
    Id(IdError),
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::QueueFull { max_queued } => {
                write!(f, "{max_queued} requests already wait to be sent")
            }
            Self::NotReady => f.write_str("no connection is ready for requests"),
            Self::Limit(limit) => limit.fmt(f),
            Self::Ended => f.write_str("the session ended"),
            Self::Id(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for Rejected {}

/// Why the login on a connection failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LoginFailure {
    /// Its response said no (the reason [`Login::accept`](super::Login::accept) gave): the
    /// session ends.
    Rejected(String),
    /// No response within [`Login::timeout`](super::Login::timeout): the connection is
    /// replaced.
    TimedOut,
    /// The login message could not carry an id: the session ends.
    Id(IdError),
}

/// Why an RPC session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RpcError {
    /// The exchange refused the login.
    LoginRejected {
        /// The connection it was sent on.
        conn: ConnId,
        /// What the exchange said.
        reason: String,
    },
    /// The login message could not carry an id.
    LoginId(IdError),
    /// The feed session under it ended.
    Feed(feed::FeedError),
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::LoginRejected { conn, reason } => write!(f, "{conn}: login refused: {reason}"),
            Self::LoginId(error) => write!(f, "login message: {error}"),
            Self::Feed(error) => error.fmt(f),
        }
    }
}

impl std::error::Error for RpcError {}

/// What happened, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event<'a> {
    /// A request ended.
    Resolved {
        /// Which.
        ticket: Ticket,
        /// How.
        outcome: Outcome<'a>,
        /// From its write to its response (with a response).
        rtt: Option<Duration>,
    },
    /// A message that answers no request: no id, or an id never issued.
    Pushed {
        /// Where it came from.
        conn: ConnId,
        /// The message.
        payload: &'a [u8],
    },
    /// A response to a request already resolved (it timed out, or was answered before).
    Late {
        /// The request.
        ticket: Ticket,
        /// Where it came from.
        conn: ConnId,
        /// The message.
        payload: &'a [u8],
    },
    /// Requests go out on `conn` from now (its login accepted, where there is one).
    Ready {
        /// The connection.
        conn: ConnId,
    },
    /// The login on `conn` failed.
    LoginFailed {
        /// The connection.
        conn: ConnId,
        /// Why.
        failure: LoginFailure,
    },
    /// What the feed session under it reported about its connections (connected, closed,
    /// reconnecting with the reason and delay, rate limited, ended, ...).
    Feed(feed::Event<'static>),
}

/// A message for the driver to write, from
/// [`RpcSession::poll_transmit`](super::RpcSession::poll_transmit). Once returned it counts
/// as written: if the driver cannot queue it on the connection, it says so at once with
/// [`RpcSession::unsend`](super::RpcSession::unsend).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit<'a> {
    /// The connection to write it on.
    pub conn: ConnId,
    /// Its request (or the connection's login).
    pub ticket: Ticket,
    /// The text message, its id in place.
    pub text: &'a str,
    /// Whether it is the connection's login.
    pub login: bool,
}

/// What a feed event was to the RPC session, when it is something for the user, from
/// [`RpcSession::absorb`](super::RpcSession::absorb): the driver turns it into an [`Event`]
/// with [`RpcSession::event`](super::RpcSession::event) and the message's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Absorbed {
    /// The response to `ticket`.
    Response {
        /// The request.
        ticket: Ticket,
        /// From its write.
        rtt: Duration,
    },
    /// A response to a request already resolved.
    Late {
        /// The request.
        ticket: Ticket,
        /// Where it came from.
        conn: ConnId,
    },
    /// A message answering no request.
    Pushed {
        /// Where it came from.
        conn: ConnId,
    },
    /// A connection event, passed on.
    Forward(feed::Event<'static>),
}

/// A snapshot of an RPC session's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RpcCounters {
    /// Requests accepted by `submit`.
    pub submitted: u64,
    /// Requests refused by `submit`.
    pub rejected: u64,
    /// Requests written.
    pub written: u64,
    /// Resolved with their response.
    pub responses: u64,
    /// Resolved [`Outcome::TimedOut`].
    pub timed_out: u64,
    /// Resolved [`Outcome::NotSent`].
    pub not_sent: u64,
    /// Resolved [`Outcome::OutcomeUnknown`].
    pub unknown: u64,
    /// Messages answering no request.
    pub pushed: u64,
    /// Responses to requests already resolved.
    pub late: u64,
    /// Logins accepted.
    pub logins: u64,
    /// Written, not resolved, now.
    pub in_flight: usize,
    /// Waiting to be written, now.
    pub queued: usize,
}
