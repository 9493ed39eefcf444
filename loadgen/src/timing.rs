//! The timing and placement primitives the load generators and the benchmarks share: fenced
//! rdtsc reads, thread pinning, the tick histogram's bounds, and a valgrind-safe
//! `clock_gettime`.
//!
//! Owns how one reading is taken, not how readings become samples or figures (the bench's
//! `harness` and report do that) nor calibration to nanoseconds (the bench's `Clock`).

use std::time::Duration;
#[cfg(not(target_arch = "x86_64"))]
use std::time::Instant;

use hdrhistogram::Histogram;

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
