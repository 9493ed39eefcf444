//! The measuring harness: fenced rdtsc timing calibrated to nanoseconds, thread pinning, and
//! batched sampling into an hdrhistogram after warm-up.
//!
//! It owns how a number is taken, not what is measured (the workload modules) nor how it is
//! shown ([`crate::report`]). On this VM rdtsc counts TSC ticks at a constant rate, not core
//! cycles, so every figure is reported in ticks with the calibrated ns beside it.

use std::hint::black_box;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

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

/// Reads the TSC after all earlier instructions have completed (lfence, then rdtsc).
#[inline(always)]
pub fn ticks_start() -> u64 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: lfence needs SSE2 and rdtsc needs nothing, both baseline on x86_64; neither
    // touches memory.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

/// Reads the TSC once the measured instructions have retired (rdtscp), fenced so later
/// instructions do not start before it.
#[inline(always)]
pub fn ticks_end() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        let mut aux = 0u32;
        // SAFETY: rdtscp only writes the processor id into `aux`, a valid local; lfence needs
        // SSE2, baseline on x86_64.
        unsafe {
            let ticks = core::arch::x86_64::__rdtscp(&mut aux);
            core::arch::x86_64::_mm_lfence();
            ticks
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        monotonic_ns()
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn monotonic_ns() -> u64 {
    use std::sync::OnceLock;
    static START: OnceLock<Instant> = OnceLock::new();
    START.get_or_init(Instant::now).elapsed().as_nanos() as u64
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

/// Pins the calling thread to `core`. Returns false (and the caller says so in its output)
/// when the core does not exist or the OS refused.
pub fn pin_to(core: usize) -> bool {
    // Not `get_core_ids()`: it lists the calling thread's own affinity mask, so a thread
    // spawned by an already pinned thread would see only that one core and could never move.
    // The OS refuses a core that does not exist, and that is reported as `false`.
    core_affinity::set_for_current(core_affinity::CoreId { id: core })
}

/// A histogram that records tick counts from 1 up to one minute at 2.6 GHz, 3 significant
/// digits.
pub fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 200_000_000_000, 3).expect("valid histogram bounds")
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
    counting.stop_per_op(plan.samples as u64);
    histogram
}

/// A POSIX clock's reading (`CLOCK_MONOTONIC`, `CLOCK_THREAD_CPUTIME_ID`, ...) through libc.
/// rustix reads clocks through the vDSO it locates itself, and that lookup crashes under
/// valgrind (rustix issue 1559); the callgrind runs go through these same paths.
pub fn clock_gettime(clock: libc::clockid_t) -> Duration {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec, the only memory clock_gettime writes.
    let rc = unsafe { libc::clock_gettime(clock, &mut now) };
    assert_eq!(rc, 0, "clock_gettime({clock}) failed");
    Duration::new(
        u64::try_from(now.tv_sec).unwrap_or(0),
        u32::try_from(now.tv_nsec).unwrap_or(0),
    )
}
