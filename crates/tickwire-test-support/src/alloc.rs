//! The counting global allocator: [`CountingAlloc`] forwards every call to [`System`] and
//! counts what passes through, in two ways a test or benchmark picks from.
//!
//! - Per thread, inside a counted phase ([`CountingAlloc::start`] to [`Counting::stop`]): the
//!   allocations (a growth counts as one) and bytes asked for on that thread. A measurement on
//!   a blocking client's thread, or a tokio current-thread runtime driven on it, sees every
//!   allocation its library makes there, and none of the peer threads' (the servers). Outside
//!   a phase the cost is one thread-local read per call, which is what lets the bench leave it
//!   installed while it times peers.
//! - Process-wide heap totals ([`CountingAlloc::with_heap_totals`] only), in atomics updated
//!   on every call by every thread: live heap bytes and their peak, for the memory-bound tests
//!   (a compression bomb must not grow the heap past its limit); and the allocations,
//!   reallocations and bytes allocated and freed between two points
//!   ([`CountingAlloc::heap_region`]), for the tests that must see every thread (a server's
//!   workers hold no heap per idle connection) or that count a whole process (a test binary
//!   with its own `main` allocates nothing in a steady state).
//!
//! Owns counting, not what is measured nor the bounds asserted. Every query first checks that
//! this allocator is the process's `#[global_allocator]` (one probe allocation, once), so a test
//! that forgot the attribute fails instead of counting nothing and passing.

#![expect(
    unsafe_code,
    reason = "the GlobalAlloc impl, forwarding to System; docs/UNSAFE.md"
)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// [`System`] with counters; install it with `#[global_allocator]`:
///
/// ```
/// use tickwire_test_support::alloc::CountingAlloc;
///
/// #[global_allocator]
/// static ALLOC: CountingAlloc = CountingAlloc::per_thread();
///
/// fn main() {
///     let counting = ALLOC.start();
///     let boxed = std::hint::black_box(Box::new([0u8; 16]));
///     let counts = counting.stop();
///     assert_eq!((counts.allocations, counts.bytes), (1, 16));
///     drop(boxed);
/// }
/// ```
#[derive(Debug)]
pub struct CountingAlloc {
    heap_totals: bool,
}

/// What one counted phase saw on its thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counts {
    /// Allocations, zeroed allocations and reallocations (a growth is an allocation as far as
    /// a hot path is concerned).
    pub allocations: u64,
    /// Bytes they asked for (a reallocation's new size).
    pub bytes: u64,
}

/// A counted phase on the thread that started it; [`Counting::stop`] ends it. Phases nest: the
/// thread counts while any is open, and each reports what happened since it started.
#[must_use = "a counted phase ends with stop()"]
#[derive(Debug)]
pub struct Counting {
    before: Counts,
}

impl CountingAlloc {
    /// Counts per thread, inside counted phases only.
    pub const fn per_thread() -> Self {
        Self { heap_totals: false }
    }

    /// Counts per thread, and also keeps the process's heap totals: live heap bytes and their
    /// peak ([`live`](Self::live), [`peak`](Self::peak)) and the counts a
    /// [`heap_region`](Self::heap_region) reports. A few atomic updates per call: for test
    /// binaries, not for a process whose timings matter.
    pub const fn with_heap_totals() -> Self {
        Self { heap_totals: true }
    }

    /// Starts a counted phase on the calling thread.
    ///
    /// # Panics
    ///
    /// When this allocator is not the process's global allocator.
    pub fn start(&self) -> Counting {
        assert_installed();
        THREAD.with(|t| t.depth.set(t.depth.get() + 1));
        Counting {
            before: thread_counts(),
        }
    }

    /// Heap bytes allocated and not yet freed, by every thread.
    ///
    /// # Panics
    ///
    /// When this allocator was made without heap totals or is not the global allocator.
    pub fn live(&self) -> usize {
        self.assert_heap_totals();
        LIVE.load(Ordering::Relaxed)
    }

    /// Starts a new peak measurement from the current live bytes.
    ///
    /// # Panics
    ///
    /// As [`live`](Self::live).
    pub fn reset_peak(&self) {
        self.assert_heap_totals();
        PEAK.store(LIVE.load(Ordering::Relaxed), Ordering::Relaxed);
    }

    /// The highest live byte count since the last [`reset_peak`](Self::reset_peak).
    ///
    /// # Panics
    ///
    /// As [`live`](Self::live).
    pub fn peak(&self) -> usize {
        self.assert_heap_totals();
        PEAK.load(Ordering::Relaxed)
    }

    /// Starts counting what every thread of the process allocates and frees from now on;
    /// [`HeapRegion::change`] reports it.
    ///
    /// # Panics
    ///
    /// As [`live`](Self::live).
    pub fn heap_region(&self) -> HeapRegion {
        self.assert_heap_totals();
        HeapRegion {
            before: heap_counts(),
        }
    }

    fn assert_heap_totals(&self) {
        assert!(
            self.heap_totals,
            "heap totals asked of a CountingAlloc::per_thread(): install with_heap_totals()"
        );
        assert_installed();
    }

    /// `ptr`, after counting one allocation of `size` bytes unless it failed.
    fn handed_out(&self, ptr: *mut u8, size: usize) -> *mut u8 {
        if !ptr.is_null() && self.heap_totals {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            BYTES_ALLOCATED.fetch_add(size as u64, Ordering::Relaxed);
            self.grew(size);
        }
        ptr
    }

    /// Counts a reallocation from `old` bytes to `new` that succeeded: the growth as bytes
    /// allocated, or the shrinkage as bytes freed.
    fn moved(&self, old: usize, new: usize) {
        if self.heap_totals {
            REALLOCATIONS.fetch_add(1, Ordering::Relaxed);
            if new >= old {
                BYTES_ALLOCATED.fetch_add((new - old) as u64, Ordering::Relaxed);
                self.grew(new - old);
            } else {
                BYTES_FREED.fetch_add((old - new) as u64, Ordering::Relaxed);
                self.shrank(old - new);
            }
        }
    }

    /// Counts `size` bytes freed.
    fn freed(&self, size: usize) {
        if self.heap_totals {
            BYTES_FREED.fetch_add(size as u64, Ordering::Relaxed);
            self.shrank(size);
        }
    }

    fn grew(&self, size: usize) {
        let live = LIVE.fetch_add(size, Ordering::Relaxed) + size;
        PEAK.fetch_max(live, Ordering::Relaxed);
    }

    fn shrank(&self, size: usize) {
        LIVE.fetch_sub(size, Ordering::Relaxed);
    }
}

impl Counting {
    /// Ends the phase; returns what the thread allocated in it.
    pub fn stop(self) -> Counts {
        let now = thread_counts();
        THREAD.with(|t| t.depth.set(t.depth.get().saturating_sub(1)));
        Counts {
            allocations: now.allocations - self.before.allocations,
            bytes: now.bytes - self.before.bytes,
        }
    }
}

/// What every thread of the process allocated and freed in a [`HeapRegion`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeapCounts {
    /// Allocations and zeroed allocations (not reallocations, counted apart).
    pub allocations: u64,
    /// Reallocations, growing or shrinking.
    pub reallocations: u64,
    /// Bytes the allocations asked for, plus what reallocations grew by.
    pub bytes_allocated: u64,
    /// Bytes freed, plus what reallocations shrank by.
    pub bytes_freed: u64,
}

impl HeapCounts {
    /// Heap bytes allocated and not freed (negative when more was freed than allocated:
    /// memory from before the region went back).
    pub fn held(&self) -> i64 {
        self.bytes_allocated as i64 - self.bytes_freed as i64
    }
}

/// Process-wide counting from [`CountingAlloc::heap_region`] on; [`change`](Self::change)
/// reports what happened since, as often as asked.
#[derive(Debug)]
pub struct HeapRegion {
    before: HeapCounts,
}

impl HeapRegion {
    /// What every thread allocated, reallocated and freed since the region started. Counts
    /// are read one after the other, so a thread allocating meanwhile may be counted in one
    /// field and not yet in another.
    pub fn change(&self) -> HeapCounts {
        let now = heap_counts();
        HeapCounts {
            allocations: now.allocations - self.before.allocations,
            reallocations: now.reallocations - self.before.reallocations,
            bytes_allocated: now.bytes_allocated - self.before.bytes_allocated,
            bytes_freed: now.bytes_freed - self.before.bytes_freed,
        }
    }
}

/// The calling thread's counters: open phases, and totals counted while any was open.
struct ThreadCounters {
    depth: Cell<u32>,
    allocations: Cell<u64>,
    bytes: Cell<u64>,
}

thread_local! {
    static THREAD: ThreadCounters = const {
        ThreadCounters {
            depth: Cell::new(0),
            allocations: Cell::new(0),
            bytes: Cell::new(0),
        }
    };
}

static LIVE: AtomicUsize = AtomicUsize::new(0);
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static REALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES_ALLOCATED: AtomicU64 = AtomicU64::new(0);
static BYTES_FREED: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
/// Set once a probe allocation was seen by this allocator.
static INSTALLED: AtomicBool = AtomicBool::new(false);

fn heap_counts() -> HeapCounts {
    HeapCounts {
        allocations: ALLOCATIONS.load(Ordering::Relaxed),
        reallocations: REALLOCATIONS.load(Ordering::Relaxed),
        bytes_allocated: BYTES_ALLOCATED.load(Ordering::Relaxed),
        bytes_freed: BYTES_FREED.load(Ordering::Relaxed),
    }
}

fn thread_counts() -> Counts {
    THREAD.with(|t| Counts {
        allocations: t.allocations.get(),
        bytes: t.bytes.get(),
    })
}

/// Counts one allocation of `size` bytes when the calling thread is in a counted phase.
/// `try_with`: the allocator also runs while thread-locals are being torn down.
fn note(size: usize) {
    let _ = THREAD.try_with(|t| {
        if t.depth.get() > 0 {
            t.allocations.set(t.allocations.get() + 1);
            t.bytes.set(t.bytes.get() + size as u64);
        }
    });
}

/// Panics unless allocations reach [`CountingAlloc`]: a one-byte probe in a phase of its own
/// must be counted. Checked once per process.
fn assert_installed() {
    if INSTALLED.load(Ordering::Relaxed) {
        return;
    }
    let before = THREAD.with(|t| {
        t.depth.set(t.depth.get() + 1);
        t.allocations.get()
    });
    // black_box: without it the compiler may remove the allocation and its free.
    drop(std::hint::black_box(Box::new(0u8)));
    let after = THREAD.with(|t| {
        t.depth.set(t.depth.get() - 1);
        t.allocations.get()
    });
    assert!(
        after > before,
        "CountingAlloc is not the global allocator: declare it with #[global_allocator]"
    );
    // The probe is not part of any phase the caller starts after this.
    THREAD.with(|t| t.allocations.set(before));
    INSTALLED.store(true, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to `System` unchanged, so the memory handed out and the
// pointers freed or grown are `System`'s with the layouts our callers give; the counting
// touches only thread-local `Cell`s and atomics and has no effect on that memory.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: our caller's layout contract, passed on as is.
        self.handed_out(unsafe { System.alloc(layout) }, layout.size())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: as `alloc`.
        self.handed_out(unsafe { System.alloc_zeroed(layout) }, layout.size())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: `ptr` came from `System` with `layout` (every allocation of this allocator
        // goes there), and our caller's contract for `new_size`.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            self.moved(layout.size(), new_size);
        }
        new
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        self.freed(layout.size());
        // SAFETY: `ptr` came from `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // This unit-test binary's allocator. libtest runs tests on threads of its own, which
    // allocate meanwhile, so only the per-thread counts are tested here; the heap totals are
    // tests/heap_totals.rs's (its own main, no other thread).
    #[global_allocator]
    static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

    #[test]
    fn a_phase_counts_its_threads_allocations_and_bytes() {
        let counting = ALLOC.start();
        let mut v: Vec<u8> = std::hint::black_box(Vec::with_capacity(100));
        v.reserve_exact(200);
        let zeroed = std::hint::black_box(vec![0u64; 8]);
        let counts = counting.stop();
        assert_eq!(
            counts,
            Counts {
                allocations: 3,
                bytes: 100 + 200 + 64
            }
        );
        drop((v, zeroed));
        // Freeing is not an allocation, and nothing is counted outside a phase.
        let counting = ALLOC.start();
        let counts = counting.stop();
        drop(std::hint::black_box(Box::new([0u8; 32])));
        assert_eq!(counts, Counts::default());
    }

    #[test]
    fn other_threads_are_not_counted() {
        let counting = ALLOC.start();
        std::thread::scope(|s| {
            s.spawn(|| drop(std::hint::black_box(vec![1u8; 4096])));
        });
        let counts = counting.stop();
        // Spawning allocates on this thread (the thread's handle), the vector on the other:
        // 4096 bytes never show up here.
        assert!(counts.bytes < 4096, "{counts:?}");
        let counting = ALLOC.start();
        let other = std::thread::spawn(|| {
            let inner = ALLOC.start();
            drop(std::hint::black_box(vec![1u8; 4096]));
            inner.stop()
        });
        let theirs = other.join().unwrap();
        let ours = counting.stop();
        assert_eq!(
            theirs,
            Counts {
                allocations: 1,
                bytes: 4096
            }
        );
        assert!(ours.bytes < 4096, "{ours:?}");
    }

    #[test]
    fn nested_phases_each_report_their_own() {
        let outer = ALLOC.start();
        drop(std::hint::black_box(Box::new(1u32)));
        let inner = ALLOC.start();
        drop(std::hint::black_box(Box::new(1u64)));
        assert_eq!(
            inner.stop(),
            Counts {
                allocations: 1,
                bytes: 8
            }
        );
        // The outer phase still counts after the inner one stopped.
        drop(std::hint::black_box(Box::new(1u16)));
        assert_eq!(
            outer.stop(),
            Counts {
                allocations: 3,
                bytes: 4 + 8 + 2
            }
        );
    }

    #[test]
    #[should_panic(expected = "install with_heap_totals()")]
    fn heap_totals_are_refused_without_them() {
        let _ = CountingAlloc::per_thread().live();
    }

    #[test]
    #[should_panic(expected = "install with_heap_totals()")]
    fn heap_regions_are_refused_without_heap_totals() {
        let _ = CountingAlloc::per_thread().heap_region();
    }
}
