//! An RPC session's configuration: [`RpcConfig`], how ids travel ([`IdFormat`]), the login
//! step ([`Login`]) and a request's own options ([`Request`]).

use core::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::ids::{self, IdError};
use super::limits::{KindId, RateLimits};

/// Writes `id` into a request's text (into the `String` given, cleared first).
pub type WriteIdFn = dyn Fn(&str, u64, &mut String) -> Result<(), IdError> + Send + Sync;
/// Reads the id a message carries, if any.
pub type ReadIdFn = dyn Fn(&[u8]) -> Option<u64> + Send + Sync;
/// Builds a login message (without its id: the session writes it), for example a signed
/// `session.logon` with the current time.
pub type LoginFn = dyn Fn() -> String + Send + Sync;
/// Checks the login's response: `Err` with the exchange's reason when it refused.
pub type AcceptFn = dyn Fn(&[u8]) -> Result<(), String> + Send + Sync;
/// Reads what a response says of the account's used limits and passes it on
/// (`limits.observe(window, used, now)`). Called for every message received.
pub type UsageFn = dyn Fn(&[u8], &RateLimits, Instant) + Send + Sync;

/// How a request's id is written and read back.
#[derive(Clone)]
#[non_exhaustive]
pub enum IdFormat {
    /// A top-level member of a JSON object ([`set_field`](super::set_field),
    /// [`field_u64`](super::field_u64)): `"id"` (JSON-RPC 2.0, Binance, OKX, Deribit),
    /// `"req_id"` (Kraken v2), `"reqId"` written as a string (Bybit).
    Field {
        /// The member's name.
        name: String,
        /// Written as a string of digits rather than a number.
        quoted: bool,
    },
    /// The user's own: how the id goes into a request and comes out of a message.
    Custom {
        /// Writes it.
        write: Arc<WriteIdFn>,
        /// Reads it.
        read: Arc<ReadIdFn>,
    },
}

impl IdFormat {
    /// The member `"id"`, a number: JSON-RPC 2.0 and most exchanges.
    pub fn id() -> Self {
        Self::field("id")
    }

    /// The top-level member `name`, a number.
    pub fn field(name: &str) -> Self {
        Self::Field {
            name: name.to_owned(),
            quoted: false,
        }
    }

    /// The top-level member `name`, a string of digits.
    pub fn quoted_field(name: &str) -> Self {
        Self::Field {
            name: name.to_owned(),
            quoted: true,
        }
    }

    /// The user's own format.
    pub fn custom(
        write: impl Fn(&str, u64, &mut String) -> Result<(), IdError> + Send + Sync + 'static,
        read: impl Fn(&[u8]) -> Option<u64> + Send + Sync + 'static,
    ) -> Self {
        Self::Custom {
            write: Arc::new(write),
            read: Arc::new(read),
        }
    }

    /// Writes `request` with `id` into `out`.
    pub fn write(&self, request: &str, id: u64, out: &mut String) -> Result<(), IdError> {
        match self {
            Self::Field { name, quoted } => ids::set_field(request, name, id, *quoted, out),
            Self::Custom { write, .. } => {
                out.clear();
                write(request, id, out)
            }
        }
    }

    /// The id `message` carries.
    #[inline]
    pub fn read(&self, message: &[u8]) -> Option<u64> {
        match self {
            Self::Field { name, .. } => ids::field_u64(message, name),
            Self::Custom { read, .. } => read(message),
        }
    }
}

impl fmt::Debug for IdFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Field { name, quoted } => f
                .debug_struct("Field")
                .field("name", name)
                .field("quoted", quoted)
                .finish(),
            Self::Custom { .. } => f.write_str("Custom"),
        }
    }
}

/// The login step: sent first on each connection, and no request goes out on it before its
/// response was accepted.
#[derive(Clone)]
#[non_exhaustive]
pub struct Login {
    /// Builds the message (called at each connect, so a signature can carry the time).
    pub build: Arc<LoginFn>,
    /// Checks its response.
    pub accept: Arc<AcceptFn>,
    /// How long the response may take; past it the connection is replaced. Default 10 s.
    pub timeout: Duration,
}

impl Login {
    /// A login built by `build`, its response checked by `accept`, the default timeout.
    pub fn new(
        build: impl Fn() -> String + Send + Sync + 'static,
        accept: impl Fn(&[u8]) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            build: Arc::new(build),
            accept: Arc::new(accept),
            timeout: Duration::from_secs(10),
        }
    }

    with_methods! {
        set with_timeout => timeout: Duration,
    }
}

impl fmt::Debug for Login {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Login")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

/// What a request made while no connection is ready does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum WhileDown {
    /// It waits (within its deadline) for a connection that is logged in. The default.
    #[default]
    Wait,
    /// It is refused at once ([`Rejected::NotReady`](super::Rejected::NotReady)); requests
    /// waiting when the last ready connection goes end [`NotSent`](super::NotSent).
    Fail,
}

/// What a request over a rate limit does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum OverLimit {
    /// It waits its turn (within its deadline). The default.
    #[default]
    Wait,
    /// It is refused when it is made while a window is full
    /// ([`Rejected::Limit`](super::Rejected::Limit), which says which window and how long).
    /// One accepted while there was room but held behind others waits.
    Refuse,
}

/// An RPC session's configuration. Every field has a documented default; build it with
/// [`RpcConfig::new`] and the `with_*` methods.
#[derive(Clone)]
#[non_exhaustive]
pub struct RpcConfig {
    /// How ids are written and read. Default [`IdFormat::id`].
    pub ids: IdFormat,
    /// Requests written and not yet resolved, at most; more wait their turn. Default 256.
    pub max_in_flight: usize,
    /// Requests waiting to be written, at most; more are refused. Default 1 024.
    pub max_queued: usize,
    /// A request's deadline, from when it is made, unless it gives its own. Default 10 s.
    pub timeout: Duration,
    /// The login step. Default none: requests go out as soon as a connection is open.
    pub login: Option<Login>,
    /// Requests made while no connection is ready. Default [`WhileDown::Wait`].
    pub while_down: WhileDown,
    /// The account's rate limits (shared with its REST client). Default none.
    pub limits: Option<Arc<RateLimits>>,
    /// Requests over a limit. Default [`OverLimit::Wait`].
    pub over_limit: OverLimit,
    /// Reads used limits from every message. Default none.
    pub usage: Option<Arc<UsageFn>>,
}

impl RpcConfig {
    /// The defaults above.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets [`usage`](Self::usage).
    #[must_use]
    pub fn with_usage(
        mut self,
        usage: impl Fn(&[u8], &RateLimits, Instant) + Send + Sync + 'static,
    ) -> Self {
        self.usage = Some(Arc::new(usage));
        self
    }

    with_methods! {
        set with_ids => ids: IdFormat,
        set with_max_in_flight => max_in_flight: usize,
        set with_max_queued => max_queued: usize,
        set with_timeout => timeout: Duration,
        set with_login => login: Option<Login>,
        set with_while_down => while_down: WhileDown,
        set with_limits => limits: Option<Arc<RateLimits>>,
        set with_over_limit => over_limit: OverLimit,
    }
}

impl fmt::Debug for RpcConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RpcConfig")
            .field("ids", &self.ids)
            .field("max_in_flight", &self.max_in_flight)
            .field("max_queued", &self.max_queued)
            .field("timeout", &self.timeout)
            .field("login", &self.login)
            .field("while_down", &self.while_down)
            .field("limits", &self.limits)
            .field("over_limit", &self.over_limit)
            .field("usage", &self.usage.is_some())
            .finish()
    }
}

impl Default for RpcConfig {
    fn default() -> Self {
        Self {
            ids: IdFormat::id(),
            max_in_flight: 256,
            max_queued: 1_024,
            timeout: Duration::from_secs(10),
            login: None,
            while_down: WhileDown::Wait,
            limits: None,
            over_limit: OverLimit::Wait,
            usage: None,
        }
    }
}

/// One request's options. [`Request::new`]: the session's timeout, no rate-limit kind,
/// weight 1 on the connection's send quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Request {
    /// Its deadline from now, instead of [`RpcConfig::timeout`].
    pub timeout: Option<Duration>,
    /// What it costs in the [`RpcConfig::limits`] windows. Default none: nothing.
    pub kind: Option<KindId>,
    /// Its weight on the connection's send quota (the feed's). Default 1.
    pub weight: u32,
}

impl Request {
    /// The defaults above.
    pub const fn new() -> Self {
        Self {
            timeout: None,
            kind: None,
            weight: 1,
        }
    }

    with_methods! {
        const_set with_timeout => timeout: Option<Duration>,
        const_set with_kind => kind: Option<KindId>,
        const_set with_weight => weight: u32,
    }
}

impl Default for Request {
    fn default() -> Self {
        Self::new()
    }
}
