//! The replies of one wake-up in one system call.
//!
//! Serving a connection usually ends with one write: what its handler answered, one run of
//! the connection's own frames. On a plain server with io_uring, that run is copied into the
//! worker's batch and recorded written instead, so the connection is left idle as after a
//! write (its buffer set goes back); once the wake-up's events are served, or the batch is
//! full, every run goes to its socket in one io_uring submission of a `MSG_DONTWAIT` send
//! each. Measured on its own (`docs/benchmarks/pubsub.md`), a send in a submission costs the
//! kernel about 10% less than a `send(2)` of the same bytes.
//!
//! What a socket did not take (`EAGAIN` or a short count) is put back on the connection,
//! ahead of anything else, with the frame the send stopped in marked in progress: the
//! connection then waits for its writable event exactly as after a short `send(2)`. A send
//! that fails ends the connection as a failed write does.
//!
//! Nothing is queued on, written to or closed on a connection while its run waits: serving
//! it, lending it to a callback or ending it sends the batch first.

use std::os::fd::RawFd;

use tickwire_codec::ws::{Buffers, Connection};

use super::batch_send::Sent;
use super::marks::End;
use super::{Phase, Worker};
use crate::handler::Handler;
use crate::transport::Transport;

/// The most runs one submission carries: the system call's cost is spread over this many
/// sends, and the first reply of a wake-up waits for at most this many connections to be
/// served.
const MAX_REPLIES: usize = 64;

/// A longer run is written at once (the copy would cost more than the system call saves).
const MAX_RUN: usize = 16 << 10;

/// The batch is sent once it holds this many bytes.
const MAX_BYTES: usize = 48 << 10;

/// One connection's run in the batch.
#[derive(Debug, Clone, Copy)]
struct Reply {
    slot: u32,
    generation: u32,
    /// Where its bytes are in [`Replies::bytes`].
    start: u32,
    len: u32,
}

/// The batch: the runs, copied, and whose they are.
#[derive(Debug)]
pub(super) struct Replies {
    enabled: bool,
    bytes: Vec<u8>,
    replies: Vec<Reply>,
}

impl Replies {
    /// A batch when the worker has a ring (`enabled`); otherwise every reply is written at
    /// once.
    pub(super) fn new(enabled: bool) -> Self {
        Self {
            enabled,
            bytes: Vec::new(),
            replies: Vec::new(),
        }
    }

    /// Takes the connection's output into the batch when it is one run of its own frames
    /// (no control or shared frame, no close, nothing partly written) short enough to copy:
    /// copied, and recorded written. False: nothing was done, write it as usual.
    pub(super) fn take(
        &mut self,
        conn: &mut Connection,
        bufs: &mut Buffers,
        slot: u32,
        generation: u32,
    ) -> bool {
        if !self.enabled {
            return false;
        }
        let Some(run) = conn.data_run(bufs) else {
            return false;
        };
        if run.len() > MAX_RUN {
            return false;
        }
        let len = run.len();
        self.replies.push(Reply {
            slot,
            generation,
            start: self.bytes.len() as u32,
            len: len as u32,
        });
        self.bytes.extend_from_slice(run);
        conn.advance_output(bufs, len);
        true
    }

    /// The batch should be sent before another run joins it.
    pub(super) fn full(&self) -> bool {
        self.replies.len() >= MAX_REPLIES || self.bytes.len() >= MAX_BYTES
    }

    fn run(&self, reply: &Reply) -> &[u8] {
        &self.bytes[reply.start as usize..][..reply.len as usize]
    }
}

impl<H: Handler, T: Transport> Worker<H, T> {
    /// Sends the batch if the connection in `index` has a run in it: before the connection
    /// is served, lent or ended, so that its bytes keep their order.
    pub(super) fn reply_before_more(&mut self, index: u32) {
        if self
            .slots
            .get(index as usize)
            .is_some_and(|slot| slot.marks.flags.batched())
        {
            self.send_replies();
        }
    }

    /// Sends every run in the batch in one submission and settles each connection as a
    /// write of what its socket took would have.
    pub(super) fn send_replies(&mut self) {
        if self.replies.replies.is_empty() {
            return;
        }
        let mut pairs: [(&[u8], RawFd); MAX_REPLIES] = [(&[], 0); MAX_REPLIES];
        let mut count = 0;
        for reply in &self.replies.replies {
            let slot = &self.slots[reply.slot as usize];
            if slot.generation != reply.generation || !slot.marks.flags.batched() {
                continue;
            }
            let Some(stream) = slot.stream.as_ref() else {
                continue;
            };
            pairs[count] = (self.replies.run(reply), stream.fd());
            count += 1;
        }
        let mut results = [Sent::All; MAX_REPLIES];
        results[..count].copy_from_slice(self.sender.send(pairs[..count].iter().copied()));
        let replies = std::mem::take(&mut self.replies.replies);
        let mut sent = 0;
        for reply in &replies {
            let slot = &mut self.slots[reply.slot as usize];
            if slot.generation != reply.generation || !slot.marks.flags.batched() {
                continue;
            }
            if slot.stream.is_none() {
                continue;
            }
            slot.marks.flags.set_batched(false);
            let result = results[sent];
            sent += 1;
            let taken = match result {
                Sent::All => continue,
                Sent::Short(n) => n,
                result if result.would_block() => 0,
                Sent::Failed(_) => {
                    // What a failed write ends the connection with.
                    self.finish(reply.slot, End::ABNORMAL);
                    continue;
                }
            };
            if !self.put_back(reply, taken) {
                self.finish(reply.slot, End::ABNORMAL);
            }
        }
        self.replies.replies = replies;
        self.replies.replies.clear();
        self.replies.bytes.clear();
    }

    /// Queues again what the socket did not take of `reply`'s run, in the connection's own
    /// set (one from the pool if it has none), and waits for the socket to drain.
    fn put_back(&mut self, reply: &Reply, taken: usize) -> bool {
        let slot = &mut self.slots[reply.slot as usize];
        let Phase::Open(open) = &mut slot.phase else {
            return false;
        };
        let bufs = slot.bufs.get_or_insert_with(|| {
            self.pool
                .pop()
                .unwrap_or_else(|| Box::new(Buffers::new(&self.config)))
        });
        if !open
            .conn
            .put_back_output(bufs, self.replies.run(reply), taken)
        {
            return false;
        }
        // As after a short send(2): the rest goes when the socket drains.
        slot.marks.flags.set_write_waiting(true);
        true
    }
}
