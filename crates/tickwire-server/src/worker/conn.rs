//! Serving one connection for one wake-up: the opening handshake, then reads, message
//! delivery, timers and writes, and at the end who keeps the buffer set.

use std::io::{self, IoSlice, Read, Write};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use tickwire_codec::buf::ReadBuf;
use tickwire_codec::handshake::{Outcome, Parsed, Response, ServerHandshake};
use tickwire_codec::ws::{
    Buffers, CloseCode, Connection, ConnectionState, Error, Message, Progress,
};

use super::{
    BATCHED, End, LINGERING, Marks, Open, PANICKED, Phase, READ_PAUSED, Responding, WRITE_WAITING,
    Worker,
};
use crate::handle::ConnId;
use crate::handler::{Conn, Decision, DisconnectKind, Handler, HandshakeFailure};
use crate::transport::Transport;
use crate::wheel::UNARMED;

/// Runs a callback; a panic is caught and reported as `false`.
pub(super) fn guarded(f: impl FnOnce()) -> bool {
    catch_unwind(AssertUnwindSafe(f)).is_ok()
}

impl<H: Handler, T: Transport> Worker<H, T> {
    /// Reads the upgrade request, asks the handler, writes the answer; on a 101 the
    /// connection opens and is served at once (bytes that followed the request included).
    pub(super) fn handshake(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        let Some(stream) = slot.stream.as_mut() else {
            return;
        };
        let bufs = match slot.bufs.as_deref_mut() {
            Some(bufs) => bufs,
            None => &mut self.scratch,
        };
        let eof = match read_head(stream, &mut bufs.read) {
            Ok(eof) => eof,
            Err(error) => {
                let failure = stream.failure(error);
                return self.drop_handshake(index, failure);
            }
        };
        // The handshake kept from an earlier read, or a new one (on the stack: boxed only
        // if the request turns out partial).
        let mut kept = match &mut slot.phase {
            Phase::Handshake(kept) => kept.take(),
            _ => None,
        };
        let mut fresh = None;
        let handshake = match kept.as_deref_mut() {
            Some(handshake) => handshake,
            None => fresh.insert(
                ServerHandshake::shared(Arc::clone(&self.options))
                    .with_shared_config(Arc::clone(&self.config)),
            ),
        };
        self.head_out.clear();
        let request = match handshake.read_request(&mut bufs.read, &mut self.head_out) {
            Ok(Parsed::NeedMore) if eof => {
                let failure = HandshakeFailure::Io(io::ErrorKind::UnexpectedEof.into());
                return self.drop_handshake(index, failure);
            }
            Ok(Parsed::NeedMore) => {
                // A partial head: the connection keeps it, and the handshake that scanned it,
                // until the rest arrives.
                slot.phase = Phase::Handshake(kept.or_else(|| fresh.map(Box::new)));
                if slot.bufs.is_none() && !self.scratch.read.is_empty() {
                    self.keep_scratch(index);
                }
                return;
            }
            Ok(Parsed::Complete(request)) => request,
            // Malformed: its 4xx is in `head_out`.
            Err(error) => return self.refuse(index, HandshakeFailure::Request(error)),
        };
        let peer = stream.socket().peer_addr();
        let handler = &mut self.handler;
        let mut decision = None;
        if let Ok(peer) = peer {
            let _ = guarded(|| decision = Some(handler.upgrade(&request, peer)));
        }
        let (response, state) = match decision {
            Some(Decision::Accept(response, state)) if response.status() == 101 => {
                (response, Some(state))
            }
            Some(Decision::Accept(response, _)) => (response, None),
            Some(Decision::Reject(response)) if response.status() != 101 => (response, None),
            // A 101 without state, a panic, or a peer address that could not be read.
            Some(Decision::Reject(_)) | None => (Response::reject(500), None),
        };
        let outcome = handshake.respond(response, &mut self.head_out, self.now);
        let upgraded = match (outcome, state) {
            (Ok(Outcome::Upgraded(upgraded)), Some(state)) => (upgraded, state),
            (Ok(Outcome::Rejected(status)), _) => {
                return self.refuse(index, HandshakeFailure::Refused(status));
            }
            // A response the codec could not write: it wrote a 500 instead.
            _ => return self.refuse(index, HandshakeFailure::Refused(500)),
        };
        let (upgraded, state) = upgraded;
        let open = Open {
            conn: upgraded.connection,
            state,
        };
        let written = match write_some(stream, self.head_out.as_slice()) {
            Ok(written) => written,
            Err(error) => {
                let failure = stream.failure(error);
                return self.drop_handshake(index, failure);
            }
        };
        if written < self.head_out.len() {
            let rest = self.head_out.as_slice()[written..].to_vec();
            slot.phase = Phase::Responding(Box::new(Responding { open, rest }));
            if slot.bufs.is_none() {
                self.keep_scratch(index);
            }
            return;
        }
        slot.phase = Phase::Open(open);
        self.opened(index);
    }

    /// The rest of a 101 the socket did not take at once.
    pub(super) fn respond_rest(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        let (Some(stream), Phase::Responding(responding)) = (slot.stream.as_mut(), &mut slot.phase)
        else {
            return;
        };
        match write_some(stream, &responding.rest) {
            Ok(written) if written == responding.rest.len() => {}
            Ok(written) => {
                responding.rest.drain(..written);
                return;
            }
            Err(_) => {
                return self.finish(
                    index,
                    End {
                        kind: DisconnectKind::Reset,
                        code: None,
                    },
                );
            }
        }
        let Phase::Responding(responding) =
            std::mem::replace(&mut slot.phase, Phase::Handshake(None))
        else {
            return;
        };
        slot.phase = Phase::Open(responding.open);
        self.opened(index);
    }

    /// The 101 is written: `on_open`, then serve (frames that came with the request first).
    fn opened(&mut self, index: u32) {
        let id = self.id(index);
        self.call(id, |handler, conn| handler.on_open(conn));
        // Read too: the request's read may have stopped at a full buffer, or bytes came
        // while the 101 waited for the socket, and their edge has passed.
        self.serve(index, Reading::ToWouldBlock);
    }

    /// Writes the refusal in `head_out` (best effort: the socket is new and it is small),
    /// ends the write side, tells the handler, and closes the connection once the client has
    /// stopped sending: closing with its bytes unread would send a reset, which can destroy
    /// the refusal in the client's receive queue (a client still sending a head past the
    /// limit gets its 431).
    fn refuse(&mut self, index: u32, failure: HandshakeFailure) {
        let lingering = match self.slots[index as usize].stream.as_mut() {
            Some(stream) => {
                let _ = write_some(stream, self.head_out.as_slice());
                stream.close_write();
                matches!(discard(stream, &mut self.scratch.read), Ok(false))
            }
            None => false,
        };
        if !lingering {
            return self.drop_handshake(index, failure);
        }
        self.report_handshake_failure(index, failure);
        self.slots[index as usize].phase = Phase::Handshake(None);
        self.start_lingering(index);
    }

    /// Starts lingering on a connection whose last answer is written and whose write side is
    /// shut: the close timeout is armed, and its buffers go back (the scratch set is emptied
    /// for the next connection, as `finish` does).
    fn start_lingering(&mut self, index: u32) {
        let tick = self.wheel.tick_of(self.now + self.config.close_timeout);
        let slot = &mut self.slots[index as usize];
        slot.marks.flags |= LINGERING;
        if slot.armed == UNARMED || tick < slot.armed {
            self.wheel.insert(index, tick);
            slot.armed = tick;
        }
        match slot.bufs.take() {
            Some(mut owned) => {
                owned.clear();
                self.give_back(owned);
            }
            None => self.scratch.clear(),
        }
    }

    /// A lingering connection: drop what the peer still sends, close at its end.
    pub(super) fn linger(&mut self, index: u32) {
        let Some(stream) = self.slots[index as usize].stream.as_mut() else {
            return;
        };
        if !matches!(discard(stream, &mut self.scratch.read), Ok(false)) {
            self.finish(
                index,
                End {
                    kind: DisconnectKind::Failed,
                    code: None,
                },
            );
        }
    }

    /// A TLS handshake whose messages the socket did not take at once: write the rest.
    pub(super) fn flush_handshake(&mut self, index: u32) {
        if let Some(stream) = self.slots[index as usize].stream.as_mut() {
            if let Err(error) = stream.flush_pending() {
                let failure = stream.failure(error);
                self.drop_handshake(index, failure);
            }
        }
    }

    /// Tells the handler why a connection's opening handshake failed.
    fn report_handshake_failure(&mut self, index: u32, failure: HandshakeFailure) {
        let peer = self.slots[index as usize]
            .stream
            .as_mut()
            .and_then(|stream| stream.socket().peer_addr().ok());
        let handler = &mut self.handler;
        let _ = guarded(|| handler.on_handshake_error(peer, failure));
    }

    /// Drops a connection whose opening handshake failed, after telling the handler why.
    pub(super) fn drop_handshake(&mut self, index: u32, failure: HandshakeFailure) {
        self.report_handshake_failure(index, failure);
        self.finish(
            index,
            End {
                kind: DisconnectKind::Reset,
                code: None,
            },
        );
    }

    /// The connection being served keeps the scratch set (it owes bytes); the worker takes
    /// a set from its pool as its new scratch.
    fn keep_scratch(&mut self, index: u32) {
        let fresh = self
            .pool
            .pop()
            .unwrap_or_else(|| Box::new(Buffers::new(&self.config)));
        let owned = std::mem::replace(&mut self.scratch, fresh);
        self.slots[index as usize].bufs = Some(owned);
    }

    /// Serves an open connection: parse what is buffered, read until the socket is empty
    /// (or the output is over the backpressure limit), run due timers, write everything
    /// queued, then close it if it is over, or settle who keeps the buffer set.
    pub(super) fn serve(&mut self, index: u32, reading: Reading) {
        self.reply_before_more(index);
        let id = self.id(index);
        let now = self.now;
        let limit = self.settings.backpressure_limit;
        let slot = &mut self.slots[index as usize];
        let (Some(stream), Phase::Open(open)) = (slot.stream.as_mut(), &mut slot.phase) else {
            return;
        };
        if slot.marks.flags & LINGERING != 0 {
            return self.linger(index);
        }
        let bufs = match slot.bufs.as_deref_mut() {
            Some(bufs) => bufs,
            None => &mut self.scratch,
        };
        let handler = &mut self.handler;
        let stage = &mut self.stage;
        let replies = &mut self.replies;
        let marks = &mut slot.marks;
        let mut reading = reading;
        let mut socket = Socket::Open;
        loop {
            if marks.flags & READ_PAUSED == 0 {
                if deliver(handler, id, open, bufs, marks, limit) {
                    marks.flags |= READ_PAUSED;
                } else if reading != Reading::No {
                    socket = read_and_deliver(
                        stream, handler, id, open, bufs, marks, now, limit, reading,
                    );
                    if socket == Socket::Paused {
                        marks.flags |= READ_PAUSED;
                        socket = Socket::Open;
                    }
                }
                reading = Reading::No;
            }
            if socket == Socket::Failed {
                break;
            }
            run_due_timers(&mut open.conn, bufs, now, marks);
            if marks.flags & (WRITE_WAITING | READ_PAUSED) == 0
                && socket == Socket::Open
                && open.conn.state() == ConnectionState::Open
                && replies.take(&mut open.conn, bufs, index, slot.generation)
            {
                // Written now, it would be the last step of the wake-up for the connection:
                // it goes in the wake-up's batched send instead (recorded written already).
                marks.flags |= BATCHED;
                break;
            }
            match flush(stream, &mut open.conn, bufs, stage) {
                Ok(true) => {}
                Ok(false) => {
                    marks.flags |= WRITE_WAITING;
                    break;
                }
                Err(_) => {
                    socket = Socket::Failed;
                    break;
                }
            }
            // Everything is written.
            if marks.flags & WRITE_WAITING != 0 {
                marks.flags &= !WRITE_WAITING;
                if marks.flags & PANICKED == 0 && open.conn.state() == ConnectionState::Open {
                    let mut conn = Conn {
                        id,
                        state: &mut open.state,
                        sender: open.conn.sender(bufs),
                    };
                    if !guarded(|| handler.on_writable(&mut conn)) {
                        panicked(marks, &mut conn);
                    }
                    if open.conn.wants_write(bufs) {
                        continue;
                    }
                }
            }
            if marks.flags & READ_PAUSED != 0 && socket == Socket::Open {
                // The backlog is written: parse what waited, then read what the socket holds
                // (edge-triggered: no new event would say so). Read to `WouldBlock`: the
                // event that paused may have carried the peer's FIN.
                marks.flags &= !READ_PAUSED;
                reading = Reading::ToWouldBlock;
                continue;
            }
            break;
        }
        let state = open.conn.state();
        if socket == Socket::Open
            && state == ConnectionState::Failed
            && open.conn.should_close_transport(bufs)
        {
            // The close frame is out. Closing now with the peer's bytes unread would send a
            // reset, which can destroy that frame in the peer's receive queue: shut the write
            // side, drop what arrives, close at its end (or at the close timeout).
            stream.close_write();
            // Nothing more is parsed: the unread bytes go, and the whole buffer takes reads.
            bufs.clear();
            if matches!(discard(stream, &mut bufs.read), Ok(false)) {
                return self.start_lingering(index);
            }
        }
        if socket != Socket::Open || open.conn.should_close_transport(bufs) {
            let end = match (socket, state) {
                (Socket::Failed, _) => End {
                    kind: DisconnectKind::Reset,
                    code: Some(CloseCode::ABNORMAL),
                },
                (_, ConnectionState::Closed) => End {
                    kind: DisconnectKind::Closed,
                    code: None,
                },
                (_, ConnectionState::Failed) => End {
                    kind: DisconnectKind::Failed,
                    code: None,
                },
                // End of stream before the close handshake finished.
                _ => End {
                    kind: DisconnectKind::Reset,
                    code: Some(CloseCode::ABNORMAL),
                },
            };
            return self.finish(index, end);
        }
        // Arm the wheel for the connection's next deadline, if it is earlier than the entry
        // already armed (a later one is found when that entry fires).
        if let Some(at) = open.conn.poll_timeout() {
            let tick = self.wheel.tick_of(at);
            if slot.armed == UNARMED || tick < slot.armed {
                self.wheel.insert(index, tick);
                slot.armed = tick;
            }
        }
        open.conn.release(bufs);
        let idle = open.conn.is_idle(bufs);
        match slot.bufs.take() {
            Some(owned) if idle => {
                open.conn.trim();
                self.give_back(owned);
            }
            Some(owned) => slot.bufs = Some(owned),
            None if idle => {
                open.conn.trim();
                if self.scratch.capacity() > 4 * self.set_capacity {
                    // A large frame grew the scratch set: do not keep the memory.
                    *self.scratch = Buffers::new(&self.config);
                }
            }
            None => self.keep_scratch(index),
        }
        // Settled: the connection keeps its set or not, as if its reply had been written.
        if self.replies.full() {
            self.send_replies();
        }
    }
}

/// What a wake-up does with the socket's read side.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reading {
    /// Nothing (a command, a timer or a writable event).
    No,
    /// Read until the socket is empty; on a plain socket a short read says so (each later
    /// arrival raises a new edge).
    Readable,
    /// Read until `WouldBlock` or the end: the event also reported the peer's FIN (or an
    /// error), whose edge has passed, so a short read proves nothing.
    ToWouldBlock,
}

/// Where the socket stands after reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Socket {
    /// Read until it would block.
    Open,
    /// Reading stopped: too much output queued.
    Paused,
    /// The peer ended its side (end of stream).
    Eof,
    /// An I/O error: the connection is gone.
    Failed,
}

/// Records a handler panic and queues a close with 1011; no more callbacks.
pub(super) fn panicked<S>(marks: &mut Marks, conn: &mut Conn<'_, S>) {
    marks.flags |= PANICKED;
    marks.record(End {
        kind: DisconnectKind::Panicked,
        code: Some(CloseCode::INTERNAL_ERROR),
    });
    let _ = conn.sender.close(CloseCode::INTERNAL_ERROR, "");
}

/// Records a protocol error or a broken limit (the codec queued the close).
fn failed(marks: &mut Marks, error: &Error) {
    marks.record(End {
        kind: DisconnectKind::Failed,
        code: Some(error.close_code().unwrap_or(CloseCode::PROTOCOL_ERROR)),
    });
}

/// Parses the buffered bytes and hands each text or binary message to the handler. True
/// when it stopped early because more than `limit` bytes of output are queued (the rest
/// stays buffered).
fn deliver<H: Handler>(
    handler: &mut H,
    id: ConnId,
    open: &mut Open<H::State>,
    bufs: &mut Buffers,
    marks: &mut Marks,
    limit: usize,
) -> bool {
    loop {
        match open.conn.advance(bufs) {
            Ok(Progress::Ready) => {}
            Ok(_) => return false,
            Err(error) => {
                failed(marks, &error);
                return false;
            }
        }
        match open.conn.message_with_sender(bufs) {
            Ok((message @ (Message::Text(_) | Message::Binary(_)), sender)) => {
                if marks.flags & PANICKED == 0 {
                    let mut conn = Conn {
                        id,
                        state: &mut open.state,
                        sender,
                    };
                    if !guarded(|| handler.on_message(&mut conn, message)) {
                        panicked(marks, &mut conn);
                    }
                }
            }
            Ok((Message::Close(frame), _)) => {
                marks.record(End {
                    kind: DisconnectKind::Closed,
                    code: frame.map(|f| f.code),
                });
            }
            Ok(_) => {}
            Err(error) => {
                failed(marks, &error);
                return false;
            }
        }
        if bufs.queued() > limit {
            return true;
        }
    }
}

/// Reads until the socket would block, delivering after each read.
#[expect(
    clippy::too_many_arguments,
    reason = "the disjoint parts of one slot and worker"
)]
fn read_and_deliver<H: Handler, T: Transport>(
    stream: &mut T,
    handler: &mut H,
    id: ConnId,
    open: &mut Open<H::State>,
    bufs: &mut Buffers,
    marks: &mut Marks,
    now: std::time::Instant,
    limit: usize,
    reading: Reading,
) -> Socket {
    let short_read_drains = T::SHORT_READ_DRAINS && reading == Reading::Readable;
    loop {
        let spare = open.conn.spare(bufs);
        let asked = spare.len();
        match stream.read(spare) {
            Ok(0) => return Socket::Eof,
            Ok(n) => {
                open.conn.filled(bufs, n, now);
                if deliver(handler, id, open, bufs, marks, limit) {
                    return Socket::Paused;
                }
                if n < asked && short_read_drains {
                    return Socket::Open;
                }
                if !matches!(
                    open.conn.state(),
                    ConnectionState::Open | ConnectionState::CloseSent
                ) {
                    // Closed or failed: nothing more is read.
                    return Socket::Open;
                }
            }
            Err(error) => match error.kind() {
                io::ErrorKind::WouldBlock => return Socket::Open,
                io::ErrorKind::Interrupted => {}
                _ => return Socket::Failed,
            },
        }
    }
}

/// Runs the connection's timers if one is due (keepalive ping, pong, idle, close timeout).
fn run_due_timers(
    conn: &mut Connection,
    bufs: &mut Buffers,
    now: std::time::Instant,
    marks: &mut Marks,
) {
    if conn.poll_timeout().is_some_and(|at| at <= now) {
        match conn.handle_timeout(bufs, now) {
            Ok(()) => {}
            Err(Error::CloseTimeout) => {
                marks.record(End {
                    kind: DisconnectKind::Failed,
                    code: None,
                });
            }
            Err(_) => {
                marks.record(End {
                    kind: DisconnectKind::Failed,
                    code: Some(CloseCode::GOING_AWAY),
                });
            }
        }
    }
}

/// Writes queued output until it is all written (`true`) or the socket would block.
/// Slices per vectored write: a subscriber owed a round of topic messages (each a shared
/// frame, so a slice of its own, between its own frames) gets them in one `writev`; at 16,
/// a round of 27 messages took two (pub/sub, 1,000 subscribers).
const WRITE_SLICES: usize = 64;

/// Output of many slices up to this size is copied into the worker's staging buffer and
/// sent in one run.
pub(super) const STAGE: usize = 16 << 10;

fn flush(
    stream: &mut impl Transport,
    conn: &mut Connection,
    bufs: &mut Buffers,
    stage: &mut Vec<u8>,
) -> io::Result<bool> {
    while conn.wants_write(bufs) {
        let result = {
            let mut slices = [IoSlice::new(&[]); WRITE_SLICES];
            let count = conn.output_vectored(bufs, &mut slices);
            // One run (the usual case: this wake-up's replies, contiguous) goes out with
            // send(2), as uWebSockets does: writev(2) costs the kernel an iovec import and
            // the longer vfs_writev path for the same bytes (vfs_writev alone was 2.6% of the
            // worker's samples at 1,000 connections x 8 in flight).
            if count == 1 {
                stream.write(&slices[0])
            } else if slices[..count].iter().map(|s| s.len()).sum::<usize>() <= STAGE {
                // Many short slices (a round of topic messages, each a shared frame): one
                // contiguous send(2) costs the kernel less than writev(2)'s per-slice work.
                // The copy is the worker's, transient; the queues still share the frames.
                stage.clear();
                for slice in &slices[..count] {
                    stage.extend_from_slice(slice);
                }
                stream.write(stage)
            } else {
                stream.write_vectored(&slices[..count])
            }
        };
        match result {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => conn.advance_output(bufs, n),
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    // TLS: records made from what was taken and not yet written.
    stream.flush_pending()
}

/// Reads and drops what the peer sends (a failed connection lingering before its close):
/// `Ok(true)` at its end of stream, `Ok(false)` once the socket is empty.
fn discard(stream: &mut impl Read, read: &mut ReadBuf) -> io::Result<bool> {
    loop {
        // Read into the spare space without recording it: the bytes are dropped.
        match stream.read(read.spare()) {
            Ok(0) => return Ok(true),
            Ok(_) => {}
            Err(error) => match error.kind() {
                io::ErrorKind::WouldBlock => return Ok(false),
                io::ErrorKind::Interrupted => {}
                _ => return Err(error),
            },
        }
    }
}

/// Reads a request head into `read` until the socket would block or the buffer is full;
/// true at end of stream.
fn read_head(stream: &mut impl Read, read: &mut ReadBuf) -> io::Result<bool> {
    loop {
        let spare = read.spare();
        if spare.is_empty() {
            // The head limit is below the buffer size: the handshake refuses it (431).
            return Ok(false);
        }
        match stream.read(spare) {
            Ok(0) => return Ok(true),
            Ok(n) => read.filled(n),
            Err(error) => match error.kind() {
                io::ErrorKind::WouldBlock => return Ok(false),
                io::ErrorKind::Interrupted => {}
                _ => return Err(error),
            },
        }
    }
}

/// Writes as much of `bytes` as the socket takes now.
fn write_some(stream: &mut impl Write, bytes: &[u8]) -> io::Result<usize> {
    let mut written = 0;
    while written < bytes.len() {
        match stream.write(&bytes[written..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => written += n,
            Err(error) => match error.kind() {
                io::ErrorKind::WouldBlock => break,
                io::ErrorKind::Interrupted => {}
                _ => return Err(error),
            },
        }
    }
    Ok(written)
}
