//! [`Reconnect`] and [`Backoff`]: when a pool's slot may try to connect again, and
//! [`Verdict`], what a finished request tells the [`Breaker`](super::Breaker). Sans-IO,
//! time passed in.
//!
//! It owns the backoff after failed connection attempts (the initial wait doubled per
//! further failure, capped) and the rule that a half-open breaker's probe ignores it. It
//! does not own connections, locks or the classification of a transport's errors (the
//! transport's error type says which [`Verdict`] it is).

use std::time::{Duration, Instant};

use super::{Breaker, Permit};

/// The waits between failed connection attempts: `initial` after the first, doubled per
/// further failure (20 times at most), never more than `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after a first failed attempt.
    pub initial: Duration,
    /// The longest wait (at least `initial`).
    pub max: Duration,
}

impl Backoff {
    /// The wait after a failed attempt that followed `earlier_failures` failed ones in a row.
    pub fn delay(&self, earlier_failures: u32) -> Duration {
        self.initial
            .saturating_mul(1 << earlier_failures.min(20))
            .min(self.max)
    }
}

impl Default for Backoff {
    /// 50 ms doubling to 5 s.
    fn default() -> Self {
        Self {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(5),
        }
    }
}

/// One pool slot's connection attempts: failures in a row and when the next may start.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reconnect {
    failures: u32,
    retry_at: Option<Instant>,
}

impl Reconnect {
    /// Whether an attempt may start at `now`: `Err(retry_at)` while the slot backs off,
    /// unless the request is a half-open breaker's `probe` (which goes through).
    pub fn may_connect(&self, now: Instant, probe: bool) -> Result<(), Instant> {
        match self.retry_at {
            Some(retry_at) if retry_at > now && !probe => Err(retry_at),
            _ => Ok(()),
        }
    }

    /// An attempt succeeded: the backoff starts over.
    pub fn connected(&mut self) {
        *self = Self::default();
    }

    /// An attempt failed at `now`: the next may start after `backoff`'s next delay.
    pub fn failed(&mut self, now: Instant, backoff: &Backoff) {
        self.retry_at = Some(now + backoff.delay(self.failures));
        self.failures = self.failures.saturating_add(1);
    }
}

/// What a finished request says about the peer, for the breaker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Answered.
    Success,
    /// The peer or the link failed it (a lost connection, a timeout, busy, a failed or
    /// backed-off connect).
    PeerFailure,
    /// Refused locally (the caller's payload, back-pressure): counts neither way.
    Neutral,
}

impl Breaker {
    /// Hands `permit` back with `verdict`, at `now`: [`on_success`](Self::on_success),
    /// [`on_failure`](Self::on_failure), or nothing for [`Verdict::Neutral`].
    pub fn settle(&mut self, permit: Permit, verdict: Verdict, now: Instant) {
        match verdict {
            Verdict::Success => self.on_success(permit),
            Verdict::PeerFailure => self.on_failure(permit, now),
            Verdict::Neutral => drop(permit),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::{Backoff, Reconnect, Verdict};
    use crate::mux::{Breaker, BreakerConfig, BreakerState};

    #[test]
    fn the_delay_doubles_from_the_initial_backoff_up_to_the_maximum() {
        let backoff = Backoff::default();
        let delays: Vec<_> = (0..9).map(|n| backoff.delay(n)).collect();
        let millis = [50, 100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000];
        assert_eq!(delays, millis.map(Duration::from_millis));
        assert_eq!(backoff.delay(u32::MAX), Duration::from_secs(5));
    }

    #[test]
    fn a_slot_backs_off_after_failures_and_starts_over_once_connected() {
        let (start, backoff) = (Instant::now(), Backoff::default());
        let mut slot = Reconnect::default();
        assert_eq!(slot.may_connect(start, false), Ok(()));
        slot.failed(start, &backoff);
        let first = start + Duration::from_millis(50);
        assert_eq!(slot.may_connect(start, false), Err(first));
        assert_eq!(slot.may_connect(first, false), Ok(()));
        slot.failed(first, &backoff);
        let second = first + Duration::from_millis(100);
        assert_eq!(
            slot.may_connect(first + Duration::from_millis(99), false),
            Err(second)
        );
        slot.connected();
        assert_eq!(slot.may_connect(first, false), Ok(()));
        slot.failed(first, &backoff);
        assert_eq!(
            slot.may_connect(first, false),
            Err(first + Duration::from_millis(50))
        );
    }

    #[test]
    fn a_probe_ignores_the_backoff() {
        let now = Instant::now();
        let mut slot = Reconnect::default();
        slot.failed(now, &Backoff::default());
        assert_eq!(slot.may_connect(now, true), Ok(()));
    }

    #[test]
    fn verdicts_reach_the_breaker_and_neutral_ones_count_neither_way() {
        let now = Instant::now();
        let config = BreakerConfig::new().with_failure_threshold(2);
        let mut breaker = Breaker::new(config);
        let permit = breaker.allow(now).unwrap();
        breaker.settle(permit, Verdict::PeerFailure, now);
        let permit = breaker.allow(now).unwrap();
        breaker.settle(permit, Verdict::Neutral, now);
        let closed = BreakerState::Closed {
            consecutive_failures: 1,
        };
        assert_eq!(breaker.state(), closed);
        let permit = breaker.allow(now).unwrap();
        breaker.settle(permit, Verdict::Success, now);
        let permit = breaker.allow(now).unwrap();
        breaker.settle(permit, Verdict::PeerFailure, now);
        let permit = breaker.allow(now).unwrap();
        breaker.settle(permit, Verdict::PeerFailure, now);
        assert!(matches!(breaker.state(), BreakerState::Open { .. }));
    }
}
