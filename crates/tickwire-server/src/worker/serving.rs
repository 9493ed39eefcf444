//! Serving an open connection for one wake-up: parse what is buffered, read until the socket
//! is empty (or the output is over the backpressure limit), hand each message to the handler,
//! run due timers, and write everything queued (or put it in the wake-up's batch of replies).
//!
//! It owns the order of those steps and the flags they set (reads paused, output waiting,
//! a handler panic, a reply batched). It does not own the buffer sets (they are lent to it),
//! the slot, the timer wheel or what happens once the connection is over: it reports how
//! the socket stands, and the connection (`peer`) decides.

use std::io;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::time::Instant;

use tickwire_codec::ws::{
    Buffers, CloseCode, Connection, ConnectionState, Error, Message, Progress,
};

use super::marks::{End, Marks};
use super::replies::Replies;
use super::socket_io::flush;
use crate::handle::ConnId;
use crate::handler::{Conn, DisconnectKind, Handler};
use crate::transport::Transport;

/// An open connection: the codec's state and the handler's.
#[derive(Debug)]
pub(super) struct Open<S> {
    pub(super) conn: Connection,
    pub(super) state: S,
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
pub(super) enum Socket {
    /// Read until it would block.
    Open,
    /// Reading stopped: too much output queued.
    Paused,
    /// The peer ended its side (end of stream).
    Eof,
    /// An I/O error: the connection is gone.
    Failed,
}

impl Socket {
    /// How a connection that is over ends, from how its socket and its codec stand.
    pub(super) fn end(self, state: ConnectionState) -> End {
        match (self, state) {
            (Socket::Failed, _) => End::ABNORMAL,
            (_, ConnectionState::Closed) => End {
                kind: DisconnectKind::Closed,
                code: None,
            },
            (_, ConnectionState::Failed) => End::FAILED,
            // End of stream before the close handshake finished.
            _ => End::ABNORMAL,
        }
    }
}

/// What the worker lends to the serving of one connection besides its buffers.
pub(super) struct ServeLent<'w, H> {
    pub(super) handler: &'w mut H,
    /// The wake-up's batch of replies.
    pub(super) replies: &'w mut Replies,
    /// Where the slices of one vectored write are gathered when they are short
    /// (`socket_io::STAGE`).
    pub(super) stage: &'w mut Vec<u8>,
    pub(super) now: Instant,
    /// The backpressure limit: reads pause past this many bytes of queued output.
    pub(super) limit: usize,
}

/// One open connection being served: the disjoint parts of its slot, its lent buffers and
/// what the worker lends.
pub(super) struct Serving<'a, 'w, H: Handler, T> {
    pub(super) id: ConnId,
    pub(super) stream: &'a mut T,
    pub(super) open: &'a mut Open<H::State>,
    pub(super) bufs: &'a mut Buffers,
    pub(super) marks: &'a mut Marks,
    pub(super) lent: &'a mut ServeLent<'w, H>,
}

/// What the serving loop does after a write.
enum Next {
    /// The wake-up is over for this connection.
    Stop,
    /// Go round again, reading as said.
    Again(Reading),
}

impl<H: Handler, T: Transport> Serving<'_, '_, H, T> {
    /// Reads, delivers, runs due timers and writes until nothing more can be done this
    /// wake-up; how the socket stands.
    pub(super) fn run(&mut self, reading: Reading) -> Socket {
        let mut reading = reading;
        let mut socket = Socket::Open;
        // `reading` is read once per round: each round that goes on sets it afresh.
        loop {
            if !self.marks.flags.read_paused() {
                socket = self.take_input(reading, socket);
            }
            if socket == Socket::Failed {
                break;
            }
            run_due_timers(&mut self.open.conn, self.bufs, self.lent.now, self.marks);
            match self.write_output(&mut socket) {
                Next::Stop => break,
                Next::Again(next) => reading = next,
            }
        }
        socket
    }

    /// Delivers what is buffered, then reads (as `reading` says) unless that filled the
    /// output past the limit; reads pause when it does. How the socket stands (`socket` if
    /// nothing was read).
    fn take_input(&mut self, reading: Reading, socket: Socket) -> Socket {
        if self.deliver() {
            self.marks.flags.set_read_paused(true);
            return socket;
        }
        if reading == Reading::No {
            return socket;
        }
        match self.read_and_deliver(reading) {
            Socket::Paused => {
                self.marks.flags.set_read_paused(true);
                Socket::Open
            }
            socket => socket,
        }
    }

    /// Writes what is queued (or puts it in the wake-up's batch), then `on_writable` if
    /// output had waited and has drained, or resumes paused reads; what to do next.
    fn write_output(&mut self, socket: &mut Socket) -> Next {
        let flags = self.marks.flags;
        if !flags.write_waiting()
            && !flags.read_paused()
            && *socket == Socket::Open
            && self.open.conn.state() == ConnectionState::Open
            && self.lent.replies.take(
                &mut self.open.conn,
                self.bufs,
                self.id.slot(),
                self.id.generation(),
            )
        {
            // Written now, it would be the last step of the wake-up for the connection: it
            // goes in the wake-up's batched send instead (recorded written already).
            self.marks.flags.set_batched(true);
            return Next::Stop;
        }
        match flush(self.stream, &mut self.open.conn, self.bufs, self.lent.stage) {
            Ok(true) => {}
            Ok(false) => {
                self.marks.flags.set_write_waiting(true);
                return Next::Stop;
            }
            Err(_) => {
                *socket = Socket::Failed;
                return Next::Stop;
            }
        }
        // Everything is written.
        if self.marks.flags.write_waiting() {
            self.marks.flags.set_write_waiting(false);
            if !self.marks.flags.panicked() && self.open.conn.state() == ConnectionState::Open {
                self.on_writable();
                if self.open.conn.wants_write(self.bufs) {
                    return Next::Again(Reading::No);
                }
            }
        }
        if self.marks.flags.read_paused() && *socket == Socket::Open {
            // The backlog is written: parse what waited, then read what the socket holds
            // (edge-triggered: no new event would say so). Read to `WouldBlock`: the event
            // that paused may have carried the peer's FIN.
            self.marks.flags.set_read_paused(false);
            return Next::Again(Reading::ToWouldBlock);
        }
        Next::Stop
    }

    /// [`Handler::on_writable`]; a panic queues the close with 1011.
    fn on_writable(&mut self) {
        let mut conn = Conn {
            id: self.id,
            state: &mut self.open.state,
            sender: self.open.conn.sender(self.bufs),
        };
        let handler = &mut *self.lent.handler;
        if !guarded(|| handler.on_writable(&mut conn)) {
            panicked(self.marks, &mut conn);
        }
    }

    /// Parses the buffered bytes and hands each text or binary message to the handler. True
    /// when it stopped early because more than the limit of output is queued (the rest
    /// stays buffered).
    fn deliver(&mut self) -> bool {
        let (open, bufs, marks) = (&mut *self.open, &mut *self.bufs, &mut *self.marks);
        loop {
            match open.conn.advance(bufs) {
                Ok(Progress::Ready) => {}
                Ok(Progress::Closed) => {
                    // The peer's close (answered by the codec) or the end of our own close
                    // handshake: the handler hears of it once, in `on_close`.
                    marks.record(End {
                        kind: DisconnectKind::Closed,
                        code: open.conn.peer_close(bufs).map(|f| f.code),
                    });
                    return false;
                }
                Ok(_) => return false,
                Err(error) => {
                    failed(marks, &error);
                    return false;
                }
            }
            match open.conn.message_with_sender(bufs) {
                Ok((message @ (Message::Text(_) | Message::Binary(_)), sender)) => {
                    if !marks.flags.panicked() {
                        let mut conn = Conn {
                            id: self.id,
                            state: &mut open.state,
                            sender,
                        };
                        let handler = &mut *self.lent.handler;
                        if !guarded(|| handler.on_message(&mut conn, message)) {
                            panicked(marks, &mut conn);
                        }
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    failed(marks, &error);
                    return false;
                }
            }
            if bufs.queued() > self.lent.limit {
                return true;
            }
        }
    }

    /// Reads until the socket would block, delivering after each read.
    fn read_and_deliver(&mut self, reading: Reading) -> Socket {
        let short_read_drains = T::SHORT_READ_DRAINS && reading == Reading::Readable;
        loop {
            let spare = self.open.conn.spare(self.bufs);
            let asked = spare.len();
            match self.stream.read(spare) {
                Ok(0) => return Socket::Eof,
                Ok(n) => {
                    self.open.conn.filled(self.bufs, n, self.lent.now);
                    if self.deliver() {
                        return Socket::Paused;
                    }
                    if n < asked && short_read_drains {
                        return Socket::Open;
                    }
                    if !matches!(
                        self.open.conn.state(),
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
}

/// Runs a callback; a panic is caught and reported as `false`.
pub(super) fn guarded(f: impl FnOnce()) -> bool {
    catch_unwind(AssertUnwindSafe(f)).is_ok()
}

/// Records a handler panic and queues a close with 1011; no more callbacks.
pub(super) fn panicked<S>(marks: &mut Marks, conn: &mut Conn<'_, S>) {
    marks.flags.set_panicked();
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

/// Runs the connection's timers if one is due (keepalive ping, pong, idle, close timeout).
fn run_due_timers(conn: &mut Connection, bufs: &mut Buffers, now: Instant, marks: &mut Marks) {
    if conn.poll_timeout().is_some_and(|at| at <= now) {
        match conn.handle_timeout(bufs, now) {
            Ok(()) => {}
            Err(Error::CloseTimeout) => marks.record(End::FAILED),
            Err(_) => {
                marks.record(End {
                    kind: DisconnectKind::Failed,
                    code: Some(CloseCode::GOING_AWAY),
                });
            }
        }
    }
}
