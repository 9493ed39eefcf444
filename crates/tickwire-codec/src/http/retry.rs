//! What decides a resend beyond the method: [`Sending`] (a request's method, and whether the
//! user marked it idempotent) and [`RetryBudget`] (how many resends a client may make,
//! shared by every client that holds it). Time passed in; no clock, no thread.

use std::sync::Mutex;
use std::time::Instant;

use super::Method;

/// A request as the resend rule sees it: its method, and whether it may be sent twice.
/// GET, HEAD, PUT, DELETE, OPTIONS and TRACE are idempotent by their method (RFC 9110
/// §9.2.2); a POST or PATCH is only when the user says so
/// ([`marked_idempotent`](Self::marked_idempotent)), for example an order carrying a client
/// order id, which the exchange refuses as a duplicate if it already has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sending {
    /// The method.
    pub method: Method,
    /// Whether sending it twice does what sending it once does.
    pub idempotent: bool,
}

impl Sending {
    /// `method`, idempotent as RFC 9110 says it is.
    pub const fn new(method: Method) -> Self {
        Self {
            method,
            idempotent: method.is_idempotent(),
        }
    }

    /// The same request, marked idempotent by the user.
    #[must_use]
    pub const fn marked_idempotent(mut self) -> Self {
        self.idempotent = true;
        self
    }
}

/// How many automatic resends the clients holding it may make: each request deposits
/// `ratio` of a resend, each resend withdraws one, and `min_per_second` more come with time,
/// up to `burst` at once (Finagle's retry budget, as a token bucket). A dying server then
/// gets at most `ratio` more requests than it was sent, not twice as many; with few
/// requests the minimum still allows a resend now and then. Share it in an `Arc`.
///
/// ```
/// use std::time::{Duration, Instant};
/// use tickwire_codec::http::RetryBudget;
///
/// // A tenth of the requests, no minimum, two at once; it starts full.
/// let budget = RetryBudget::new(0.1, 0.0, 2.0);
/// let now = Instant::now();
/// assert!(budget.try_withdraw(now) && budget.try_withdraw(now));
/// assert!(!budget.try_withdraw(now), "spent");
/// for _ in 0..10 {
///     budget.deposit(now); // ten requests: one resend's worth
/// }
/// assert!(budget.try_withdraw(now));
/// assert!(!budget.try_withdraw(now));
/// assert!(!budget.try_withdraw(now + Duration::from_secs(60)), "no minimum: no refill");
/// ```
#[derive(Debug)]
pub struct RetryBudget {
    /// In millionths of a resend (fixed point: a tenth deposited ten times is one).
    ratio: u64,
    min_per_second: u64,
    burst: u64,
    state: Mutex<(u64, Option<Instant>)>,
}

/// Millionths of a resend per resend.
const UNIT: u64 = 1_000_000;

impl RetryBudget {
    /// A budget that starts full (`burst` resends). `ratio` and `min_per_second` are
    /// clamped at 0, `burst` at 1; each is kept to a millionth.
    pub fn new(ratio: f64, min_per_second: f64, burst: f64) -> Self {
        let fixed = |value: f64| (value.max(0.0) * UNIT as f64).round() as u64;
        let burst = fixed(burst).max(UNIT);
        Self {
            ratio: fixed(ratio),
            min_per_second: fixed(min_per_second),
            burst,
            state: Mutex::new((burst, None)),
        }
    }

    /// A request was made at `now`.
    pub fn deposit(&self, now: Instant) {
        let mut state = self.lock();
        let tokens = self.refilled(&mut state, now).saturating_add(self.ratio);
        state.0 = tokens.min(self.burst);
    }

    /// Takes one resend at `now` if the budget has one; `false` (nothing taken) when not.
    pub fn try_withdraw(&self, now: Instant) -> bool {
        let mut state = self.lock();
        let tokens = self.refilled(&mut state, now);
        let Some(left) = tokens.checked_sub(UNIT) else {
            state.0 = tokens;
            return false;
        };
        state.0 = left;
        true
    }

    /// The tokens at `now`, with what time added since the time last counted. Only the time
    /// that became whole millionths is counted, so frequent calls lose nothing.
    fn refilled(&self, state: &mut (u64, Option<Instant>), now: Instant) -> u64 {
        let Some(last) = state.1 else {
            state.1 = Some(now);
            return state.0;
        };
        let elapsed = now.saturating_duration_since(last).as_nanos();
        let rate = u128::from(self.min_per_second);
        let added = (elapsed.saturating_mul(rate) / 1_000_000_000).min(u128::from(self.burst));
        let tokens = state.0.saturating_add(added as u64);
        if tokens >= self.burst || rate == 0 {
            state.1 = Some(last.max(now));
            return tokens.min(self.burst);
        }
        // Advance by the time the added millionths took, no further.
        let used = added.saturating_mul(1_000_000_000) / rate;
        state.1 = Some(last + std::time::Duration::from_nanos(used as u64));
        tokens
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, Option<Instant>)> {
        // One count and one instant, each written whole: a poisoned lock is used as it is.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Default for RetryBudget {
    /// 20% of requests, at least one resend every 10 s, 10 at once.
    fn default() -> Self {
        Self::new(0.2, 0.1, 10.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn only_what_was_deposited_and_the_minimum_is_withdrawn() {
        let budget = RetryBudget::new(0.5, 1.0, 2.0);
        let start = Instant::now();
        assert!(budget.try_withdraw(start) && budget.try_withdraw(start));
        assert!(!budget.try_withdraw(start), "the burst is spent");
        budget.deposit(start);
        budget.deposit(start);
        assert!(
            budget.try_withdraw(start),
            "two requests deposited one resend"
        );
        assert!(!budget.try_withdraw(start));
        assert!(
            budget.try_withdraw(start + Duration::from_secs(1)),
            "the minimum refills"
        );
        // However long it waits, no more than the burst at once.
        let later = start + Duration::from_secs(3_600);
        let taken = (0..10).filter(|_| budget.try_withdraw(later)).count();
        assert_eq!(taken, 2);
    }

    #[test]
    fn calls_a_microsecond_apart_still_refill_at_the_minimum() {
        let budget = RetryBudget::new(0.0, 1.0, 1.0);
        let start = Instant::now();
        assert!(budget.try_withdraw(start));
        let mut taken = 0;
        for us in 1..=2_500_000u64 {
            if budget.try_withdraw(start + Duration::from_micros(us)) {
                taken += 1;
            }
        }
        assert_eq!(taken, 2, "one a second over 2.5 s");
    }

    #[test]
    fn a_post_is_idempotent_only_when_marked() {
        assert!(!Sending::new(Method::Post).idempotent);
        assert!(!Sending::new(Method::Patch).idempotent);
        assert!(Sending::new(Method::Put).idempotent);
        assert!(Sending::new(Method::Post).marked_idempotent().idempotent);
    }
}
