//! The two quotas a feed session keeps: [`ConnectBudget`] (connection attempts per window,
//! shareable between the sessions of one process) and [`SendQuota`] (a connection's sends,
//! by weight, as a GCRA). Time passed in; no clock, no thread.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most `attempts` connection attempts in any window of `window`, across every session
/// that holds the budget (share it in an `Arc`). A sliding log of the last `attempts`
/// attempt times, behind a lock held for one check: exact, never exceeded, whatever the order
/// in which sessions on several threads pass their `now`s (an attempt is recorded at the
/// latest time any session has reported, so a stale `now` only makes the budget stricter).
#[derive(Debug)]
pub struct ConnectBudget {
    attempts: usize,
    window: Duration,
    /// Added to the window: the exchange counts an attempt when its connection arrives,
    /// some time after the session recorded it, and an attempt delayed more than a later one
    /// would bunch two into one of its windows.
    margin: Duration,
    log: Mutex<VecDeque<Instant>>,
}

impl ConnectBudget {
    /// `attempts` per `window` (at least one attempt), with the default margin: a twentieth
    /// of the window, at most 1 s (50 ms for 1 s; Binance's 300 per 5 min keeps its 1 s).
    /// Allocates the log once.
    pub fn new(attempts: usize, window: Duration) -> Self {
        let attempts = attempts.max(1);
        Self {
            attempts,
            window,
            margin: (window / 20).min(Duration::from_secs(1)),
            log: Mutex::new(VecDeque::with_capacity(attempts)),
        }
    }

    /// Sets the margin added to the window between attempts `attempts` apart: how much
    /// later than its start an attempt may reach the exchange than the attempts after it.
    #[must_use]
    pub fn with_margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }

    /// Takes one attempt at `now`, or says when the next one may start (`Err(at)`, nothing
    /// taken). Attempts are recorded at `max(now, latest recorded)`.
    pub fn try_acquire(&self, now: Instant) -> Result<(), Instant> {
        // A panic elsewhere while the lock was held cannot leave the log inconsistent (every
        // update is one push or pop), so a poisoned lock is used as it is.
        let mut log = self.log.lock().unwrap_or_else(|poison| poison.into_inner());
        let at = log.back().map_or(now, |latest| now.max(*latest));
        if log.len() >= self.attempts {
            let oldest = log[0];
            let free_at = oldest + self.window + self.margin;
            if at < free_at {
                return Err(free_at);
            }
            log.pop_front();
        }
        log.push_back(at);
        Ok(())
    }

    /// Attempts taken within the window ending at `now`.
    pub fn used(&self, now: Instant) -> usize {
        let log = self.log.lock().unwrap_or_else(|poison| poison.into_inner());
        log.iter().filter(|at| now < **at + self.window).count()
    }
}

/// A connection's send quota: at most `burst` units at once, then one unit per `interval`
/// (the generic cell rate algorithm: one timestamp per connection). In any window of length
/// `w` it lets through at most `burst + floor(w / interval)` units;
/// [`SendQuota::per_window`] picks the two so that an exchange's "N per window" holds for
/// every window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendQuota {
    /// Time per unit of sustained rate.
    pub interval: Duration,
    /// Units that may go back to back (at least 1).
    pub burst: u32,
    /// Whether the WebSocket control frames the driver sends (pings, pongs, close) count,
    /// one unit each (Binance counts its pings).
    pub count_control_frames: bool,
}

impl SendQuota {
    /// Never more than `units` in any window of `window` (closed or half-open): half of
    /// them (rounded up) as a burst, the rest spread over the window.
    pub fn per_window(units: u32, window: Duration) -> Self {
        let units = units.max(1);
        let burst = units.div_ceil(2);
        let spread = units - burst;
        let interval = if spread == 0 {
            // One unit per window: the next must fall outside any window holding the first.
            window + Duration::from_nanos(1)
        } else {
            // Rounded down to the nanosecond: `floor(window / interval)` is still `spread`.
            window / spread
        };
        Self {
            interval,
            burst,
            count_control_frames: false,
        }
    }

    /// Sets [`count_control_frames`](Self::count_control_frames).
    #[must_use]
    pub const fn with_count_control_frames(mut self, count: bool) -> Self {
        self.count_control_frames = count;
        self
    }
}

/// A [`SendQuota`]'s state: the theoretical arrival time of the next unit.
#[derive(Debug, Clone, Copy)]
pub(super) struct Gcra {
    quota: SendQuota,
    tat: Option<Instant>,
}

impl Gcra {
    pub(super) fn new(quota: SendQuota) -> Self {
        Self { quota, tat: None }
    }

    /// Charges `weight` units at `now` if they conform; otherwise how long until they would.
    pub(super) fn try_take(&mut self, now: Instant, weight: u32) -> Result<(), GcraRefusal> {
        let burst = self.quota.burst.max(1);
        if weight > burst {
            return Err(GcraRefusal::OverBurst(burst));
        }
        let new_tat = self.next_tat(now, weight);
        let limit = now + self.quota.interval.saturating_mul(burst);
        if new_tat > limit {
            return Err(GcraRefusal::Wait(new_tat - limit));
        }
        self.tat = Some(new_tat);
        Ok(())
    }

    /// Charges `weight` units whatever the quota says (a frame the protocol owes), so later
    /// sends wait for it.
    pub(super) fn force_take(&mut self, now: Instant, weight: u32) {
        self.tat = Some(self.next_tat(now, weight));
    }

    pub(super) fn counts_control_frames(&self) -> bool {
        self.quota.count_control_frames
    }

    fn next_tat(&self, now: Instant, weight: u32) -> Instant {
        let start = self.tat.map_or(now, |tat| tat.max(now));
        start + self.quota.interval.saturating_mul(weight)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum GcraRefusal {
    Wait(Duration),
    OverBurst(u32),
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use proptest::prelude::*;

    use super::{ConnectBudget, Gcra, GcraRefusal, SendQuota};

    #[test]
    fn the_budget_refuses_the_attempt_past_its_count_until_the_window_moves() {
        let start = Instant::now();
        let budget = ConnectBudget::new(3, Duration::from_secs(10)).with_margin(Duration::ZERO);
        for s in 0..3 {
            assert_eq!(budget.try_acquire(start + Duration::from_secs(s)), Ok(()));
        }
        let free = start + Duration::from_secs(10);
        assert_eq!(
            budget.try_acquire(start + Duration::from_secs(5)),
            Err(free)
        );
        assert_eq!(budget.used(start + Duration::from_secs(5)), 3);
        assert_eq!(budget.try_acquire(free), Ok(()));
        assert_eq!(
            budget.try_acquire(free),
            Err(start + Duration::from_secs(11))
        );
    }

    /// An exchange counts attempts as they arrive: the first of a run may arrive later than
    /// the session started it. By default the window is kept a twentieth longer, so an
    /// attempt `attempts` after another starts at least `window + window / 20` after it.
    #[test]
    fn the_default_margin_spaces_attempts_past_the_window() {
        let start = Instant::now();
        let window = Duration::from_secs(1);
        let budget = ConnectBudget::new(2, window);
        assert_eq!(budget.try_acquire(start), Ok(()));
        assert_eq!(budget.try_acquire(start), Ok(()));
        let free = start + window + Duration::from_millis(50);
        assert_eq!(budget.try_acquire(start + window), Err(free));
        assert_eq!(budget.try_acquire(free), Ok(()));
        // Long windows keep at most 1 s (Binance: 300 attempts per 5 minutes).
        let binance = ConnectBudget::new(1, Duration::from_secs(300));
        assert_eq!(binance.try_acquire(start), Ok(()));
        assert_eq!(
            binance.try_acquire(start),
            Err(start + Duration::from_secs(301))
        );
    }

    #[test]
    fn sessions_on_threads_share_one_budget_and_never_exceed_it() {
        let start = Instant::now();
        let budget = Arc::new(ConnectBudget::new(5, Duration::from_secs(1)));
        let granted: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    let budget = Arc::clone(&budget);
                    scope.spawn(move || {
                        (0..100)
                            .filter(|_| budget.try_acquire(start).is_ok())
                            .count()
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(granted, 5);
    }

    #[test]
    fn a_weight_over_the_burst_is_refused_for_good() {
        let mut gcra = Gcra::new(SendQuota::per_window(5, Duration::from_secs(1)));
        let now = Instant::now();
        assert_eq!(gcra.try_take(now, 4), Err(GcraRefusal::OverBurst(3)));
        assert_eq!(gcra.try_take(now, 3), Ok(()));
        let Err(GcraRefusal::Wait(wait)) = gcra.try_take(now, 1) else {
            panic!("the burst is spent");
        };
        assert_eq!(gcra.try_take(now + wait, 1), Ok(()));
    }

    proptest! {
        /// Whatever the sends ask, no window of the quota's length ever holds more than the
        /// units it allows, and a refusal's wait is exact: the send conforms then, not before.
        #[test]
        fn per_window_quotas_hold_in_every_window(
            units in 1u32..12,
            window_ms in 1u64..2_000,
            steps in proptest::collection::vec((0u64..400, 1u32..4, any::<bool>()), 1..200),
        ) {
            let window = Duration::from_millis(window_ms);
            let quota = SendQuota::per_window(units, window);
            let mut gcra = Gcra::new(quota);
            let start = Instant::now();
            let mut now = start;
            let mut sent: Vec<(Instant, u32)> = Vec::new();
            for (advance_ms, weight, forced) in steps {
                now += Duration::from_millis(advance_ms);
                if forced {
                    continue;
                }
                match gcra.try_take(now, weight) {
                    Ok(()) => sent.push((now, weight)),
                    Err(GcraRefusal::Wait(wait)) => {
                        let mut probe = gcra;
                        if wait > Duration::from_nanos(1) {
                            let early = now + wait - Duration::from_nanos(1);
                            prop_assert!(probe.try_take(early, weight).is_err());
                        }
                        prop_assert!(probe.try_take(now + wait, weight).is_ok());
                    }
                    Err(GcraRefusal::OverBurst(burst)) => prop_assert!(weight > burst),
                }
            }
            for (i, (from, _)) in sent.iter().enumerate() {
                let in_window: u32 = sent[i..]
                    .iter()
                    .take_while(|(at, _)| *at <= *from + window)
                    .map(|(_, w)| w)
                    .sum();
                prop_assert!(in_window <= units, "{in_window} > {units} in {window:?}");
            }
        }
    }
}
