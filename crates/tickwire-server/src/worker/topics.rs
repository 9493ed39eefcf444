//! A worker's topic state and how one publication is queued on one subscriber: which of its
//! connections subscribe to what (resumed subscribers with the last number they were given),
//! the publications waiting for the next round, and the topic's slow-consumer policy applied
//! at the send budget when a frame is queued.
//!
//! It does not run a round, look up a connection or write to a socket: the worker's rounds
//! (`rounds`) walk the subscribers and hand each one's codec state and buffers here.

use std::collections::HashMap;
use std::io::IoSlice;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::Instant;

use tickwire_codec::handshake::ServerOptions;
use tickwire_codec::ws::{Buffers, Connection, SharedLabel};
#[cfg(feature = "deflate")]
use tickwire_codec::{deflate::DeflateConfig, ws::PreparedMessage};

use crate::handle::ConnId;
use crate::topic::{Gap, Publication, SlowConsumer, Subscription, Topic};

/// The worker's subscriptions and the publications waiting for the next round.
#[derive(Debug, Default)]
pub(super) struct Topics {
    /// Subscribers per topic id.
    pub(super) members: Vec<Members>,
    /// The topic ids each subscribed slot is in (only subscribed slots have an entry).
    of_slot: HashMap<u32, Vec<u32>>,
    /// Publications received and not yet delivered, in arrival order.
    pub(super) pending: Vec<Arc<Publication>>,
    /// Reused: subscription changes handlers asked for.
    pub(super) asked: Vec<Subscription>,
    /// Reused: the subscribers of the topic being delivered (a copy, so a connection that
    /// closes during the round changes the lists, not the walk).
    pub(super) walk: Vec<ConnId>,
    /// Reused: the publications of the topic being delivered.
    pub(super) batch: Vec<Arc<Publication>>,
    /// Reused: gaps to report once the round is over.
    pub(super) gaps: Vec<(ConnId, Topic, Gap)>,
    /// Reused: where each piece of the batch being delivered ends (see `piece_end`).
    pub(super) pieces: Vec<usize>,
    /// Reused: the round being sent to idle subscribers in one batch.
    pub(super) batched: RoundBatch,
}

/// Reused between rounds: the bytes every batched subscriber is sent, and to whom.
#[derive(Debug, Default)]
pub(super) struct RoundBatch {
    /// The round's frames, laid out once.
    pub(super) bytes: Vec<u8>,
    /// The batched subscribers' sockets, in the order of `ids`.
    pub(super) fds: Vec<RawFd>,
    pub(super) ids: Vec<ConnId>,
}

/// One topic's subscribers on this worker.
#[derive(Debug, Default)]
pub(super) struct Members {
    /// The topic (set by its first subscription).
    topic: Option<Topic>,
    pub(super) ids: Vec<ConnId>,
    /// Slot -> index in `ids` (removal in O(1)).
    pub(super) at: HashMap<u32, u32>,
    /// Resumed subscribers not yet caught up with the live messages: slot -> the last
    /// number delivered (nothing at or below it goes out again).
    pub(super) after: HashMap<u32, u64>,
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
    pub(super) fn subscribe(&mut self, id: ConnId, topic: &Topic, after: Option<u64>) {
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

    pub(super) fn unsubscribe(&mut self, slot: u32, topic: u32) {
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

    /// Sets `walk` to `topic`'s subscribers (a copy, so a connection that closes during the
    /// round changes the lists, not the walk); true when some of them are resumed and not yet
    /// caught up.
    pub(super) fn walk_of(&self, topic: &Topic, walk: &mut Vec<ConnId>) -> bool {
        walk.clear();
        let Some(members) = self.members.get(topic.id() as usize) else {
            return false;
        };
        walk.extend_from_slice(&members.ids);
        !members.after.is_empty()
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

/// What every delivery of a round shares.
pub(super) struct Round<'a> {
    pub(super) budget: usize,
    /// The server's permessage-deflate configuration, if it offers the extension.
    #[cfg(feature = "deflate")]
    pub(super) deflate: Option<&'a DeflateConfig>,
    #[cfg(not(feature = "deflate"))]
    pub(super) deflate: std::marker::PhantomData<&'a ()>,
    pub(super) now: Instant,
}

#[cfg(feature = "deflate")]
pub(super) fn deflate_config(options: &ServerOptions) -> Option<&DeflateConfig> {
    options.deflate.as_ref()
}

#[cfg(not(feature = "deflate"))]
pub(super) fn deflate_config(_: &ServerOptions) -> std::marker::PhantomData<&()> {
    std::marker::PhantomData
}

/// Moves `topic`'s publications from `pending` to `batch` (emptied first), in order.
pub(super) fn take_topic(
    pending: &mut Vec<Arc<Publication>>,
    topic: &Topic,
    batch: &mut Vec<Arc<Publication>>,
) {
    batch.clear();
    pending.retain(|p| {
        if p.topic == *topic {
            batch.push(Arc::clone(p));
            false
        } else {
            true
        }
    });
}

/// Sets `pieces` to where each piece of `batch` ends (see [`piece_end`]).
pub(super) fn cut_pieces(batch: &[Arc<Publication>], budget: usize, pieces: &mut Vec<usize>) {
    pieces.clear();
    let mut start = 0;
    while start < batch.len() {
        start = piece_end(batch, start, budget);
        pieces.push(start);
    }
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
    let len = publication.frame.wire().len() + Buffers::SHARED_ENTRY_BYTES;
    if bufs.queued_cost() + len > round.budget
        && !make_room(conn, bufs, round, publication, counts, gap)
    {
        return;
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

/// Applies the topic's policy to a publication that would take the subscriber past the
/// budget: true when room was made for it, false when it goes (dropped, or the subscriber
/// closed).
fn make_room(
    conn: &mut Connection,
    bufs: &mut Buffers,
    round: &Round<'_>,
    publication: &Publication,
    counts: &mut Counts,
    gap: &mut Option<Gap>,
) -> bool {
    let (budget, now) = (round.budget, round.now);
    let topic = publication.topic.id();
    let entry = Buffers::SHARED_ENTRY_BYTES;
    let len = publication.frame.wire().len() + entry;
    let queued = bufs.queued_cost();
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
            return false;
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
                return false;
            }
        }
    }
    true
}

/// The most frames a batched round may hold (the check that a subscriber's queue is exactly
/// the round reads this many slices).
pub(super) const MAX_FRAMES: usize = 256;

/// The connection's queue is the frames of `batch`, each whole and in order, and nothing
/// else (no frame of its own before or after, none left out).
pub(super) fn holds_exactly(conn: &Connection, bufs: &Buffers, batch: &[Arc<Publication>]) -> bool {
    // The slices are read into an array on the stack for every subscriber: a small one for
    // the usual round (1 KiB to clear, not 4).
    if batch.len() < SMALL_ROUND {
        holds_exactly_in::<SMALL_ROUND>(conn, bufs, batch)
    } else {
        holds_exactly_in::<{ MAX_FRAMES + 1 }>(conn, bufs, batch)
    }
}

/// Rounds of fewer frames than this are checked with a 64-slice array.
const SMALL_ROUND: usize = 64;

/// [`holds_exactly`] with room for `N` slices (`N` > `batch.len()`, so that a queue holding
/// more than the round shows as longer).
fn holds_exactly_in<const N: usize>(
    conn: &Connection,
    bufs: &Buffers,
    batch: &[Arc<Publication>],
) -> bool {
    let mut slices = [IoSlice::new(&[]); N];
    let count = conn.output_vectored(bufs, &mut slices);
    count == batch.len()
        && slices[..count]
            .iter()
            .zip(batch)
            .all(|(slice, publication)| {
                let wire = publication.frame.wire();
                slice.as_ptr() == wire.as_ptr() && slice.len() == wire.len()
            })
}
