//! The circuit breaker's state machine under simulated time.

use std::time::{Duration, Instant};

use super::*;

const SECOND: Duration = Duration::from_secs(1);

fn config() -> BreakerConfig {
    BreakerConfig::new()
        .with_failure_threshold(3)
        .with_cool_down(SECOND)
        .with_max_cool_down(4 * SECOND)
        .with_max_probes(1)
        .with_probe_timeout(10 * SECOND)
}

/// Fails `n` requests in a row at `now`.
fn fail(breaker: &mut Breaker, n: u32, now: Instant) {
    for _ in 0..n {
        let permit = breaker.allow(now).expect("closed");
        breaker.on_failure(permit, now);
    }
}

#[test]
fn opens_after_consecutive_failures_and_a_success_resets_the_count() {
    let t0 = Instant::now();
    let mut breaker = Breaker::new(config());
    fail(&mut breaker, 2, t0);
    assert_eq!(
        breaker.state(),
        BreakerState::Closed {
            consecutive_failures: 2
        }
    );
    let permit = breaker.allow(t0).unwrap();
    assert!(!permit.is_probe());
    breaker.on_success(permit);
    fail(&mut breaker, 2, t0);
    assert_eq!(
        breaker.state(),
        BreakerState::Closed {
            consecutive_failures: 2
        }
    );
    fail(&mut breaker, 1, t0);
    assert_eq!(breaker.state(), BreakerState::Open { until: t0 + SECOND });
    assert_eq!(
        breaker.allow(t0),
        Err(Rejected {
            retry_at: t0 + SECOND
        })
    );
}

#[test]
fn half_open_lets_probes_through_and_a_success_closes() {
    let t0 = Instant::now();
    let mut breaker = Breaker::new(config().with_max_probes(2));
    fail(&mut breaker, 3, t0);
    let almost = t0 + SECOND - Duration::from_nanos(1);
    assert_eq!(
        breaker.allow(almost),
        Err(Rejected {
            retry_at: t0 + SECOND
        })
    );
    let t1 = t0 + SECOND;
    let first = breaker.allow(t1).unwrap();
    let second = breaker.allow(t1).unwrap();
    assert!(first.is_probe() && second.is_probe());
    assert_eq!(breaker.state(), BreakerState::HalfOpen { probes: 2 });
    let retry_at = t1 + 10 * SECOND;
    assert_eq!(
        breaker.allow(t1),
        Err(Rejected { retry_at }),
        "two probes at most"
    );
    breaker.on_success(second);
    assert_eq!(
        breaker.state(),
        BreakerState::Closed {
            consecutive_failures: 0
        }
    );
    // The other probe's late failure belongs to the half-open period: ignored.
    breaker.on_failure(first, t1);
    assert_eq!(
        breaker.state(),
        BreakerState::Closed {
            consecutive_failures: 0
        }
    );
}

#[test]
fn a_failed_probe_reopens_with_the_cool_down_doubled_up_to_the_cap() {
    let t0 = Instant::now();
    let mut breaker = Breaker::new(config());
    fail(&mut breaker, 3, t0);
    let mut now = t0;
    let mut expected = SECOND;
    for cool_down in [2, 4, 4, 4].map(|s| s * SECOND) {
        now += expected;
        let probe = breaker.allow(now).expect("cool-down over");
        breaker.on_failure(probe, now);
        assert_eq!(
            breaker.state(),
            BreakerState::Open {
                until: now + cool_down
            }
        );
        expected = cool_down;
    }
    // A success closes and resets the cool-down: the next opening is 1 s again.
    now += expected;
    let probe = breaker.allow(now).unwrap();
    breaker.on_success(probe);
    fail(&mut breaker, 3, now);
    assert_eq!(
        breaker.state(),
        BreakerState::Open {
            until: now + SECOND
        }
    );
}

#[test]
fn a_probe_without_a_verdict_reopens_after_the_probe_timeout() {
    let t0 = Instant::now();
    let mut breaker = Breaker::new(config());
    fail(&mut breaker, 3, t0);
    let t1 = t0 + SECOND;
    let lost = breaker.allow(t1).unwrap();
    let deadline = t1 + 10 * SECOND;
    assert_eq!(
        breaker.allow(deadline - SECOND),
        Err(Rejected { retry_at: deadline })
    );
    let reopened = breaker.allow(deadline).unwrap_err();
    assert_eq!(
        reopened,
        Rejected {
            retry_at: deadline + 2 * SECOND
        }
    );
    assert_eq!(
        breaker.state(),
        BreakerState::Open {
            until: deadline + 2 * SECOND
        }
    );
    // Its verdict, when it finally comes, belongs to the old period.
    breaker.on_success(lost);
    assert!(matches!(breaker.state(), BreakerState::Open { .. }));
}

#[test]
fn verdicts_from_an_earlier_period_change_nothing() {
    let t0 = Instant::now();
    let mut breaker = Breaker::new(config());
    let slow = breaker.allow(t0).unwrap();
    let slow_failure = breaker.allow(t0).unwrap();
    fail(&mut breaker, 3, t0);
    breaker.on_success(slow);
    assert_eq!(breaker.state(), BreakerState::Open { until: t0 + SECOND });
    let t1 = t0 + SECOND;
    let probe = breaker.allow(t1).unwrap();
    breaker.on_success(probe);
    breaker.on_failure(slow_failure, t1);
    assert_eq!(
        breaker.state(),
        BreakerState::Closed {
            consecutive_failures: 0
        },
        "a failure from before the opening does not count against the new period"
    );
}

#[test]
fn zero_thresholds_act_as_one() {
    let t0 = Instant::now();
    let config = config().with_failure_threshold(0).with_max_probes(0);
    let mut breaker = Breaker::new(config);
    fail(&mut breaker, 1, t0);
    assert!(matches!(breaker.state(), BreakerState::Open { .. }));
    let t1 = t0 + SECOND;
    assert!(
        breaker.allow(t1).unwrap().is_probe(),
        "one probe even with max_probes 0"
    );
    assert!(breaker.allow(t1).is_err());
}

#[test]
fn durations_over_a_year_act_as_a_year() {
    let t0 = Instant::now();
    let year = Duration::from_secs(365 * 24 * 3600);
    let config = config()
        .with_cool_down(Duration::MAX)
        .with_max_cool_down(Duration::MAX)
        .with_probe_timeout(Duration::MAX);
    let mut breaker = Breaker::new(config);
    fail(&mut breaker, 3, t0);
    assert_eq!(breaker.state(), BreakerState::Open { until: t0 + year });
    let probe_at = t0 + year;
    let _probe = breaker.allow(probe_at).unwrap();
    let rejected = breaker.allow(probe_at).unwrap_err();
    assert_eq!(rejected.retry_at, probe_at + year);
    assert_eq!(
        breaker.allow(probe_at + year).unwrap_err().retry_at,
        probe_at + 2 * year
    );
}
