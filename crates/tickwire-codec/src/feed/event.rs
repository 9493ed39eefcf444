//! What a feed session tells its driver ([`Action`]) and its user ([`Event`]), what the driver
//! tells the session ([`Disconnect`], [`RecvStamp`]), and the session's errors and figures.

use core::fmt;
use std::time::{Duration, Instant};

/// The most connections one session keeps, the rotation's spare included: redundancy up to
/// `MAX_CONNECTIONS - 1`.
pub const MAX_CONNECTIONS: usize = 8;

/// A connection slot of a session: `0..connections` for the redundant set, one more for the
/// make-before-break spare. A slot keeps its id across reconnects; after a rotation the new
/// connection keeps the spare's id and the old slot becomes the spare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(pub u8);

impl ConnId {
    /// The slot's index, for a driver's array of sockets.
    pub const fn index(self) -> usize {
        self.0 as usize
    }
}

impl fmt::Display for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "conn {}", self.0)
    }
}

/// A sequence key interned by the session (its bytes: `FeedSession::key_bytes`). Ids are
/// dense, from 0, in order of first appearance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KeyId(pub u32);

/// When a message's last byte was read, as the driver measured it; the session passes it
/// through untouched (it reads its own notion of time only from the `now` of each call).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RecvStamp {
    /// Monotonic nanoseconds (the driver's clock) at the read that completed the message.
    pub recv_ns: u64,
    /// Wall-clock nanoseconds since the Unix epoch at the same read.
    pub wall_ns: u64,
    /// The kernel's receive time of the segment that completed the message, where taken.
    pub kernel_ns: Option<u64>,
}

/// What the driver does next, from [`FeedSession::poll_action`](super::FeedSession::poll_action).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Open a WebSocket connection for `conn` to `endpoint` (an index into
    /// [`FeedConfig::endpoints`](super::FeedConfig::endpoints)), then report
    /// [`on_open`](super::FeedSession::on_open) or
    /// [`on_connect_failed`](super::FeedSession::on_connect_failed). `attempt` counts from 1
    /// since the slot's last stable connection.
    Connect {
        /// The slot.
        conn: ConnId,
        /// Index into the configured endpoints.
        endpoint: usize,
        /// Consecutive attempt number, from 1.
        attempt: u32,
    },
    /// Send `text` as one text message on `conn`. The session already charged it to the
    /// connection's send quota.
    Send {
        /// The slot.
        conn: ConnId,
        /// The message.
        text: String,
    },
    /// Close `conn`: with a close frame carrying `code` (1000 after a rotation or on
    /// [`close`](super::FeedSession::close)), or, with `None`, drop the socket at once (a
    /// stale or timed-out connection). The session already counts the connection as gone and
    /// does not expect an [`on_closed`](super::FeedSession::on_closed) for it.
    Close {
        /// The slot.
        conn: ConnId,
        /// The close code to send, or `None` to drop the socket.
        code: Option<u16>,
    },
}

/// How a connection or an attempt ended, as the driver saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Disconnect {
    /// The peer closed with a close frame (its code, if it sent one).
    Closed(Option<u16>),
    /// End of stream without a close frame (a FIN).
    Eof,
    /// The connection was reset or failed with an I/O error.
    Reset,
    /// The opening handshake was answered with this HTTP status (429, 503, ...).
    HandshakeStatus(u16),
    /// DNS, TCP or TLS failed before the handshake was answered.
    ConnectFailed,
    /// The driver's own deadline (connect, handshake, WebSocket pong) passed.
    TimedOut,
    /// A protocol error on the WebSocket connection (the close code the codec sent).
    Protocol(u16),
}

/// Why a connection is being replaced: carried by [`Event::Closed`] and
/// [`Event::Reconnecting`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReconnectReason {
    /// What the driver reported.
    Disconnect(Disconnect),
    /// Not open within [`FeedConfig::connect_timeout`](super::FeedConfig::connect_timeout).
    ConnectTimeout,
    /// No data message for [`FeedConfig::stale_after`](super::FeedConfig::stale_after).
    Stale,
    /// No reply to an application heartbeat within its deadline.
    HeartbeatTimeout,
    /// The subscriptions were not all acknowledged within the deadline.
    AckTimeout,
    /// The login of a session on top (order entry) had no response within its timeout
    /// ([`FeedSession::replace`](super::FeedSession::replace)).
    LoginTimeout,
}

/// Which quota made a send or a connect wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Limited {
    /// The connection's send quota.
    Send,
    /// The connect budget (attempts per window).
    Connect,
}

/// A delivered message: the payload with what the session knows about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery<'a> {
    /// The connection it arrived on first.
    pub conn: ConnId,
    /// Its sequence key, when the extractor found one (and the key table had room).
    pub key: Option<KeyId>,
    /// Its sequence number, when the extractor found one.
    pub seq: Option<u64>,
    /// When it was read, as the driver reported.
    pub stamp: RecvStamp,
    /// The message as received.
    pub payload: &'a [u8],
}

/// What happened, from [`FeedSession::poll_event`](super::FeedSession::poll_event), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Event<'a> {
    /// `conn` is open (attempt `attempt` since its last stable connection, to `endpoint`).
    Connected {
        /// The slot.
        conn: ConnId,
        /// Consecutive attempt number, from 1.
        attempt: u32,
        /// Index into the configured endpoints.
        endpoint: usize,
    },
    /// `conn` sent its login and subscriptions (and, with an acknowledgement matcher, each
    /// was acknowledged).
    Subscribed {
        /// The slot.
        conn: ConnId,
    },
    /// A data message, delivered once.
    Message(Delivery<'a>),
    /// The numbers `from..=to` of `key` were missed by every connection: reported once.
    Gap {
        /// The key.
        key: KeyId,
        /// First missing number.
        from: u64,
        /// Last missing number.
        to: u64,
    },
    /// With [`FeedConfig::resync_on_gap`](super::FeedConfig::resync_on_gap): the user's cue
    /// to fetch a snapshot of `key` (after the [`Gap`](Self::Gap) it follows).
    Resync {
        /// The key.
        key: KeyId,
    },
    /// `conn` delivered no data message for `silent_for`: it is dropped and replaced.
    Stale {
        /// The slot.
        conn: ConnId,
        /// Time since its last data message (or since it opened).
        silent_for: Duration,
    },
    /// `conn` ended (an [`Event::Reconnecting`] follows unless the session ended).
    Closed {
        /// The slot.
        conn: ConnId,
        /// Why.
        reason: ReconnectReason,
    },
    /// `conn` connects again after `delay`.
    Reconnecting {
        /// The slot.
        conn: ConnId,
        /// Why the connection is replaced.
        reason: ReconnectReason,
        /// The back-off wait before the attempt (the connect budget may add to it).
        delay: Duration,
    },
    /// A send or connect of `conn` waits `wait` for its quota.
    RateLimited {
        /// The slot.
        conn: ConnId,
        /// Which quota.
        limited: Limited,
        /// How long, from now.
        wait: Duration,
    },
    /// `to` took over from `from` (make-before-break), which is closed with 1000.
    Rotated {
        /// The retired slot.
        from: ConnId,
        /// The slot that replaces it.
        to: ConnId,
    },
    /// A new key arrived while the key table was full: it and every further new key are
    /// delivered without a key, unsequenced (reported once).
    KeyLimit {
        /// The configured bound.
        max_keys: usize,
    },
    /// The session is over: nothing more happens.
    Ended(FeedError),
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum FeedError {
    /// `conn` failed `attempts` times in a row, past
    /// [`ReconnectPolicy::max_attempts`](super::ReconnectPolicy::max_attempts).
    AttemptsExhausted {
        /// The slot.
        conn: ConnId,
        /// Consecutive failed attempts.
        attempts: u32,
        /// The last failure.
        last: ReconnectReason,
    },
    /// The user called [`close`](super::FeedSession::close).
    Closed,
}

impl fmt::Display for FeedError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::AttemptsExhausted {
                conn,
                attempts,
                last,
            } => write!(
                f,
                "{conn}: {attempts} connection attempts failed in a row (last: {last:?})"
            ),
            Self::Closed => f.write_str("feed session closed"),
        }
    }
}

impl std::error::Error for FeedError {}

/// What a received message was to the session, from
/// [`on_message`](super::FeedSession::on_message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Disposition {
    /// A data message to hand over: it is queued as [`Event::Message`], to be taken with
    /// `poll_event(payload)`.
    Deliver,
    /// Ahead of a hole another connection may still fill: copied and held, delivered later.
    Held,
    /// A number already delivered (or held): dropped and counted.
    Duplicate,
    /// A heartbeat reply, an acknowledgement or a server ping (answered): consumed.
    Control,
    /// Not accepted: the connection is not open, or the session ended.
    Ignored,
}

/// A send refused by [`try_send`](super::FeedSession::try_send).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SendError {
    /// Over the quota: nothing was charged; the send would conform after `retry_after`.
    RateLimited {
        /// How long to wait.
        retry_after: Duration,
    },
    /// The weight exceeds the quota's burst: it can never be sent.
    WeightOverBurst {
        /// The weight asked.
        weight: u32,
        /// The quota's burst.
        burst: u32,
    },
    /// The connection is not open.
    NotOpen,
}

impl fmt::Display for SendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::RateLimited { retry_after } => {
                write!(f, "send quota exhausted: retry after {retry_after:?}")
            }
            Self::WeightOverBurst { weight, burst } => {
                write!(
                    f,
                    "a send of weight {weight} exceeds the quota's burst of {burst}"
                )
            }
            Self::NotOpen => f.write_str("the connection is not open"),
        }
    }
}

impl std::error::Error for SendError {}

/// A connection slot's state in [`ConnFigures`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ConnState {
    /// Unused (the spare between rotations).
    #[default]
    Spare,
    /// Waiting for its back-off (or the connect budget) before an attempt.
    Waiting,
    /// Connecting (TCP, TLS, handshake).
    Connecting,
    /// Open, subscriptions sent but not all acknowledged.
    Subscribing,
    /// Open and subscribed.
    Live,
}

/// One slot's figures in a [`Counters`] snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConnFigures {
    /// Its state.
    pub state: ConnState,
    /// Data messages received (delivered, held or dropped as duplicates).
    pub messages: u64,
    /// Messages it delivered first.
    pub first_arrivals: u64,
    /// Its messages dropped because another connection (or itself) delivered the number.
    pub duplicates: u64,
    /// How far behind the first arrival its last copy of a delivered number came.
    pub lag: Option<Duration>,
    /// Time since its last data message, while open.
    pub last_message_age: Option<Duration>,
    /// Times it was replaced.
    pub reconnects: u64,
}

/// A snapshot of a session's counters, from [`counters`](super::FeedSession::counters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Counters {
    /// Data messages received on every connection.
    pub messages: u64,
    /// Messages delivered to the user.
    pub delivered: u64,
    /// Gap events.
    pub gaps: u64,
    /// Numbers inside gap events.
    pub missing: u64,
    /// Messages dropped as duplicates.
    pub duplicates: u64,
    /// Connections replaced.
    pub reconnects: u64,
    /// Keys interned.
    pub keys: usize,
    /// Messages held ahead of a hole right now.
    pub held: usize,
    /// Per slot, `0..slots`.
    pub connections: [ConnFigures; MAX_CONNECTIONS],
    /// How many entries of `connections` are slots of this session.
    pub slots: usize,
}

impl Counters {
    /// The figures of the session's slots.
    pub fn connections(&self) -> &[ConnFigures] {
        &self.connections[..self.slots]
    }
}

pub(super) fn age(now: Instant, since: Instant) -> Duration {
    now.saturating_duration_since(since)
}
