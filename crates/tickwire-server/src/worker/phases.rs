//! The worker's side of a connection's phases: it lends the scratch set, the handler and
//! the wake-up's batch to the connection (a `peer::Peer`), then does what the peer says it
//! needs (keep the scratch set, take a set back, arm the wheel, linger, end the connection).
//!
//! It owns the handshake, serving and lingering as the worker drives them. The decisions of
//! each phase are the peer's (`peer`, `serving`); the slab, the pool and ending a connection
//! are the worker's (`worker.rs`).

use std::time::Instant;

use tickwire_codec::ws::{Buffers, Connection};

use super::Worker;
use super::marks::End;
use super::peer::{HandshakeLent, Handshook, Release, Served};
use super::serving::{self, Reading, ServeLent};
use crate::handle::ConnId;
use crate::handler::{Handler, HandshakeFailure};
use crate::transport::Transport;
use crate::wheel::UNARMED;

impl<H: Handler, T: Transport> Worker<H, T> {
    /// Runs `f` on the open connection `id` (if it still exists) with its buffers, then
    /// serves it (writes what `f` queued).
    pub(super) fn with_open(
        &mut self,
        id: ConnId,
        f: impl FnOnce(&mut Connection, &mut Buffers, Instant),
    ) {
        let now = self.now;
        let Some(lent) = self.lend(id) else {
            return;
        };
        f(&mut lent.open.conn, lent.bufs, now);
        self.serve(id.slot(), Reading::No);
    }

    /// Reads the upgrade request (see `Peer::handshake`); on a 101 the connection opens and
    /// is served at once (bytes that followed the request included).
    pub(super) fn handshake(&mut self, index: u32) {
        let mut lent = HandshakeLent {
            handler: &mut self.handler,
            options: &self.options,
            config: &self.config,
            head_out: &mut self.head_out,
            now: self.now,
        };
        let slot = &mut self.slots[index as usize];
        match slot.handshake(&mut self.scratch, &mut lent) {
            Handshook::Gone
            | Handshook::Waiting {
                keep_scratch: false,
            } => {}
            Handshook::Waiting { keep_scratch: true } => self.keep_scratch(index),
            Handshook::Opened => self.opened(index),
            Handshook::Refused(failure) => self.refuse(index, failure),
            Handshook::Failed(failure) => self.drop_handshake(index, failure),
        }
    }

    /// The rest of a 101 the socket did not take at once.
    pub(super) fn respond_rest(&mut self, index: u32) {
        match self.slots[index as usize].respond_rest() {
            Ok(true) => self.opened(index),
            Ok(false) => {}
            Err(_) => self.finish(index, End::RESET),
        }
    }

    /// The 101 is written: `on_open`, then serve (frames that came with the request first).
    fn opened(&mut self, index: u32) {
        let id = self.id(index);
        self.call(id, |handler, conn| handler.on_open(conn));
        // Read too: the request's read may have stopped at a full buffer, or bytes came
        // while the 101 waited for the socket, and their edge has passed.
        self.serve(index, Reading::ToWouldBlock);
    }

    /// Writes the refusal in `head_out`, tells the handler, and lingers until the client has
    /// stopped sending (see `Peer::write_refusal`), or drops the connection at once.
    fn refuse(&mut self, index: u32, failure: HandshakeFailure) {
        let slot = &mut self.slots[index as usize];
        if !slot.write_refusal(self.head_out.as_slice(), &mut self.scratch.read) {
            return self.drop_handshake(index, failure);
        }
        self.report_handshake_failure(index, failure);
        self.start_lingering(index);
    }

    /// Starts lingering on a connection whose last answer is written and whose write side is
    /// shut: the close timeout is armed, and its buffers go back (the scratch set is emptied
    /// for the next connection, as `finish` does).
    fn start_lingering(&mut self, index: u32) {
        let tick = self.wheel.tick_of(self.now + self.config.close_timeout);
        let slot = &mut self.slots[index as usize];
        let kept = slot.start_lingering();
        if slot.armed == UNARMED || tick < slot.armed {
            self.wheel.insert(index, tick);
            slot.armed = tick;
        }
        match kept {
            Some(mut owned) => {
                owned.clear();
                self.give_back(owned);
            }
            None => self.scratch.clear(),
        }
    }

    /// A lingering connection: drop what the peer still sends, close at its end.
    pub(super) fn linger(&mut self, index: u32) {
        if self.slots[index as usize].linger(&mut self.scratch.read) {
            self.finish(index, End::FAILED);
        }
    }

    /// A TLS handshake whose messages the socket did not take at once: write the rest.
    pub(super) fn flush_handshake(&mut self, index: u32) {
        if let Err(failure) = self.slots[index as usize].flush_handshake() {
            self.drop_handshake(index, failure);
        }
    }

    /// Tells the handler why a connection's opening handshake failed.
    fn report_handshake_failure(&mut self, index: u32, failure: HandshakeFailure) {
        let peer = self.slots[index as usize].peer_addr();
        let handler = &mut self.handler;
        let _ = serving::guarded(|| handler.on_handshake_error(peer, failure));
    }

    /// Drops a connection whose opening handshake failed, after telling the handler why.
    pub(super) fn drop_handshake(&mut self, index: u32, failure: HandshakeFailure) {
        self.report_handshake_failure(index, failure);
        self.finish(index, End::RESET);
    }

    /// Serves an open connection (see `Peer::serve`), then closes it if it is over, or arms
    /// its next deadline and settles who keeps the buffer set.
    pub(super) fn serve(&mut self, index: u32, reading: Reading) {
        self.reply_before_more(index);
        let id = self.id(index);
        let mut lent = ServeLent {
            handler: &mut self.handler,
            replies: &mut self.replies,
            stage: &mut self.stage,
            now: self.now,
            limit: self.settings.backpressure_limit,
        };
        let slot = &mut self.slots[index as usize];
        let (deadline, release) = match slot.serve(id, reading, &mut self.scratch, &mut lent) {
            Served::Untouched => return,
            Served::Over(end) => return self.finish(index, end),
            Served::Linger => return self.start_lingering(index),
            Served::Open { deadline, release } => (deadline, release),
        };
        // Arm the wheel for the connection's next deadline, if it is earlier than the entry
        // already armed (a later one is found when that entry fires).
        if let Some(at) = deadline {
            let tick = self.wheel.tick_of(at);
            if slot.armed == UNARMED || tick < slot.armed {
                self.wheel.insert(index, tick);
                slot.armed = tick;
            }
        }
        match release {
            Release::GiveBack(owned) => self.give_back(owned),
            Release::Keep => {}
            Release::ScratchIdle => {
                if self.scratch.capacity() > 4 * self.set_capacity {
                    // A large frame grew the scratch set: do not keep the memory.
                    *self.scratch = Buffers::new(&self.config);
                }
            }
            Release::KeepScratch => self.keep_scratch(index),
        }
        // Settled: the connection keeps its set or not, as if its reply had been written.
        if self.replies.full() {
            self.send_replies();
        }
    }
}
