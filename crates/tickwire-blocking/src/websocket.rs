//! [`WebSocket`]: a sans-IO [`Connection`] driven over a blocking [`Transport`].
//!
//! Owns the read loop (read into the connection's buffer, run its timers through the socket
//! read timeout) and writing queued output. Sends only queue: nothing is written until
//! [`WebSocket::flush`], a `*_now` helper, or a receive call that is about to block (which
//! first writes what is queued, so owed pongs and a request the caller is waiting on go out).
//! Ending a connection blocks only in [`WebSocket::finish`]; dropping one never blocks.

use std::io::{self, ErrorKind, IoSlice};
use std::time::{Duration, Instant};

#[cfg(feature = "deflate")]
use tickwire_codec::deflate::DeflateParams;
#[cfg(feature = "deflate")]
use tickwire_codec::ws::PreparedMessage;
use tickwire_codec::ws::{
    Buffers, CloseCode, Compression, Connection, ConnectionState, Message, OpCode, Progress, Role,
    Sender, SharedFrame,
};

use tickwire_core::ws::Opened;

use crate::{Error, Recv, Transport};

/// A WebSocket connection over a blocking stream.
///
/// Dropping it never blocks: the socket is closed as it is, without a close frame if none was
/// sent (the peer sees code 1006). To end a connection properly, call
/// [`finish`](Self::finish), which completes the close handshake and closes the transport.
#[derive(Debug)]
pub struct WebSocket<S: Transport> {
    stream: S,
    conn: Connection,
    /// The connection's buffers, lent to it on every call.
    bufs: Buffers,
    role: Role,
    /// Read timeout the user asked for; connection timers may shorten a read below it.
    read_timeout: Option<Duration>,
    /// Read timeout currently set on the stream, to avoid a syscall per read.
    applied_timeout: Option<Option<Duration>>,
    transport_closed: bool,
    /// Nothing is left to do on the transport: a read or write failed (not a timeout), the
    /// peer vanished, or [`WebSocket::finish`] ran.
    transport_done: bool,
    subprotocol: Option<String>,
    #[cfg(feature = "deflate")]
    deflate: Option<DeflateParams>,
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
        Self {
            stream,
            conn,
            bufs,
            role,
            read_timeout,
            applied_timeout: None,
            transport_closed: false,
            transport_done: false,
            subprotocol: None,
            #[cfg(feature = "deflate")]
            deflate: None,
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
        let mut ws = Self::from_parts(
            stream,
            opened.connection,
            opened.buffers,
            role,
            read_timeout,
        );
        ws.subprotocol = opened.subprotocol;
        #[cfg(feature = "deflate")]
        {
            ws.deflate = opened.deflate;
        }
        Ok(ws)
    }

    /// The permessage-deflate parameters in force, or `None` when it was not negotiated.
    #[cfg(feature = "deflate")]
    pub fn deflate(&self) -> Option<&DeflateParams> {
        self.deflate.as_ref()
    }

    /// The subprotocol the opening handshake selected, if any.
    pub fn subprotocol(&self) -> Option<&str> {
        self.subprotocol.as_deref()
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
                let (frame, sender) = self.conn.peer_close_with_sender(&mut self.bufs);
                Ok((Recv::Closed(frame), sender))
            }
            Progress::NeedMore => Ok((Recv::Timeout, self.conn.sender(&mut self.bufs))),
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
            Progress::Closed => Ok(Recv::Closed(self.conn.peer_close(&self.bufs))),
            Progress::NeedMore => Ok(Recv::WouldBlock),
        }
    }

    /// Queues a text message (not written until [`flush`](Self::flush)).
    pub fn send_text(&mut self, text: &str) -> Result<(), Error> {
        Ok(self.conn.sender(&mut self.bufs).text(text)?)
    }

    /// Queues a binary message.
    pub fn send_binary(&mut self, payload: &[u8]) -> Result<(), Error> {
        Ok(self.conn.sender(&mut self.bufs).binary(payload)?)
    }

    /// Queues a text message, overriding the permessage-deflate policy for this one message
    /// (`Compression::Never` for a latency-critical order, `Always` for a snapshot).
    pub fn send_text_with(&mut self, text: &str, compression: Compression) -> Result<(), Error> {
        Ok(self.conn.sender(&mut self.bufs).message_with(
            OpCode::Text,
            text.as_bytes(),
            compression,
        )?)
    }

    /// Queues a binary message, overriding the permessage-deflate policy for this one
    /// message.
    pub fn send_binary_with(
        &mut self,
        payload: &[u8],
        compression: Compression,
    ) -> Result<(), Error> {
        Ok(self
            .conn
            .sender(&mut self.bufs)
            .message_with(OpCode::Binary, payload, compression)?)
    }

    /// Queues a message compressed once for many connections (see [`PreparedMessage`]).
    #[cfg(feature = "deflate")]
    pub fn send_prepared(&mut self, message: &PreparedMessage) -> Result<(), Error> {
        Ok(self.conn.sender(&mut self.bufs).prepared(message)?)
    }

    /// Queues a frame encoded once for many connections, by reference: no copy of its bytes
    /// per connection (see [`SharedFrame`]); [`flush`](Self::flush) writes it with the
    /// connection's own frames in one vectored write.
    pub fn send_shared(&mut self, frame: &SharedFrame) -> Result<(), Error> {
        Ok(self.conn.sender(&mut self.bufs).shared(frame)?)
    }

    /// Queues a ping (at most 125 bytes).
    pub fn ping(&mut self, payload: &[u8]) -> Result<(), Error> {
        Ok(self.conn.sender(&mut self.bufs).ping(payload)?)
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

    /// The sending half, to queue several messages before one flush.
    pub fn sender(&mut self) -> Sender<'_> {
        self.conn.sender(&mut self.bufs)
    }

    /// Writes everything queued.
    pub fn flush(&mut self) -> Result<(), Error> {
        while self.conn.wants_write(&self.bufs) {
            // The common queue, the connection's own frames from a frame boundary, is one
            // slice: written without building the iovec array.
            let written = match self.conn.data_run(&self.bufs) {
                Some(run) => self.stream.write(run),
                None => self.write_vectored(),
            };
            let n = match written {
                Ok(0) => return Err(self.io_failed(ErrorKind::WriteZero.into())),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io_failed(e)),
            };
            self.conn.advance_output(&mut self.bufs, n);
        }
        if let Err(e) = self.stream.flush() {
            return Err(self.io_failed(e));
        }
        Ok(())
    }

    /// One write of what is queued when it is not one run of own frames (control or shared
    /// frames among them, a frame partly written, the close).
    #[inline(never)]
    fn write_vectored(&mut self) -> std::io::Result<usize> {
        let mut slices = [IoSlice::new(&[]); 8];
        let filled = self.conn.output_vectored(&self.bufs, &mut slices);
        match &slices[..filled] {
            [one] => self.stream.write(one),
            several => self.stream.write_vectored(several),
        }
    }

    /// Starts the close handshake with `code` and `reason` (≤ 123 bytes) and writes it, without
    /// waiting for the reply. Keep calling [`recv`](Self::recv) to take the messages still in
    /// flight until it returns [`Recv::Closed`] (the peer's reply) or a close timeout error,
    /// then call [`finish`](Self::finish); or call `finish` at once to drop them.
    pub fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), Error> {
        self.conn
            .close(&mut self.bufs, code, reason, Instant::now())?;
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
        if self.transport_done {
            return Ok(());
        }
        let close_timeout = self.conn.config().close_timeout;
        let deadline = Instant::now() + close_timeout;
        let _ = self.stream.set_write_timeout(Some(close_timeout));
        let result = self.complete_close_handshake();
        self.finish_transport();
        self.drain_until_eof(deadline);
        if self.role == Role::Client {
            // The client's side, once the server has closed TCP (or did not in time).
            let _ = self.stream.shutdown_write();
        }
        self.transport_done = true;
        result
    }

    /// The sans-IO connection (state, configuration).
    pub fn connection(&self) -> &Connection {
        &self.conn
    }

    /// The connection's buffers (received bytes not yet parsed, queued output).
    pub fn buffers(&self) -> &Buffers {
        &self.bufs
    }

    /// The stream.
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// The stream, mutably (to change socket options).
    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Sets the user's read timeout: a [`recv`](Self::recv) that waits longer returns
    /// [`Recv::Timeout`].
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// Reads until a message is ready, the close handshake completes, or the stream has
    /// nothing more (non-blocking, or the user's read timeout expired).
    ///
    /// The front, a message already buffered, is inlined into `recv` so the message goes to
    /// the caller in registers; reading, timers and errors are out of line.
    #[inline(always)]
    fn fill(&mut self, blocking: bool) -> Result<Progress, Error> {
        match self.conn.advance(&mut self.bufs) {
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
            if self.conn.state() == ConnectionState::Closed {
                advanced = self.conn.advance(&mut self.bufs);
                continue;
            }
            self.apply_read_timeout()?;
            let read = self.stream.read(self.conn.spare(&mut self.bufs));
            match read {
                Ok(0) => {
                    return if self.conn.state() == ConnectionState::CloseSent {
                        // The peer closed TCP after our close without replying: done.
                        Ok(Progress::Closed)
                    } else {
                        self.transport_done = true;
                        Err(Error::UnexpectedEof)
                    };
                }
                // The clock is read only when a timer counts from the last bytes received.
                Ok(n) => self.conn.filled_with(&mut self.bufs, n, Instant::now),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    let now = Instant::now();
                    let timer_due = self.conn.poll_timeout().is_some_and(|at| at <= now);
                    if timer_due {
                        if let Err(error) = self.conn.handle_timeout(&mut self.bufs, now) {
                            return Err(self.failed(error));
                        }
                    } else if !blocking || self.read_timeout.is_some() {
                        // Would-block or the user's read timeout: nothing now, not an error.
                        return Ok(Progress::NeedMore);
                    }
                }
                Err(e) => return Err(self.io_failed(e)),
            }
            advanced = self.conn.advance(&mut self.bufs);
        }
    }

    #[inline(always)]
    fn take_message(&mut self) -> Result<(Message<'_>, Sender<'_>), Error> {
        // Invalid text fails here, after the borrow-free part: the close frame it queues is
        // written by the next call on this connection, or when it is dropped.
        self.conn
            .message_with_sender(&mut self.bufs)
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
        if self.transport_closed {
            return;
        }
        if !self.transport_closed && self.conn.should_close_transport(&self.bufs) {
            self.transport_closed = true;
            if self.role == Role::Server {
                let _ = self.stream.shutdown_write();
            }
        }
    }

    /// A socket error. After anything but a timeout the transport is unusable, and
    /// [`finish`](Self::finish) has nothing left to do on it.
    fn io_failed(&mut self, error: io::Error) -> Error {
        if !matches!(error.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            self.transport_done = true;
        }
        crate::stream::io_error(&self.stream, error).into()
    }

    /// [`finish`](Self::finish)'s handshake part: sends a close if none was, and reads until
    /// the peer's close (or the close timer fails the connection).
    fn complete_close_handshake(&mut self) -> Result<(), Error> {
        match self.conn.state() {
            ConnectionState::Open => self.close(CloseCode::NORMAL, "")?,
            ConnectionState::Failed => {
                // The failure was returned already; what is left is the close frame owed.
                let _ = self.flush();
                return Ok(());
            }
            _ => {}
        }
        // Only the close timer bounds this wait, not the user's read timeout.
        self.read_timeout = None;
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
        self.applied_timeout = None;
        let mut sink = [0u8; 4096];
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() || self.stream.set_read_timeout(Some(left)).is_err() {
                return;
            }
            match self.stream.read(&mut sink) {
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
        let timer = self.conn.poll_timeout().map(|at| {
            at.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1))
        });
        let wanted = match (timer, self.read_timeout) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if self.applied_timeout != Some(wanted) {
            self.stream.set_read_timeout(wanted)?;
            self.applied_timeout = Some(wanted);
        }
        Ok(())
    }
}
