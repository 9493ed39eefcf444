//! Reaching connections from any thread: [`ConnId`] and [`ServerHandle`].

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, MutexGuard, mpsc};
use std::time::Duration;

use tickwire_codec::ws::{CloseCode, OpCode, SharedFrame};

use crate::topic::{Gap, Publication, Registry, SlowConsumer, Topic};

/// A connection's identity: its worker, its slot in the worker and the slot's generation, so
/// an id kept after its connection closed never reaches the connection that reuses the slot.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(u64);

impl ConnId {
    pub(crate) fn new(worker: u8, slot: u32, generation: u32) -> Self {
        Self(
            u64::from(worker) << 56
                | u64::from(generation & GENERATION_MASK) << 32
                | u64::from(slot),
        )
    }

    /// The worker (thread) the connection lives on.
    pub fn worker(self) -> usize {
        (self.0 >> 56) as usize
    }

    pub(crate) fn slot(self) -> u32 {
        self.0 as u32
    }

    pub(crate) fn generation(self) -> u32 {
        (self.0 >> 32) as u32 & GENERATION_MASK
    }

    /// The id as one number (for logs and maps keyed by `u64`).
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

/// Generations are kept in 24 bits (a slot is reused 16 million times before an id repeats).
pub(crate) const GENERATION_MASK: u32 = (1 << 24) - 1;

impl fmt::Debug for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ConnId({}:{}#{})",
            self.worker(),
            self.slot(),
            self.generation()
        )
    }
}

/// What another thread asks a worker to do.
#[derive(Debug)]
pub(crate) enum Command {
    Send(ConnId, OpCode, Vec<u8>),
    Shared(ConnId, SharedFrame),
    Close(ConnId, CloseCode, String),
    Subscribe(ConnId, Topic),
    Unsubscribe(ConnId, Topic),
    Publish(Arc<Publication>),
    /// Subscribes the connection, delivering only numbers above the given one from its
    /// subscription's topic, after the replayed messages (and gap notice) given.
    Resume(ConnId, Topic, u64, Vec<Arc<Publication>>),
    Shutdown(Duration),
}

/// The way into one worker: its queue and the waker of its poll.
#[derive(Debug)]
pub(crate) struct WorkerLink {
    pub(crate) commands: mpsc::Sender<Command>,
    pub(crate) waker: mio::Waker,
}

#[derive(Debug)]
pub(crate) struct HandleShared {
    pub(crate) workers: Vec<WorkerLink>,
    pub(crate) stopping: AtomicBool,
    pub(crate) topics: Registry,
}

thread_local! {
    /// On a worker's thread: its server (the address of its `HandleShared`) and its index.
    /// A command a worker sends to itself (a handler publishing, say) needs no wake-up.
    static ON_WORKER: Cell<Option<(usize, usize)>> = const { Cell::new(None) };
    /// Set when a command was queued for this thread's own worker without waking it: the
    /// worker drains its queue before it next sleeps.
    static SELF_QUEUED: Cell<bool> = const { Cell::new(false) };
}

/// Marks the calling thread as worker `index` of `handle`'s server.
pub(crate) fn enter_worker(handle: &ServerHandle, index: usize) {
    ON_WORKER.with(|on| on.set(Some((Arc::as_ptr(&handle.shared) as usize, index))));
}

/// True when a command was queued for this thread's own worker without a wake-up (and not
/// taken yet).
pub(crate) fn self_queued() -> bool {
    SELF_QUEUED.with(Cell::get)
}

/// True (once) when a command was queued for this thread's own worker without a wake-up.
pub(crate) fn take_self_queued() -> bool {
    SELF_QUEUED.with(|queued| queued.replace(false))
}

/// The server's errors seen from a [`ServerHandle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandleError {
    /// The id names no worker of this server.
    NoSuchWorker,
    /// A topic with this name exists with another slow-consumer policy (the one given).
    PolicyMismatch(SlowConsumer),
    /// The server has shut down (its workers are gone).
    Stopped,
    /// [`ServerHandle::publish_at`] was given a sequence number not above the topic's last
    /// (the one given): messages of a topic go out in sequence order.
    StaleSequence(u64),
}

impl fmt::Display for HandleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NoSuchWorker => "no such worker",
            Self::PolicyMismatch(_) => "the topic exists with another slow-consumer policy",
            Self::Stopped => "the server has stopped",
            Self::StaleSequence(_) => "the sequence number is not above the topic's last",
        })
    }
}

impl std::error::Error for HandleError {}

/// One item of a [`ServerHandle::resume`].
#[derive(Debug, Clone)]
pub enum Replay {
    /// A message of the topic, as it was published.
    Message {
        /// Its sequence number.
        seq: u64,
        /// Its conflation key.
        key: u64,
        /// The frame.
        frame: SharedFrame,
    },
    /// Numbers that cannot be replayed (gone from the feed's history, or never received).
    Missed(Gap),
}

/// Sends to any connection, closes it, or shuts the server down, from any thread (handlers
/// included). Cheap to clone. A command for a connection that has closed meanwhile is
/// dropped: ids are never reused, so it cannot reach another connection.
///
/// Each call hands the command to the connection's worker through a queue and wakes it: the
/// message is queued on the connection and written on that worker's next wake-up. Messages
/// sent through one handle to one connection keep their order.
#[derive(Debug, Clone)]
pub struct ServerHandle {
    pub(crate) shared: Arc<HandleShared>,
}

impl ServerHandle {
    /// Queues a text message on `id`.
    pub fn send_text(&self, id: ConnId, text: &str) -> Result<(), HandleError> {
        self.command(
            id.worker(),
            Command::Send(id, OpCode::Text, text.as_bytes().to_vec()),
        )
    }

    /// Queues a binary message on `id`.
    pub fn send_binary(&self, id: ConnId, payload: &[u8]) -> Result<(), HandleError> {
        self.command(
            id.worker(),
            Command::Send(id, OpCode::Binary, payload.to_vec()),
        )
    }

    /// Queues a frame encoded once for many connections: each gets a reference to the same
    /// bytes.
    pub fn send_shared(&self, id: ConnId, frame: &SharedFrame) -> Result<(), HandleError> {
        self.command(id.worker(), Command::Shared(id, frame.clone()))
    }

    /// Starts the close handshake on `id`.
    pub fn close(&self, id: ConnId, code: CloseCode, reason: &str) -> Result<(), HandleError> {
        self.command(id.worker(), Command::Close(id, code, reason.to_owned()))
    }

    /// Starts a graceful shutdown: every worker stops accepting, sends a close with 1001
    /// (going away) on each open connection and drops connections still in their opening
    /// handshake; a connection whose close handshake has not finished `grace` later is
    /// dropped. [`Running::join`](crate::Running::join) returns when every worker is done.
    pub fn shutdown(&self, grace: Duration) {
        if self.shared.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        for worker in 0..self.shared.workers.len() {
            let _ = self.command(worker, Command::Shutdown(grace));
        }
    }

    /// The topic called `name`, made with `policy` the first time it is asked for. Asking
    /// again with another policy is an error ([`HandleError::PolicyMismatch`]): one topic has
    /// one policy.
    pub fn topic(&self, name: &str, policy: SlowConsumer) -> Result<Topic, HandleError> {
        self.shared
            .topics
            .get_or_make(name, policy)
            .map_err(HandleError::PolicyMismatch)
    }

    /// Subscribes connection `id` to `topic` (from its worker's next wake-up on; a handler
    /// can also use [`Conn::subscribe`](crate::Conn::subscribe)). Subscribing twice is one
    /// subscription; a connection's subscriptions end when it closes.
    pub fn subscribe(&self, id: ConnId, topic: &Topic) -> Result<(), HandleError> {
        self.command(id.worker(), Command::Subscribe(id, topic.clone()))
    }

    /// Ends `id`'s subscription to `topic` (nothing when it has none). Messages of the topic
    /// already queued on the connection still go out.
    pub fn unsubscribe(&self, id: ConnId, topic: &Topic) -> Result<(), HandleError> {
        self.command(id.worker(), Command::Unsubscribe(id, topic.clone()))
    }

    /// Publishes a text message on `topic` (key 0); returns its sequence number.
    pub fn publish_text(&self, topic: &Topic, text: &str) -> Result<u64, HandleError> {
        self.publish(topic, 0, |_| SharedFrame::text(text))
    }

    /// Publishes a binary message on `topic` (key 0); returns its sequence number.
    pub fn publish_binary(&self, topic: &Topic, payload: &[u8]) -> Result<u64, HandleError> {
        self.publish(topic, 0, |_| SharedFrame::binary(payload))
    }

    /// Publishes on `topic` the frame `encode` makes from the message's sequence number (1,
    /// 2, 3, ... per topic), and returns that number. The frame is encoded once and every
    /// subscriber's queue holds a reference to the same bytes. `key` is what
    /// [`SlowConsumer::Conflate`] keeps the newest message of (a symbol, say; ignored by the
    /// other policies).
    ///
    /// Costs one hand-off per worker, whatever the number of subscribers, and never waits
    /// for one: each worker queues the message on its subscribers on its next wake-up and
    /// writes it with whatever else they are owed. Messages of one topic reach every
    /// subscriber in sequence order (publishers of one topic take turns while handing
    /// off), and a sequence number a subscriber did not get is reported to
    /// [`Handler::on_gap`](crate::Handler::on_gap).
    pub fn publish(
        &self,
        topic: &Topic,
        key: u64,
        encode: impl FnOnce(u64) -> SharedFrame,
    ) -> Result<u64, HandleError> {
        self.publish_inner(topic, None, key, encode)
    }

    /// As [`publish`](Self::publish), except that `sender` does not get the message even if
    /// it subscribes to `topic`: a connection relaying what it received to the others.
    pub fn publish_from(
        &self,
        sender: ConnId,
        topic: &Topic,
        key: u64,
        encode: impl FnOnce(u64) -> SharedFrame,
    ) -> Result<u64, HandleError> {
        self.publish_inner(topic, Some(sender), key, encode)
    }

    /// As [`publish`](Self::publish), with the sequence number given rather than the next
    /// one: the feed numbers its messages (a bus relaying another server's topic, a
    /// JetStream stream). It must be above the topic's last
    /// ([`HandleError::StaleSequence`] otherwise); numbers skipped are not reported (say
    /// so with [`report_gap`](Self::report_gap), before this message).
    pub fn publish_at(
        &self,
        topic: &Topic,
        seq: u64,
        key: u64,
        encode: impl FnOnce(u64) -> SharedFrame,
    ) -> Result<(), HandleError> {
        let mut last = self.numbering(topic)?;
        if seq <= *last {
            return Err(HandleError::StaleSequence(*last));
        }
        let publication = Arc::new(Publication::new(topic.clone(), seq, key, encode(seq), None));
        *last = seq;
        self.to_every_worker(&publication)
    }

    /// Tells every subscriber of `topic` ([`Handler::on_gap`](crate::Handler::on_gap)) that
    /// the messages `gap` names were lost before they reached this server: the call comes in
    /// order with the topic's messages, after those published before this call and before
    /// those published after it. The topic's numbering moves past the gap, so that a later
    /// [`publish`](Self::publish) goes on after it.
    pub fn report_gap(&self, topic: &Topic, gap: Gap) -> Result<(), HandleError> {
        let mut last = self.numbering(topic)?;
        *last = (*last).max(gap.last_seq);
        let notice = Arc::new(Publication::notice(topic.clone(), gap, None));
        self.to_every_worker(&notice)
    }

    /// Subscribes `id` to `topic` after handing it what it missed: each item of `replay`
    /// in the order of its numbers (a [`Replay::Message`] queued, a [`Replay::Missed`]
    /// reported to [`Handler::on_gap`](crate::Handler::on_gap)), then the topic's live
    /// messages, without repeating a number already delivered and without skipping one
    /// above `after`. `after` is the last number the client has; `replay` should cover from
    /// there to [`Topic::last_seq`] (read after the last message the caller published), or
    /// the rest is missed without a notice.
    ///
    /// This is how a client that reconnects (to this server or another one fed by the same
    /// bus) resumes where it left off. Replayed messages count against the send budget like
    /// live ones (the topic's [`SlowConsumer`] policy applies to them).
    pub fn resume(
        &self,
        id: ConnId,
        topic: &Topic,
        after: u64,
        replay: impl IntoIterator<Item = Replay>,
    ) -> Result<(), HandleError> {
        let items: Vec<Arc<Publication>> = replay
            .into_iter()
            .map(|item| {
                Arc::new(match item {
                    Replay::Missed(gap) => Publication::notice(topic.clone(), gap, Some(id)),
                    Replay::Message { seq, key, frame } => {
                        let mut publication =
                            Publication::new(topic.clone(), seq, key, frame, None);
                        publication.only = Some(id);
                        publication
                    }
                })
            })
            .collect();
        // Under the topic's lock: the worker sees the replay between the messages published
        // before this call and those after it.
        let _last = topic.numbering();
        self.command(
            id.worker(),
            Command::Resume(id, topic.clone(), after, items),
        )
    }

    /// Calls `listener` whenever a topic's subscriber count ([`Topic::subscribers`]) goes
    /// from 0 to 1 or from 1 to 0 (replacing any listener set before). It runs on a worker
    /// thread, in the middle of the worker's round: it must not block (hand the topic to
    /// another thread). Calls for one topic from different workers can arrive out of order,
    /// so the listener should read the count rather than count the calls.
    pub fn watch_interest(&self, listener: impl Fn(&Topic) + Send + Sync + 'static) {
        self.shared.topics.watch.set(Arc::new(listener));
    }

    /// Every topic made so far, in no particular order.
    pub fn topics(&self) -> Vec<Topic> {
        self.shared.topics.all()
    }

    fn publish_inner(
        &self,
        topic: &Topic,
        except: Option<ConnId>,
        key: u64,
        encode: impl FnOnce(u64) -> SharedFrame,
    ) -> Result<u64, HandleError> {
        let mut last = self.numbering(topic)?;
        let seq = *last + 1;
        let publication = Arc::new(Publication::new(
            topic.clone(),
            seq,
            key,
            encode(seq),
            except,
        ));
        // The number is used even if a worker is gone (the server is stopping): a later
        // publication never reuses it.
        *last = seq;
        self.to_every_worker(&publication)?;
        Ok(seq)
    }

    /// `topic`'s last sequence number, locked: publishers of one topic take turns while they
    /// hand off, so each worker receives the topic's items in order. `Stopped` once the
    /// server is stopping.
    fn numbering<'t>(&self, topic: &'t Topic) -> Result<MutexGuard<'t, u64>, HandleError> {
        if self.shared.stopping.load(Ordering::Acquire) {
            return Err(HandleError::Stopped);
        }
        Ok(topic.numbering())
    }

    /// Hands `publication` to every worker (the caller holds its topic's lock).
    fn to_every_worker(&self, publication: &Arc<Publication>) -> Result<(), HandleError> {
        for worker in 0..self.shared.workers.len() {
            self.command(worker, Command::Publish(Arc::clone(publication)))?;
        }
        Ok(())
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.shared.workers.len()
    }

    fn command(&self, worker: usize, command: Command) -> Result<(), HandleError> {
        let link = self
            .shared
            .workers
            .get(worker)
            .ok_or(HandleError::NoSuchWorker)?;
        link.commands
            .send(command)
            .map_err(|_| HandleError::Stopped)?;
        let me = (Arc::as_ptr(&self.shared) as usize, worker);
        if ON_WORKER.with(Cell::get) == Some(me) {
            SELF_QUEUED.with(|queued| queued.set(true));
            return Ok(());
        }
        link.waker.wake().map_err(|_| HandleError::Stopped)
    }
}
