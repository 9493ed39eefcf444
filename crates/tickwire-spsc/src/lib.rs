//! A lock-free single-producer single-consumer ring buffer, and a blocking channel over it.
//!
//! This crate owns the one hand-off between two threads that tickwire's hot paths use: a
//! bounded queue of `T` with exactly one writer and one reader. It does not do many-to-many
//! (that is `crossbeam-channel`'s job), unbounded growth, or async sending.
//!
//! - [`queue`] gives a [`Producer`] and a [`Consumer`]: `push` and `pop` never block and cost a
//!   slot access plus one `Release` store; the other end's position is read only when the cached
//!   copy says the queue is full (or empty). `push_slice` / `pop_into` move `Copy` values in
//!   batches.
//! - [`channel`] / [`channel_with`] give a [`Sender`] and a [`Receiver`] over the same queue,
//!   with blocking, non-blocking and timed operations. A blocked end spins, yields, then parks
//!   (or only yields, or only spins: [`WaitStrategy`]); the other end unparks it only if it is
//!   actually parked. Disconnection is an error that hands back the value that was not sent.
//!   [`Receiver::recv_async`] receives from an async task (any executor), woken through the
//!   same flag, so the blocking paths pay nothing for it.
//!
//! Capacities are rounded up to a power of two. Values still in the queue when both ends are
//! gone are dropped, exactly once. The ends are `Send` (when `T` is) and never `Sync`.
//!
//! # Example
//!
//! ```
//! use std::thread;
//! use std::time::Duration;
//!
//! use tickwire_spsc::{RecvTimeoutError, channel};
//!
//! let (mut sender, mut receiver) = channel::<String>(64);
//! let feed = thread::spawn(move || {
//!     for price in [101, 102, 99] {
//!         sender.send(format!("BTC-USD {price}")).expect("receiver is alive");
//!     }
//!     // Dropping the sender disconnects the channel.
//! });
//!
//! let mut ticks = Vec::new();
//! loop {
//!     match receiver.recv_timeout(Duration::from_secs(5)) {
//!         Ok(tick) => ticks.push(tick),
//!         Err(RecvTimeoutError::Disconnected) => break,
//!         Err(error) => panic!("{error}"),
//!     }
//! }
//! feed.join().unwrap();
//! assert_eq!(ticks, ["BTC-USD 101", "BTC-USD 102", "BTC-USD 99"]);
//! ```
//!
//! # Safety
//!
//! This is the one tickwire crate with `unsafe` code: the slot accesses in [`queue`]'s module, the
//! `Sync` impl that lets its two ends share the slots, and on Linux the `membarrier` system call
//! that lets a channel's hot path do without a `SeqCst` fence. Each block states its invariant in a
//! `SAFETY:` comment; `docs/UNSAFE.md` lists them with the loom models and Miri tests that check
//! them.

mod barrier;
mod channel;
mod error;
mod queue;
mod sync;
mod wait;

#[cfg(all(test, loom))]
mod loom_tests;

pub use channel::{Receiver, RecvFuture, Sender, channel, channel_with};
pub use error::{
    RecvError, RecvTimeoutError, SendError, SendTimeoutError, TryRecvError, TrySendError,
};
pub use queue::{Consumer, Producer, queue};
pub use wait::WaitStrategy;
