//! The poll functions that move a whole [`WebSocket`]'s bytes over a [`Transport`] (its
//! [`Socket`](tickwire_core::ws::Socket) holds the connection and its [`Buffers`];
//! [`CoreState`] what the driver keeps between polls), and the [`TransportState`] that a whole
//! connection and a split writer both keep. None of it owns a runtime object beyond the
//! timer: only what a poll needs to be resumed after any cancellation.
//!
//! Every poll leaves the connection consistent at each `Pending`: bytes read are recorded
//! with [`Connection::filled`] in the same poll that read them, bytes written with
//! [`Connection::advance_output`] in the poll that wrote them, and a parsed message stays
//! parsed (`ready`) until it is taken. A future dropped between polls therefore loses
//! nothing and writes nothing it did not record.
//!
//! Writes take a `&Waker` of their own: a split reader writes owed control frames with a
//! waker that wakes both halves (see `split`), so neither half's write waker replaces the
//! other's in the socket's registration.

use std::io::{ErrorKind, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, Waker, ready};

use tokio::io::ReadBuf;
use tokio::time::Sleep;

use tickwire_codec::ws::{
    Buffers, Connection, ConnectionState, Message, Progress, Role, Sender, WriteHalf,
};
use tickwire_core::Error;

use crate::{Transport, WebSocket};

/// What the driver keeps of a connection between polls, beside its
/// [`Socket`](tickwire_core::ws::Socket).
#[derive(Debug)]
pub(crate) struct CoreState {
    /// `advance` returned `Ready` and the message was not taken yet: a `recv` dropped after
    /// parsing leaves it for the next one.
    pub(crate) ready: bool,
    pub(crate) transport: TransportState,
}

impl CoreState {
    pub(crate) fn new(role: Role) -> Self {
        Self {
            ready: false,
            transport: TransportState::new(role),
        }
    }
}

/// Where the transport is, apart from the connection: kept by a whole connection's [`Core`]
/// and by a split connection's writer.
#[derive(Debug)]
pub(crate) struct TransportState {
    pub(crate) role: Role,
    /// The server shut its write side after the close handshake (or the transport failed).
    closed: bool,
    /// Nothing is left to do on the transport: it failed, the peer vanished, or `finish` ran.
    pub(crate) done: bool,
}

/// A connection's queued output as the write loop sees it: a whole connection's
/// ([`Queue`]) or a split writer's ([`WriteHalf`]).
pub(crate) trait Outgoing {
    fn wants_write(&self) -> bool;
    fn data_run(&self) -> Option<&[u8]>;
    fn output_vectored<'b>(&'b self, slices: &mut [IoSlice<'b>]) -> usize;
    fn advance_output(&mut self, n: usize);
    fn should_close_transport(&self) -> bool;
}

/// A whole connection's output: the connection and its buffers.
pub(crate) struct Queue<'a> {
    conn: &'a mut Connection,
    bufs: &'a mut Buffers,
}

impl Outgoing for Queue<'_> {
    #[inline]
    fn wants_write(&self) -> bool {
        self.conn.wants_write(self.bufs)
    }

    #[inline]
    fn data_run(&self) -> Option<&[u8]> {
        self.conn.data_run(self.bufs)
    }

    #[inline]
    fn output_vectored<'b>(&'b self, slices: &mut [IoSlice<'b>]) -> usize {
        self.conn.output_vectored(self.bufs, slices)
    }

    #[inline]
    fn advance_output(&mut self, n: usize) {
        self.conn.advance_output(self.bufs, n);
    }

    fn should_close_transport(&self) -> bool {
        self.conn.should_close_transport(self.bufs)
    }
}

impl Outgoing for WriteHalf {
    #[inline]
    fn wants_write(&self) -> bool {
        WriteHalf::wants_write(self)
    }

    #[inline]
    fn data_run(&self) -> Option<&[u8]> {
        WriteHalf::data_run(self)
    }

    #[inline]
    fn output_vectored<'b>(&'b self, slices: &mut [IoSlice<'b>]) -> usize {
        WriteHalf::output_vectored(self, slices)
    }

    #[inline]
    fn advance_output(&mut self, n: usize) {
        WriteHalf::advance_output(self, n);
    }

    fn should_close_transport(&self) -> bool {
        WriteHalf::should_close_transport(self)
    }
}

/// The connection's timer: one `Sleep`, allocated at the first deadline the codec's
/// [`Connection::poll_timeout`] sets (a connection with no timer never needs tokio's time
/// driver) and re-armed in place when the deadline moves.
#[derive(Debug, Default)]
pub(crate) struct Timer {
    sleep: Option<Pin<Box<Sleep>>>,
    armed: Option<std::time::Instant>,
}

impl Timer {
    /// Ready once `at` (a codec instant, on tokio's clock) has passed.
    pub(crate) fn poll_at(&mut self, at: std::time::Instant, cx: &mut Context<'_>) -> Poll<()> {
        let deadline = tokio::time::Instant::from_std(at);
        let sleep = self
            .sleep
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if self.armed != Some(at) {
            sleep.as_mut().reset(deadline);
            self.armed = Some(at);
        }
        sleep.as_mut().poll(cx)
    }
}

/// Now on tokio's clock (paused and advanced in tests), as the codec's `Instant`.
pub(crate) fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

impl<S: Transport> WebSocket<S> {
    /// The connection's output, the stream and the transport's state, for
    /// [`TransportState`]'s write loop.
    #[inline(always)]
    fn queue(&mut self) -> (Queue<'_>, &mut S, &mut TransportState) {
        let parts = self.socket.parts_mut();
        let queue = Queue {
            conn: parts.connection,
            bufs: parts.buffers,
        };
        (queue, parts.stream, &mut self.state.transport)
    }

    /// Reads until a message is ready (`Progress::Ready`: take it with
    /// [`take_message`](Self::take_message)) or the close handshake is over
    /// (`Progress::Closed`). Writes what is owed on the way (pongs, the close reply, keepalive
    /// pings), and runs the codec's timers with the connection's timer. Never returns
    /// `Progress::NeedMore`.
    ///
    /// A message already in the buffer is the common case in a stream of small messages: it
    /// is answered here, inline; everything else (reads, writes, timers, the close, errors)
    /// goes to [`poll_fill_slow`](Self::poll_fill_slow) with what `advance` said. Measured with
    /// callgrind over an in-memory stream of 128 B text frames: 393 instructions per message,
    /// against 431 with the whole loop out of line (its prologue and epilogue every time) and
    /// 379 for the blocking transport. `#[inline]` alone left this function out of line in
    /// the receive futures (its `Result` returned through memory): always inlined, the bench's
    /// 128 B stream over loopback went from 264 to 228 instructions per message, the blocking
    /// transport's loop being 240.
    #[inline(always)]
    pub(crate) fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<Result<Progress, Error>> {
        let mut advanced = None;
        if !self.state.ready {
            let parts = self.socket.parts_mut();
            match parts.connection.advance(parts.buffers) {
                Ok(Progress::Ready) => self.state.ready = true,
                // The loop asks again: with nothing buffered (a wake-up before the read that
                // brings the bytes) `advance` answers inline, cheaper than handing the
                // answer over through memory.
                Ok(Progress::NeedMore) => {}
                other => advanced = Some(other),
            }
        }
        if self.state.ready {
            return Poll::Ready(Ok(Progress::Ready));
        }
        let mut failure = None;
        match self.poll_fill_slow(cx, advanced, &mut failure) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(progress) => Poll::Ready(match failure {
                Some(error) => Err(error),
                None => Ok(progress),
            }),
        }
    }

    /// [`poll_fill_loop`](Self::poll_fill_loop) out of line, its error put in `failure` so
    /// that what it returns fits a register. Returned through memory, the `Result` was
    /// written in one layout and read in another where the fast path's joins it: a failed
    /// store-to-load forward on every message (bench/results/issue-16-earlier.md).
    #[inline(never)]
    fn poll_fill_slow(
        &mut self,
        cx: &mut Context<'_>,
        advanced: Option<Result<Progress, tickwire_codec::ws::Error>>,
        failure: &mut Option<Error>,
    ) -> Poll<Progress> {
        match self.poll_fill_loop(cx, advanced) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Ok(progress)) => Poll::Ready(progress),
            Poll::Ready(Err(error)) => {
                *failure = Some(error);
                Poll::Ready(Progress::NeedMore)
            }
        }
    }

    /// [`poll_fill`](Self::poll_fill)'s loop. `advanced` is the result of an `advance` the
    /// caller already made (used instead of advancing again: an error is reported once).
    #[inline(always)]
    fn poll_fill_loop(
        &mut self,
        cx: &mut Context<'_>,
        mut advanced: Option<Result<Progress, tickwire_codec::ws::Error>>,
    ) -> Poll<Result<Progress, Error>> {
        loop {
            if !self.state.ready {
                let progress = match advanced.take() {
                    Some(progress) => progress,
                    None => {
                        let parts = self.socket.parts_mut();
                        parts.connection.advance(parts.buffers)
                    }
                };
                match progress {
                    Ok(Progress::Ready) => self.state.ready = true,
                    Ok(Progress::Closed) => {
                        // The peer's close was answered: the reply goes out before the close
                        // is returned, so the peer is not kept waiting on the caller.
                        ready!(self.poll_close_transport(cx.waker()));
                        return Poll::Ready(Ok(Progress::Closed));
                    }
                    Ok(Progress::NeedMore) => {}
                    Err(e) => return Poll::Ready(Err(self.failed(cx.waker(), e))),
                }
            }
            if self.state.ready {
                return Poll::Ready(Ok(Progress::Ready));
            }
            // About to wait for the peer: write what is owed. A full socket is no reason
            // to stop reading; the bytes stay queued.
            if self.connection().wants_write(self.buffers())
                && let Poll::Ready(Err(e)) = self.poll_write_out(cx.waker())
            {
                return Poll::Ready(Err(e));
            }
            // The clock is read only when a deadline is set (no keepalive, idle or close
            // timer: no read at all).
            if let Some(at) = self.connection().poll_timeout()
                && (at <= now() || self.timer.poll_at(at, cx).is_ready())
            {
                let parts = self.socket.parts_mut();
                if let Err(e) = parts.connection.handle_timeout(parts.buffers, now()) {
                    return Poll::Ready(Err(self.failed(cx.waker(), e)));
                }
                continue;
            }
            let parts = self.socket.parts_mut();
            let mut buf = ReadBuf::new(parts.connection.spare(parts.buffers));
            match Pin::new(&mut *parts.stream).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) => {
                    let n = buf.filled().len();
                    if n == 0 {
                        return Poll::Ready(self.end_of_stream());
                    }
                    let parts = self.socket.parts_mut();
                    parts.connection.filled_with(parts.buffers, n, now);
                }
                Poll::Ready(Err(e)) if e.kind() == ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(self.io_failed(e))),
            }
        }
    }

    /// The message [`poll_fill`](Self::poll_fill) made ready, and the sender.
    #[inline]
    pub(crate) fn take_message(&mut self) -> Result<(Message<'_>, Sender<'_>), Error> {
        self.state.ready = false;
        // Invalid text fails here: the close frame it queues goes out on the next call.
        let parts = self.socket.parts_mut();
        parts
            .connection
            .message_with_sender(parts.buffers)
            .map_err(Error::Protocol)
    }

    /// Writes everything queued, then flushes the stream (see
    /// [`TransportState::poll_write_out`]), with `waker` for the socket.
    #[inline]
    pub(crate) fn poll_write_out(&mut self, waker: &Waker) -> Poll<Result<(), Error>> {
        let (mut queue, stream, transport) = self.queue();
        transport.poll_write_out(&mut queue, stream, waker)
    }

    /// After the close handshake (or a failure): see [`TransportState::poll_close_transport`].
    pub(crate) fn poll_close_transport(&mut self, waker: &Waker) -> Poll<()> {
        let (mut queue, stream, transport) = self.queue();
        transport.poll_close_transport(&mut queue, stream, waker)
    }

    fn end_of_stream(&mut self) -> Result<Progress, Error> {
        let state = self.socket.connection().state();
        self.state.transport.end_of_stream(state)
    }

    /// A protocol error or timer failure: the queued close goes out if the socket takes it
    /// now (the rest is `finish`'s), and the error is returned.
    fn failed(&mut self, waker: &Waker, error: tickwire_codec::ws::Error) -> Error {
        let _ = self.poll_close_transport(waker);
        Error::Protocol(error)
    }

    /// A socket error, typed by the stream.
    fn io_failed(&mut self, error: std::io::Error) -> Error {
        self.state.transport.io_failed(self.socket.stream(), error)
    }
}

impl TransportState {
    pub(crate) fn new(role: Role) -> Self {
        Self {
            role,
            closed: false,
            done: false,
        }
    }

    /// Writes everything queued in `out`, then flushes the stream (a TLS stream's queued
    /// records). What a write took is recorded at once: a dropped flush leaves the rest
    /// queued, a partly written frame first in line, and no other frame can come between its
    /// parts.
    pub(crate) fn poll_write_out<O: Outgoing, S: Transport>(
        &mut self,
        out: &mut O,
        stream: &mut S,
        waker: &Waker,
    ) -> Poll<Result<(), Error>> {
        let mut cx = Context::from_waker(waker);
        while out.wants_write() {
            // The common queue, the connection's own frames from a frame boundary, is one
            // slice: written without building the iovec array.
            let written = match out.data_run() {
                Some(run) => Pin::new(&mut *stream).poll_write(&mut cx, run),
                None => poll_write_vectored(out, stream, &mut cx),
            };
            match ready!(written) {
                Ok(0) => {
                    return Poll::Ready(Err(self.io_failed_ref(ErrorKind::WriteZero.into(), None)));
                }
                Ok(n) => out.advance_output(n),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => {
                    let failure = stream.failure();
                    return Poll::Ready(Err(self.io_failed_ref(e, failure)));
                }
            }
        }
        match ready!(Pin::new(&mut *stream).poll_flush(&mut cx)) {
            Ok(()) => Poll::Ready(Ok(())),
            Err(e) => Poll::Ready(Err(self.io_failed(stream, e))),
        }
    }

    /// After the close handshake (or a failure): writes what is owed, then the server
    /// closes its write direction (RFC 6455 §7.1.1: the server closes TCP first; over TLS
    /// after close_notify). Best effort: a failed write ends the transport.
    pub(crate) fn poll_close_transport<O: Outgoing, S: Transport>(
        &mut self,
        out: &mut O,
        stream: &mut S,
        waker: &Waker,
    ) -> Poll<()> {
        if self.closed || self.done {
            return Poll::Ready(());
        }
        if out.wants_write() && ready!(self.poll_write_out(out, stream, waker)).is_err() {
            self.closed = true;
            return Poll::Ready(());
        }
        if out.should_close_transport() {
            if self.role == Role::Server {
                let _ =
                    ready!(Pin::new(&mut *stream).poll_shutdown(&mut Context::from_waker(waker)));
            }
            self.closed = true;
        }
        Poll::Ready(())
    }

    /// The peer closed TCP: the end of the close handshake after our close (`state` is
    /// `CloseSent`), else a connection that vanished.
    pub(crate) fn end_of_stream(&mut self, state: ConnectionState) -> Result<Progress, Error> {
        if state == ConnectionState::CloseSent {
            // The peer closed TCP after our close without replying: done.
            Ok(Progress::Closed)
        } else {
            self.done = true;
            Err(Error::UnexpectedEof)
        }
    }

    /// A socket error, typed by the stream. After anything but a timeout the transport is
    /// unusable.
    pub(crate) fn io_failed<S: Transport>(&mut self, stream: &S, error: std::io::Error) -> Error {
        let failure = stream.failure();
        self.io_failed_ref(error, failure)
    }

    /// A socket error with what the stream knew about it (its [`Transport::failure`]).
    pub(crate) fn io_failed_ref(
        &mut self,
        error: std::io::Error,
        failure: Option<tickwire_core::TransportError>,
    ) -> Error {
        if !matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            self.done = true;
        }
        failure
            .unwrap_or(tickwire_core::TransportError::Io(error))
            .into()
    }
}

/// One write of what is queued when it is not one run of own frames (control or shared
/// frames among them, a frame partly written, the close): vectored where the stream
/// supports it.
#[inline(never)]
fn poll_write_vectored<O: Outgoing, S: Transport>(
    out: &O,
    stream: &mut S,
    cx: &mut Context<'_>,
) -> Poll<std::io::Result<usize>> {
    let mut slices = [IoSlice::new(&[]); 8];
    let filled = out.output_vectored(&mut slices);
    let vectored = stream.is_write_vectored();
    let pinned = Pin::new(&mut *stream);
    match &slices[..filled] {
        [one, ..] if filled == 1 || !vectored => pinned.poll_write(cx, one),
        several => pinned.poll_write_vectored(cx, several),
    }
}
