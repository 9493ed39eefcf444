//! Topics: a message published once reaches every subscriber, and each topic says what happens
//! to a subscriber that cannot keep up.
//!
//! Owns the public side ([`Topic`], [`SlowConsumer`], [`Gap`], [`TopicStats`]) and the
//! registry a server keeps its topics in. Publishing itself is
//! [`ServerHandle::publish`](crate::ServerHandle::publish); delivery is the workers'
//! (`worker/topics.rs`).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tickwire_codec::ws::{CloseCode, SharedFrame};

use crate::ConnId;

/// A subscription change asked for by a handler ([`Conn::subscribe`](crate::Conn::subscribe)),
/// applied by its worker once the callback returns.
#[derive(Debug)]
pub(crate) struct Subscription {
    pub(crate) id: ConnId,
    pub(crate) topic: Topic,
    pub(crate) subscribe: bool,
}

thread_local! {
    /// Changes asked for by handlers on this (worker) thread, not yet applied.
    static ASKED: RefCell<Vec<Subscription>> = const { RefCell::new(Vec::new()) };
}

/// Records a handler's subscription change for its worker.
pub(crate) fn ask(change: Subscription) {
    ASKED.with(|asked| asked.borrow_mut().push(change));
}

/// Moves the changes handlers asked for on this thread into `into` (in order).
pub(crate) fn take_asked(into: &mut Vec<Subscription>) {
    ASKED.with(|asked| into.append(&mut asked.borrow_mut()));
}

/// What a topic does with a subscriber whose queued output would pass the server's send
/// budget ([`ServerBuilder::send_budget`](crate::ServerBuilder::send_budget)) if the next
/// message were queued. Control frames (pings, pongs, the close) are never dropped and do
/// not count against the budget. Publishing never waits for a subscriber.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SlowConsumer {
    /// Close the subscriber with this code (1008, policy violation, or 1013, try again
    /// later, are the usual ones): its unsent messages of the topic are dropped and the close
    /// goes out behind what is already being written.
    Close(CloseCode),
    /// Drop the subscriber's oldest unsent messages of the topic until the new one fits.
    DropOldest,
    /// Keep only the newest unsent message per key
    /// ([`ServerHandle::publish`](crate::ServerHandle::publish)'s `key`, a symbol say): a
    /// subscriber that falls behind gets the latest state of each key rather than every
    /// update. If dropping older messages with the same key is not enough, the oldest go.
    Conflate,
}

/// Messages of one topic a subscriber did not get, reported to
/// [`Handler::on_gap`](crate::Handler::on_gap) (so that the application can tell the client,
/// which sees the gap in the sequence numbers it was sent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Gap {
    /// How many were dropped.
    pub dropped: u64,
    /// The lowest sequence number among them.
    pub first_seq: u64,
    /// The highest sequence number among them.
    pub last_seq: u64,
}

impl Gap {
    pub(crate) fn one(seq: u64) -> Self {
        Self {
            dropped: 1,
            first_seq: seq,
            last_seq: seq,
        }
    }

    pub(crate) fn merge(&mut self, other: Gap) {
        self.dropped += other.dropped;
        self.first_seq = self.first_seq.min(other.first_seq);
        self.last_seq = self.last_seq.max(other.last_seq);
    }
}

/// A topic's counters, summed over every worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct TopicStats {
    /// Messages published.
    pub published: u64,
    /// Messages queued on subscribers (one per subscriber). A message dropped later for a
    /// slow subscriber counts here and in `dropped`.
    pub queued: u64,
    /// Messages dropped for slow subscribers (oldest first, or replaced by a newer one with
    /// the same key).
    pub dropped: u64,
    /// Subscribers closed by [`SlowConsumer::Close`].
    pub closed: u64,
}

/// A topic of one server: cheap to clone, compared by identity. Made (or found by name) with
/// [`ServerHandle::topic`](crate::ServerHandle::topic).
#[derive(Clone)]
pub struct Topic {
    pub(crate) inner: Arc<TopicInner>,
}

pub(crate) struct TopicInner {
    /// Dense per server, from 0: the workers index their subscriber lists with it.
    pub(crate) id: u32,
    name: Box<str>,
    pub(crate) policy: SlowConsumer,
    /// The last sequence number given out. Held while a publication is handed to every
    /// worker, so each worker receives a topic's messages in sequence order.
    pub(crate) last_seq: Mutex<u64>,
    pub(crate) queued: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) closed: AtomicU64,
}

impl Topic {
    /// The topic's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// What happens to its slow subscribers.
    pub fn policy(&self) -> SlowConsumer {
        self.inner.policy
    }

    /// Counters so far (delivery counts are added by each worker after each round of
    /// deliveries, so they trail publishing slightly).
    pub fn stats(&self) -> TopicStats {
        TopicStats {
            published: *self
                .inner
                .last_seq
                .lock()
                .unwrap_or_else(PoisonError::into_inner),
            queued: self.inner.queued.load(Ordering::Relaxed),
            dropped: self.inner.dropped.load(Ordering::Relaxed),
            closed: self.inner.closed.load(Ordering::Relaxed),
        }
    }

    pub(crate) fn id(&self) -> u32 {
        self.inner.id
    }
}

impl PartialEq for Topic {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }
}

impl Eq for Topic {}

impl fmt::Debug for Topic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Topic")
            .field("name", &self.inner.name)
            .field("policy", &self.inner.policy)
            .finish()
    }
}

/// One published message, handed to every worker (shared: one allocation per publish).
#[derive(Debug)]
pub(crate) struct Publication {
    pub(crate) topic: Topic,
    pub(crate) seq: u64,
    pub(crate) key: u64,
    pub(crate) frame: SharedFrame,
    /// A subscriber that does not get it (the connection that sent it, relaying).
    pub(crate) except: Option<ConnId>,
    /// The message compressed once, by the first worker with a subscriber that negotiated
    /// permessage-deflate, for all of them.
    #[cfg(feature = "deflate")]
    pub(crate) deflated: std::sync::OnceLock<tickwire_codec::ws::PreparedMessage>,
}

impl Publication {
    pub(crate) fn new(
        topic: Topic,
        seq: u64,
        key: u64,
        frame: SharedFrame,
        except: Option<ConnId>,
    ) -> Self {
        Self {
            topic,
            seq,
            key,
            frame,
            except,
            #[cfg(feature = "deflate")]
            deflated: std::sync::OnceLock::new(),
        }
    }
}

/// A server's topics by name.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    by_name: Mutex<HashMap<Box<str>, Topic>>,
}

impl Registry {
    /// The topic called `name`, made with `policy` if it does not exist yet; `Err` with the
    /// existing topic's policy when it differs.
    pub(crate) fn get_or_make(
        &self,
        name: &str,
        policy: SlowConsumer,
    ) -> Result<Topic, SlowConsumer> {
        let mut topics = self.by_name.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(topic) = topics.get(name) {
            return if topic.policy() == policy {
                Ok(topic.clone())
            } else {
                Err(topic.policy())
            };
        }
        let topic = Topic {
            inner: Arc::new(TopicInner {
                id: topics.len() as u32,
                name: name.into(),
                policy,
                last_seq: Mutex::new(0),
                queued: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                closed: AtomicU64::new(0),
            }),
        };
        topics.insert(name.into(), topic.clone());
        Ok(topic)
    }
}
