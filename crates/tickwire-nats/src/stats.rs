//! What a bridge has done: the public [`BridgeStats`] snapshot and the atomic counters behind
//! it, which the bridge's thread and its relay both update. Owns no behaviour; a module of its
//! own so that `bridge` and `relay` depend on it and not on each other (`stats <- relay <-
//! bridge`).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// What a bridge has done, since it started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BridgeStats {
    /// Connected to NATS now.
    pub connected: bool,
    /// Times the connection to NATS was (re)established.
    pub connects: u64,
    /// Messages received from NATS live subscriptions.
    pub received: u64,
    /// Messages relayed to the server's topics (live and filled).
    pub relayed: u64,
    /// Messages fetched from JetStream to fill a gap.
    pub filled: u64,
    /// Gaps reported to the subscribers of a topic (each a range of missed numbers).
    pub gaps: u64,
    /// Messages those gaps missed.
    pub missed: u64,
    /// Messages received again (a number at or below the last relayed): dropped.
    pub repeats: u64,
    /// Messages refused: no sequence number.
    pub refused: u64,
    /// Resumes served.
    pub resumes: u64,
    /// Messages replayed to resuming clients.
    pub replayed: u64,
    /// Times the NATS client reported this node a slow consumer (it dropped messages).
    pub slow: u64,
    /// The last connection error, if the first connection failed for good.
    pub error: Option<String>,
}

/// The counters behind [`BridgeStats`], updated by the bridge's thread.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) connected: AtomicBool,
    pub(crate) connects: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) relayed: AtomicU64,
    pub(crate) filled: AtomicU64,
    pub(crate) gaps: AtomicU64,
    pub(crate) missed: AtomicU64,
    pub(crate) repeats: AtomicU64,
    pub(crate) refused: AtomicU64,
    pub(crate) resumes: AtomicU64,
    pub(crate) replayed: AtomicU64,
    pub(crate) slow: AtomicU64,
    error: std::sync::Mutex<Option<String>>,
}

impl Counters {
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn set_error(&self, error: String) {
        *self
            .error
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(error);
    }

    pub(crate) fn snapshot(&self) -> BridgeStats {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        BridgeStats {
            connected: self.connected.load(Ordering::Relaxed),
            connects: get(&self.connects),
            received: get(&self.received),
            relayed: get(&self.relayed),
            filled: get(&self.filled),
            gaps: get(&self.gaps),
            missed: get(&self.missed),
            repeats: get(&self.repeats),
            refused: get(&self.refused),
            resumes: get(&self.resumes),
            replayed: get(&self.replayed),
            slow: get(&self.slow),
            error: self
                .error
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }
}
