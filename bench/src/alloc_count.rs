//! Allocation counting: the process's global allocator is `System` behind a counter that counts
//! only on a thread that asked for it, and only between [`start`] and [`Counting::stop`].
//!
//! Owns how allocations are counted, not what is measured. A measurement on the measuring
//! thread (a blocking client, or a tokio current-thread runtime driven on it) sees every
//! allocation its library makes there; peer threads (the servers) are never counted. The
//! harness's samplers count their recorded phase (after warm-up) and leave the figure in
//! [`last_per_op`], so every timed workload also knows its allocations per operation.
//!
//! Outside a counted phase the cost is one thread-local read per allocation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// `System`, counting on threads inside a counted phase.
pub struct ThreadCounting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
    static LAST_PER_OP: Cell<f64> = const { Cell::new(f64::NAN) };
}

#[global_allocator]
static GLOBAL: ThreadCounting = ThreadCounting;

/// Counts one allocation when this thread is counting. `try_with`: the allocator runs while
/// thread-locals are being torn down, when they can no longer be read.
fn note() {
    if COUNTING.try_with(Cell::get).unwrap_or(false) {
        let _ = COUNT.try_with(|c| c.set(c.get() + 1));
    }
}

// SAFETY: every call goes to `System` unchanged; counting touches only thread-local cells and
// has no effect on the memory handed out.
unsafe impl GlobalAlloc for ThreadCounting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: our caller's layout contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note();
        // SAFETY: as `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // A growth is an allocation as far as the hot path is concerned.
        note();
        // SAFETY: `ptr` came from `System` with `layout` (every allocation goes there), and
        // our caller's contract for `new_size`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

/// A counted phase on the calling thread; [`Counting::stop`] ends it.
#[must_use = "a counted phase ends with stop()"]
pub struct Counting {
    before: u64,
}

/// Starts counting allocations on the calling thread.
pub fn start() -> Counting {
    COUNTING.with(|c| c.set(true));
    Counting {
        before: COUNT.with(Cell::get),
    }
}

impl Counting {
    /// Ends the phase; returns the allocations counted in it.
    pub fn stop(self) -> u64 {
        COUNTING.with(|c| c.set(false));
        COUNT.with(Cell::get) - self.before
    }

    /// Ends the phase and records `allocations / operations` as [`last_per_op`].
    pub fn stop_per_op(self, operations: u64) -> f64 {
        let per_op = self.stop() as f64 / operations.max(1) as f64;
        LAST_PER_OP.with(|c| c.set(per_op));
        per_op
    }
}

/// Allocations per operation of the last phase ended with [`Counting::stop_per_op`] on this
/// thread (the harness's samplers end theirs that way); NaN before any.
pub fn last_per_op() -> f64 {
    LAST_PER_OP.with(Cell::get)
}
