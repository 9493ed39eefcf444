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
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};

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
/// which sees the gap in the sequence numbers it was sent): dropped because the subscriber
/// fell behind (its topic's [`SlowConsumer`] policy), or never received by the server
/// ([`ServerHandle::report_gap`](crate::ServerHandle::report_gap): a feed that lost
/// messages upstream, a resume past what can be replayed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Gap {
    /// How many were missed (conflation keeps some numbers of a range, so this is a count,
    /// not always `last_seq - first_seq + 1`).
    pub dropped: u64,
    /// The lowest sequence number among them.
    pub first_seq: u64,
    /// The highest sequence number among them.
    pub last_seq: u64,
}

impl Gap {
    /// Every number from `first_seq` to `last_seq` (both included; `None` when `last_seq`
    /// is below `first_seq`).
    pub fn range(first_seq: u64, last_seq: u64) -> Option<Self> {
        (first_seq <= last_seq).then(|| Self {
            dropped: last_seq - first_seq + 1,
            first_seq,
            last_seq,
        })
    }

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
    /// Messages published: the last sequence number given out (with numbers given by a
    /// feed, [`ServerHandle::publish_at`](crate::ServerHandle::publish_at), the feed's last,
    /// which counts the messages it skipped too).
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
    /// Subscribers on every worker (each worker adds and removes its own).
    subscribers: AtomicU64,
    /// The server's interest listener (one for every topic of the server).
    watch: Arc<Watch>,
}

/// Called with a topic whose subscriber count went from 0 to 1 or from 1 to 0
/// ([`ServerHandle::watch_interest`](crate::ServerHandle::watch_interest)).
pub(crate) type Listener = Arc<dyn Fn(&Topic) + Send + Sync>;

/// The interest listener of a server, if one is set.
#[derive(Default)]
pub(crate) struct Watch {
    listener: RwLock<Option<Listener>>,
}

impl Watch {
    pub(crate) fn set(&self, listener: Listener) {
        *self
            .listener
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(listener);
    }

    fn notify(&self, topic: &Topic) {
        let listener = self
            .listener
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if let Some(listener) = listener {
            listener(topic);
        }
    }
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Watch")
    }
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
            published: *self.numbering(),
            queued: self.inner.queued.load(Ordering::Relaxed),
            dropped: self.inner.dropped.load(Ordering::Relaxed),
            closed: self.inner.closed.load(Ordering::Relaxed),
        }
    }

    /// Connections subscribed to it, on every worker. Each worker updates the count when it
    /// applies a subscription change or a connection closes, so it trails
    /// [`Conn::subscribe`](crate::Conn::subscribe) and
    /// [`ServerHandle::subscribe`](crate::ServerHandle::subscribe) slightly.
    pub fn subscribers(&self) -> u64 {
        self.inner.subscribers.load(Ordering::Acquire)
    }

    /// The last sequence number given out (by [`ServerHandle::publish`](crate::ServerHandle::publish)
    /// or set by [`ServerHandle::publish_at`](crate::ServerHandle::publish_at)); 0 before the
    /// first message.
    pub fn last_seq(&self) -> u64 {
        *self.numbering()
    }

    /// The last sequence number, locked (held while a publication is handed to the workers).
    pub(crate) fn numbering(&self) -> MutexGuard<'_, u64> {
        self.inner
            .last_seq
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn id(&self) -> u32 {
        self.inner.id
    }

    /// A worker gained a subscriber of this topic.
    pub(crate) fn joined(&self) {
        if self.inner.subscribers.fetch_add(1, Ordering::AcqRel) == 0 {
            self.inner.watch.notify(self);
        }
    }

    /// A worker lost a subscriber of this topic.
    pub(crate) fn left(&self) {
        if self.inner.subscribers.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.inner.watch.notify(self);
        }
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

/// One published message, handed to every worker (shared: one allocation per publish); or
/// a message replayed to one subscriber; or a gap notice, delivered in its place among the
/// topic's messages.
#[derive(Debug)]
pub(crate) struct Publication {
    pub(crate) topic: Topic,
    /// Its sequence number; a gap notice's is the first number missed, so that sorting by
    /// number puts it where the missed messages would have been.
    pub(crate) seq: u64,
    pub(crate) key: u64,
    /// The message (empty for a gap notice).
    pub(crate) frame: SharedFrame,
    /// A subscriber that does not get it (the connection that sent it, relaying).
    pub(crate) except: Option<ConnId>,
    /// The one subscriber that gets it (a replay), when not every subscriber does.
    pub(crate) only: Option<ConnId>,
    /// Not a message: the subscribers are told ([`Handler::on_gap`](crate::Handler::on_gap))
    /// that these were missed.
    pub(crate) notice: Option<Gap>,
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
            only: None,
            notice: None,
            #[cfg(feature = "deflate")]
            deflated: std::sync::OnceLock::new(),
        }
    }

    /// `topic`'s messages `gap` were missed (by `only`, or by every subscriber).
    pub(crate) fn notice(topic: Topic, gap: Gap, only: Option<ConnId>) -> Self {
        let mut notice = Self::new(topic, gap.first_seq, 0, SharedFrame::binary(&[]), None);
        notice.notice = Some(gap);
        notice.only = only;
        notice
    }
}

/// A server's topics by name.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    by_name: Mutex<HashMap<Box<str>, Topic>>,
    pub(crate) watch: Arc<Watch>,
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
                subscribers: AtomicU64::new(0),
                watch: Arc::clone(&self.watch),
            }),
        };
        topics.insert(name.into(), topic.clone());
        Ok(topic)
    }

    /// Every topic, in no particular order.
    pub(crate) fn all(&self) -> Vec<Topic> {
        let topics = self.by_name.lock().unwrap_or_else(PoisonError::into_inner);
        topics.values().cloned().collect()
    }
}
