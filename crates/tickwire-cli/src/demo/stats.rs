//! What the demo measures while it runs: the client threads' latency histograms and delivery
//! counts ([`Interval`], shared per thread), gathered every quarter second into the last
//! second's figures (the progress line) and a per-second timeline of [`Second`]s (the report's plots).
//!
//! Owns no sockets and no threads; the run loop in [`super`] drives [`Gatherer::tick`].

use std::sync::{Arc, Mutex, PoisonError};

use hdrhistogram::Histogram;

/// Lowest and highest latency recorded, in nanoseconds (1 µs to 60 s, 3 significant digits).
const LOWEST_NS: u64 = 1_000;
const HIGHEST_NS: u64 = 60_000_000_000;

/// A latency histogram in nanoseconds.
pub(crate) fn latency_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, 3).expect("valid histogram bounds")
}

/// What one client thread recorded since the last gathering.
pub(crate) struct Interval {
    /// Publish-to-receive latency of the clients that keep up.
    pub(crate) fast: Histogram<u64>,
    /// The same for the slow clients (seconds behind, by design).
    pub(crate) slow: Histogram<u64>,
    /// Topic messages received, by every client.
    pub(crate) deliveries: u64,
}

impl Interval {
    pub(crate) fn new() -> Self {
        Self {
            fast: latency_histogram(),
            slow: latency_histogram(),
            deliveries: 0,
        }
    }

    /// Records one delivery with its latency.
    pub(crate) fn record(&mut self, latency_ns: u64, slow: bool) {
        self.deliveries += 1;
        let histogram = if slow { &mut self.slow } else { &mut self.fast };
        histogram.saturating_record(latency_ns.max(LOWEST_NS));
    }
}

/// One second of the run, as the report plots it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Second {
    /// Seconds since the feed started, at the end of this second.
    pub(crate) at: f64,
    pub(crate) deliveries: u64,
    /// Fast clients' latency percentiles in nanoseconds (0 when nothing arrived).
    pub(crate) p50_ns: u64,
    pub(crate) p99_ns: u64,
    pub(crate) max_ns: u64,
    /// Messages the slow-consumer policies dropped this second (all topics).
    pub(crate) dropped: u64,
}

/// Sums the client threads' intervals every quarter second.
pub(crate) struct Gatherer {
    threads: Vec<Arc<Mutex<Interval>>>,
    /// The last four quarters, newest last: the progress line's "last second".
    quarters: Vec<(u64, Histogram<u64>)>,
    /// Everything since the start.
    pub(crate) total_fast: Histogram<u64>,
    pub(crate) total_slow: Histogram<u64>,
    pub(crate) total_deliveries: u64,
}

/// The progress line's figures over the last second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct LastSecond {
    /// Deliveries per second over the quarters gathered (up to four).
    pub(crate) deliveries_per_s: f64,
    pub(crate) p50_ns: u64,
    pub(crate) p99_ns: u64,
    pub(crate) max_ns: u64,
    pub(crate) deliveries: u64,
}

impl Gatherer {
    pub(crate) fn new(threads: Vec<Arc<Mutex<Interval>>>) -> Self {
        Self {
            threads,
            quarters: Vec::with_capacity(4),
            total_fast: latency_histogram(),
            total_slow: latency_histogram(),
            total_deliveries: 0,
        }
    }

    /// Takes what every thread recorded since the last tick (a quarter second ago) and
    /// returns the figures of the last second.
    pub(crate) fn tick(&mut self) -> LastSecond {
        let mut quarter = latency_histogram();
        let mut deliveries = 0;
        for thread in &self.threads {
            let mut interval = thread.lock().unwrap_or_else(PoisonError::into_inner);
            let _ = quarter.add(&interval.fast);
            let _ = self.total_fast.add(&interval.fast);
            let _ = self.total_slow.add(&interval.slow);
            deliveries += interval.deliveries;
            interval.fast.reset();
            interval.slow.reset();
            interval.deliveries = 0;
        }
        self.total_deliveries += deliveries;
        if self.quarters.len() == 4 {
            self.quarters.remove(0);
        }
        self.quarters.push((deliveries, quarter));
        self.last_second()
    }

    fn last_second(&self) -> LastSecond {
        let mut merged = latency_histogram();
        let mut deliveries = 0;
        for (count, histogram) in &self.quarters {
            deliveries += count;
            let _ = merged.add(histogram);
        }
        let seconds = self.quarters.len() as f64 / 4.0;
        let (p50_ns, p99_ns, max_ns) = percentiles(&merged);
        LastSecond {
            deliveries_per_s: deliveries as f64 / seconds.max(0.25),
            p50_ns,
            p99_ns,
            max_ns,
            deliveries,
        }
    }
}

/// p50, p99 and max of `histogram` (zeros when it is empty).
pub(crate) fn percentiles(histogram: &Histogram<u64>) -> (u64, u64, u64) {
    if histogram.is_empty() {
        return (0, 0, 0);
    }
    (
        histogram.value_at_quantile(0.50),
        histogram.value_at_quantile(0.99),
        histogram.max(),
    )
}

/// A latency for people: `850ns`, `41.2µs`, `3.10ms`, `2.04s`.
pub(crate) fn format_ns(ns: u64) -> String {
    let ns = ns as f64;
    if ns < 1e3 {
        format!("{ns:.0}ns")
    } else if ns < 1e6 {
        format!("{:.1}µs", ns / 1e3)
    } else if ns < 1e9 {
        format!("{:.2}ms", ns / 1e6)
    } else {
        format!("{:.2}s", ns / 1e9)
    }
}

/// A count with thousands separators: `1,234,567`.
pub(crate) fn format_count(count: u64) -> String {
    let digits = count.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_second_is_the_last_four_quarters() {
        let thread = Arc::new(Mutex::new(Interval::new()));
        let mut gatherer = Gatherer::new(vec![Arc::clone(&thread)]);
        for quarter in 0..6u64 {
            let mut interval = thread.lock().unwrap();
            for _ in 0..100 {
                interval.record((quarter + 1) * 10_000, false);
            }
            interval.record(5_000_000_000, true);
        }
        // Six quarters recorded into the one interval before the first tick: one quarter.
        let last = gatherer.tick();
        assert_eq!(last.deliveries, 606);
        assert_eq!(last.deliveries_per_s, 606.0 * 4.0);
        for _ in 0..4 {
            thread.lock().unwrap().record(1_000_000, false);
            gatherer.tick();
        }
        let last = gatherer.tick();
        // The first quarter has left the window: three quarters of one delivery, one empty.
        assert_eq!(last.deliveries, 3);
        assert_eq!(gatherer.total_deliveries, 610);
        assert_eq!(gatherer.total_slow.len(), 6);
        assert!(last.p50_ns >= 999_000 && last.p50_ns <= 1_001_000);
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1_000), "1,000");
        assert_eq!(format_count(1_234_567), "1,234,567");
        assert_eq!(format_ns(850), "850ns");
        assert_eq!(format_ns(41_230), "41.2µs");
        assert_eq!(format_ns(3_100_000), "3.10ms");
        assert_eq!(format_ns(2_040_000_000), "2.04s");
    }
}
