//! The worker's topic rounds: subscription changes, then at the end of each wake-up one
//! round per topic with publications waiting: each subscriber is lent to the topic code
//! (`topics`) to queue its share and is then served (written), or, for a round that is the
//! same bytes for every idle subscriber, the idle ones are marked written and their sockets
//! join one batched send of the round's bytes (`batch_send`); what a socket did not take is
//! queued again exactly as a short `send(2)` would have left it. Gaps a round made go to
//! [`Handler::on_gap`] once it is over.
//!
//! It owns the order of a round (topic by topic, in order of first appearance, each topic's
//! messages in order; pieces of at most half the send budget) and which subscribers may be
//! batched. It does not own the subscriptions or the slow-consumer policy (`topics`), the
//! connections (the worker lends them) or the submission (`batch_send`).

use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::Ordering;

use tickwire_codec::ws::{Buffers, Connection, ConnectionState};

use super::Worker;
use super::batch_send::Sent;
use super::marks::End;
use super::peer::Phase;
use super::serving::Reading;
use super::topics::{
    self, Counts, MAX_FRAMES, Round, cut_pieces, deflate_config, holds_exactly, queue_on,
    take_topic,
};
use crate::handle::ConnId;
use crate::handler::{DisconnectKind, Handler};
use crate::topic::{self, Gap, Publication, SlowConsumer, Subscription, Topic};
use crate::transport::Transport;

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
            take_topic(&mut pending, &topic, &mut batch);
            // Resumed subscribers, or a replay or a gap notice in the batch, take the careful
            // path: the batch in number order, each subscriber filtered by what it was given.
            let mut careful = batch.iter().any(|p| p.only.is_some() || p.notice.is_some());
            careful |= self.topics.walk_of(&topic, &mut walk);
            if careful {
                batch.sort_by_key(|p| p.seq);
            }
            let mut counts = Counts::default();
            cut_pieces(&batch, self.settings.send_budget, &mut pieces);
            let options = Arc::clone(&self.options);
            let round = Round {
                budget: self.settings.send_budget,
                deflate: deflate_config(&options),
                now: self.now,
            };
            // One piece, the same for every subscriber: sent to the idle ones in one
            // submission (`fanout_round`).
            let batched = !careful
                && pieces.len() == 1
                && !T::TLS
                && self.sender.enabled()
                && batch.len() <= MAX_FRAMES;
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
                    self.deliver_pieces(id, &batch, &pieces, &round, &mut counts, &mut gap);
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

    /// One subscriber's share of a batch, piece by piece. A batch bigger than half the send
    /// budget goes out in pieces (each ending at an index in `pieces`), each written before
    /// the next is queued: only a subscriber whose socket does not take them falls behind (a
    /// burst alone does not make one slow).
    fn deliver_pieces(
        &mut self,
        id: ConnId,
        batch: &[Arc<Publication>],
        pieces: &[usize],
        round: &Round<'_>,
        counts: &mut Counts,
        gap: &mut Option<Gap>,
    ) {
        let mut start = 0;
        for &end in pieces {
            let mut open = false;
            self.with_open(id, |conn, bufs, _| {
                for publication in &batch[start..end] {
                    if conn.state() != ConnectionState::Open {
                        return;
                    }
                    if publication.except == Some(id) {
                        continue;
                    }
                    queue_on(conn, bufs, round, publication, counts, gap);
                }
                open = conn.state() == ConnectionState::Open;
            });
            if !open {
                break;
            }
            start = end;
        }
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
        if let Some(slot) = self.slots.get_mut(id.slot() as usize)
            && slot.generation == id.generation()
        {
            slot.marks.record(End {
                kind: DisconnectKind::Failed,
                code: Some(code),
            });
        }
    }

    /// [`Handler::on_gap`] for `id`, if it is still open and its handler has not panicked.
    fn report_gap(&mut self, id: ConnId, topic: &Topic, gap: Gap) {
        self.call(id, |handler, conn| handler.on_gap(conn, topic, gap));
        self.serve(id.slot(), Reading::No);
    }

    /// Delivers one topic's round, a single piece, to `walk`. A subscriber that owed nothing
    /// (no buffer set, no flag) gets the round queued through the codec as any other, and
    /// when its queue is then exactly the round's frames it is marked written and its socket
    /// joins one batched send of the round's bytes; what a socket did not take is queued
    /// again and written as a short write's rest is. Every other subscriber is served as in
    /// the unbatched path.
    pub(super) fn fanout_round(
        &mut self,
        topic: &Topic,
        batch: &[Arc<Publication>],
        walk: &[ConnId],
        round: &Round<'_>,
        counts: &mut Counts,
        gaps: &mut Vec<(ConnId, Topic, Gap)>,
    ) {
        let mut batched = std::mem::take(&mut self.topics.batched);
        batched.fds.clear();
        batched.ids.clear();
        for &id in walk {
            let mut gap = None;
            let closed_before = counts.closed;
            let quiet = self.quiet_socket(id, round);
            let mut queued = false;
            let mut written = false;
            self.with_lent(id, |conn, bufs| {
                queued = true;
                for publication in batch {
                    if conn.state() != ConnectionState::Open {
                        return;
                    }
                    if publication.except == Some(id) {
                        continue;
                    }
                    queue_on(conn, bufs, round, publication, counts, &mut gap);
                }
                if quiet.is_some() && holds_exactly(conn, bufs, batch) {
                    let all = bufs.queued();
                    conn.advance_output(bufs, all);
                    written = true;
                }
            });
            match quiet {
                Some(fd) if written => {
                    batched.fds.push(fd);
                    batched.ids.push(id);
                }
                _ if queued => self.serve(id.slot(), Reading::No),
                _ => {}
            }
            if counts.closed > closed_before {
                self.record_slow_close(id, topic);
            }
            if let Some(gap) = gap {
                gaps.push((id, topic.clone(), gap));
            }
        }
        if !batched.ids.is_empty() {
            batched.bytes.clear();
            for publication in batch {
                batched.bytes.extend_from_slice(publication.frame.wire());
            }
            let bytes = &batched.bytes[..];
            self.sender.send(batched.fds.iter().map(|&fd| (bytes, fd)));
            for (index, &id) in batched.ids.iter().enumerate() {
                let taken = match self.sender.result(index) {
                    Sent::All => continue,
                    Sent::Short(n) => n,
                    Sent::Failed(_) => 0,
                };
                // Queued again, less what the socket took: the write that follows goes on
                // where the kernel stopped (or meets the socket's error and fails the
                // connection as an unbatched write would).
                self.with_lent(id, |conn, bufs| {
                    for publication in batch {
                        let _ = conn
                            .sender(bufs)
                            .shared_labeled(&publication.frame, topics::label(publication));
                    }
                    conn.advance_output(bufs, taken);
                });
                self.serve(id.slot(), Reading::No);
            }
        }
        self.topics.batched = batched;
    }

    /// The socket of `id` when it can join a batch: open, plain, owing nothing, no flag set
    /// and (on a deflate server) without the extension.
    fn quiet_socket(&mut self, id: ConnId, round: &Round<'_>) -> Option<RawFd> {
        let slot = self.slots.get_mut(id.slot() as usize)?;
        if slot.generation != id.generation() || slot.bufs.is_some() || !slot.marks.flags.is_clear()
        {
            return None;
        }
        let Phase::Open(open) = &slot.phase else {
            return None;
        };
        #[cfg(feature = "deflate")]
        if round.deflate.is_some() && open.conn.has_extension() {
            return None;
        }
        #[cfg(not(feature = "deflate"))]
        let _ = round;
        if open.conn.state() != ConnectionState::Open {
            return None;
        }
        Some(slot.stream.as_mut()?.socket().as_raw_fd())
    }

    /// Runs `f` on the open connection `id` (if it is still there) with its buffers; writes
    /// nothing.
    fn with_lent(&mut self, id: ConnId, f: impl FnOnce(&mut Connection, &mut Buffers)) {
        if let Some(lent) = self.lend(id) {
            f(&mut lent.open.conn, lent.bufs);
        }
    }
}
