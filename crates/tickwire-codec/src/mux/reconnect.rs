//! [`Reconnect`] and [`Backoff`]: when a pool's slot may try to connect again, and
//! [`Verdict`], what a finished request tells the [`Breaker`](super::Breaker). Sans-IO,
//! time passed in.
//!
//! It owns the backoff after failed connection attempts (the initial wait doubled per
//! further failure, capped, or grown by any factor with full jitter: [`Backoff::jittered`],
//! which the feed sessions use) and the rule that a half-open breaker's probe ignores it. It
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

    /// The wait after a failed attempt that followed `earlier_failures` failed ones in a row,
    /// with full jitter: a uniform draw from `jitter` between `initial` and the ceiling
    /// `initial * factor^earlier_failures` (never more than `max`). A `factor` below 1 (or
    /// not a number) counts as 1: the ceiling never shrinks. Draws from a seeded [`Jitter`]
    /// repeat, so a test knows each wait.
    pub fn jittered(&self, earlier_failures: u32, factor: f64, jitter: &mut Jitter) -> Duration {
        let factor = if factor >= 1.0 { factor } else { 1.0 };
        let max = self.max.max(self.initial);
        let growth = factor.powi(earlier_failures.min(i32::MAX as u32) as i32);
        let ceiling = Duration::try_from_secs_f64(self.initial.as_secs_f64() * growth)
            .map_or(max, |ceiling| ceiling.min(max));
        let span = ceiling.saturating_sub(self.initial);
        let nanos = u64::try_from(span.as_nanos()).unwrap_or(u64::MAX);
        self.initial + Duration::from_nanos(jitter.below(nanos.saturating_add(1)))
    }
}

/// A small deterministic generator (SplitMix64) for back-off jitter: not for secrets. The
/// caller seeds it (from the OS in production, a constant in a test).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jitter {
    state: u64,
}

impl Jitter {
    /// A generator whose draws depend only on `seed`.
    pub const fn seeded(seed: u64) -> Self {
        Self { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A draw in `0..bound` (0 when `bound` is 0), by multiply-shift: a bias under
    /// `bound / 2^64`, which a back-off does not notice.
    pub fn below(&mut self, bound: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(bound)) >> 64) as u64
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

    use super::{Backoff, Jitter, Reconnect, Verdict};
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
    fn jittered_delays_stay_between_the_initial_wait_and_the_growing_ceiling() {
        let backoff = Backoff {
            initial: Duration::from_millis(100),
            max: Duration::from_secs(2),
        };
        let mut jitter = Jitter::seeded(7);
        for failures in 0..12u32 {
            let ceiling = Duration::from_millis(100)
                .mul_f64(3f64.powi(failures as i32))
                .min(Duration::from_secs(2));
            let draws: Vec<_> = (0..200)
                .map(|_| backoff.jittered(failures, 3.0, &mut jitter))
                .collect();
            assert!(draws.iter().all(|d| *d >= backoff.initial && *d <= ceiling));
            if failures >= 2 {
                // Full jitter: the draws spread over the range, not bunched at one end.
                let low = draws
                    .iter()
                    .filter(|d| **d < backoff.initial + (ceiling - backoff.initial) / 2)
                    .count();
                assert!(
                    (40..160).contains(&low),
                    "{failures}: {low} of 200 in the lower half"
                );
            }
        }
        assert_eq!(backoff.jittered(0, 3.0, &mut jitter), backoff.initial);
        assert!(backoff.jittered(u32::MAX, f64::INFINITY, &mut jitter) <= backoff.max);
        assert_eq!(backoff.jittered(5, f64::NAN, &mut jitter), backoff.initial);
        let (mut a, mut b) = (Jitter::seeded(1), Jitter::seeded(1));
        assert_eq!(
            backoff.jittered(4, 2.0, &mut a),
            backoff.jittered(4, 2.0, &mut b)
        );
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
