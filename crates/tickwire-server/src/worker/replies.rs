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

use tickwire_codec::ws::{Buffers, Connection};

/// The most runs one submission carries: the system call's cost is spread over this many
/// sends, and the first reply of a wake-up waits for at most this many connections to be
/// served.
pub(super) const MAX_REPLIES: usize = 64;

/// A longer run is written at once (the copy would cost more than the system call saves).
const MAX_RUN: usize = 16 << 10;

/// The batch is sent once it holds this many bytes.
const MAX_BYTES: usize = 48 << 10;

/// One connection's run in the batch.
#[derive(Debug, Clone, Copy)]
pub(super) struct Reply {
    pub(super) slot: u32,
    pub(super) generation: u32,
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

    /// No run waits.
    pub(super) fn is_empty(&self) -> bool {
        self.replies.is_empty()
    }

    /// The runs waiting, in the order they were taken.
    pub(super) fn iter(&self) -> impl Iterator<Item = &Reply> {
        self.replies.iter()
    }

    /// Takes the list of runs out (their bytes stay until [`done`](Self::done)), so that
    /// each connection can be settled while the batch is borrowed.
    pub(super) fn take_list(&mut self) -> Vec<Reply> {
        std::mem::take(&mut self.replies)
    }

    /// The batch was sent and every connection settled: `list` (from
    /// [`take_list`](Self::take_list)) is emptied and kept for the next batch.
    pub(super) fn done(&mut self, list: Vec<Reply>) {
        self.replies = list;
        self.replies.clear();
        self.bytes.clear();
    }

    /// The bytes of `reply`'s run.
    pub(super) fn run(&self, reply: &Reply) -> &[u8] {
        &self.bytes[reply.start as usize..][..reply.len as usize]
    }
}
