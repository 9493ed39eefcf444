//! The synchronisation primitives the crate is built from, in one place.
//!
//! This module owns the choice between `std` and `loom`: a normal build re-exports `std`'s
//! atomics, `Arc`, `Mutex` and thread parking; a `--cfg loom` build re-exports loom's mocks of
//! the same items, so the queue and channel code that loom model-checks is the code that ships.
//! It does not own any protocol: the orderings are argued where they are used.
//!
//! `UnsafeCell` is the one item whose API differs between the two (loom tracks every access
//! through closures), so the `std` side gets a zero-cost wrapper with loom's `with`/`with_mut`
//! shape.

#[cfg(not(loom))]
pub(crate) use std::{
    hint::spin_loop,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicUsize, Ordering, fence},
    },
    thread::{Thread, current, park, park_timeout, yield_now},
};

#[cfg(loom)]
pub(crate) use loom::{
    hint::spin_loop,
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicBool, AtomicUsize, Ordering, fence},
    },
    thread::{Thread, current, park, yield_now},
};

/// Loom has no timed park. A timed park may return at any moment (the deadline passing early
/// looks the same as a spurious wake-up), so modelling it as a yield is sound; the loom models
/// do not use the timed operations anyway, because they loop on the real clock.
#[cfg(loom)]
pub(crate) fn park_timeout(_timeout: std::time::Duration) {
    loom::thread::yield_now();
}

#[cfg(loom)]
pub(crate) use loom::cell::UnsafeCell;

/// `fence(SeqCst)`, the fence of the wake-up protocol (see `crate::wait`).
///
/// Under loom a test can switch it off with [`set_fences_off`], to show that the model checker
/// finds the lost wake-up that its absence allows.
#[inline(always)]
pub(crate) fn seq_cst_fence() {
    #[cfg(loom)]
    if FENCES_OFF.with(std::cell::Cell::get) {
        return;
    }
    fence(Ordering::SeqCst);
}

#[cfg(loom)]
std::thread_local! {
    // Loom runs a model's threads as coroutines on the test's own thread, so a test's setting
    // reaches them and no other test's.
    static FENCES_OFF: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Switches [`seq_cst_fence`] off (or back on) for models run on this thread.
#[cfg(all(loom, test))]
pub(crate) fn set_fences_off(off: bool) {
    FENCES_OFF.with(|fences_off| fences_off.set(off));
}

/// `core::cell::UnsafeCell` with loom's closure-based access API.
#[cfg(not(loom))]
#[derive(Debug)]
pub(crate) struct UnsafeCell<T>(core::cell::UnsafeCell<T>);

#[cfg(not(loom))]
impl<T> UnsafeCell<T> {
    /// Wraps `value`.
    #[inline(always)]
    pub(crate) const fn new(value: T) -> Self {
        Self(core::cell::UnsafeCell::new(value))
    }

    /// Calls `f` with a const raw pointer to the contents (a read access under loom).
    #[inline(always)]
    pub(crate) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
        f(self.0.get())
    }

    /// Calls `f` with a mutable raw pointer to the contents. Creating the pointer is safe; the
    /// caller's `unsafe` block that dereferences it carries the aliasing argument.
    #[inline(always)]
    pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
        f(self.0.get())
    }
}
