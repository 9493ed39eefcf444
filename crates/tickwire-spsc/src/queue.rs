//! The lock-free bounded ring buffer: [`queue`] and its two ends, [`Producer`] and [`Consumer`].
//!
//! This module owns the slots, the two positions and the rule that moves values between the
//! ends: the producer writes a slot and then publishes it with a `Release` store of `tail`; the
//! consumer reads `tail` with `Acquire`, moves the value out and hands the slot back with a
//! `Release` store of `head`. Each end keeps a private copy of its own position and a cached copy
//! of the other end's, so a push or pop touches the other end's cache line only when the cache
//! says the queue is full (or empty). There is no read-modify-write on the fast path.
//!
//! It does not block: waiting, parking and wake-ups belong to [`crate::channel`], which keeps its
//! flags in [`Shared`] so a channel is still one allocation.
//!
//! Positions are free-running `usize` counters (they wrap), the slot index is `position & mask`,
//! and `tail - head` (wrapping) is the number of values in the queue, never more than the
//! capacity.

use core::cell::Cell;
use core::marker::PhantomData;
use core::mem::MaybeUninit;

use crossbeam_utils::CachePadded;

use crate::sync::{Arc, AtomicBool, AtomicUsize, Ordering, UnsafeCell};
use crate::wait::Waiters;

/// Creates a bounded single-producer single-consumer queue that holds at least `capacity`
/// values.
///
/// The capacity is rounded up to the next power of two (`queue::<u8>(1000)` holds 1024 values),
/// which the ends report through `capacity()`.
///
/// # Panics
///
/// If `capacity` is 0, or if rounding it up to a power of two overflows `usize`.
///
/// # Example
///
/// ```
/// let (mut producer, mut consumer) = tickwire_spsc::queue::<u32>(3);
/// assert_eq!(producer.capacity(), 4);
/// assert_eq!(producer.push(7), Ok(()));
/// assert_eq!(consumer.pop(), Some(7));
/// assert_eq!(consumer.pop(), None);
/// ```
pub fn queue<T>(capacity: usize) -> (Producer<T>, Consumer<T>) {
    assert!(
        capacity > 0,
        "tickwire_spsc: a queue needs a capacity of at least 1"
    );
    let capacity = capacity
        .checked_next_power_of_two()
        .expect("tickwire_spsc: capacity rounded up to a power of two overflows usize");
    let slots = (0..capacity)
        .map(|_| UnsafeCell::new(MaybeUninit::uninit()))
        .collect::<Box<[_]>>();
    let shared = Arc::new(Shared {
        head: CachePadded::new(AtomicUsize::new(0)),
        tail: CachePadded::new(AtomicUsize::new(0)),
        flags: CachePadded::new(Flags {
            producer_gone: AtomicBool::new(false),
            consumer_gone: AtomicBool::new(false),
            producer_parked: AtomicBool::new(false),
            consumer_parked: AtomicBool::new(false),
        }),
        waiters: Waiters::new(),
        mask: capacity - 1,
        slots,
    });
    let producer = Producer {
        shared: Arc::clone(&shared),
        tail: 0,
        cached_head: 0,
        not_sync: PhantomData,
    };
    let consumer = Consumer {
        shared,
        head: 0,
        cached_tail: 0,
        not_sync: PhantomData,
    };
    (producer, consumer)
}

/// The writing end of a [`queue`].
///
/// `Producer<T>` is `Send` when `T` is, and never `Sync`: there is exactly one producer, and
/// pushing takes `&mut self`.
///
/// ```compile_fail,E0277
/// fn shared_between_threads<S: Sync>(_: S) {}
/// shared_between_threads(tickwire_spsc::queue::<u8>(1).0);
/// ```
///
/// ```compile_fail,E0277
/// fn sent_to_a_thread<S: Send>(_: S) {}
/// sent_to_a_thread(tickwire_spsc::queue::<std::rc::Rc<u8>>(1).0);
/// ```
pub struct Producer<T> {
    shared: Arc<Shared<T>>,
    /// The next position to write; only this end writes `shared.tail`, so this is exact.
    tail: usize,
    /// The consumer's `head` as last seen; the queue has at least `capacity - (tail -
    /// cached_head)` free slots.
    cached_head: usize,
    not_sync: PhantomData<Cell<()>>,
}

/// The reading end of a [`queue`].
///
/// `Consumer<T>` is `Send` when `T` is, and never `Sync`: there is exactly one consumer, and
/// popping takes `&mut self`.
///
/// ```compile_fail,E0277
/// fn shared_between_threads<S: Sync>(_: S) {}
/// shared_between_threads(tickwire_spsc::queue::<u8>(1).1);
/// ```
///
/// ```compile_fail,E0277
/// fn sent_to_a_thread<S: Send>(_: S) {}
/// sent_to_a_thread(tickwire_spsc::queue::<std::rc::Rc<u8>>(1).1);
/// ```
pub struct Consumer<T> {
    shared: Arc<Shared<T>>,
    /// The next position to read; only this end writes `shared.head`, so this is exact.
    head: usize,
    /// The producer's `tail` as last seen; the queue holds at least `cached_tail - head` values.
    cached_tail: usize,
    not_sync: PhantomData<Cell<()>>,
}

/// The state both ends share. Dropped (with any values still in it) when both ends are gone.
pub(crate) struct Shared<T> {
    /// The next position the consumer reads. Written only by the consumer.
    head: CachePadded<AtomicUsize>,
    /// The next position the producer writes. Written only by the producer.
    tail: CachePadded<AtomicUsize>,
    /// Disconnect and parking flags: written rarely (on drop, around a park), read often, so they
    /// live on a line of their own that stays shared in both cores' caches.
    pub(crate) flags: CachePadded<Flags>,
    /// The threads to unpark; touched only on the parking slow path.
    pub(crate) waiters: Waiters,
    /// `capacity - 1`; the capacity is a power of two.
    mask: usize,
    /// INVARIANT: the slots at positions `head..tail` (wrapping, masked) hold initialised
    /// values; every other slot is uninitialised. Only the producer touches slots outside
    /// `head..tail` and only the consumer touches slots inside it.
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
}

/// Flags the two ends exchange about each other.
pub(crate) struct Flags {
    /// Set (`Release`) when the producer is dropped; never cleared.
    pub(crate) producer_gone: AtomicBool,
    /// Set (`Release`) when the consumer is dropped; never cleared.
    pub(crate) consumer_gone: AtomicBool,
    /// Set by a channel sender just before it parks, cleared when it wakes.
    pub(crate) producer_parked: AtomicBool,
    /// Set by a channel receiver just before it parks, cleared when it wakes.
    pub(crate) consumer_parked: AtomicBool,
}

// SAFETY: `Shared` is reached only through one `Producer` and one `Consumer` (neither is `Clone`
// nor `Sync`), and the INVARIANT on `slots` splits the slots between them: a slot is written by
// the producer only while it is outside `head..tail` and read by the consumer only while it is
// inside, and the hand-over is a Release store / Acquire load of `tail` or `head`. So sharing
// `Shared` between the two threads moves `T` values across threads (hence `T: Send`) but never
// lets two threads touch one slot at once, and `&T` is never handed out (so no `T: Sync`).
unsafe impl<T: Send> Sync for Shared<T> {}

impl<T> Producer<T> {
    /// Appends `value` to the queue, or gives it back as `Err(value)` when the queue is full.
    ///
    /// Never blocks. Succeeds even when the consumer is gone (see [`Producer::is_abandoned`]);
    /// such values are dropped with the queue.
    #[inline]
    pub fn push(&mut self, value: T) -> Result<(), T> {
        let tail = self.tail;
        if tail.wrapping_sub(self.cached_head) == self.shared.capacity() {
            // Acquire: the consumer's reads of the slots it hands back happen before we reuse them.
            self.cached_head = self.shared.head.load(Ordering::Acquire);
            if tail.wrapping_sub(self.cached_head) == self.shared.capacity() {
                return Err(value);
            }
        }
        let slot = self.shared.slot(tail);
        // SAFETY: `tail - head < capacity`, so the slot at `tail` is outside `head..tail`: it is
        // uninitialised and the consumer does not touch it until the store below publishes it.
        slot.with_mut(|slot| unsafe { slot.write(MaybeUninit::new(value)) });
        self.tail = tail.wrapping_add(1);
        // Release: the slot write above happens before the consumer's Acquire load sees it.
        self.shared.tail.store(self.tail, Ordering::Release);
        Ok(())
    }

    /// Appends as many values from the front of `values` as fit and returns how many that was
    /// (0 when the queue is full).
    ///
    /// The values become visible to the consumer together, after all of them are written.
    pub fn push_slice(&mut self, values: &[T]) -> usize
    where
        T: Copy,
    {
        let tail = self.tail;
        let capacity = self.shared.capacity();
        if capacity - tail.wrapping_sub(self.cached_head) < values.len() {
            self.cached_head = self.shared.head.load(Ordering::Acquire);
        }
        let free = capacity - tail.wrapping_sub(self.cached_head);
        let count = free.min(values.len());
        if count == 0 {
            return 0;
        }
        for (offset, value) in values[..count].iter().enumerate() {
            let slot = self.shared.slot(tail.wrapping_add(offset));
            // SAFETY: `offset < free`, so the position is outside `head..tail` (see `push`).
            slot.with_mut(|slot| unsafe { slot.write(MaybeUninit::new(*value)) });
        }
        self.tail = tail.wrapping_add(count);
        self.shared.tail.store(self.tail, Ordering::Release);
        count
    }

    /// The number of values that can be pushed right now without the queue being full. The
    /// consumer may free more at any moment.
    pub fn free_slots(&self) -> usize {
        self.shared.capacity() - self.len()
    }

    /// The number of values in the queue at the moment of the call (the consumer may take some
    /// at any moment).
    pub fn len(&self) -> usize {
        self.tail
            .wrapping_sub(self.shared.head.load(Ordering::Acquire))
    }

    /// Whether the queue held no values at the moment of the call.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the queue was full at the moment of the call.
    pub fn is_full(&self) -> bool {
        self.len() == self.shared.capacity()
    }

    /// The number of values the queue holds when full: the requested capacity rounded up to a
    /// power of two.
    pub fn capacity(&self) -> usize {
        self.shared.capacity()
    }

    /// Whether the [`Consumer`] has been dropped. Once `true` it stays `true`, and nothing pushed
    /// from then on will be read (it is dropped with the queue).
    pub fn is_abandoned(&self) -> bool {
        self.shared.flags.consumer_gone.load(Ordering::Acquire)
    }

    /// The shared state, for the channel's wake-up protocol.
    pub(crate) fn shared(&self) -> &Shared<T> {
        &self.shared
    }
}

impl<T> Consumer<T> {
    /// Removes and returns the oldest value, or `None` when the queue is empty.
    ///
    /// Never blocks. Values pushed before the producer was dropped are still returned.
    #[inline]
    pub fn pop(&mut self) -> Option<T> {
        let head = self.head;
        if head == self.cached_tail {
            // Acquire: the producer's slot writes happen before we read the slots.
            self.cached_tail = self.shared.tail.load(Ordering::Acquire);
            if head == self.cached_tail {
                return None;
            }
        }
        let slot = self.shared.slot(head);
        // SAFETY: `head != tail`, so the slot at `head` is inside `head..tail`: initialised, and
        // the producer does not touch it until the store below hands it back. Reading moves the
        // value out; the slot counts as uninitialised from that store on.
        let value = slot.with(|slot| unsafe { slot.read().assume_init() });
        self.head = head.wrapping_add(1);
        // Release: our read of the slot happens before the producer overwrites it.
        self.shared.head.store(self.head, Ordering::Release);
        Some(value)
    }

    /// Moves as many of the oldest values as fit into the front of `out` and returns how many
    /// that was (0 when the queue is empty).
    ///
    /// The slots go back to the producer together, after all of them are read.
    pub fn pop_into(&mut self, out: &mut [T]) -> usize
    where
        T: Copy,
    {
        let head = self.head;
        if self.cached_tail.wrapping_sub(head) < out.len() {
            self.cached_tail = self.shared.tail.load(Ordering::Acquire);
        }
        let count = self.cached_tail.wrapping_sub(head).min(out.len());
        if count == 0 {
            return 0;
        }
        for (offset, value) in out[..count].iter_mut().enumerate() {
            let slot = self.shared.slot(head.wrapping_add(offset));
            // SAFETY: `offset < tail - head`, so the position is inside `head..tail` (see `pop`).
            *value = slot.with(|slot| unsafe { slot.read().assume_init() });
        }
        self.head = head.wrapping_add(count);
        self.shared.head.store(self.head, Ordering::Release);
        count
    }

    /// The number of values in the queue at the moment of the call (the producer may add some
    /// at any moment).
    pub fn len(&self) -> usize {
        self.shared
            .tail
            .load(Ordering::Acquire)
            .wrapping_sub(self.head)
    }

    /// Whether the queue held no values at the moment of the call.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The number of values the queue holds when full: the requested capacity rounded up to a
    /// power of two.
    pub fn capacity(&self) -> usize {
        self.shared.capacity()
    }

    /// Whether the [`Producer`] has been dropped. Once `true` it stays `true`; the values it
    /// pushed before that can still be popped, so "abandoned and empty" means "nothing more will
    /// ever arrive" only when checked in that order: `is_abandoned()` first, then `pop()`.
    pub fn is_abandoned(&self) -> bool {
        self.shared.flags.producer_gone.load(Ordering::Acquire)
    }

    /// The shared state, for the channel's wake-up protocol.
    pub(crate) fn shared(&self) -> &Shared<T> {
        &self.shared
    }

    /// Whether the queue looked non-empty, without the `Acquire` that reading the value needs;
    /// the parking protocol re-checks with [`Consumer::pop`] before using anything.
    pub(crate) fn has_values_relaxed(&self) -> bool {
        self.shared.tail.load(Ordering::Relaxed) != self.head
    }
}

impl<T> Producer<T> {
    /// Whether the queue looked full, without `Acquire`; see [`Consumer::has_values_relaxed`].
    pub(crate) fn is_full_relaxed(&self) -> bool {
        self.tail
            .wrapping_sub(self.shared.head.load(Ordering::Relaxed))
            == self.shared.capacity()
    }
}

impl<T> Drop for Producer<T> {
    fn drop(&mut self) {
        self.shared
            .flags
            .producer_gone
            .store(true, Ordering::Release);
    }
}

impl<T> Drop for Consumer<T> {
    fn drop(&mut self) {
        self.shared
            .flags
            .consumer_gone
            .store(true, Ordering::Release);
    }
}

impl<T> core::fmt::Debug for Producer<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Producer")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("abandoned", &self.is_abandoned())
            .finish()
    }
}

impl<T> core::fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Consumer")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("abandoned", &self.is_abandoned())
            .finish()
    }
}

impl<T> Shared<T> {
    #[inline(always)]
    fn capacity(&self) -> usize {
        self.mask + 1
    }

    #[inline(always)]
    fn slot(&self, position: usize) -> &UnsafeCell<MaybeUninit<T>> {
        let index = position & self.mask;
        debug_assert!(index < self.slots.len());
        // SAFETY: `index <= mask == slots.len() - 1`.
        unsafe { self.slots.get_unchecked(index) }
    }
}

impl<T> Drop for Shared<T> {
    /// Drops the values still in the queue, each exactly once. If one of their `Drop`s panics,
    /// the rest are still dropped (a second panic aborts, as it does for `Vec`).
    fn drop(&mut self) {
        /// Positions `next..end` still to drop. Dropping the guard drops them, which is what
        /// carries on past a panicking value while unwinding.
        struct Remaining<'a, T> {
            shared: &'a Shared<T>,
            next: usize,
            end: usize,
        }
        impl<T> Remaining<'_, T> {
            fn drop_values(&mut self) {
                while self.next != self.end {
                    let slot = self.shared.slot(self.next);
                    // Advance first, so a panic in this value's drop does not drop it again.
                    self.next = self.next.wrapping_add(1);
                    // SAFETY: positions `head..tail` hold initialised values (the INVARIANT on
                    // `slots`), each visited once. Both ends are gone and the last `Arc` drop
                    // synchronised with them, so nothing else touches the slots.
                    slot.with_mut(|slot| unsafe { slot.cast::<T>().drop_in_place() });
                }
            }
        }
        impl<T> Drop for Remaining<'_, T> {
            fn drop(&mut self) {
                self.drop_values();
            }
        }
        // Relaxed is enough: `Arc`'s drop made both ends' last stores visible to us.
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Relaxed);
        let mut remaining = Remaining {
            shared: self,
            next: head,
            end: tail,
        };
        // If a value's drop panics, unwinding drops `remaining`, which drops the rest.
        remaining.drop_values();
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
