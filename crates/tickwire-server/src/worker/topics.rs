//! A worker's side of topics: which of its connections subscribe to what, and each round of
//! deliveries (every publication received since the last round, queued by reference on each
//! subscriber, then one write per subscriber), with the topic's slow-consumer policy applied
//! at the send budget.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

use tickwire_codec::handshake::ServerOptions;
use tickwire_codec::ws::{Buffers, Connection, ConnectionState, SharedLabel};
#[cfg(feature = "deflate")]
use tickwire_codec::{deflate::DeflateConfig, ws::PreparedMessage};

use super::serving::Reading;
use super::{End, Worker, fanout};
use crate::handle::ConnId;
use crate::handler::DisconnectKind;
use crate::handler::Handler;
use crate::topic::{self, Gap, Publication, SlowConsumer, Subscription, Topic};
use crate::transport::Transport;

/// The worker's subscriptions and the publications waiting for the next round.
#[derive(Debug, Default)]
pub(super) struct Topics {
    /// Subscribers per topic id.
    members: Vec<Members>,
    /// The topic ids each subscribed slot is in (only subscribed slots have an entry).
    of_slot: HashMap<u32, Vec<u32>>,
    /// Publications received and not yet delivered, in arrival order.
    pending: Vec<Arc<Publication>>,
    /// Reused: subscription changes handlers asked for.
    asked: Vec<Subscription>,
    /// Reused: the subscribers of the topic being delivered (a copy, so a connection that
    /// closes during the round changes the lists, not the walk).
    walk: Vec<ConnId>,
    /// Reused: the publications of the topic being delivered.
    batch: Vec<Arc<Publication>>,
    /// Reused: gaps to report once the round is over.
    gaps: Vec<(ConnId, Topic, Gap)>,
    /// Reused: where each piece of the batch being delivered ends (see `piece_end`).
    pieces: Vec<usize>,
}

/// One topic's subscribers on this worker.
#[derive(Debug, Default)]
struct Members {
    /// The topic (set by its first subscription).
    topic: Option<Topic>,
    ids: Vec<ConnId>,
    /// Slot -> index in `ids` (removal in O(1)).
    at: HashMap<u32, u32>,
    /// Resumed subscribers not yet caught up with the live messages: slot -> the last
    /// number delivered (nothing at or below it goes out again).
    after: HashMap<u32, u64>,
}

impl Topics {
    /// Publications are waiting for a round of deliveries.
    pub(super) fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    pub(super) fn queue(&mut self, publication: Arc<Publication>) {
        self.pending.push(publication);
    }

    /// Subscribes `id`; with `after`, a resumed subscription that delivers no number at or
    /// below it.
    fn subscribe(&mut self, id: ConnId, topic: &Topic, after: Option<u64>) {
        let index = topic.id() as usize;
        if self.members.len() <= index {
            self.members.resize_with(index + 1, Members::default);
        }
        let members = &mut self.members[index];
        if let Some(after) = after {
            members.after.insert(id.slot(), after);
        }
        if members.at.contains_key(&id.slot()) {
            return;
        }
        members.topic.get_or_insert_with(|| topic.clone());
        members.at.insert(id.slot(), members.ids.len() as u32);
        members.ids.push(id);
        self.of_slot.entry(id.slot()).or_default().push(topic.id());
        topic.joined();
    }

    fn unsubscribe(&mut self, slot: u32, topic: u32) {
        if let Some(topics) = self.of_slot.get_mut(&slot) {
            topics.retain(|&t| t != topic);
            if topics.is_empty() {
                self.of_slot.remove(&slot);
            }
        }
        self.leave(slot, topic);
    }

    /// Removes `slot` from `topic`'s list only.
    fn leave(&mut self, slot: u32, topic: u32) {
        let Some(members) = self.members.get_mut(topic as usize) else {
            return;
        };
        let Some(at) = members.at.remove(&slot) else {
            return;
        };
        members.after.remove(&slot);
        members.ids.swap_remove(at as usize);
        if let Some(moved) = members.ids.get(at as usize) {
            members.at.insert(moved.slot(), at);
        }
        if let Some(topic) = &members.topic {
            topic.left();
        }
    }

    /// The connection in `slot` is gone: every subscription of it ends.
    pub(super) fn forget(&mut self, slot: u32) {
        if let Some(topics) = self.of_slot.remove(&slot) {
            for topic in topics {
                self.leave(slot, topic);
            }
        }
    }
}

/// Counts of one topic's round, added to its counters once.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) queued: u64,
    pub(super) dropped: u64,
    pub(super) closed: u64,
}

impl<H: Handler, T: Transport> Worker<H, T> {
    /// Subscribes or unsubscribes `id` if it is still open.
    pub(super) fn change_subscription(&mut self, change: Subscription) {
        if self.lend(change.id).is_none() {
            return;
        }
        if change.subscribe {
            self.topics.subscribe(change.id, &change.topic, None);
        } else {
            self.topics.unsubscribe(change.id.slot(), change.topic.id());
        }
    }

    /// Subscribes `id` (if it is still open) to `topic` past `after`, with `items` (replayed
    /// messages, a gap notice) queued for the next round.
    pub(super) fn resume(
        &mut self,
        id: ConnId,
        topic: &Topic,
        after: u64,
        items: Vec<Arc<Publication>>,
    ) {
        if self.lend(id).is_none() {
            return;
        }
        self.topics.subscribe(id, topic, Some(after));
        self.topics.pending.extend(items);
    }

    /// Applies the subscription changes handlers asked for on this thread.
    fn apply_asked(&mut self) {
        let mut asked = std::mem::take(&mut self.topics.asked);
        topic::take_asked(&mut asked);
        for change in asked.drain(..) {
            self.change_subscription(change);
        }
        self.topics.asked = asked;
    }

    /// The end of a wake-up: subscription changes, then one round of deliveries if
    /// publications are waiting, then the gaps it made to the handler.
    pub(super) fn topics_round(&mut self) {
        self.apply_asked();
        if self.topics.pending.is_empty() {
            return;
        }
        let mut pending = std::mem::take(&mut self.topics.pending);
        let mut batch = std::mem::take(&mut self.topics.batch);
        let mut walk = std::mem::take(&mut self.topics.walk);
        let mut gaps = std::mem::take(&mut self.topics.gaps);
        let mut pieces = std::mem::take(&mut self.topics.pieces);
        // Topic by topic, in the order they first appear; each topic's messages in order.
        while let Some(first) = pending.first() {
            let topic = first.topic.clone();
            batch.clear();
            pending.retain(|p| {
                if p.topic == topic {
                    batch.push(Arc::clone(p));
                    false
                } else {
                    true
                }
            });
            walk.clear();
            // Resumed subscribers, or a replay or a gap notice in the batch, take the careful
            // path: the batch in number order, each subscriber filtered by what it was given.
            let mut careful = batch.iter().any(|p| p.only.is_some() || p.notice.is_some());
            if let Some(members) = self.topics.members.get(topic.id() as usize) {
                walk.extend_from_slice(&members.ids);
                careful |= !members.after.is_empty();
            }
            if careful {
                batch.sort_by_key(|p| p.seq);
            }
            let mut counts = Counts::default();
            pieces.clear();
            let mut start = 0;
            while start < batch.len() {
                start = piece_end(&batch, start, self.settings.send_budget);
                pieces.push(start);
            }
            let options = Arc::clone(&self.options);
            let round = Round {
                budget: self.settings.send_budget,
                deflate: deflate_config(&options),
                now: self.now,
            };
            // One piece, the same for every subscriber: sent to the idle ones in one
            // submission (fanout.rs).
            let batched = !careful
                && pieces.len() == 1
                && !T::TLS
                && self.sender.enabled()
                && batch.len() <= fanout::MAX_FRAMES;
            if batched {
                self.fanout_round(&topic, &batch, &walk, &round, &mut counts, &mut gaps);
            }
            // Otherwise one subscriber at a time.
            let one_by_one: &[ConnId] = if batched { &[] } else { &walk };
            for &id in one_by_one {
                let mut gap = None;
                let closed_before = counts.closed;
                if careful {
                    self.deliver_careful(id, &topic, &batch, &round, &mut counts, &mut gap);
                } else {
                    // A batch bigger than half the send budget goes out in pieces, each
                    // written before the next is queued: only a subscriber whose socket does
                    // not take them falls behind (a burst alone does not make one slow).
                    let mut start = 0;
                    for &end in &pieces {
                        let mut open = false;
                        self.with_open(id, |conn, bufs, _| {
                            for publication in &batch[start..end] {
                                if conn.state() != ConnectionState::Open {
                                    return;
                                }
                                if publication.except == Some(id) {
                                    continue;
                                }
                                queue_on(conn, bufs, &round, publication, &mut counts, &mut gap);
                            }
                            open = conn.state() == ConnectionState::Open;
                        });
                        if !open {
                            break;
                        }
                        start = end;
                    }
                }
                if counts.closed > closed_before {
                    self.record_slow_close(id, &topic);
                }
                if let Some(gap) = gap {
                    gaps.push((id, topic.clone(), gap));
                }
            }
            let inner = &topic.inner;
            inner.queued.fetch_add(counts.queued, Ordering::Relaxed);
            inner.dropped.fetch_add(counts.dropped, Ordering::Relaxed);
            inner.closed.fetch_add(counts.closed, Ordering::Relaxed);
        }
        batch.clear();
        walk.clear();
        self.topics.pending = pending;
        self.topics.batch = batch;
        self.topics.walk = walk;
        for (id, topic, gap) in gaps.drain(..) {
            self.report_gap(id, &topic, gap);
        }
        self.topics.gaps = gaps;
        self.topics.pieces = pieces;
    }

    /// One subscriber's share of a batch in number order: replays for others and numbers it
    /// was already given skipped, gap notices reported in their place.
    fn deliver_careful(
        &mut self,
        id: ConnId,
        topic: &Topic,
        batch: &[Arc<Publication>],
        round: &Round<'_>,
        counts: &mut Counts,
        gap: &mut Option<Gap>,
    ) {
        let index = topic.id() as usize;
        let mut after = self.topics.members[index].after.get(&id.slot()).copied();
        let mut live = false;
        let mut next = 0;
        while next < batch.len() {
            let mut notice = None;
            // Not run when the connection has gone: nothing more to deliver.
            let mut ran = false;
            let mut piece = 0;
            self.with_open(id, |conn, bufs, _| {
                ran = true;
                while let Some(publication) = batch.get(next) {
                    next += 1;
                    if conn.state() != ConnectionState::Open {
                        next = batch.len();
                        break;
                    }
                    if publication.except == Some(id)
                        || publication.only.is_some_and(|only| only != id)
                    {
                        continue;
                    }
                    if let Some(missed) = publication.notice {
                        // Only what this subscriber was not given already.
                        let missed = match after {
                            Some(after) if missed.first_seq <= after => {
                                Gap::range(after + 1, missed.last_seq)
                            }
                            _ => Some(missed),
                        };
                        if let Some(missed) = missed {
                            after = after.map(|_| missed.last_seq);
                            notice = Some(missed);
                            break;
                        }
                        continue;
                    }
                    if after.is_some_and(|after| publication.seq <= after) {
                        continue;
                    }
                    if after.is_some() {
                        after = Some(publication.seq);
                    }
                    live |= publication.only.is_none();
                    queue_on(conn, bufs, round, publication, counts, gap);
                    // Written before more is queued, as in the plain path.
                    piece += publication.frame.wire().len() + Buffers::SHARED_ENTRY_BYTES;
                    if piece >= round.budget / 2 {
                        break;
                    }
                }
            });
            if !ran {
                return;
            }
            if let Some(missed) = notice {
                self.report_gap(id, topic, missed);
            }
        }
        let members = &mut self.topics.members[index];
        match after {
            // Caught up: live messages only from here on, each above the last.
            Some(_) if live => {
                members.after.remove(&id.slot());
            }
            Some(after) if members.at.contains_key(&id.slot()) => {
                members.after.insert(id.slot(), after);
            }
            _ => {}
        }
    }

    /// Records why `id` (if it is still there) is closing: the topic's policy closed it with
    /// its code, whatever the peer answers.
    pub(super) fn record_slow_close(&mut self, id: ConnId, topic: &Topic) {
        let SlowConsumer::Close(code) = topic.policy() else {
            return;
        };
        if let Some(slot) = self.slots.get_mut(id.slot() as usize) {
            if slot.generation == id.generation() {
                slot.marks.record(End {
                    kind: DisconnectKind::Failed,
                    code: Some(code),
                });
            }
        }
    }

    /// [`Handler::on_gap`] for `id`, if it is still open and its handler has not panicked.
    fn report_gap(&mut self, id: ConnId, topic: &Topic, gap: Gap) {
        self.call(id, |handler, conn| handler.on_gap(conn, topic, gap));
        self.serve(id.slot(), Reading::No);
    }
}
/// What every delivery of a round shares.
pub(super) struct Round<'a> {
    budget: usize,
    /// The server's permessage-deflate configuration, if it offers the extension.
    #[cfg(feature = "deflate")]
    pub(super) deflate: Option<&'a DeflateConfig>,
    #[cfg(not(feature = "deflate"))]
    pub(super) deflate: std::marker::PhantomData<&'a ()>,
    now: Instant,
}

#[cfg(feature = "deflate")]
fn deflate_config(options: &ServerOptions) -> Option<&DeflateConfig> {
    options.deflate.as_ref()
}

#[cfg(not(feature = "deflate"))]
fn deflate_config(_: &ServerOptions) -> std::marker::PhantomData<&()> {
    std::marker::PhantomData
}

/// Where the piece of `batch` that starts at `start` ends: at least one publication, and
/// no more than half of `budget` in wire bytes after the first.
fn piece_end(batch: &[Arc<Publication>], start: usize, budget: usize) -> usize {
    let mut bytes = 0;
    let mut end = start;
    while let Some(publication) = batch.get(end) {
        bytes += publication.frame.wire().len() + Buffers::SHARED_ENTRY_BYTES;
        if end > start && bytes > budget / 2 {
            break;
        }
        end += 1;
    }
    end
}

/// How `publication`'s frame is labelled in a subscriber's queue (what the slow-consumer
/// policies select by).
pub(super) fn label(publication: &Publication) -> SharedLabel {
    SharedLabel {
        group: publication.topic.id(),
        key: publication.key,
        seq: publication.seq,
    }
}

/// Queues `publication` on one subscriber, or applies the topic's policy when it would take
/// the subscriber past `budget`.
pub(super) fn queue_on(
    conn: &mut Connection,
    bufs: &mut Buffers,
    round: &Round<'_>,
    publication: &Publication,
    counts: &mut Counts,
    gap: &mut Option<Gap>,
) {
    let (budget, now) = (round.budget, round.now);
    let topic = publication.topic.id();
    let entry = Buffers::SHARED_ENTRY_BYTES;
    let len = publication.frame.wire().len() + entry;
    let queued = bufs.queued_cost();
    if queued + len > budget {
        let mut note = |seq: u64| match gap {
            Some(gap) => gap.merge(Gap::one(seq)),
            None => *gap = Some(Gap::one(seq)),
        };
        match publication.topic.policy() {
            SlowConsumer::Close(code) => {
                let dropped = bufs.drop_shared(|label, _| Some(label.group == topic));
                counts.dropped += dropped.frames as u64 + 1;
                counts.closed += 1;
                let _ = conn.close(bufs, code, "slow consumer", now);
                // A closed subscriber is not told about gaps.
                *gap = None;
                return;
            }
            policy => {
                let need = queued + len - budget;
                let mut freed = 0;
                if policy == SlowConsumer::Conflate {
                    let dropped = bufs.drop_shared(|label, _| {
                        let same = label.group == topic && label.key == publication.key;
                        if same {
                            note(label.seq);
                        }
                        Some(same)
                    });
                    freed += dropped.bytes + dropped.frames * entry;
                    counts.dropped += dropped.frames as u64;
                }
                if freed < need {
                    let mut more = 0;
                    let dropped = bufs.drop_shared(|label, bytes| {
                        if freed + more >= need {
                            return None;
                        }
                        let mine = label.group == topic;
                        if mine {
                            more += bytes + entry;
                            note(label.seq);
                        }
                        Some(mine)
                    });
                    freed += dropped.bytes + dropped.frames * entry;
                    counts.dropped += dropped.frames as u64;
                }
                if freed < need {
                    // The connection's own output fills the budget: this message goes.
                    note(publication.seq);
                    counts.dropped += 1;
                    return;
                }
            }
        }
    }
    let label = label(publication);
    #[cfg(feature = "deflate")]
    if let Some(config) = round.deflate.filter(|_| conn.has_extension()) {
        // Compressed once for every deflate subscriber of every worker.
        let prepared = publication
            .deflated
            .get_or_init(|| PreparedMessage::from_frame(&publication.frame, config));
        if conn.sender(bufs).prepared_labeled(prepared, label).is_ok() {
            counts.queued += 1;
        }
        return;
    }
    if conn
        .sender(bufs)
        .shared_labeled(&publication.frame, label)
        .is_ok()
    {
        counts.queued += 1;
    }
}
