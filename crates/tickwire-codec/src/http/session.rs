//! The HTTP/1.1 client's connection rules, without I/O: when an open connection may carry the
//! next request, when it must be checked first, when a failed request may be sent again, and
//! what to do when the server stops reading the request.
//!
//! A transport owns the socket and the clock; it asks [`ClientSession`] before each request and
//! tells it what happened after. The blocking client in `tickwire` and the coming async client
//! follow the same rules because the rules live here.
//!
//! The liveness check ("probe") is a non-blocking peek at the socket: it finds a connection the
//! server closed while it sat idle, before a request that could not be resent safely is written
//! into it. It costs a system call, so it runs only when the connection has been idle for at
//! least [`ClientSession::probe_after`]: servers close idle keep-alive connections after
//! seconds (nginx 75 s, Apache httpd 5 s, Node.js 5 s), not within the gap between two
//! back-to-back requests, and a server that means to close sooner says so with
//! `Connection: close`, which is honoured without any check.

use std::time::{Duration, Instant};

use super::Sending;

/// What to do with the connection before the next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reuse {
    /// Send on the open connection as it is.
    Send,
    /// Check it first (a non-blocking peek), then ask again with
    /// [`ClientSession::after_probe`].
    Probe,
    /// Close whatever is open and connect anew.
    Reconnect,
}

/// What a liveness check of an idle connection found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// Nothing to read and not closed: the connection can carry a request.
    Open,
    /// The server closed it (end of stream or reset).
    Closed,
    /// Bytes arrived that no request asked for: the connection is out of step.
    Unexpected,
}

/// How an exchange on a connection failed before a response was complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The server closed or reset the connection before sending any byte of a response.
    ClosedBeforeResponse,
    /// Anything else: a timeout, a malformed response, a close in the middle of one.
    Other,
}

impl Failure {
    /// Whether a socket error of `kind` means the server closed or reset the connection (so a
    /// request that got no byte of its response failed with
    /// [`Failure::ClosedBeforeResponse`], and a write that failed so should be followed by a
    /// read of what the server answered first).
    pub fn is_close(kind: std::io::ErrorKind) -> bool {
        use std::io::ErrorKind;
        matches!(
            kind,
            ErrorKind::ConnectionReset
                | ErrorKind::ConnectionAborted
                | ErrorKind::BrokenPipe
                | ErrorKind::UnexpectedEof
                | ErrorKind::NotConnected
        )
    }
}

/// The connection rules of one HTTP/1.1 client connection slot.
///
/// ```
/// use std::time::{Duration, Instant};
/// use tickwire_codec::http::{ClientSession, Method, Reuse};
///
/// let mut session = ClientSession::new();
/// let start = Instant::now();
/// assert_eq!(session.before_request(start), Reuse::Reconnect); // nothing open yet
/// session.connected(start);
/// assert_eq!(session.before_request(start), Reuse::Send); // fresh: no check needed
/// session.response_complete(true, start);
/// // Back to back: no system call.
/// assert_eq!(session.before_request(start + Duration::from_millis(1)), Reuse::Send);
/// // Idle for a while: check first.
/// assert_eq!(session.before_request(start + Duration::from_secs(2)), Reuse::Probe);
/// ```
#[derive(Debug, Clone)]
pub struct ClientSession {
    probe_after: Duration,
    /// A connection is open (as far as the rules know).
    open: bool,
    /// The open connection has carried a complete exchange (so a failure on it may be the
    /// server having closed it while idle).
    reused: bool,
    /// The last response said the connection ends after it.
    close_after: bool,
    /// When the connection last finished an exchange (or opened).
    idle_since: Option<Instant>,
    /// A request was started on the open connection and its final response has not
    /// completed: what is left of that response may still arrive.
    in_flight: bool,
    /// The exchange under way (see `exchange`): a byte of its response arrived.
    pub(super) received_any: bool,
    /// The exchange under way: writing its request failed because the server closed.
    pub(super) write_failed: bool,
}

impl Default for ClientSession {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientSession {
    /// Idle time after which a connection is checked before reuse, by default.
    pub const DEFAULT_PROBE_AFTER: Duration = Duration::from_millis(500);

    /// The total time one request may take, connect, write and the whole response included,
    /// in the tickwire transports unless configured otherwise: 60 s.
    ///
    /// Why this value: it is twice the transports' default read timeout (30 s), so a server
    /// that goes silent still fails a request by the read timeout, and the deadline stops the
    /// one that keeps a request alive by trickling bytes (each byte restarts a read timeout).
    /// It leaves a several-MiB snapshot over a slow link time to arrive. It also costs nothing
    /// while a request is younger than the read timeout: the socket's timeout only has to be
    /// shortened once the deadline is nearer than the next read timeout. Trading code sets a
    /// shorter one: an order's answer is worthless after a second or two.
    pub const DEFAULT_REQUEST_DEADLINE: Duration = Duration::from_secs(60);

    /// Rules with the default probe interval ([`DEFAULT_PROBE_AFTER`](Self::DEFAULT_PROBE_AFTER)).
    pub fn new() -> Self {
        Self::with_probe_after(Self::DEFAULT_PROBE_AFTER)
    }

    /// Rules that check a connection idle for `probe_after` or longer before reusing it.
    /// `Duration::ZERO` checks before every reuse (one system call per request).
    pub fn with_probe_after(probe_after: Duration) -> Self {
        Self {
            probe_after,
            open: false,
            reused: false,
            close_after: false,
            idle_since: None,
            in_flight: false,
            received_any: false,
            write_failed: false,
        }
    }

    /// The idle time from which a connection is checked before reuse.
    pub fn probe_after(&self) -> Duration {
        self.probe_after
    }

    /// What to do before writing the next request at `now`.
    pub fn before_request(&self, now: Instant) -> Reuse {
        if !self.open || self.close_after || self.in_flight {
            return Reuse::Reconnect;
        }
        match self.idle_since {
            Some(since) if now.saturating_duration_since(since) < self.probe_after => Reuse::Send,
            // A connection that never completed an exchange was just opened: nothing to check.
            _ if !self.reused => Reuse::Send,
            _ => Reuse::Probe,
        }
    }

    /// What a [`Reuse::Probe`] found: [`Reuse::Send`] or [`Reuse::Reconnect`].
    pub fn after_probe(&mut self, probe: Probe) -> Reuse {
        match probe {
            Probe::Open => Reuse::Send,
            Probe::Closed | Probe::Unexpected => {
                self.closed();
                Reuse::Reconnect
            }
        }
    }

    /// A new connection is open at `now`.
    pub fn connected(&mut self, now: Instant) {
        self.open = true;
        self.reused = false;
        self.close_after = false;
        self.idle_since = Some(now);
        self.in_flight = false;
    }

    /// A request is about to be written. Until [`response_complete`](Self::response_complete)
    /// the connection may carry the rest of its response, so it can never carry another
    /// request: a request abandoned part-way (a timeout, a deadline, a cancelled future)
    /// leaves [`before_request`](Self::before_request) answering [`Reuse::Reconnect`], and
    /// the next request cannot receive the abandoned one's response.
    ///
    /// It also starts the exchange's own rules (what each write and read outcome means, see
    /// [`write_failed`](Self::write_failed) and the methods after it).
    pub fn request_started(&mut self) {
        self.in_flight = true;
        self.received_any = false;
        self.write_failed = false;
    }

    /// Whether the open connection may go back to a pool of idle connections: it is open, its
    /// last exchange completed and the response did not end it.
    pub fn is_reusable(&self) -> bool {
        self.open && !self.close_after && !self.in_flight
    }

    /// Whether an idle connection has sat unused for `max_idle` or longer at `now` and should
    /// be closed rather than kept (a pool's idle expiry: servers close idle connections after
    /// a few seconds, and an old one is the likeliest to be stale).
    pub fn idle_expired(&self, now: Instant, max_idle: Duration) -> bool {
        self.idle_since
            .is_some_and(|since| now.saturating_duration_since(since) >= max_idle)
    }

    /// A final response completed at `now`; `keep_alive` is whether the connection may carry
    /// another request (`Response::keep_alive`: no `Connection: close`, not a body delimited
    /// by the close, not HTTP/1.0 without keep-alive). Bytes left after it in the buffer that
    /// no request asked for must be reported as `keep_alive = false`.
    pub fn response_complete(&mut self, keep_alive: bool, now: Instant) {
        self.in_flight = false;
        self.reused = true;
        self.close_after = !keep_alive;
        self.idle_since = Some(now);
    }

    /// The connection was closed (by either side, or after an error).
    pub fn closed(&mut self) {
        self.open = false;
        self.reused = false;
        self.close_after = false;
        self.idle_since = None;
        self.in_flight = false;
    }

    /// Whether the connection now open has carried a complete exchange before.
    pub fn is_reused(&self) -> bool {
        self.open && self.reused
    }

    /// Whether a request that failed with `failure` may be sent again, once, on a new
    /// connection: only an idempotent one (RFC 9110 §9.2.2, or a POST or PATCH the user
    /// marked so, [`Sending::marked_idempotent`]), only when the server closed a reused
    /// connection before answering (RFC 9112 §9.3.1), so an unmarked POST is never sent
    /// twice. A [`RetryBudget`](super::RetryBudget), where the client has one, must also
    /// allow it. Call before [`closed`](Self::closed).
    pub fn may_resend(&self, sending: Sending, failure: Failure) -> bool {
        failure == Failure::ClosedBeforeResponse && self.is_reused() && sending.idempotent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Method;

    fn at(ms: u64) -> Instant {
        // One base per test process; only differences matter.
        static BASE: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        *BASE.get_or_init(Instant::now) + Duration::from_millis(ms)
    }

    #[test]
    fn back_to_back_requests_need_no_probe_and_idle_ones_do() {
        let mut s = ClientSession::new();
        assert_eq!(s.before_request(at(0)), Reuse::Reconnect);
        s.connected(at(0));
        assert_eq!(s.before_request(at(0)), Reuse::Send);
        s.response_complete(true, at(10));
        assert_eq!(s.before_request(at(11)), Reuse::Send);
        assert_eq!(s.before_request(at(509)), Reuse::Send);
        assert_eq!(s.before_request(at(510)), Reuse::Probe);
        assert_eq!(s.after_probe(Probe::Open), Reuse::Send);
    }

    #[test]
    fn a_fresh_connection_is_not_probed_however_long_it_waited() {
        let mut s = ClientSession::new();
        s.connected(at(0));
        assert_eq!(s.before_request(at(60_000)), Reuse::Send);
    }

    #[test]
    fn connection_close_and_a_failed_probe_reconnect() {
        let mut s = ClientSession::new();
        s.connected(at(0));
        s.response_complete(false, at(1));
        assert_eq!(s.before_request(at(2)), Reuse::Reconnect);
        s.connected(at(3));
        s.response_complete(true, at(4));
        assert_eq!(s.before_request(at(2_000)), Reuse::Probe);
        assert_eq!(s.after_probe(Probe::Closed), Reuse::Reconnect);
        assert_eq!(s.before_request(at(2_001)), Reuse::Reconnect);
        s.connected(at(2_002));
        s.response_complete(true, at(2_003));
        assert_eq!(s.after_probe(Probe::Unexpected), Reuse::Reconnect);
    }

    #[test]
    fn a_request_abandoned_before_its_response_completed_never_reuses_the_connection() {
        let mut s = ClientSession::new();
        s.connected(at(0));
        s.request_started();
        assert!(!s.is_reusable());
        // Dropped here: the response is still on its way.
        assert_eq!(s.before_request(at(1)), Reuse::Reconnect);
        s.connected(at(2));
        s.request_started();
        s.response_complete(true, at(3));
        assert!(s.is_reusable());
        assert_eq!(s.before_request(at(4)), Reuse::Send);
        s.request_started();
        s.response_complete(false, at(5));
        assert!(!s.is_reusable());
    }

    #[test]
    fn idle_connections_expire_after_the_idle_limit() {
        let mut s = ClientSession::new();
        assert!(!s.idle_expired(at(0), Duration::ZERO));
        s.connected(at(0));
        s.response_complete(true, at(100));
        let limit = Duration::from_millis(1_000);
        assert!(!s.idle_expired(at(1_099), limit));
        assert!(s.idle_expired(at(1_100), limit));
    }

    #[test]
    fn resets_and_broken_pipes_are_closes_timeouts_are_not() {
        use std::io::ErrorKind;
        assert!(Failure::is_close(ErrorKind::ConnectionReset));
        assert!(Failure::is_close(ErrorKind::BrokenPipe));
        assert!(!Failure::is_close(ErrorKind::TimedOut));
        assert!(!Failure::is_close(ErrorKind::WouldBlock));
    }

    #[test]
    fn zero_probe_interval_checks_every_reuse() {
        let mut s = ClientSession::with_probe_after(Duration::ZERO);
        s.connected(at(0));
        s.response_complete(true, at(1));
        assert_eq!(s.before_request(at(1)), Reuse::Probe);
    }

    #[test]
    fn only_idempotent_requests_on_a_reused_connection_closed_before_answering_are_resent() {
        let mut s = ClientSession::new();
        s.connected(at(0));
        // First exchange on a fresh connection: a close there is the server refusing, not an
        // idle timeout; nothing is resent.
        assert!(!s.may_resend(Sending::new(Method::Get), Failure::ClosedBeforeResponse));
        s.response_complete(true, at(1));
        assert!(s.may_resend(Sending::new(Method::Get), Failure::ClosedBeforeResponse));
        assert!(s.may_resend(Sending::new(Method::Put), Failure::ClosedBeforeResponse));
        assert!(s.may_resend(Sending::new(Method::Delete), Failure::ClosedBeforeResponse));
        assert!(!s.may_resend(Sending::new(Method::Post), Failure::ClosedBeforeResponse));
        assert!(!s.may_resend(Sending::new(Method::Patch), Failure::ClosedBeforeResponse));
        let marked = Sending::new(Method::Post).marked_idempotent();
        assert!(s.may_resend(marked, Failure::ClosedBeforeResponse));
        assert!(!s.may_resend(Sending::new(Method::Get), Failure::Other));
        s.closed();
        assert!(!s.may_resend(Sending::new(Method::Get), Failure::ClosedBeforeResponse));
    }
}
