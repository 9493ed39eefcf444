//! The packet suite: tickwire's packet codec (`tickwire_codec::packet`, `compress`, `mux`)
//! against the published crate network-protocol 1.3.0 on the same bytes, in the same run.
//!
//! - Framing ([`framing`]): encode and decode GB/s of uncompressed packets at 64 B, 1 KiB,
//!   64 KiB and 1 MiB payloads, decoding from a buffer that holds many packets.
//! - Compression ([`compression`]): compress and decompress MB/s and the size ratio, LZ4 and
//!   Zstd, on JSON order-book snapshots, binary ticks and already-compressed bytes, each
//!   library through its own API.
//! - Multiplexed round trip ([`loopback`]): latency percentiles and requests/s at 1, 8 and 64
//!   requests in flight over loopback TCP against an echo server.
//!
//! The module owns these workloads and their tables; how a latency is sampled is
//! [`crate::harness`]'s, how a table is printed [`crate::report`]'s. Throughput here is timed
//! with rdtsc per call (setup outside the timed region) for a time budget rather than a count
//! of samples: a 1 MiB call takes a thousand times a 64 B one. Every ratio is tickwire ÷
//! network-protocol, of the medians over rounds.

mod compression;
mod framing;
mod loopback;
mod payloads;

use std::time::{Duration, Instant};

use crate::Ctx;
use crate::harness::{self, Clock, Plan};
use crate::report::{Table, median};

/// Progress steps per round: one per library and workload.
pub const STEPS: u64 = framing::STEPS + compression::STEPS + loopback::STEPS;

/// The two libraries compared, in table order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Library {
    /// tickwire-codec's packet codec, compressors and multiplexer.
    Tickwire,
    /// network-protocol 1.3.0.
    NetworkProtocol,
}

impl Library {
    /// Both, in table order.
    pub(crate) const ALL: [Self; 2] = [Self::Tickwire, Self::NetworkProtocol];

    /// The name in tables.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Tickwire => "tickwire",
            Self::NetworkProtocol => "network-protocol",
        }
    }
}

/// Runs the packet workloads selected in `ctx`.
pub fn run(ctx: &Ctx, no_loopback: bool) -> Vec<Table> {
    let clock = Clock::calibrate(Duration::from_millis(100));
    let budget = Budget::from_plan(ctx.plan);
    let mut tables = framing::run(ctx, &clock, budget);
    tables.extend(compression::run(ctx, &clock, budget));
    if !no_loopback {
        tables.extend(loopback::run(ctx));
    }
    tables
}

/// How long one throughput point is timed: a tenth of it warms up first. From the sampling
/// plan, so that `--quick` and `--samples` scale it: 10 µs per planned sample (1 s for the
/// full plan, 50 ms for `--quick`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Budget(Duration);

impl Budget {
    fn from_plan(plan: Plan) -> Self {
        Self(Duration::from_micros(10 * plan.samples as u64).max(Duration::from_millis(10)))
    }
}

/// Bytes per second of `call`, which processes `bytes_per_call` bytes of `state`: `setup`
/// runs before each call outside the timed region (refilling an input, emptying an output),
/// the call is timed with rdtsc, and calls repeat for `budget` (after a tenth of it of
/// warm-up, and at least three timed calls).
pub(crate) fn throughput<T>(
    clock: &Clock,
    budget: Budget,
    bytes_per_call: usize,
    state: &mut T,
    mut setup: impl FnMut(&mut T),
    mut call: impl FnMut(&mut T),
) -> f64 {
    let mut timed = |span: Duration| {
        let wall = Instant::now();
        let (mut ticks, mut calls) = (0u64, 0u64);
        while calls < 3 || wall.elapsed() < span {
            setup(state);
            let start = harness::ticks_start();
            call(state);
            ticks += harness::ticks_end() - start;
            calls += 1;
        }
        (ticks, calls)
    };
    timed(budget.0 / 10);
    let (ticks, calls) = timed(budget.0);
    (bytes_per_call as f64 * calls as f64) / (clock.ns(ticks.max(1)) / 1e9)
}

/// [`throughput`] of a call that needs no state and no setup.
pub(crate) fn throughput_of(
    clock: &Clock,
    budget: Budget,
    bytes_per_call: usize,
    mut call: impl FnMut(),
) -> f64 {
    throughput(clock, budget, bytes_per_call, &mut (), |_| (), |_| call())
}

/// A table cell: the median of per-round rates in `unit` (bytes per unit), with the range
/// when there was more than one round.
pub(crate) fn rate_cell(rounds: &[f64], unit: f64) -> String {
    let low = rounds.iter().copied().fold(f64::INFINITY, f64::min) / unit;
    let high = rounds.iter().copied().fold(0.0, f64::max) / unit;
    let middle = median(rounds) / unit;
    if rounds.len() > 1 {
        format!("{middle:.2} ({low:.2}-{high:.2})")
    } else {
        format!("{middle:.2}")
    }
}

/// A ratio cell: `ours` ÷ `theirs` of the medians.
pub(crate) fn ratio_cell(ours: &[f64], theirs: &[f64]) -> String {
    format!("{:.2}x", median(ours) / median(theirs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_of_rounds_is_the_middle_one_whatever_their_order() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[5.0]), 5.0);
        assert!(median(&[]).is_nan());
    }

    #[test]
    fn cells_show_the_median_its_range_and_the_ratio_of_medians() {
        let ours = [2e9, 3e9, 4e9];
        let theirs = [1e9, 1.5e9, 1e9];
        assert_eq!(rate_cell(&ours, 1e9), "3.00 (2.00-4.00)");
        assert_eq!(rate_cell(&[2.5e6], 1e6), "2.50");
        assert_eq!(ratio_cell(&ours, &theirs), "3.00x");
    }

    #[test]
    fn every_timed_call_gets_its_setup_first() {
        let clock = Clock { ticks_per_ns: 1.0 };
        let budget = Budget(Duration::from_millis(2));
        // (setups, calls, a call that found no setup before it)
        let mut counts = (0u32, 0u32, false);
        let rate = throughput(
            &clock,
            budget,
            1 << 20,
            &mut counts,
            |counts| counts.0 += 1,
            |counts| {
                counts.1 += 1;
                counts.2 |= counts.0 != counts.1;
            },
        );
        assert_eq!(counts.0, counts.1);
        assert!(!counts.2);
        assert!(
            counts.1 >= 6,
            "at least three warm-up and three timed calls"
        );
        assert!(rate.is_finite() && rate > 0.0, "{rate}");
    }
}
