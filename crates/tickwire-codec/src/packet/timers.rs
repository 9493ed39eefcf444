//! [`LinkTimers`]: the timers a packet transport waits on besides the [`Session`]'s
//! keepalive, and which of them has passed, decided once for every transport.
//!
//! This module owns the deadline arithmetic of one link: the read timeout counts from the
//! last byte received, the write timeout from the last byte the socket took while more
//! remained queued, and a wait's own deadline is the caller's. It owns the order in which
//! passed timers count, too (see [`LinkTimers::expire`]). It does not own waiting, the
//! socket or the clock: time is passed in.

use std::time::{Duration, Instant};

use super::{Session, SessionError};

/// The read and write timers of one packet link.
///
/// Contract, for a transport:
/// - [`wait_started`](Self::wait_started) when a wait for the next packet begins (the
///   read timeout counts from there) and [`received`](Self::received) whenever bytes
///   arrive.
/// - [`wrote`](Self::wrote) after every attempt to write queued bytes, and
///   [`flushed`](Self::flushed) once nothing remains queued.
/// - Sleep until [`next_wake`](Self::next_wake) at the latest; then, having read what the
///   socket already holds (what arrived counts before a timer does), call
///   [`expire`](Self::expire).
#[derive(Debug, Clone)]
pub struct LinkTimers {
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    /// When the current wait started or the last byte arrived.
    last_byte: Instant,
    /// When the socket last took queued bytes while more remained (`None`: nothing waits).
    write_stalled: Option<Instant>,
}

/// What [`LinkTimers::expire`] found passed, in the order it counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Expiry {
    /// The socket took none of the queued bytes for the write timeout: the link fails (an
    /// I/O timeout).
    WriteTimedOut,
    /// The caller's deadline for this wait passed: the wait ends, the link stays usable.
    Deadline,
    /// No byte arrived for the read timeout: the wait fails; a due keepalive ping was queued
    /// first.
    ReadTimedOut,
    /// Nothing that ends the wait (a due keepalive ping, if any, is queued): wait again.
    Pending,
}

impl LinkTimers {
    /// No timer armed; `now` starts the read timeout's count.
    pub fn new(
        read_timeout: Option<Duration>,
        write_timeout: Option<Duration>,
        now: Instant,
    ) -> Self {
        Self {
            read_timeout,
            write_timeout,
            last_byte: now,
            write_stalled: None,
        }
    }

    /// A wait for the next packet starts at `now`: the read timeout counts from here.
    pub fn wait_started(&mut self, now: Instant) {
        self.last_byte = now;
    }

    /// Bytes arrived at `now`.
    pub fn received(&mut self, now: Instant) {
        self.last_byte = now;
    }

    /// A write attempt ended at `now`: `progress` when the socket took bytes, `pending` when
    /// queued bytes remain. The write timeout counts from the last byte the socket took.
    pub fn wrote(&mut self, progress: bool, pending: bool, now: Instant) {
        if !pending {
            self.write_stalled = None;
        } else if progress || self.write_stalled.is_none() {
            self.write_stalled = Some(now);
        }
    }

    /// Everything queued was written.
    pub fn flushed(&mut self) {
        self.write_stalled = None;
    }

    /// When the queued bytes' wait for the socket times out (`None`: nothing waits, or no
    /// write timeout).
    pub fn write_deadline(&self) -> Option<Instant> {
        self.write_stalled
            .zip(self.write_timeout)
            .map(|(since, timeout)| since + timeout)
    }

    /// Whether the write timeout has passed at `now`.
    pub fn write_timed_out(&self, now: Instant) -> bool {
        passed(self.write_deadline(), now)
    }

    /// The earliest instant a timer of this wait falls due: the caller's `deadline`, the
    /// session's keepalive, the read or the write timeout (`None`: wait for bytes only).
    pub fn next_wake(&self, deadline: Option<Instant>, session: &Session) -> Option<Instant> {
        [
            deadline,
            session.poll_timeout(),
            self.read_deadline(),
            self.write_deadline(),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// What has passed at `now`, called after the socket was read and found empty. The
    /// write timeout counts first (the link is lost), then the caller's `deadline` (the wait
    /// ends before any keepalive work); otherwise the session's keepalive runs
    /// ([`Session::handle_timeout`]: a due ping is queued, an overdue pong is the error),
    /// and then the read timeout counts.
    pub fn expire(
        &self,
        session: &mut Session,
        now: Instant,
        deadline: Option<Instant>,
    ) -> Result<Expiry, SessionError> {
        if self.write_timed_out(now) {
            return Ok(Expiry::WriteTimedOut);
        }
        if passed(deadline, now) {
            return Ok(Expiry::Deadline);
        }
        session.handle_timeout(now)?;
        Ok(if passed(self.read_deadline(), now) {
            Expiry::ReadTimedOut
        } else {
            Expiry::Pending
        })
    }

    fn read_deadline(&self) -> Option<Instant> {
        self.read_timeout.map(|timeout| self.last_byte + timeout)
    }
}

fn passed(at: Option<Instant>, now: Instant) -> bool {
    at.is_some_and(|at| now >= at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Keepalive, PacketConfig};

    const MS: Duration = Duration::from_millis(1);

    fn session(keepalive: Option<Keepalive>, now: Instant) -> Session {
        Session::new(PacketConfig::client(), keepalive, now)
    }

    #[test]
    fn the_read_timeout_counts_from_the_last_byte() {
        let t0 = Instant::now();
        let mut s = session(None, t0);
        let mut timers = LinkTimers::new(Some(100 * MS), None, t0);
        assert_eq!(timers.next_wake(None, &s), Some(t0 + 100 * MS));
        timers.received(t0 + 60 * MS);
        assert_eq!(timers.next_wake(None, &s), Some(t0 + 160 * MS));
        assert_eq!(
            timers.expire(&mut s, t0 + 120 * MS, None),
            Ok(Expiry::Pending)
        );
        assert_eq!(
            timers.expire(&mut s, t0 + 160 * MS, None),
            Ok(Expiry::ReadTimedOut)
        );
        timers.wait_started(t0 + 200 * MS);
        assert_eq!(
            timers.expire(&mut s, t0 + 250 * MS, None),
            Ok(Expiry::Pending)
        );
    }

    #[test]
    fn the_write_timeout_counts_from_the_last_progress_and_stops_once_flushed() {
        let t0 = Instant::now();
        let mut s = session(None, t0);
        let mut timers = LinkTimers::new(None, Some(50 * MS), t0);
        assert_eq!(timers.next_wake(None, &s), None);
        timers.wrote(false, true, t0);
        // No progress since: the stall keeps its start.
        timers.wrote(false, true, t0 + 30 * MS);
        assert_eq!(timers.write_deadline(), Some(t0 + 50 * MS));
        // The socket took bytes: the count restarts.
        timers.wrote(true, true, t0 + 40 * MS);
        assert!(!timers.write_timed_out(t0 + 60 * MS));
        assert_eq!(
            timers.expire(&mut s, t0 + 90 * MS, None),
            Ok(Expiry::WriteTimedOut)
        );
        timers.wrote(true, false, t0 + 95 * MS);
        assert_eq!(timers.write_deadline(), None);
        timers.wrote(false, true, t0 + 96 * MS);
        timers.flushed();
        assert!(!timers.write_timed_out(t0 + 10_000 * MS));
    }

    #[test]
    fn a_lost_write_counts_before_the_deadline_and_the_deadline_before_the_read() {
        let t0 = Instant::now();
        let mut s = session(None, t0);
        let mut timers = LinkTimers::new(Some(10 * MS), Some(10 * MS), t0);
        timers.wrote(false, true, t0);
        let deadline = Some(t0 + 5 * MS);
        assert_eq!(timers.next_wake(deadline, &s), deadline);
        let late = t0 + 20 * MS;
        assert_eq!(
            timers.expire(&mut s, late, deadline),
            Ok(Expiry::WriteTimedOut)
        );
        timers.flushed();
        assert_eq!(timers.expire(&mut s, late, deadline), Ok(Expiry::Deadline));
        assert_eq!(timers.expire(&mut s, late, None), Ok(Expiry::ReadTimedOut));
    }

    #[test]
    fn keepalive_runs_only_when_the_wait_goes_on() {
        let t0 = Instant::now();
        let keepalive = Keepalive {
            interval: 20 * MS,
            timeout: 10 * MS,
        };
        let mut s = session(Some(keepalive), t0);
        let timers = LinkTimers::new(None, None, t0);
        assert_eq!(timers.next_wake(None, &s), Some(t0 + 20 * MS));
        // The deadline ends the wait: no ping is queued with it.
        let at = t0 + 20 * MS;
        assert_eq!(timers.expire(&mut s, at, Some(at)), Ok(Expiry::Deadline));
        assert!(!s.wants_write());
        assert_eq!(timers.expire(&mut s, at, None), Ok(Expiry::Pending));
        assert!(s.wants_write(), "the due ping is queued");
        assert!(s.awaits_pong());
        // The pong is overdue: the session fails, and the error says so.
        assert_eq!(
            timers.expire(&mut s, at + 10 * MS, None),
            Err(SessionError::KeepaliveTimeout)
        );
    }
}
