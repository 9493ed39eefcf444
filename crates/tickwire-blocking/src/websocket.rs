//! [`WebSocket`]: a sans-IO [`Connection`] driven over a blocking [`Transport`].
//!
//! Owns the read loop (read into the connection's buffer, run its timers through the socket
//! read timeout) and writing queued output. Sends only queue: nothing is written until
//! [`WebSocket::flush`], a `*_now` helper, or a receive call that is about to block (which
//! first writes what is queued, so owed pongs and a request the caller is waiting on go out).
//! Ending a connection blocks only in [`WebSocket::finish`]; dropping one never blocks.

use std::io::{self, ErrorKind, IoSlice};
use std::time::{Duration, Instant};

use tickwire_codec::ws::{
    Buffers, CloseCode, Connection, ConnectionState, Message, Progress, Role, Sender,
};

use tickwire_core::ws::{Opened, Socket};

use crate::{Error, Recv, Transport};

/// A WebSocket connection over a blocking stream.
///
/// The calls that only queue (`send_text`, `send_binary`, `ping`, `sender`, ...) and the
/// accessors (`connection`, `stream`, `subprotocol`, `set_read_timeout`, ...) are
/// [`Socket`]'s, which this dereferences to; receiving, writing and ending the connection are
/// here.
///
/// Dropping it never blocks: the socket is closed as it is, without a close frame if none was
/// sent (the peer sees code 1006). To end a connection properly, call
/// [`finish`](Self::finish), which completes the close handshake and closes the transport.
#[derive(Debug)]
pub struct WebSocket<S: Transport> {
    socket: Socket<S>,
    state: State,
}

/// What the blocking driver keeps beside the [`Socket`].
#[derive(Debug)]
struct State {
    role: Role,
    /// Read timeout currently set on the stream, to avoid a syscall per read.
    applied_timeout: Option<Option<Duration>>,
    transport_closed: bool,
    /// Nothing is left to do on the transport: a read or write failed (not a timeout), the
    /// peer vanished, or [`WebSocket::finish`] ran.
    transport_done: bool,
}

impl<S: Transport> std::ops::Deref for WebSocket<S> {
    type Target = Socket<S>;

    #[inline(always)]
    fn deref(&self) -> &Socket<S> {
        &self.socket
    }
}

impl<S: Transport> std::ops::DerefMut for WebSocket<S> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Socket<S> {
        &mut self.socket
    }
}

impl<S: Transport> WebSocket<S> {
    /// Wraps a stream whose opening handshake is done. `bufs.read` holds any bytes that
    /// arrived after the handshake (see [`Buffers::with_read`]). `read_timeout` is the user's
    /// read timeout (already set on the stream or not; it is applied before the next read).
    pub fn from_parts(
        stream: S,
        conn: Connection,
        bufs: Buffers,
        role: Role,
        read_timeout: Option<Duration>,
    ) -> Self {
        Self::from_socket(Socket::new(stream, conn, bufs), role, read_timeout)
    }

    fn from_socket(mut socket: Socket<S>, role: Role, read_timeout: Option<Duration>) -> Self {
        socket.set_read_timeout(read_timeout);
        Self {
            socket,
            state: State {
                role,
                applied_timeout: None,
                transport_closed: false,
                transport_done: false,
            },
        }
    }

    /// The connection an opening handshake opened (`None`: it did not complete, an
    /// [`Error::UnexpectedEof`]).
    pub(crate) fn opened(
        stream: S,
        opened: Option<Opened>,
        role: Role,
        read_timeout: Option<Duration>,
    ) -> Result<Self, Error> {
        let opened = opened.ok_or(Error::UnexpectedEof)?;
        Ok(Self::from_socket(
            Socket::opened(stream, opened),
            role,
            read_timeout,
        ))
    }

    /// Blocks until the next message, the end of the stream or the user's read timeout.
    /// Pings are answered, and a peer's close is answered (the reply written) before it is
    /// returned, once, as [`Recv::Closed`] with its code and reason; every later call returns
    /// the same `Closed`.
    ///
    /// Returns [`Recv::Message`], [`Recv::Closed`] or, with a read timeout set,
    /// [`Recv::Timeout`]. `Err` is a failed connection: a socket error ([`Error::Io`]), a
    /// protocol error or connection timer ([`Error::Protocol`]), a TCP close without a close
    /// frame ([`Error::UnexpectedEof`]).
    #[inline]
    pub fn recv(&mut self) -> Result<Recv<'_>, Error> {
        self.recv_with_sender().map(|(recv, _)| recv)
    }

    /// Like [`recv`](Self::recv), and also lends the [`Sender`] so a reply (an echo, a pong,
    /// an order) can be queued while the message is still borrowed, with no copy.
    #[inline]
    pub fn recv_with_sender(&mut self) -> Result<(Recv<'_>, Sender<'_>), Error> {
        match self.fill(true)? {
            Progress::Ready => self
                .take_message()
                .map(|(message, sender)| (Recv::Message(message), sender)),
            Progress::Closed => {
                let s = self.socket.parts_mut();
                let (frame, sender) = s.connection.peer_close_with_sender(s.buffers);
                Ok((Recv::Closed(frame), sender))
            }
            Progress::NeedMore => Ok((Recv::Timeout, self.sender())),
        }
    }

    /// Returns a buffered or readable message without blocking: on a non-blocking stream,
    /// [`Recv::WouldBlock`] when nothing can be read now.
    #[inline]
    pub fn try_recv(&mut self) -> Result<Recv<'_>, Error> {
        match self.fill(false)? {
            Progress::Ready => self
                .take_message()
                .map(|(message, _)| Recv::Message(message)),
            Progress::Closed => Ok(Recv::Closed(self.connection().peer_close(self.buffers()))),
            Progress::NeedMore => Ok(Recv::WouldBlock),
        }
    }

    /// Queues a text message and writes everything queued.
    pub fn send_text_now(&mut self, text: &str) -> Result<(), Error> {
        self.send_text(text)?;
        self.flush()
    }

    /// Queues a binary message and writes everything queued.
    pub fn send_binary_now(&mut self, payload: &[u8]) -> Result<(), Error> {
        self.send_binary(payload)?;
        self.flush()
    }

    /// Writes everything queued.
    pub fn flush(&mut self) -> Result<(), Error> {
        while self.connection().wants_write(self.buffers()) {
            // The common queue, the connection's own frames from a frame boundary, is one
            // slice: written without building the iovec array.
            let s = self.socket.parts_mut();
            let written = match s.connection.data_run(s.buffers) {
                Some(run) => s.stream.write(run),
                None => self.write_vectored(),
            };
            let n = match written {
                Ok(0) => return Err(self.io_failed(ErrorKind::WriteZero.into())),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io_failed(e)),
            };
            let s = self.socket.parts_mut();
            s.connection.advance_output(s.buffers, n);
        }
        if let Err(e) = self.stream_mut().flush() {
            return Err(self.io_failed(e));
        }
        Ok(())
    }

    /// One write of what is queued when it is not one run of own frames (control or shared
    /// frames among them, a frame partly written, the close).
    #[inline(never)]
    fn write_vectored(&mut self) -> std::io::Result<usize> {
        let mut slices = [IoSlice::new(&[]); 8];
        let s = self.socket.parts_mut();
        let filled = s.connection.output_vectored(s.buffers, &mut slices);
        match &slices[..filled] {
            [one] => s.stream.write(one),
            several => s.stream.write_vectored(several),
        }
    }

    /// Starts the close handshake with `code` and `reason` (≤ 123 bytes) and writes it, without
    /// waiting for the reply. Keep calling [`recv`](Self::recv) to take the messages still in
    /// flight until it returns [`Recv::Closed`] (the peer's reply) or a close timeout error,
    /// then call [`finish`](Self::finish); or call `finish` at once to drop them.
    pub fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), Error> {
        let s = self.socket.parts_mut();
        s.connection
            .close(s.buffers, code, reason, Instant::now())?;
        self.flush()
    }

    /// Ends the connection: completes the close handshake and closes the transport, blocking
    /// for about the connection's close timeout at most (`Config::close_timeout`, default
    /// 5 s). This is the blocking part of ending a connection, which `Drop` never does.
    ///
    /// - If no close was sent, sends close 1000 (call [`close`](Self::close) first for another
    ///   code or a reason).
    /// - Reads until the peer's close arrives, dropping messages still in flight (to read
    ///   them, call `recv` until [`Recv::Closed`] first). A peer that does not answer within
    ///   the close timeout gives `Err(Error::Protocol(CloseTimeout))`.
    /// - Writes what is owed, then, on the server side, closes the write direction (the server
    ///   closes TCP first, RFC 6455 §7.1.1; over TLS, after close_notify).
    /// - Reads and discards until the peer closes TCP (the client waits for the server to,
    ///   as §7.1.1 asks, then closes its write direction). Closing a socket with unread input
    ///   makes the kernel send RST, which can destroy our close frame in the peer's receive
    ///   queue.
    ///
    /// Writes are bounded by the close timeout too (it replaces the stream's write timeout).
    /// On a connection that already failed (an `Err` from an earlier call), it writes the close
    /// frame owed and closes the transport the same way, and returns `Ok`: the failure was
    /// reported by the call that saw it. After a socket error or a peer that vanished
    /// ([`Error::UnexpectedEof`]) there is nothing left to send: it returns `Ok` at once.
    /// Calling it again does nothing more. Meant for a blocking stream; on a non-blocking one
    /// the wait for the reply spins.
    pub fn finish(&mut self) -> Result<(), Error> {
        if self.state.transport_done {
            return Ok(());
        }
        let close_timeout = self.connection().config().close_timeout;
        let deadline = Instant::now() + close_timeout;
        let _ = self.stream_mut().set_write_timeout(Some(close_timeout));
        let result = self.complete_close_handshake();
        self.finish_transport();
        if self.connection().drains_before_close() {
            self.drain_until_eof(deadline);
        }
        if self.state.role == Role::Client {
            // The client's side, once the server has closed TCP (or did not in time).
            let _ = self.stream_mut().shutdown_write();
        }
        self.state.transport_done = true;
        result
    }

    /// Reads until a message is ready, the close handshake completes, or the stream has
    /// nothing more (non-blocking, or the user's read timeout expired).
    ///
    /// The front, a message already buffered, is inlined into `recv` so the message goes to
    /// the caller in registers; reading, timers and errors are out of line.
    #[inline(always)]
    fn fill(&mut self, blocking: bool) -> Result<Progress, Error> {
        let s = self.socket.parts_mut();
        match s.connection.advance(s.buffers) {
            Ok(Progress::Ready) => Ok(Progress::Ready),
            advanced => self.fill_slow(blocking, advanced),
        }
    }

    /// [`fill`](Self::fill) past its front: `advanced` is what the connection said about the
    /// bytes already buffered.
    #[inline(never)]
    fn fill_slow(
        &mut self,
        blocking: bool,
        mut advanced: Result<Progress, tickwire_codec::ws::Error>,
    ) -> Result<Progress, Error> {
        loop {
            match advanced {
                Ok(Progress::Ready) => return Ok(Progress::Ready),
                Ok(Progress::Closed) => {
                    // The peer's close was answered: write the reply now so the peer is not
                    // kept waiting on the caller.
                    let _ = self.flush();
                    self.finish_transport();
                    return Ok(Progress::Closed);
                }
                Ok(Progress::NeedMore) => {}
                Err(e) => return Err(self.failed(e)),
            }
            // About to wait for the peer: write what is owed first.
            self.flush()?;
            if self.connection().state() == ConnectionState::Closed {
                let s = self.socket.parts_mut();
                advanced = s.connection.advance(s.buffers);
                continue;
            }
            self.apply_read_timeout()?;
            let s = self.socket.parts_mut();
            let read = s.stream.read(s.connection.spare(s.buffers));
            match read {
                Ok(0) => {
                    return if self.connection().state() == ConnectionState::CloseSent {
                        // The peer closed TCP after our close without replying: done.
                        Ok(Progress::Closed)
                    } else {
                        self.state.transport_done = true;
                        Err(Error::UnexpectedEof)
                    };
                }
                // The clock is read only when a timer counts from the last bytes received.
                Ok(n) => {
                    let s = self.socket.parts_mut();
                    s.connection.filled_with(s.buffers, n, Instant::now);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    let now = Instant::now();
                    let timer_due = self.connection().poll_timeout().is_some_and(|at| at <= now);
                    if timer_due {
                        let s = self.socket.parts_mut();
                        if let Err(error) = s.connection.handle_timeout(s.buffers, now) {
                            return Err(self.failed(error));
                        }
                    } else if !blocking || self.read_timeout().is_some() {
                        // Would-block or the user's read timeout: nothing now, not an error.
                        return Ok(Progress::NeedMore);
                    }
                }
                Err(e) => return Err(self.io_failed(e)),
            }
            let s = self.socket.parts_mut();
            advanced = s.connection.advance(s.buffers);
        }
    }

    #[inline(always)]
    fn take_message(&mut self) -> Result<(Message<'_>, Sender<'_>), Error> {
        // Invalid text fails here, after the borrow-free part: the close frame it queues is
        // written by the next call on this connection, or when it is dropped.
        let s = self.socket.parts_mut();
        s.connection
            .message_with_sender(s.buffers)
            .map_err(Error::Protocol)
    }

    /// A protocol error or timer failure: send the queued close (best effort), close the
    /// transport, and return the error.
    fn failed(&mut self, error: tickwire_codec::ws::Error) -> Error {
        let _ = self.flush();
        self.finish_transport();
        Error::Protocol(error)
    }

    fn finish_transport(&mut self) {
        if self.state.transport_closed {
            return;
        }
        if !self.state.transport_closed && self.connection().should_close_transport(self.buffers())
        {
            self.state.transport_closed = true;
            if self.state.role == Role::Server {
                let _ = self.stream_mut().shutdown_write();
            }
        }
    }

    /// A socket error. After anything but a timeout the transport is unusable, and
    /// [`finish`](Self::finish) has nothing left to do on it.
    fn io_failed(&mut self, error: io::Error) -> Error {
        if !matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            self.state.transport_done = true;
        }
        crate::stream::io_error(self.stream(), error).into()
    }

    /// [`finish`](Self::finish)'s handshake part: sends a close if none was, and reads until
    /// the peer's close (or the close timer fails the connection).
    fn complete_close_handshake(&mut self) -> Result<(), Error> {
        match self.connection().state() {
            ConnectionState::Open => self.close(CloseCode::NORMAL, "")?,
            ConnectionState::Failed => {
                // The failure was returned already; what is left is the close frame owed.
                let _ = self.flush();
                return Ok(());
            }
            _ => {}
        }
        // Only the close timer bounds this wait, not the user's read timeout.
        self.set_read_timeout(None);
        loop {
            match self.fill(true)? {
                Progress::Ready => {
                    self.take_message()?;
                }
                Progress::Closed => return self.flush(),
                Progress::NeedMore => {}
            }
        }
    }

    /// Reads and discards until the peer closes or `deadline` passes. Closing a socket with
    /// unread input makes the kernel send RST, which can destroy our close frame in the
    /// peer's receive queue; draining first lets the FIN and the close frame arrive intact.
    fn drain_until_eof(&mut self, deadline: Instant) {
        // The stream's read timeout changes below: set it again before any later read.
        self.state.applied_timeout = None;
        let mut sink = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stream_mut().set_read_timeout(Some(left)).is_err() {
                return;
            }
            match self.stream_mut().read(&mut sink) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return,
            }
        }
    }

    /// Sets the stream's read timeout to the earlier of the user's timeout and the next
    /// connection timer, touching the socket only when the value changes.
    fn apply_read_timeout(&mut self) -> io::Result<()> {
        let timer = self.connection().poll_timeout().map(|at| {
            at.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        });
        let wanted = match (timer, self.read_timeout()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if self.state.applied_timeout != Some(wanted) {
            self.stream_mut().set_read_timeout(wanted)?;
            self.state.applied_timeout = Some(wanted);
        }
        Ok(())
    }
}
