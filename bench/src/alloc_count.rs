//! Allocation counting: the process's global allocator is tickwire-test-support's
//! [`CountingAlloc`], which counts only on a thread inside a counted phase, between [`start`]
//! and [`stop_per_op`] (or [`Counting::stop`]).
//!
//! Owns the bench's use of it, not how allocations are counted nor what is measured. A
//! measurement on the measuring thread (a blocking client, or a tokio current-thread runtime
//! driven on it) sees every allocation its library makes there; peer threads (the servers)
//! are never counted. The harness's samplers count their recorded phase (after warm-up) and
//! leave the figure in [`last_per_op`], so every timed workload also knows its allocations
//! per operation.
//!
//! Outside a counted phase the cost is one thread-local read per allocation (no heap totals:
//! their atomics would be shared by every thread the bench times).

use std::cell::Cell;

pub use tickwire_test_support::alloc::Counting;
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc::per_thread();

thread_local! {
    static LAST_PER_OP: Cell<f64> = const { Cell::new(f64::NAN) };
}

/// Starts counting allocations on the calling thread.
pub fn start() -> Counting {
    GLOBAL.start()
}

/// Ends the phase and records `allocations / operations` as [`last_per_op`].
pub fn stop_per_op(counting: Counting, operations: u64) -> f64 {
    let per_op = counting.stop().allocations as f64 / operations.max(1) as f64;
    LAST_PER_OP.with(|c| c.set(per_op));
    per_op
}

/// Allocations per operation of the last phase ended with [`stop_per_op`] on this thread (the
/// harness's samplers end theirs that way); NaN before any.
pub fn last_per_op() -> f64 {
    LAST_PER_OP.with(Cell::get)
}
