//! How a blocked channel end waits, and how the other end wakes it.
//!
//! This module owns [`WaitStrategy`], the spin-then-yield-then-park back-off, and the parking
//! protocol (the `parked` flags in [`crate::queue::Shared`] and the thread handles in
//! [`Waiters`]). It does not own what is being waited for: the channel passes in the condition
//! ("the queue has a value or the sender is gone", "the queue has room or the receiver is gone").
//!
//! # The wake-up protocol, and why it cannot lose a wake-up
//!
//! The waiter does: store `parked = true`; `fence(SeqCst)`; load the queue state; park only if
//! nothing changed. The other end does: store the queue state (push, pop or drop);
//! `fence(SeqCst)`; load `parked`; unpark only if it is set. The two `SeqCst` fences are ordered
//! one way or the other in the single total order of `SeqCst` operations. If the waiter's fence
//! comes first, the other end's load after its own fence must see `parked = true` (or a later
//! store) and unparks. If the other end's fence comes first, the waiter's load after its fence
//! must see the new queue state and does not park. Either way the waiter is not left parked with
//! work to do; an unpark that arrives before the park is kept as the thread's token, so `park`
//! returns at once.
//!
//! Both fences are needed. Without the waiter's fence, its store of `parked` can still sit in
//! its core's store buffer while its load of the queue state executes (x86 reorders a store with
//! a later load, and so does the C++ model); without the other end's, the same happens to the
//! queue store and the `parked` load. Then both loads see the old values: the waiter parks on a
//! queue that has a value, the other end sees nobody parked, and the wake-up is lost. A
//! `Release` store and an `Acquire` load do not order a store before a later load, which is why
//! this is the one place that needs `SeqCst`. The loom model `loom_lost_wake_up_without_fence`
//! removes the fences and shows the model checker finding the deadlock.
//!
//! What "fence" means on each side is [`crate::barrier`]'s choice: on Linux the frequent side
//! (after every push and pop) gets away with a compiler fence and the waiter pays for a
//! `membarrier` system call just before it parks; elsewhere both are `fence(SeqCst)`. The
//! argument above holds for both pairs; `crate::barrier` shows why the asymmetric one is as
//! strong.
//!
//! The cost on the fast path is then that fence plus one load of a flag on a line that is
//! written only around a park, so while the peer is not parked the load hits the local cache.
//! With [`WaitStrategy::Yield`] and [`WaitStrategy::BusyPoll`] nobody parks, and even that is
//! skipped.

use std::task::Waker;
use std::time::Instant;

use crate::barrier::Fences;
use crate::sync::{
    AtomicBool, Mutex, MutexGuard, Ordering, Thread, current, park, park_timeout, spin_loop,
    yield_now,
};

/// What a blocked [`Sender`](crate::Sender) or [`Receiver`](crate::Receiver) does while the
/// channel is full (or empty). Both ends of a channel use the same strategy.
///
/// Whatever the strategy, a blocked operation returns as soon as it can: when the other end makes
/// room (or sends a value), is dropped, or the timeout passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WaitStrategy {
    /// Spin `spins` times (with a CPU spin-loop hint), then yield the time slice `yields` times,
    /// then park the thread until the other end unparks it. The other end pays a fence and one
    /// load per operation to find out whether it must unpark; the unpark itself (a system call)
    /// only when this end is actually parked.
    ///
    /// On Linux that fence is a compiler fence (no instruction), and an end about to park first
    /// calls `membarrier`, which interrupts, for about a microsecond, each CPU running another
    /// thread of the process at that moment; elsewhere both are a `SeqCst` fence. In a process
    /// whose pinned threads must never be interrupted, give every channel
    /// [`WaitStrategy::Yield`] or [`WaitStrategy::BusyPoll`], which never park.
    Park {
        /// Spin-loop iterations before the first yield.
        spins: u32,
        /// `yield_now` calls before parking.
        yields: u32,
    },
    /// Yield the time slice until the operation can proceed; never park.
    Yield,
    /// Spin on the queue until the operation can proceed; never yield, never park. The lowest
    /// latency when each end has a core to itself, and a burnt core while waiting.
    BusyPoll,
}

impl Default for WaitStrategy {
    /// `Park { spins: 128, yields: 16 }`: a few microseconds of spinning and yielding cover a
    /// peer that answers promptly, then the thread sleeps.
    fn default() -> Self {
        Self::Park {
            spins: 128,
            yields: 16,
        }
    }
}

impl WaitStrategy {
    /// Whether an end using this strategy may park, so the other end must check for it.
    pub(crate) fn parks(self) -> bool {
        matches!(self, Self::Park { .. })
    }
}

/// What each end waits with, registered before its `parked` flag is set.
pub(crate) struct Waiters {
    pub(crate) producer: Mutex<Option<Waiter>>,
    pub(crate) consumer: Mutex<Option<Waiter>>,
}

/// A parked thread, or a task awaiting [`Receiver::recv_async`](crate::Receiver::recv_async).
#[derive(Clone)]
pub(crate) enum Waiter {
    Thread(Thread),
    Task(Waker),
}

impl Waiters {
    pub(crate) fn new() -> Self {
        Self {
            producer: Mutex::new(None),
            consumer: Mutex::new(None),
        }
    }
}

/// One wait episode's position in the spin, yield, park sequence.
pub(crate) struct Backoff {
    strategy: WaitStrategy,
    steps: u32,
}

impl Backoff {
    pub(crate) fn new(strategy: WaitStrategy) -> Self {
        Self { strategy, steps: 0 }
    }

    /// Spins or yields once and returns `false`, or returns `true` when the strategy says it is
    /// time to park (and keeps saying so).
    pub(crate) fn snooze(&mut self) -> bool {
        match self.strategy {
            WaitStrategy::BusyPoll => spin_loop(),
            WaitStrategy::Yield => yield_now(),
            WaitStrategy::Park { spins, yields } => {
                if self.steps < spins {
                    spin_loop();
                } else if self.steps - spins < yields {
                    yield_now();
                } else {
                    return true;
                }
                // Saturating: `spins + yields` may exceed `u32::MAX`.
                self.steps = self.steps.saturating_add(1);
            }
        }
        false
    }
}

/// Called by an end right after it changed what the other end may be waiting for (a push, a
/// pop, a drop). Costs a fence and one load unless the other end is parked.
#[inline(always)]
pub(crate) fn wake_peer(fences: Fences, peer_parked: &AtomicBool, peer: &Mutex<Option<Waiter>>) {
    // The light fence: pairs with the heavy one in `park_unless`; see the module docs.
    fences.light();
    // Relaxed: the fence orders this load after our store of the queue state.
    if peer_parked.load(Ordering::Relaxed) {
        unpark(peer);
    }
}

#[cold]
#[inline(never)]
fn unpark(peer: &Mutex<Option<Waiter>>) {
    let waiter = lock(peer).clone();
    // Wake after releasing the lock: the peer may be about to take it to register again, and
    // the system call (or the executor's wake) need not hold it up.
    match waiter {
        Some(Waiter::Thread(thread)) => thread.unpark(),
        Some(Waiter::Task(waker)) => waker.wake(),
        None => {}
    }
}

/// Locks a waiter slot. No user code runs under the lock, so it is never poisoned; a poisoned
/// one would still hold a valid `Option<Waiter>`.
pub(crate) fn lock(slot: &Mutex<Option<Waiter>>) -> MutexGuard<'_, Option<Waiter>> {
    slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Parks the calling thread until the other end calls [`wake_peer`], `deadline` passes, or a
/// spurious wake-up, unless `ready()` (the condition being waited for, loaded with `Relaxed`) is
/// already true once `parked` is visible. The caller re-checks its condition afterwards either
/// way.
#[cold]
#[inline(never)]
pub(crate) fn park_unless(
    fences: Fences,
    parked: &AtomicBool,
    me: &Mutex<Option<Waiter>>,
    ready: impl FnOnce() -> bool,
    deadline: Option<Instant>,
) {
    // The mutex makes the handle visible to whoever sees `parked` and takes the lock.
    *lock(me) = Some(Waiter::Thread(current()));
    // Relaxed: the fence below orders it before the `ready` loads.
    parked.store(true, Ordering::Relaxed);
    // The heavy fence: pairs with the light one in `wake_peer`; see the module docs. If it could
    // not be issued, the other end may miss the flag: yield instead of parking.
    if !fences.heavy() {
        yield_now();
    } else if !ready() {
        match deadline {
            None => park(),
            Some(deadline) => {
                let now = Instant::now();
                if deadline > now {
                    park_timeout(deadline - now);
                }
            }
        }
    }
    parked.store(false, Ordering::Relaxed);
}
