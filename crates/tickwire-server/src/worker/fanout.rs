//! A round's sends to many subscribers in one system call.
//!
//! When a topic's round is the same bytes for every subscriber that was idle (nothing owed
//! before it, no deflate), those bytes are laid out once and handed to the batched sender
//! (`batch_send`) with each subscriber's socket, instead of one `send(2)` each. What a
//! socket did not take is queued again exactly as a short `send(2)` would have left it.
//! Where batching is off, the worker writes to each subscriber as before.

use std::io::IoSlice;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::Arc;

use tickwire_codec::ws::{Buffers, Connection, ConnectionState};

use super::batch_send::Sent;
use super::serving::Reading;
use super::topics::{self, Counts, Round};
use super::{Phase, Worker};
use crate::handle::ConnId;
use crate::handler::Handler;
use crate::topic::{Gap, Publication, Topic};
use crate::transport::Transport;

/// The most frames a batched round may hold (the check that a subscriber's queue is exactly
/// the round reads this many slices).
pub(super) const MAX_FRAMES: usize = 256;

/// Reused between rounds: the bytes every batched subscriber is sent, and to whom.
#[derive(Debug, Default)]
pub(super) struct RoundBatch {
    /// The round's frames, laid out once.
    bytes: Vec<u8>,
    /// The batched subscribers' sockets, in the order of `ids`.
    fds: Vec<RawFd>,
    ids: Vec<ConnId>,
}

impl<H: Handler, T: Transport> Worker<H, T> {
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
        let mut batched = std::mem::take(&mut self.round_batch);
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
                    topics::queue_on(conn, bufs, round, publication, counts, &mut gap);
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
        self.round_batch = batched;
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

/// The connection's queue is the frames of `batch`, each whole and in order, and nothing
/// else (no frame of its own before or after, none left out).
fn holds_exactly(conn: &Connection, bufs: &Buffers, batch: &[Arc<Publication>]) -> bool {
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
