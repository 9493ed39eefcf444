//! The blocking channel: [`channel`], [`channel_with`], [`Sender`] and [`Receiver`].
//!
//! This module owns the channel's operations and their contracts: blocking, non-blocking and
//! timed sends and receives over a [`crate::queue`], with disconnection reported as an error
//! that gives an unsent value back. How an operation waits and how the other end wakes it is
//! [`crate::wait`]'s; moving values is the queue's.
//!
//! A successful operation is the queue operation plus, under [`WaitStrategy::Park`], a fence
//! (a compiler fence on Linux, see [`crate::barrier`]) and one load to see whether the other end
//! is parked. The waiting loop of a blocking operation is a call away from the fast path, which
//! keeps the fast path small enough to run at the bare queue's rate (see `Sender::send_until`);
//! parking is further out, in the `#[cold]` `park_unless`. The async receive lives in the
//! `future` submodule.

use std::time::{Duration, Instant};

mod future;
pub use future::RecvFuture;

use crate::barrier::{Fences, fences};
use crate::error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
use crate::queue::{Consumer, Producer, queue};
use crate::sync::Ordering;
use crate::wait::{Backoff, WaitStrategy, park_unless, wake_peer};

/// Creates a bounded blocking channel for at least `capacity` values, with the default
/// [`WaitStrategy`] (spin, then yield, then park).
///
/// The capacity is rounded up to a power of two, as for [`queue`](crate::queue()).
///
/// # Panics
///
/// If `capacity` is 0, or if rounding it up to a power of two overflows `usize`.
pub fn channel<T>(capacity: usize) -> (Sender<T>, Receiver<T>) {
    channel_with(capacity, WaitStrategy::default())
}

/// Creates a bounded blocking channel for at least `capacity` values whose blocked operations
/// wait as `strategy` says.
///
/// # Panics
///
/// If `capacity` is 0, or if rounding it up to a power of two overflows `usize`.
///
/// # Example
///
/// ```
/// use tickwire_spsc::{WaitStrategy, channel_with};
///
/// let (mut sender, mut receiver) = channel_with::<u64>(1024, WaitStrategy::BusyPoll);
/// let consumer = std::thread::spawn(move || {
///     let mut total = 0;
///     while let Ok(value) = receiver.recv() {
///         total += value;
///     }
///     total
/// });
/// for value in 1..=100 {
///     sender.send(value).unwrap();
/// }
/// drop(sender);
/// assert_eq!(consumer.join().unwrap(), 5050);
/// ```
pub fn channel_with<T>(capacity: usize, strategy: WaitStrategy) -> (Sender<T>, Receiver<T>) {
    let (producer, consumer) = queue(capacity);
    // Both ends get the same fences: the handshake needs the light one on one side to meet the
    // heavy one on the other.
    let wake = strategy.parks().then(fences);
    let sender = Sender {
        producer,
        strategy,
        wake,
    };
    let receiver = Receiver {
        consumer,
        strategy,
        wake,
    };
    (sender, receiver)
}

/// The sending end of a [`channel`]. `Send` when `T` is, never `Sync` nor `Clone`: there is one
/// sender.
///
/// Dropping it disconnects the channel: the receiver still gets every value sent before, then
/// [`RecvError`].
///
/// ```compile_fail,E0277
/// fn shared_between_threads<S: Sync>(_: S) {}
/// shared_between_threads(tickwire_spsc::channel::<u8>(1).0);
/// ```
///
/// ```compile_fail,E0277
/// fn sent_to_a_thread<S: Send>(_: S) {}
/// sent_to_a_thread(tickwire_spsc::channel::<std::rc::Rc<u8>>(1).0);
/// ```
pub struct Sender<T> {
    producer: Producer<T>,
    strategy: WaitStrategy,
    /// `Some` when the receiver may park (`strategy.parks()`), so sends must check, with the
    /// fences the handshake uses.
    wake: Option<Fences>,
}

/// The receiving end of a [`channel`]. `Send` when `T` is, never `Sync` nor `Clone`: there is
/// one receiver.
///
/// Dropping it disconnects the channel: sends fail from then on and give the value back, and
/// values still in the channel are dropped once the sender is gone too.
///
/// ```compile_fail,E0277
/// fn shared_between_threads<S: Sync>(_: S) {}
/// shared_between_threads(tickwire_spsc::channel::<u8>(1).1);
/// ```
///
/// ```compile_fail,E0277
/// fn sent_to_a_thread<S: Send>(_: S) {}
/// sent_to_a_thread(tickwire_spsc::channel::<std::rc::Rc<u8>>(1).1);
/// ```
pub struct Receiver<T> {
    consumer: Consumer<T>,
    strategy: WaitStrategy,
    /// `Some` when the sender may park (`strategy.parks()`), so receives must check, with the
    /// fences the handshake uses.
    wake: Option<Fences>,
}

impl<T> Sender<T> {
    /// Sends `value`, waiting while the channel is full.
    ///
    /// Returns `Err(SendError(value))` if the receiver is gone (before or while waiting).
    #[inline(always)]
    pub fn send(&mut self, value: T) -> Result<(), SendError<T>> {
        match self.try_send(value) {
            Ok(()) => Ok(()),
            Err(TrySendError::Disconnected(value)) => Err(SendError(value)),
            Err(TrySendError::Full(value)) => match self.send_until(value, None) {
                Ok(()) => Ok(()),
                Err(error) => Err(SendError(error.into_inner())),
            },
        }
    }

    /// Sends `value` if there is room right now; never waits.
    ///
    /// Returns [`TrySendError::Full`] when the channel is full and
    /// [`TrySendError::Disconnected`] when the receiver is gone, each with the value.
    #[inline]
    pub fn try_send(&mut self, value: T) -> Result<(), TrySendError<T>> {
        if self.producer.is_abandoned() {
            return Err(TrySendError::Disconnected(value));
        }
        match self.producer.push(value) {
            Ok(()) => {
                if let Some(fences) = self.wake {
                    let shared = self.producer.shared();
                    wake_peer(
                        fences,
                        &shared.flags.consumer_parked,
                        &shared.waiters.consumer,
                    );
                }
                Ok(())
            }
            Err(value) => Err(TrySendError::Full(value)),
        }
    }

    /// Sends `value`, waiting at most `timeout` while the channel is full.
    ///
    /// Returns [`SendTimeoutError::Timeout`] if the channel was still full when `timeout` passed
    /// (measured from the call; the return comes within the scheduler's wake-up latency after
    /// it), and [`SendTimeoutError::Disconnected`] if the receiver is gone, each with the value.
    pub fn send_timeout(&mut self, value: T, timeout: Duration) -> Result<(), SendTimeoutError<T>> {
        let deadline = Instant::now().checked_add(timeout);
        match self.try_send(value) {
            Ok(()) => Ok(()),
            Err(TrySendError::Disconnected(value)) => Err(SendTimeoutError::Disconnected(value)),
            Err(TrySendError::Full(value)) => self.send_until(value, Some(deadline)),
        }
    }

    /// The number of values in the channel at the moment of the call.
    pub fn len(&self) -> usize {
        self.producer.len()
    }

    /// Whether the channel held no values at the moment of the call.
    pub fn is_empty(&self) -> bool {
        self.producer.is_empty()
    }

    /// Whether the channel was full at the moment of the call.
    pub fn is_full(&self) -> bool {
        self.producer.is_full()
    }

    /// The number of values the channel holds when full (the requested capacity rounded up to a
    /// power of two).
    pub fn capacity(&self) -> usize {
        self.producer.capacity()
    }

    /// Whether the receiver was dropped. Once `true` it stays `true` and every send fails.
    pub fn is_disconnected(&self) -> bool {
        self.producer.is_abandoned()
    }

    /// The strategy this channel's blocked operations wait with.
    pub fn wait_strategy(&self) -> WaitStrategy {
        self.strategy
    }

    // `send` and `recv` are `inline(always)` and their waiting loops `inline(never)`. With the
    // loops inlined too (as until 2026-11-23), the caller's loop carried their register saves
    // and stack frame on every value; measured on the 2-vCPU AMD EPYC VM, one-way throughput of
    // u64 through `send` / `recv` was about half that of `try_send` / `try_recv` spun by the
    // caller (33-106 vs 52-204 M/s over 8 interleaved rounds), and with the loops out of line
    // it matched them and the bare queue (134-202 vs 154-224 M/s) at the same round-trip p50.
    // (An earlier measurement on another host had favoured inlining for latency by ~150 ns;
    // it did not reproduce here.)

    /// The waiting part of `send` and `send_timeout`: `None` waits without a deadline (the
    /// outer `Option` of `deadline` says whether there is a timeout, the inner one is `None` when
    /// the deadline overflowed `Instant`, which also means forever).
    #[inline(never)]
    fn send_until(
        &mut self,
        mut value: T,
        deadline: Option<Option<Instant>>,
    ) -> Result<(), SendTimeoutError<T>> {
        let deadline = deadline.flatten();
        let mut backoff = Backoff::new(self.strategy);
        loop {
            match self.try_send(value) {
                Ok(()) => return Ok(()),
                Err(TrySendError::Disconnected(unsent)) => {
                    return Err(SendTimeoutError::Disconnected(unsent));
                }
                Err(TrySendError::Full(unsent)) => value = unsent,
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Err(SendTimeoutError::Timeout(value));
            }
            if backoff.snooze()
                && let Some(fences) = self.wake
            {
                let producer = &self.producer;
                let shared = producer.shared();
                park_unless(
                    fences,
                    &shared.flags.producer_parked,
                    &shared.waiters.producer,
                    || {
                        !producer.is_full_relaxed()
                            || shared.flags.consumer_gone.load(Ordering::Relaxed)
                    },
                    deadline,
                );
            }
        }
    }
}

impl<T> Receiver<T> {
    /// Receives the oldest value, waiting while the channel is empty.
    ///
    /// Returns [`RecvError`] once the channel is empty and the sender is gone; every value sent
    /// before the sender was dropped is received first.
    #[inline(always)]
    pub fn recv(&mut self) -> Result<T, RecvError> {
        match self.try_recv() {
            Ok(value) => Ok(value),
            Err(TryRecvError::Disconnected) => Err(RecvError),
            Err(TryRecvError::Empty) => self.recv_until(None).map_err(|_| RecvError),
        }
    }

    /// Receives the oldest value if there is one right now; never waits.
    ///
    /// Returns [`TryRecvError::Empty`] when the channel is empty and
    /// [`TryRecvError::Disconnected`] when it is empty and the sender is gone.
    #[inline]
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        if let Some(value) = self.consumer.pop() {
            if let Some(fences) = self.wake {
                let shared = self.consumer.shared();
                wake_peer(
                    fences,
                    &shared.flags.producer_parked,
                    &shared.waiters.producer,
                );
            }
            return Ok(value);
        }
        self.try_recv_empty()
    }

    /// Receives the oldest value, waiting at most `timeout` while the channel is empty.
    ///
    /// Returns [`RecvTimeoutError::Timeout`] if it was still empty when `timeout` passed
    /// (measured from the call; the return comes within the scheduler's wake-up latency after
    /// it), and [`RecvTimeoutError::Disconnected`] once it is empty and the sender is gone.
    pub fn recv_timeout(&mut self, timeout: Duration) -> Result<T, RecvTimeoutError> {
        let deadline = Instant::now().checked_add(timeout);
        match self.try_recv() {
            Ok(value) => Ok(value),
            Err(TryRecvError::Disconnected) => Err(RecvTimeoutError::Disconnected),
            Err(TryRecvError::Empty) => self.recv_until(Some(deadline)),
        }
    }

    /// The number of values in the channel at the moment of the call.
    pub fn len(&self) -> usize {
        self.consumer.len()
    }

    /// Whether the channel held no values at the moment of the call.
    pub fn is_empty(&self) -> bool {
        self.consumer.is_empty()
    }

    /// The number of values the channel holds when full (the requested capacity rounded up to a
    /// power of two).
    pub fn capacity(&self) -> usize {
        self.consumer.capacity()
    }

    /// Whether the sender was dropped. Values it sent before may still be waiting to be
    /// received; `recv` reports the disconnection only after them.
    pub fn is_disconnected(&self) -> bool {
        self.consumer.is_abandoned()
    }

    /// The strategy this channel's blocked operations wait with.
    pub fn wait_strategy(&self) -> WaitStrategy {
        self.strategy
    }

    /// `try_recv` found the queue empty: tell "empty for now" from "empty for good".
    #[inline(never)]
    fn try_recv_empty(&mut self) -> Result<T, TryRecvError> {
        // Acquire pairs with the sender's Release store of the flag on drop, so every value it
        // pushed before is visible to the pop below.
        if !self.consumer.is_abandoned() {
            return Err(TryRecvError::Empty);
        }
        // No need to wake the sender: it is gone.
        self.consumer.pop().ok_or(TryRecvError::Disconnected)
    }

    /// The waiting part of `recv` and `recv_timeout`; `deadline` as in `Sender::send_until`.
    #[inline(never)]
    fn recv_until(&mut self, deadline: Option<Option<Instant>>) -> Result<T, RecvTimeoutError> {
        let deadline = deadline.flatten();
        let mut backoff = Backoff::new(self.strategy);
        loop {
            match self.try_recv() {
                Ok(value) => return Ok(value),
                Err(TryRecvError::Disconnected) => return Err(RecvTimeoutError::Disconnected),
                Err(TryRecvError::Empty) => {}
            }
            if deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                return Err(RecvTimeoutError::Timeout);
            }
            if backoff.snooze()
                && let Some(fences) = self.wake
            {
                let consumer = &self.consumer;
                let shared = consumer.shared();
                park_unless(
                    fences,
                    &shared.flags.consumer_parked,
                    &shared.waiters.consumer,
                    || {
                        consumer.has_values_relaxed()
                            || shared.flags.producer_gone.load(Ordering::Relaxed)
                    },
                    deadline,
                );
            }
        }
    }
}

impl<T> Drop for Sender<T> {
    /// Disconnects, and wakes the receiver if it is parked so it sees the disconnection.
    fn drop(&mut self) {
        let shared = self.producer.shared();
        shared.flags.producer_gone.store(true, Ordering::Release);
        // Always, whatever the strategy: a drop is rare, and this keeps the argument simple.
        let fences = self.wake.unwrap_or(Fences::Symmetric);
        wake_peer(
            fences,
            &shared.flags.consumer_parked,
            &shared.waiters.consumer,
        );
    }
}

impl<T> Drop for Receiver<T> {
    /// Disconnects, and wakes the sender if it is parked so it gets its value back.
    fn drop(&mut self) {
        let shared = self.consumer.shared();
        shared.flags.consumer_gone.store(true, Ordering::Release);
        let fences = self.wake.unwrap_or(Fences::Symmetric);
        wake_peer(
            fences,
            &shared.flags.producer_parked,
            &shared.waiters.producer,
        );
    }
}

impl<T> core::fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Sender")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("disconnected", &self.is_disconnected())
            .field("strategy", &self.strategy)
            .finish()
    }
}

impl<T> core::fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Receiver")
            .field("len", &self.len())
            .field("capacity", &self.capacity())
            .field("disconnected", &self.is_disconnected())
            .field("strategy", &self.strategy)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
