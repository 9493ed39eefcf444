//! [`ConnectPlan`]: Happy Eyeballs v2 (RFC 8305 section 5) as a state machine. Its rules
//! open the type's documentation.

use core::fmt;
use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::resolve::{dedup, interleave};

/// RFC 8305 section 5: the Connection Attempt Delay's recommended floor and ceiling.
const STAGGER_MIN: Duration = Duration::from_millis(100);
const STAGGER_MAX: Duration = Duration::from_secs(2);

/// The knobs of a [`ConnectPlan`]. Shared by every connect of a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ConnectConfig {
    /// The wait between the start of one attempt and the next (RFC 8305's Connection
    /// Attempt Delay). Default 250 ms; clamped to 100 ms ..= 2 s as the RFC recommends.
    pub stagger: Duration,
    /// How long one attempt may take before it fails as timed out. Default 10 s.
    pub attempt_timeout: Duration,
    /// How long the whole plan may take. Default 30 s.
    pub total_timeout: Duration,
    /// How many addresses of the first answer's family go before the other family's
    /// first (RFC 8305 section 4's "First Address Family Count"). Default 1; 0 counts as 1.
    pub first_family_count: usize,
}

impl ConnectConfig {
    /// The defaults above.
    pub fn new() -> Self {
        Self::default()
    }

    with_methods! {
        const_set with_stagger => stagger: Duration,
        const_set with_attempt_timeout => attempt_timeout: Duration,
        const_set with_total_timeout => total_timeout: Duration,
        const_set with_first_family_count => first_family_count: usize,
    }

    /// The stagger the plan uses: [`stagger`](Self::stagger) within the RFC's bounds.
    pub fn effective_stagger(&self) -> Duration {
        self.stagger.clamp(STAGGER_MIN, STAGGER_MAX)
    }
}

impl Default for ConnectConfig {
    fn default() -> Self {
        Self {
            stagger: Duration::from_millis(250),
            attempt_timeout: Duration::from_secs(10),
            total_timeout: Duration::from_secs(30),
            first_family_count: 1,
        }
    }
}

/// Names one attempt of one plan: its address's place in the plan's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AttemptId(pub usize);

/// What the driver must do next, from [`ConnectPlan::poll_action`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Action {
    /// Start a non-blocking connect to `addr`; report it with `on_connected(id)` or
    /// `on_failed(id, ..)`.
    Attempt {
        /// The attempt.
        id: AttemptId,
        /// Where to connect.
        addr: SocketAddr,
    },
    /// Close this attempt's socket: it lost, or timed out. Report nothing more for it.
    Abandon {
        /// The attempt.
        id: AttemptId,
    },
    /// The plan is over: this attempt's socket is the connection. Always the last action.
    Connected {
        /// The winning attempt.
        id: AttemptId,
        /// Its address.
        addr: SocketAddr,
    },
    /// The plan is over without a connection. Always the last action.
    Failed(ConnectError),
}

/// Why one address did not give the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// The peer refused (a TCP reset to the SYN: nothing listens there).
    Refused,
    /// No route to the host or network.
    Unreachable,
    /// The attempt (or the whole plan) ran out of time.
    TimedOut,
    /// The connection was reset while it was being set up.
    Reset,
    /// Another error the socket returned.
    Other(io::ErrorKind),
    /// The plan's total deadline passed before this address's turn.
    NotTried,
}

impl Reason {
    /// The reason an I/O error of a failed connect gives.
    pub fn from_io(kind: io::ErrorKind) -> Self {
        match kind {
            io::ErrorKind::ConnectionRefused => Self::Refused,
            io::ErrorKind::HostUnreachable | io::ErrorKind::NetworkUnreachable => Self::Unreachable,
            io::ErrorKind::TimedOut => Self::TimedOut,
            io::ErrorKind::ConnectionReset | io::ErrorKind::ConnectionAborted => Self::Reset,
            other => Self::Other(other),
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Refused => f.write_str("refused"),
            Self::Unreachable => f.write_str("unreachable"),
            Self::TimedOut => f.write_str("timed out"),
            Self::Reset => f.write_str("reset"),
            Self::Other(kind) => write!(f, "{kind}"),
            Self::NotTried => f.write_str("not tried before the deadline"),
        }
    }
}

/// A plan that ended without a connection: every address with why it gave none, in the
/// plan's order. No address at all gives an empty list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectError {
    /// Each address and its reason.
    pub failures: Vec<(SocketAddr, Reason)>,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.failures.is_empty() {
            return f.write_str("connect failed: no address to try");
        }
        f.write_str("connect failed:")?;
        for (index, (addr, reason)) in self.failures.iter().enumerate() {
            let sep = if index == 0 { " " } else { "; " };
            write!(f, "{sep}{addr} {reason}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConnectError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Pending,
    Running { deadline: Instant },
    Failed(Reason),
    Won,
    Abandoned,
}

/// One connect, sans-IO, by these rules:
///
/// 1. The addresses are tried in the plan's order (interleaved by family, or as given for
///    fixed addresses), each at most once.
/// 2. The first attempt starts at once; each next one starts `stagger` after the previous
///    one started, or at once when a running attempt fails, whichever comes first.
/// 3. An attempt still running `attempt_timeout` after it started fails as timed out and
///    is abandoned (the driver closes its socket).
/// 4. The first attempt reported connected wins: every other running attempt is
///    abandoned and no more start.
/// 5. The plan fails when every address failed, or when `total_timeout` passed since the
///    plan began (running attempts abandoned as timed out, the rest never tried); its
///    error names every address with its reason.
///
/// The driver's loop:
/// after creating the plan and after every `on_*` or `handle_timeout`, call
/// [`poll_action`](Self::poll_action) until `None`; wait for a socket outcome or until
/// [`poll_timeout`](Self::poll_timeout), whichever comes first.
#[derive(Debug)]
pub struct ConnectPlan {
    config: ConnectConfig,
    addrs: Vec<SocketAddr>,
    states: Vec<State>,
    next: usize,
    next_at: Instant,
    total_deadline: Instant,
    actions: VecDeque<Action>,
    finished: bool,
}

impl ConnectPlan {
    /// A plan over resolved addresses, interleaved by family ([`interleave`]).
    pub fn new(addrs: &[SocketAddr], config: ConnectConfig, now: Instant) -> Self {
        Self::ordered(interleave(addrs, config.first_family_count), config, now)
    }

    /// A plan over fixed addresses (a `--resolve` entry's), tried in the order given
    /// (an address given twice is tried once).
    pub fn in_order(addrs: &[SocketAddr], config: ConnectConfig, now: Instant) -> Self {
        Self::ordered(dedup(addrs), config, now)
    }

    fn ordered(addrs: Vec<SocketAddr>, config: ConnectConfig, now: Instant) -> Self {
        let mut plan = Self {
            config,
            states: vec![State::Pending; addrs.len()],
            addrs,
            next: 0,
            next_at: now,
            total_deadline: after(now, config.total_timeout),
            actions: VecDeque::new(),
            finished: false,
        };
        plan.advance(now);
        plan
    }

    /// The addresses in the order the plan tries them.
    pub fn addresses(&self) -> &[SocketAddr] {
        &self.addrs
    }

    /// The next thing to do at `now`: start the attempts whose time has come, then the
    /// abandons and the final outcome. `None` once drained; after `Connected` or `Failed`
    /// always `None`.
    pub fn poll_action(&mut self, now: Instant) -> Option<Action> {
        self.advance(now);
        self.actions.pop_front()
    }

    /// When the plan next needs [`handle_timeout`](Self::handle_timeout) (the next start,
    /// an attempt's deadline, the total deadline); `None` once it is over.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.finished {
            return None;
        }
        let mut earliest = self.total_deadline;
        if self.next < self.addrs.len() {
            earliest = earliest.min(self.next_at);
        }
        for state in &self.states {
            if let State::Running { deadline } = state {
                earliest = earliest.min(*deadline);
            }
        }
        Some(earliest)
    }

    /// Applies every deadline that passed by `now`. Calling it early does nothing.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.advance(now);
    }

    /// The attempt's socket connected. The first one wins; one that is no longer
    /// running (abandoned, timed out, after the plan ended) is ignored: the driver was
    /// already told to close it.
    pub fn on_connected(&mut self, id: AttemptId, now: Instant) {
        self.advance(now);
        if self.finished || !self.is_running(id) {
            return;
        }
        self.states[id.0] = State::Won;
        for index in 0..self.states.len() {
            if matches!(self.states[index], State::Running { .. }) {
                self.states[index] = State::Abandoned;
                self.actions.push_back(Action::Abandon {
                    id: AttemptId(index),
                });
            }
        }
        self.finished = true;
        self.actions.push_back(Action::Connected {
            id,
            addr: self.addrs[id.0],
        });
    }

    /// The attempt's connect failed: the next address starts at once. An attempt that is
    /// no longer running is ignored (its reason is already kept).
    pub fn on_failed(&mut self, id: AttemptId, reason: Reason, now: Instant) {
        if self.finished || !self.is_running(id) {
            return;
        }
        self.states[id.0] = State::Failed(reason);
        self.next_at = now;
        self.advance(now);
    }

    /// Whether the plan ended (its last action is queued or taken).
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    fn is_running(&self, id: AttemptId) -> bool {
        matches!(self.states.get(id.0), Some(State::Running { .. }))
    }

    /// Applies the rules at `now`, in order: attempt deadlines, the total deadline, the
    /// next starts, the end.
    fn advance(&mut self, now: Instant) {
        if self.finished {
            return;
        }
        for index in 0..self.states.len() {
            if let State::Running { deadline } = self.states[index]
                && now >= deadline
            {
                self.fail_running(index, now);
            }
        }
        if now >= self.total_deadline {
            for index in 0..self.states.len() {
                match self.states[index] {
                    State::Running { .. } => self.fail_running(index, now),
                    State::Pending => self.states[index] = State::Failed(Reason::NotTried),
                    _ => {}
                }
            }
            self.next = self.addrs.len();
        }
        while self.next < self.addrs.len() && now >= self.next_at {
            let id = AttemptId(self.next);
            let deadline = after(now, self.config.attempt_timeout).min(self.total_deadline);
            self.states[id.0] = State::Running { deadline };
            self.actions.push_back(Action::Attempt {
                id,
                addr: self.addrs[id.0],
            });
            self.next += 1;
            self.next_at = now + self.config.effective_stagger();
        }
        let running = self
            .states
            .iter()
            .any(|state| matches!(state, State::Running { .. }));
        if !running && self.next == self.addrs.len() {
            self.finished = true;
            let failures = self
                .addrs
                .iter()
                .zip(&self.states)
                .map(|(addr, state)| match state {
                    State::Failed(reason) => (*addr, *reason),
                    _ => (*addr, Reason::TimedOut),
                })
                .collect();
            self.actions
                .push_back(Action::Failed(ConnectError { failures }));
        }
    }

    /// A running attempt ran out of time: its socket is closed and the next starts now.
    fn fail_running(&mut self, index: usize, now: Instant) {
        self.states[index] = State::Failed(Reason::TimedOut);
        self.actions.push_back(Action::Abandon {
            id: AttemptId(index),
        });
        self.next_at = self.next_at.min(now);
    }
}

/// `now + timeout`, a century when the sum would overflow (`Duration::MAX` means "never").
fn after(now: Instant, timeout: Duration) -> Instant {
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}
