//! Receiving from an async task: [`Receiver::recv_async`] and its [`RecvFuture`].
//!
//! This module owns the async side of the wake-up protocol. A pending receive registers the
//! task's `Waker` where a blocked `recv` registers its thread, sets the same `consumer_parked`
//! flag, and re-checks the queue after the same heavy fence (see [`crate::wait`] and
//! [`crate::barrier`]), so the sender needs nothing new: its fast path is the fence and flag
//! load it already does under
//! [`WaitStrategy::Park`], and its slow path wakes a `Waker` instead of unparking a thread. No
//! runtime is assumed. It does not offer an async sender.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};

use super::Receiver;
#[cfg(doc)]
use crate::WaitStrategy;
use crate::sync::Ordering;
use crate::wait::{Waiter, lock};
use crate::{RecvError, TryRecvError};

/// The future [`Receiver::recv_async`] returns: the oldest value, or [`RecvError`] once the
/// channel is empty and the sender is gone.
///
/// Dropping it before it completes loses nothing: a value that arrived stays in the channel.
#[must_use = "futures do nothing unless polled"]
pub struct RecvFuture<'a, T> {
    receiver: &'a mut Receiver<T>,
    /// Whether this future set `consumer_parked`, so it must clear it when done.
    registered: bool,
}

impl<T> Receiver<T> {
    /// Receives the oldest value from an async task, waiting (without blocking the thread)
    /// while the channel is empty. Works with any executor.
    ///
    /// Under [`WaitStrategy::Park`] a pending receive is woken by the next send (or the
    /// sender's drop). Under [`WaitStrategy::Yield`] and [`WaitStrategy::BusyPoll`] the sender
    /// never looks for a waiter, so a pending receive asks to be polled again at once: the
    /// executor busy-polls it, which is what those strategies mean.
    ///
    /// # Example
    ///
    /// ```
    /// # fn block_on<F: std::future::Future>(future: F) -> F::Output {
    /// #     struct Unpark(std::thread::Thread);
    /// #     impl std::task::Wake for Unpark {
    /// #         fn wake(self: std::sync::Arc<Self>) { self.0.unpark() }
    /// #     }
    /// #     let waker = std::sync::Arc::new(Unpark(std::thread::current())).into();
    /// #     let mut cx = std::task::Context::from_waker(&waker);
    /// #     let mut future = std::pin::pin!(future);
    /// #     loop {
    /// #         match future.as_mut().poll(&mut cx) {
    /// #             std::task::Poll::Ready(output) => return output,
    /// #             std::task::Poll::Pending => std::thread::park(),
    /// #         }
    /// #     }
    /// # }
    /// let (mut sender, mut receiver) = tickwire_spsc::channel::<u32>(8);
    /// std::thread::spawn(move || sender.send(7));
    /// // `block_on` is any executor's.
    /// assert_eq!(block_on(receiver.recv_async()), Ok(7));
    /// assert!(block_on(receiver.recv_async()).is_err(), "the sender is gone");
    /// ```
    pub fn recv_async(&mut self) -> RecvFuture<'_, T> {
        RecvFuture {
            receiver: self,
            registered: false,
        }
    }
}

impl<T> Future for RecvFuture<'_, T> {
    type Output = Result<T, RecvError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        // At most two rounds: the second try sees whatever made the re-check below succeed.
        loop {
            match this.receiver.try_recv() {
                Ok(value) => {
                    this.unregister();
                    return Poll::Ready(Ok(value));
                }
                Err(TryRecvError::Disconnected) => {
                    this.unregister();
                    return Poll::Ready(Err(RecvError));
                }
                Err(TryRecvError::Empty) => {}
            }
            let Some(fences) = this.receiver.wake else {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            };
            let consumer = &this.receiver.consumer;
            let shared = consumer.shared();
            {
                let mut slot = lock(&shared.waiters.consumer);
                let current =
                    matches!(&*slot, Some(Waiter::Task(waker)) if waker.will_wake(cx.waker()));
                if !current {
                    *slot = Some(Waiter::Task(cx.waker().clone()));
                }
            }
            // The waiter's half of the protocol in `crate::wait`: announce, fence, re-check.
            shared.flags.consumer_parked.store(true, Ordering::Relaxed);
            this.registered = true;
            // The heavy fence: pairs with the light one in `wake_peer`; see `crate::wait`. If it
            // could not be issued the sender may miss the flag, so ask to be polled again.
            if !fences.heavy() {
                cx.waker().wake_by_ref();
                return Poll::Pending;
            }
            let ready =
                consumer.has_values_relaxed() || shared.flags.producer_gone.load(Ordering::Relaxed);
            if !ready {
                return Poll::Pending;
            }
        }
    }
}

impl<T> RecvFuture<'_, T> {
    /// Withdraws the `parked` announcement. The registered `Waker` may stay in its slot: a
    /// stale wake is a spurious wake-up, which executors tolerate.
    fn unregister(&mut self) {
        if self.registered {
            self.registered = false;
            let shared = self.receiver.consumer.shared();
            shared.flags.consumer_parked.store(false, Ordering::Relaxed);
        }
    }
}

impl<T> Drop for RecvFuture<'_, T> {
    fn drop(&mut self) {
        self.unregister();
    }
}

impl<T> core::fmt::Debug for RecvFuture<'_, T> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RecvFuture")
            .field("registered", &self.registered)
            .finish_non_exhaustive()
    }
}
