//! A sans-IO circuit breaker for a client pool: stop sending to a peer that keeps failing,
//! probe it after a cool-down, and resume once a probe succeeds.
//!
//! It owns the state machine only; the pool decides what a failure is (a connect error, a
//! timed-out request, a connection lost with requests in flight) and passes time in.
//!
//! ```text
//!            failure_threshold consecutive failures
//!   Closed ───────────────────────────────────────────▶ Open { until = now + cool_down }
//!     ▲                                                   │ allow(now) with now >= until
//!     │ a probe succeeds                                  ▼
//!     └──────────────────────────────────────────────── HalfOpen (up to max_probes permits)
//!                   a probe fails, or no verdict within probe_timeout:
//!                   back to Open with cool_down doubled, up to max_cool_down
//! ```
//!
//! Why consecutive failures and not a failure ratio over a window: a dead or restarting peer
//! fails every request, which a counter sees in `failure_threshold` requests with one integer
//! of state and no window to size; a peer that fails some requests and answers others is
//! alive, and its failures are the requests' business (each gets its typed error), not a
//! reason to cut it off.
//!
//! Each [`Permit`] remembers the state it was issued in. A verdict on a permit issued before
//! the last transition is ignored: a slow request sent while Closed cannot close a breaker
//! that has since opened, nor can its failure count against a later Closed period.

use core::fmt;
use std::time::{Duration, Instant};

/// The breaker's thresholds and delays. `#[non_exhaustive]`: start from
/// [`BreakerConfig::new`] (or `default()`) and change fields with the `with_*` methods. A
/// duration over a year acts as a year.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BreakerConfig {
    /// Consecutive failures that open a closed breaker. Default 5; 0 acts as 1.
    pub failure_threshold: u32,
    /// How long the breaker stays open the first time. Default 1 s.
    pub cool_down: Duration,
    /// Cap on the cool-down, which doubles each time a probe fails. Default 30 s.
    pub max_cool_down: Duration,
    /// Permits handed out while half-open, before a verdict. Default 1; 0 acts as 1.
    pub max_probes: u32,
    /// How long a half-open breaker waits for a probe's verdict before it counts as a
    /// failure (a probe whose request was dropped without a verdict must not wedge the
    /// breaker). Default 10 s.
    pub probe_timeout: Duration,
}

impl BreakerConfig {
    /// The defaults: open after 5 consecutive failures, 1 s cool-down doubling up to 30 s,
    /// 1 probe at a time, 10 s probe timeout.
    pub const fn new() -> Self {
        Self {
            failure_threshold: 5,
            cool_down: Duration::from_secs(1),
            max_cool_down: Duration::from_secs(30),
            max_probes: 1,
            probe_timeout: Duration::from_secs(10),
        }
    }

    with_methods! {
        const_set with_failure_threshold => failure_threshold: u32,
        const_set with_cool_down => cool_down: Duration,
        const_set with_max_cool_down => max_cool_down: Duration,
        const_set with_max_probes => max_probes: u32,
        const_set with_probe_timeout => probe_timeout: Duration,
    }
}

impl Default for BreakerConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// Where the breaker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum BreakerState {
    /// Requests go through; failures are counted.
    Closed {
        /// Failures in a row so far.
        consecutive_failures: u32,
    },
    /// Requests are refused until `until`.
    Open {
        /// When the next [`Breaker::allow`] turns the breaker half-open.
        until: Instant,
    },
    /// A few probe requests go through; the first verdict decides.
    HalfOpen {
        /// Probes handed out and not yet decided.
        probes: u32,
    },
}

/// Leave to send one request. Hand it back with exactly one verdict:
/// [`Breaker::on_success`] or [`Breaker::on_failure`]. Not `Clone`, so one permit cannot
/// be given two verdicts.
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a permit is handed back with on_success or on_failure"]
pub struct Permit {
    /// Transition count when issued.
    epoch: u64,
    /// Issued while half-open.
    probe: bool,
}

impl Permit {
    /// True for a half-open probe: its verdict closes or re-opens the breaker.
    pub fn is_probe(&self) -> bool {
        self.probe
    }
}

/// [`Breaker::allow`] refused: do not send before `retry_at`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Rejected {
    /// When asking again can succeed: the end of the cool-down, or of the probes' timeout.
    pub retry_at: Instant,
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("circuit breaker open: the peer keeps failing")
    }
}

impl std::error::Error for Rejected {}

/// A circuit breaker, time passed in. See the module docs for the state machine.
#[derive(Debug, Clone)]
pub struct Breaker {
    config: BreakerConfig,
    state: State,
    /// The cool-down the next opening uses.
    cool_down: Duration,
    /// Transitions so far: stamps permits.
    epoch: u64,
}

#[derive(Debug, Clone, Copy)]
enum State {
    Closed { failures: u32 },
    Open { until: Instant },
    HalfOpen { since: Instant, probes: u32 },
}

impl Breaker {
    /// A closed breaker.
    pub fn new(config: BreakerConfig) -> Self {
        Self {
            config,
            state: State::Closed { failures: 0 },
            cool_down: config.cool_down,
            epoch: 0,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &BreakerConfig {
        &self.config
    }

    /// Whether a request may go at `now`. Closed: always. Open: refused until the cool-down
    /// ends, then the breaker turns half-open. Half-open: up to
    /// [`max_probes`](BreakerConfig::max_probes) probe permits; past them, refused until a
    /// verdict or the probe timeout (after which the breaker re-opens).
    pub fn allow(&mut self, now: Instant) -> Result<Permit, Rejected> {
        if let State::Open { until } = self.state {
            if now < until {
                return Err(Rejected { retry_at: until });
            }
            self.transition(State::HalfOpen {
                since: now,
                probes: 0,
            });
        }
        match &mut self.state {
            State::Closed { .. } => Ok(Permit {
                epoch: self.epoch,
                probe: false,
            }),
            State::HalfOpen { since, probes } => {
                let since = *since;
                if *probes < self.config.max_probes.max(1) {
                    *probes += 1;
                    Ok(Permit {
                        epoch: self.epoch,
                        probe: true,
                    })
                } else if now >= after(since, self.config.probe_timeout) {
                    Err(Rejected {
                        retry_at: self.reopen(now),
                    })
                } else {
                    let retry_at = after(since, self.config.probe_timeout);
                    Err(Rejected { retry_at })
                }
            }
            State::Open { .. } => unreachable!("turned half-open above"),
        }
    }

    /// The request behind `permit` succeeded. Closed: resets the failure count. Half-open
    /// probe: closes the breaker and resets the cool-down. A permit issued before the last
    /// transition changes nothing.
    pub fn on_success(&mut self, permit: Permit) {
        if permit.epoch != self.epoch {
            return;
        }
        match self.state {
            State::Closed { .. } => self.state = State::Closed { failures: 0 },
            State::HalfOpen { .. } => {
                self.cool_down = self.config.cool_down;
                self.transition(State::Closed { failures: 0 });
            }
            State::Open { .. } => {}
        }
    }

    /// The request behind `permit` failed. Closed: one more consecutive failure, and the
    /// breaker opens at the threshold. Half-open probe: the breaker re-opens with the
    /// cool-down doubled (up to [`max_cool_down`](BreakerConfig::max_cool_down)). A permit
    /// issued before the last transition changes nothing.
    pub fn on_failure(&mut self, permit: Permit, now: Instant) {
        if permit.epoch != self.epoch {
            return;
        }
        match self.state {
            State::Closed { failures } => {
                let failures = failures.saturating_add(1);
                if failures >= self.config.failure_threshold.max(1) {
                    self.open(now);
                } else {
                    self.state = State::Closed { failures };
                }
            }
            State::HalfOpen { .. } => {
                self.reopen(now);
            }
            State::Open { .. } => {}
        }
    }

    /// Where the breaker stands. An open breaker whose cool-down has passed still reads
    /// `Open` until the next [`allow`](Self::allow).
    pub fn state(&self) -> BreakerState {
        match self.state {
            State::Closed { failures } => BreakerState::Closed {
                consecutive_failures: failures,
            },
            State::Open { until } => BreakerState::Open { until },
            State::HalfOpen { probes, .. } => BreakerState::HalfOpen { probes },
        }
    }

    fn transition(&mut self, state: State) {
        self.state = state;
        self.epoch += 1;
    }

    /// Opens with the current cool-down; returns when it ends.
    fn open(&mut self, now: Instant) -> Instant {
        let until = after(now, self.cool_down);
        self.transition(State::Open { until });
        until
    }

    /// A probe failed or timed out: open again with the cool-down doubled; returns when it
    /// ends.
    fn reopen(&mut self, now: Instant) -> Instant {
        self.cool_down = self
            .cool_down
            .saturating_mul(2)
            .min(self.config.max_cool_down.max(self.config.cool_down));
        self.open(now)
    }
}

/// Longest wait the breaker schedules: a longer configured duration acts as this one, so that
/// every instant it computes exists.
const LONGEST_WAIT: Duration = Duration::from_secs(365 * 24 * 3600);

/// `at + wait`, with `wait` capped at [`LONGEST_WAIT`] (and `at` itself should even that be
/// past what `Instant` holds).
fn after(at: Instant, wait: Duration) -> Instant {
    at.checked_add(wait.min(LONGEST_WAIT)).unwrap_or(at)
}
