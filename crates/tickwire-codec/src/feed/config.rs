//! A feed session's configuration: [`FeedConfig`] and the policies it holds.

use core::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::limits::{ConnectBudget, SendQuota};
use crate::mux::Backoff;

/// Finds a message's sequence key and number (`None`: the message carries none, and is
/// delivered unsequenced). The key borrows from the message.
pub type SequenceFn = dyn for<'a> Fn(&'a [u8]) -> Option<(&'a [u8], u64)> + Send + Sync;
/// A predicate on a received message (an acknowledgement, a heartbeat reply).
pub type MatchFn = dyn Fn(&[u8]) -> bool + Send + Sync;
/// Builds the messages that subscribe to (or unsubscribe from) the given topics.
pub type BuildFn = dyn Fn(&[String], &mut Vec<String>) + Send + Sync;
/// Answers a server's application ping: returns the reply for a message that is one,
/// `None` for any other message.
pub type ReplyFn = dyn Fn(&[u8]) -> Option<String> + Send + Sync;

/// How a connection slot reconnects: [`Backoff`] grown by `factor` with full jitter (a wait
/// drawn uniformly between `backoff.initial` and the ceiling), reset once a connection
/// stayed up `stable_after`, and a cap on failed attempts in a row.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct ReconnectPolicy {
    /// The shortest and the longest wait. Default 100 ms to 30 s.
    pub backoff: Backoff,
    /// How much the ceiling grows per failure in a row. Default 2.
    pub factor: f64,
    /// A connection that stayed up this long resets the back-off and the attempt count.
    /// Default 30 s.
    pub stable_after: Duration,
    /// Failed attempts in a row after which the session ends with
    /// [`FeedError::AttemptsExhausted`](super::FeedError::AttemptsExhausted); `None`: never.
    /// A rotation's new connection is not capped (the old one still serves). Default `None`.
    pub max_attempts: Option<u32>,
}

impl ReconnectPolicy {
    /// The defaults above.
    pub fn new() -> Self {
        Self::default()
    }

    with_methods! {
        set with_backoff => backoff: Backoff,
        set with_factor => factor: f64,
        set with_stable_after => stable_after: Duration,
        set with_max_attempts => max_attempts: Option<u32>,
    }
}

impl Default for ReconnectPolicy {
    fn default() -> Self {
        Self {
            backoff: Backoff {
                initial: Duration::from_millis(100),
                max: Duration::from_secs(30),
            },
            factor: 2.0,
            stable_after: Duration::from_secs(30),
            max_attempts: None,
        }
    }
}

/// An application heartbeat: send `text` once nothing was received for `after_quiet`, and
/// expect a message `reply` recognises within `deadline` (OKX: `ping` / `pong`).
#[derive(Clone)]
pub struct Heartbeat {
    /// What to send.
    pub text: String,
    /// Quiet time (nothing received) before it is sent.
    pub after_quiet: Duration,
    /// Recognises the reply (which is consumed, not delivered).
    pub reply: Arc<MatchFn>,
    /// How long the reply may take before the connection is replaced.
    pub deadline: Duration,
}

impl fmt::Debug for Heartbeat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Heartbeat")
            .field("text", &self.text)
            .field("after_quiet", &self.after_quiet)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// A feed session's configuration. Every field has a documented default; build it with
/// [`FeedConfig::new`] and the `with_*` methods.
#[derive(Clone)]
#[non_exhaustive]
pub struct FeedConfig {
    /// The endpoints (URLs, for the driver); slot `i` connects to `endpoints[i % len]`, the
    /// rotation's spare to the endpoint of the slot it replaces. At least one.
    pub endpoints: Vec<String>,
    /// Redundant connections, merged by sequence: 1 to `MAX_CONNECTIONS - 1`. Default 1.
    pub connections: usize,
    /// Reconnect back-off and cap.
    pub reconnect: ReconnectPolicy,
    /// Connect attempts allowed, shared with other sessions. Default: none.
    pub connect_budget: Option<Arc<ConnectBudget>>,
    /// From `Action::Connect` to `on_open`; past it the attempt counts as failed. Default 10 s.
    pub connect_timeout: Duration,
    /// Sent first after each connect. Default none.
    pub login: Option<String>,
    /// The subscription set at start (changed live with `subscribe` / `unsubscribe`).
    pub subscriptions: Vec<String>,
    /// Builds subscribe messages from topics. Default: each topic is its own message.
    pub subscribe_with: Option<Arc<BuildFn>>,
    /// Builds unsubscribe messages. Default: none (a removed topic is left out of later
    /// resubscriptions only).
    pub unsubscribe_with: Option<Arc<BuildFn>>,
    /// Recognises an acknowledgement (consumed, one per subscribe message). Default none:
    /// a connection counts as subscribed once its messages are sent.
    pub ack: Option<Arc<MatchFn>>,
    /// How long the acknowledgements may take after the connect. Default 10 s.
    pub ack_timeout: Duration,
    /// No data message for this long: the connection is stale and replaced, whatever
    /// WebSocket pongs or heartbeat replies say. Default none.
    pub stale_after: Option<Duration>,
    /// Application heartbeat. Default none.
    pub heartbeat: Option<Heartbeat>,
    /// Answers the server's application pings (consumed). Default none.
    pub answer_ping: Option<Arc<ReplyFn>>,
    /// The sequence extractor. Default none: messages are delivered unsequenced (and with
    /// several connections, from each of them).
    pub sequence: Option<Arc<SequenceFn>>,
    /// Emit [`Event::Resync`](super::Event::Resync) after each gap. Default false.
    pub resync_on_gap: bool,
    /// Keys interned at most; later keys are delivered unkeyed. Default 4 096.
    pub max_keys: usize,
    /// How long a message ahead of a hole waits for another connection to fill it.
    /// Default 100 ms.
    pub merge_wait: Duration,
    /// Messages held at most (their buffers are kept and reused). Default 1 024.
    pub max_held: usize,
    /// Bytes held at most. Default 4 MiB.
    pub max_held_bytes: usize,
    /// Make-before-break rotation at this connection age (Binance closes at 24 h).
    /// Default none.
    pub rotate_after: Option<Duration>,
    /// Each connection's send quota. Default none.
    pub send_quota: Option<SendQuota>,
    /// Which receive timestamps the driver takes. Default [`Timestamps::User`].
    pub timestamps: Timestamps,
}

/// Which receive timestamps a feed's driver takes for each delivered message
/// ([`RecvStamp`](super::RecvStamp)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Timestamps {
    /// The monotonic and the wall clock, read right after the read that completed the
    /// message (before it is parsed): `recv_ns` and `wall_ns`.
    #[default]
    User,
    /// Also the kernel's receive time of the segment that completed the message
    /// (`kernel_ns`): `SO_TIMESTAMPING` on the socket and one `recvmsg(2)` in place of each
    /// `read(2)` (over TLS, the socket read that completed the record). The NIC's raw
    /// hardware time where the NIC stamps (its clock, which the machine keeps to the system
    /// clock, for example with `phc2sys`), else the kernel's software time. Linux; elsewhere
    /// `kernel_ns` stays `None`.
    Kernel,
}

impl FeedConfig {
    /// One connection to `endpoint`, the defaults above.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoints: vec![endpoint.into()],
            connections: 1,
            reconnect: ReconnectPolicy::default(),
            connect_budget: None,
            connect_timeout: Duration::from_secs(10),
            login: None,
            subscriptions: Vec::new(),
            subscribe_with: None,
            unsubscribe_with: None,
            ack: None,
            ack_timeout: Duration::from_secs(10),
            stale_after: None,
            heartbeat: None,
            answer_ping: None,
            sequence: None,
            resync_on_gap: false,
            max_keys: 4_096,
            merge_wait: Duration::from_millis(100),
            max_held: 1_024,
            max_held_bytes: 4 << 20,
            rotate_after: None,
            send_quota: None,
            timestamps: Timestamps::User,
        }
    }

    /// Sets [`sequence`](Self::sequence).
    #[must_use]
    pub fn with_sequence(
        mut self,
        extract: impl for<'a> Fn(&'a [u8]) -> Option<(&'a [u8], u64)> + Send + Sync + 'static,
    ) -> Self {
        self.sequence = Some(Arc::new(extract));
        self
    }

    /// Sets [`ack`](Self::ack).
    #[must_use]
    pub fn with_ack(mut self, matches: impl Fn(&[u8]) -> bool + Send + Sync + 'static) -> Self {
        self.ack = Some(Arc::new(matches));
        self
    }

    /// Sets [`answer_ping`](Self::answer_ping).
    #[must_use]
    pub fn with_answer_ping(
        mut self,
        answer: impl Fn(&[u8]) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.answer_ping = Some(Arc::new(answer));
        self
    }

    /// Sets [`subscribe_with`](Self::subscribe_with).
    #[must_use]
    pub fn with_subscribe_with(
        mut self,
        build: impl Fn(&[String], &mut Vec<String>) + Send + Sync + 'static,
    ) -> Self {
        self.subscribe_with = Some(Arc::new(build));
        self
    }

    /// Sets [`unsubscribe_with`](Self::unsubscribe_with).
    #[must_use]
    pub fn with_unsubscribe_with(
        mut self,
        build: impl Fn(&[String], &mut Vec<String>) + Send + Sync + 'static,
    ) -> Self {
        self.unsubscribe_with = Some(Arc::new(build));
        self
    }

    with_methods! {
        push with_endpoint => endpoints: impl Into<String>,
        set with_connections => connections: usize,
        set with_reconnect => reconnect: ReconnectPolicy,
        set with_connect_budget => connect_budget: Option<Arc<ConnectBudget>>,
        set with_connect_timeout => connect_timeout: Duration,
        set with_login => login: Option<String>,
        push with_subscription => subscriptions: impl Into<String>,
        set with_ack_timeout => ack_timeout: Duration,
        set with_stale_after => stale_after: Option<Duration>,
        set with_heartbeat => heartbeat: Option<Heartbeat>,
        set with_resync_on_gap => resync_on_gap: bool,
        set with_max_keys => max_keys: usize,
        set with_merge_wait => merge_wait: Duration,
        set with_max_held => max_held: usize,
        set with_max_held_bytes => max_held_bytes: usize,
        set with_rotate_after => rotate_after: Option<Duration>,
        set with_send_quota => send_quota: Option<SendQuota>,
        set with_timestamps => timestamps: Timestamps,
    }
}

impl fmt::Debug for FeedConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FeedConfig")
            .field("endpoints", &self.endpoints)
            .field("connections", &self.connections)
            .field("reconnect", &self.reconnect)
            .field("connect_timeout", &self.connect_timeout)
            .field("subscriptions", &self.subscriptions)
            .field("stale_after", &self.stale_after)
            .field("heartbeat", &self.heartbeat)
            .field("sequence", &self.sequence.is_some())
            .field("max_keys", &self.max_keys)
            .field("merge_wait", &self.merge_wait)
            .field("rotate_after", &self.rotate_after)
            .field("send_quota", &self.send_quota)
            .field("timestamps", &self.timestamps)
            .finish_non_exhaustive()
    }
}

/// A configuration [`FeedSession::new`](super::FeedSession::new) refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// `endpoints` is empty.
    NoEndpoints,
    /// `connections` is 0 or above `MAX_CONNECTIONS - 1`.
    Connections(usize),
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoEndpoints => f.write_str("a feed needs at least one endpoint"),
            Self::Connections(n) => write!(
                f,
                "{n} connections: a feed keeps 1 to {}",
                super::MAX_CONNECTIONS - 1
            ),
        }
    }
}

impl std::error::Error for ConfigError {}
