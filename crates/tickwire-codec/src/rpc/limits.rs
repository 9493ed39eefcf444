//! An account's weighted rate limits, shared by its WebSocket and REST clients:
//! [`RateLimits`]. Several windows at once (Binance: request weight per minute, orders per
//! 10 s and per day), each request kind costing a weight in some of them, charged in one
//! step across all of them; what the exchange reports as used brings the count up to its
//! figure. Time passed in; no clock, no thread.

use core::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Buckets a window is counted in: the count is exact to a bucket, never below the truth.
const BUCKETS: u64 = 32;
/// The ring holds the buckets a window can overlap: `BUCKETS` whole ones and the partial.
const RING: usize = BUCKETS as usize + 1;

/// A window of a [`RateLimits`], from [`RateLimits::window`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct WindowId(pub u16);

/// A request kind of a [`RateLimits`] (what it costs in each window), from
/// [`RateLimits::kind`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct KindId(pub u16);

/// A charge [`RateLimits`] refused: nothing was charged in any window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitExceeded {
    /// The window that refused (the first one, in the order they were added).
    pub window: WindowId,
    /// Its name, as given to [`RateLimits::window`].
    pub name: Arc<str>,
    /// Its limit.
    pub limit: u64,
    /// When the charge would fit, from the `now` of the call; `None`: the kind's weight in
    /// this window is above its limit, and never fits.
    pub retry_after: Option<Duration>,
}

impl fmt::Display for LimitExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.retry_after {
            Some(wait) => write!(
                f,
                "rate limit {:?} ({} per window) reached: retry after {wait:?}",
                self.name, self.limit
            ),
            None => write!(
                f,
                "a request's weight is above rate limit {:?} ({} per window)",
                self.name, self.limit
            ),
        }
    }
}

impl std::error::Error for LimitExceeded {}

/// Weighted rate limits over sliding windows, shared (in an `Arc`) by every client of one
/// account or IP. Build it with [`window`](Self::window) and [`kind`](Self::kind), then
/// share it; [`try_acquire`](Self::try_acquire) charges a kind in every window it costs
/// something in, or in none.
///
/// **Never exceeded.** Each window of span `s` counts charges in `BUCKETS` (32) buckets of
/// `(s + margin) / 32`; a charge is allowed only when the buckets that could still overlap
/// the last `s + margin` hold at most `limit - weight`. So in every interval of length
/// `s + margin` (sliding, or fixed on the exchange's clock, which may be up to `margin` off
/// ours) the charges stay within the limit; the price is a wait of up to one bucket more
/// than an exact log would ask (about 2 s for a minute, 45 min for a day). Times are taken
/// at `max(now, latest now seen)`, so clients passing slightly older `now`s only make it
/// stricter.
///
/// ```
/// use std::time::{Duration, Instant};
/// use tickwire_codec::rpc::RateLimits;
///
/// let mut limits = RateLimits::new();
/// let weight = limits.window("REQUEST_WEIGHT 1m", 6_000, Duration::from_secs(60));
/// let orders = limits.window("ORDERS 10s", 100, Duration::from_secs(10));
/// let place = limits.kind(&[(weight, 1), (orders, 1)]);
/// let now = Instant::now();
/// for _ in 0..100 {
///     limits.try_acquire(place, now)?;
/// }
/// let refused = limits.try_acquire(place, now).unwrap_err();
/// assert_eq!(refused.window, orders);
/// assert!(refused.retry_after.unwrap() > Duration::from_secs(10));
/// // The exchange says more weight is used than we counted (another process): we follow.
/// limits.observe(weight, 5_990, now);
/// assert_eq!(limits.used(weight, now), 5_990);
/// # Ok::<(), tickwire_codec::rpc::LimitExceeded>(())
/// ```
#[derive(Debug, Default)]
pub struct RateLimits {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    windows: Vec<Window>,
    /// Per kind, its (window index, weight) pairs.
    kinds: Vec<Vec<(usize, u64)>>,
    /// The first `now` seen: bucket numbers count from it.
    epoch: Option<Instant>,
    latest: Option<Instant>,
}

#[derive(Debug)]
struct Window {
    name: Arc<str>,
    limit: u64,
    /// Nanoseconds per bucket.
    width: u64,
    counts: [u64; RING],
    /// The bucket number the ring's newest entry holds.
    newest: u64,
}

impl RateLimits {
    /// No window yet: every charge is allowed.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a window: at most `limit` units in any `span`, with a margin of a twentieth of
    /// the span (at most 1 s) for the exchange's clock. Call before sharing.
    pub fn window(&mut self, name: &str, limit: u64, span: Duration) -> WindowId {
        let margin = (span / 20).min(Duration::from_secs(1));
        self.window_with_margin(name, limit, span, margin)
    }

    /// [`window`](Self::window) with an explicit margin.
    pub fn window_with_margin(
        &mut self,
        name: &str,
        limit: u64,
        span: Duration,
        margin: Duration,
    ) -> WindowId {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        let total = (span + margin).as_nanos().min(u128::from(u64::MAX)) as u64;
        state.windows.push(Window {
            name: name.into(),
            limit,
            width: total.div_ceil(BUCKETS).max(1),
            counts: [0; RING],
            newest: 0,
        });
        WindowId((state.windows.len() - 1) as u16)
    }

    /// Adds a request kind that costs `weight` in each given window (a window left out costs
    /// nothing). Call before sharing.
    pub fn kind(&mut self, costs: &[(WindowId, u64)]) -> KindId {
        let state = self.state.get_mut().unwrap_or_else(|p| p.into_inner());
        let costs = costs
            .iter()
            .filter(|(window, _)| usize::from(window.0) < state.windows.len())
            .map(|(window, weight)| (usize::from(window.0), *weight))
            .collect();
        state.kinds.push(costs);
        KindId((state.kinds.len() - 1) as u16)
    }

    /// Charges `kind` at `now` in every window it costs something in, or refuses and
    /// charges nothing. An unknown kind costs nothing.
    pub fn try_acquire(&self, kind: KindId, now: Instant) -> Result<(), LimitExceeded> {
        self.charge(kind, now, true)
    }

    /// Whether [`try_acquire`](Self::try_acquire) would charge `kind` now; charges nothing.
    pub fn check(&self, kind: KindId, now: Instant) -> Result<(), LimitExceeded> {
        self.charge(kind, now, false)
    }

    /// The exchange reports `used` units in `window` at `now` (a response's header or
    /// field, such as Binance's `X-MBX-USED-WEIGHT-1M`): a count below it is brought up to
    /// it; one above it is kept (ours may include requests the exchange has not counted yet).
    pub fn observe(&self, window: WindowId, used: u64, now: Instant) {
        let mut state = self.lock();
        let Some(since) = state.since(now) else {
            return;
        };
        if let Some(window) = state.windows.get_mut(usize::from(window.0)) {
            window.advance(since);
            let ours = window.used();
            if used > ours {
                window.counts[window.newest_slot()] += used - ours;
            }
        }
    }

    /// Units counted in `window` at `now`.
    pub fn used(&self, window: WindowId, now: Instant) -> u64 {
        let mut state = self.lock();
        let Some(since) = state.since(now) else {
            return 0;
        };
        state
            .windows
            .get_mut(usize::from(window.0))
            .map_or(0, |window| {
                window.advance(since);
                window.used()
            })
    }

    fn charge(&self, kind: KindId, now: Instant, take: bool) -> Result<(), LimitExceeded> {
        let mut state = self.lock();
        let Some(since) = state.since(now) else {
            return Ok(());
        };
        let State {
            windows,
            kinds,
            epoch,
            ..
        } = &mut *state;
        let Some(costs) = kinds.get(usize::from(kind.0)) else {
            return Ok(());
        };
        for &(index, weight) in costs {
            let window = &mut windows[index];
            window.advance(since);
            if window.used() + weight > window.limit {
                let retry_after = window.free_at(weight).map(|free| {
                    let free = epoch.unwrap_or(now) + Duration::from_nanos(free);
                    free.saturating_duration_since(now)
                });
                return Err(LimitExceeded {
                    window: WindowId(index as u16),
                    name: Arc::clone(&window.name),
                    limit: window.limit,
                    retry_after,
                });
            }
        }
        if take {
            for &(index, weight) in costs {
                let window = &mut windows[index];
                window.counts[window.newest_slot()] += weight;
            }
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // Every update is a few additions: a panic elsewhere cannot leave a window half
        // changed in a way that matters, so a poisoned lock is used as it is.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl State {
    /// Nanoseconds from the epoch to `max(now, latest)` (`None`: no window, nothing to
    /// count).
    fn since(&mut self, now: Instant) -> Option<u64> {
        if self.windows.is_empty() {
            return None;
        }
        let epoch = *self.epoch.get_or_insert(now);
        let at = self.latest.map_or(now, |latest| latest.max(now));
        self.latest = Some(at);
        let since = at.saturating_duration_since(epoch).as_nanos();
        Some(since.min(u128::from(u64::MAX)) as u64)
    }
}

impl Window {
    /// Moves the ring to the bucket holding `since` nanoseconds, clearing the buckets that
    /// left it.
    fn advance(&mut self, since: u64) {
        let bucket = since / self.width;
        if bucket <= self.newest {
            return;
        }
        let gap = (bucket - self.newest).min(RING as u64);
        for step in 1..=gap {
            self.counts[((self.newest + step) % RING as u64) as usize] = 0;
        }
        self.newest = bucket;
    }

    fn used(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The ring entry of the newest bucket, where charges go.
    fn newest_slot(&self) -> usize {
        (self.newest % RING as u64) as usize
    }

    /// Nanoseconds since the epoch at which `weight` more fits, or `None` if never.
    fn free_at(&self, weight: u64) -> Option<u64> {
        if weight > self.limit {
            return None;
        }
        let mut used = self.used();
        for step in 0..RING as u64 {
            // Oldest first: the bucket `newest - BUCKETS + step`.
            let Some(number) = (self.newest + step).checked_sub(BUCKETS) else {
                continue;
            };
            used -= self.counts[(number % RING as u64) as usize];
            if used + weight <= self.limit {
                // It leaves the count once the newest bucket is `number + BUCKETS + 1`.
                return Some((number + BUCKETS + 1).saturating_mul(self.width));
            }
        }
        Some((self.newest + 1 + BUCKETS).saturating_mul(self.width))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_charge_is_all_or_nothing_across_windows() {
        let mut limits = RateLimits::new();
        let a = limits.window("a", 10, Duration::from_secs(1));
        let b = limits.window("b", 3, Duration::from_secs(1));
        let both = limits.kind(&[(a, 2), (b, 1)]);
        let only_a = limits.kind(&[(a, 1)]);
        let now = Instant::now();
        for _ in 0..3 {
            limits.try_acquire(both, now).unwrap();
        }
        let refused = limits.try_acquire(both, now).unwrap_err();
        assert_eq!((refused.window, &*refused.name), (b, "b"));
        assert_eq!(
            limits.used(a, now),
            6,
            "the refused charge took nothing from a"
        );
        limits.try_acquire(only_a, now).unwrap();
        assert_eq!(limits.used(a, now), 7);
        limits.check(only_a, now).unwrap();
        assert_eq!(limits.used(a, now), 7, "a check charges nothing");
    }

    #[test]
    fn a_weight_above_the_limit_never_fits_and_says_so() {
        let mut limits = RateLimits::new();
        let w = limits.window("w", 5, Duration::from_secs(1));
        let heavy = limits.kind(&[(w, 6)]);
        let refused = limits.try_acquire(heavy, Instant::now()).unwrap_err();
        assert_eq!(refused.retry_after, None);
    }

    #[test]
    fn the_wait_it_gives_is_enough_and_not_much_more() {
        let mut limits = RateLimits::new();
        let span = Duration::from_secs(10);
        let w = limits.window_with_margin("w", 4, span, Duration::ZERO);
        let one = limits.kind(&[(w, 1)]);
        let start = Instant::now();
        for i in 0..4 {
            limits
                .try_acquire(one, start + Duration::from_secs(i))
                .unwrap();
        }
        let at = start + Duration::from_secs(4);
        let wait = limits
            .try_acquire(one, at)
            .unwrap_err()
            .retry_after
            .unwrap();
        // The first charge (at 0 s) leaves after the span and at most one bucket more.
        let bucket = span / BUCKETS as u32;
        assert!(wait >= span - Duration::from_secs(4), "{wait:?}");
        assert!(
            wait <= span - Duration::from_secs(4) + bucket * 2,
            "{wait:?}"
        );
        assert!(limits.try_acquire(one, at + wait).is_ok());
    }

    #[test]
    fn an_observed_count_only_raises_ours() {
        let mut limits = RateLimits::new();
        let w = limits.window("w", 100, Duration::from_secs(60));
        let one = limits.kind(&[(w, 1)]);
        let now = Instant::now();
        limits.try_acquire(one, now).unwrap();
        limits.observe(w, 0, now);
        assert_eq!(limits.used(w, now), 1);
        limits.observe(w, 99, now);
        assert!(limits.try_acquire(one, now).is_ok());
        assert!(limits.try_acquire(one, now).is_err());
        // A minute and its margin later everything has left.
        let later = now + Duration::from_secs(64);
        assert_eq!(limits.used(w, later), 0);
    }

    proptest! {
        /// Whatever the charges' times and weights, no interval of the window's span ever
        /// holds more than its limit.
        #[test]
        fn no_window_of_the_span_ever_holds_more_than_the_limit(
            steps in proptest::collection::vec((0u64..400, 1u64..4), 1..300),
            limit in 1u64..20,
        ) {
            let mut limits = RateLimits::new();
            let span = Duration::from_millis(1_000);
            let w = limits.window_with_margin("w", limit, span, Duration::ZERO);
            let kinds: Vec<KindId> = (1..4).map(|weight| limits.kind(&[(w, weight)])).collect();
            let start = Instant::now();
            let mut at = 0u64;
            let mut charged: Vec<(u64, u64)> = Vec::new();
            for (advance, weight) in steps {
                at += advance;
                let now = start + Duration::from_millis(at);
                if limits.try_acquire(kinds[weight as usize - 1], now).is_ok() {
                    charged.push((at, weight));
                }
            }
            for &(t, _) in &charged {
                let inside: u64 = charged
                    .iter()
                    .filter(|(u, _)| *u >= t && *u < t + 1_000)
                    .map(|(_, w)| w)
                    .sum();
                prop_assert!(inside <= limit, "{inside} in the second from {t} ms");
            }
        }
    }
}
