//! The measuring harness: rdtsc timing calibrated to nanoseconds and batched sampling into an
//! hdrhistogram after warm-up. The single readings (fenced rdtsc, thread pinning, the
//! histogram's bounds, `clock_gettime`) are `tickwire_loadgen::timing`'s, re-exported here,
//! so the load generators and the benchmarks take their numbers the same way.
//!
//! It owns how a number is taken, not what is measured (the workload modules) nor how it is
//! shown ([`crate::report`]). On this VM rdtsc counts TSC ticks at a constant rate, not core
//! cycles, so every figure is reported in ticks with the calibrated ns beside it.

use std::hint::black_box;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

pub use tickwire_loadgen::timing::{clock_gettime, new_histogram, pin_to, ticks_end, ticks_start};

/// Operations per timed sample: one rdtsc pair is amortised over this many operations, and the
/// sample is the mean over the batch (rdtsc itself costs ~20-40 ticks, more than the cheapest
/// operations measured here).
pub const BATCH: u64 = 64;

/// How many samples are taken and thrown away first, and how many are recorded.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Samples discarded while caches, branch predictors and allocators settle.
    pub warmup: usize,
    /// Samples recorded.
    pub samples: usize,
}

impl Plan {
    /// The floor: 10k warm-up samples and 100k recorded samples.
    pub const FULL: Self = Self {
        warmup: 10_000,
        samples: 100_000,
    };
    /// A smoke run for CI and quick looks: the same code paths, far fewer samples.
    pub const QUICK: Self = Self {
        warmup: 1_000,
        samples: 5_000,
    };
}

/// Ticks per nanosecond, measured against the monotonic clock over `span`.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    /// TSC ticks per nanosecond.
    pub ticks_per_ns: f64,
}

impl Clock {
    /// Calibrates over `span` (200 ms is plenty: the TSC is invariant on this hardware).
    pub fn calibrate(span: Duration) -> Self {
        let wall = Instant::now();
        let start = ticks_start();
        while wall.elapsed() < span {
            std::hint::spin_loop();
        }
        let ticks = ticks_end() - start;
        let ns = wall.elapsed().as_nanos() as f64;
        Self {
            ticks_per_ns: ticks as f64 / ns,
        }
    }

    /// `ticks` in nanoseconds.
    pub fn ns(&self, ticks: u64) -> f64 {
        ticks as f64 / self.ticks_per_ns
    }
}

/// Times `op` in batches of [`BATCH`]: `plan.warmup` samples discarded, then `plan.samples`
/// samples recorded, each the mean ticks of one call over a batch. `op` receives the index
/// of the call within its batch and must do one whole operation (its result is black-boxed
/// by the caller's closure).
pub fn sample<F: FnMut(u64)>(plan: Plan, mut op: F) -> Histogram<u64> {
    let mut histogram = new_histogram();
    for _ in 0..plan.warmup {
        for i in 0..BATCH {
            op(black_box(i));
        }
    }
    for _ in 0..plan.samples {
        let start = ticks_start();
        for i in 0..BATCH {
            op(black_box(i));
        }
        let ticks = ticks_end() - start;
        histogram.saturating_record((ticks / BATCH).max(1));
    }
    histogram
}

/// Times `batch` with its own batching: each call does `per_call` operations (for example,
/// parsing every frame of one read) and is timed as a whole; the recorded sample is ticks per
/// operation. `setup` runs before each call, outside the timed region.
pub fn sample_per_op<T, S: FnMut(&mut T), F: FnMut(&mut T)>(
    plan: Plan,
    per_call: u64,
    target: &mut T,
    mut setup: S,
    mut batch: F,
) -> Histogram<u64> {
    let mut histogram = new_histogram();
    for _ in 0..plan.warmup {
        setup(target);
        batch(target);
    }
    for _ in 0..plan.samples {
        setup(target);
        let start = ticks_start();
        batch(target);
        let ticks = ticks_end() - start;
        histogram.saturating_record((ticks / per_call).max(1));
    }
    histogram
}

/// Times one operation per sample with no batching (for round trips, which are long enough
/// that the rdtsc pair does not matter). The recorded phase's allocations on this thread are
/// left in [`crate::alloc_count::last_per_op`].
pub fn sample_each<F: FnMut()>(plan: Plan, mut op: F) -> Histogram<u64> {
    let mut histogram = new_histogram();
    for _ in 0..plan.warmup {
        op();
    }
    let counting = crate::alloc_count::start();
    for _ in 0..plan.samples {
        let start = ticks_start();
        op();
        let ticks = ticks_end() - start;
        histogram.saturating_record(ticks.max(1));
    }
    crate::alloc_count::stop_per_op(counting, plan.samples as u64);
    histogram
}
