//! [`WebSocket`]: a sans-IO [`Connection`] driven over an async [`Transport`].
//!
//! Owns the connection's [`Socket`] (stream, connection and buffers), the driver's state
//! between polls and its timers. Sends
//! only queue: nothing is written until [`WebSocket::flush`], or a receive that is about to
//! wait for the peer (which first writes what is owed: pongs, the close reply, keepalive
//! pings, and whatever the caller queued). Ending a connection waits only in
//! [`WebSocket::finish`]; dropping one never blocks nor writes.

use std::future::{Future, poll_fn};
use std::task::{Context, Poll};
use std::time::Duration;

use tickwire_codec::ws::{Buffers, CloseCode, Connection, ConnectionState, Progress, Role, Sender};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use tickwire_core::ws::{Opened, Socket};

use crate::core::{CoreState, Timer, now};
use crate::{Error, Recv, Transport};

/// A WebSocket connection over an async stream.
///
/// The calls that only queue (`send_text`, `send_binary`, `ping`, `sender`, ...) and the
/// accessors (`connection`, `stream`, `subprotocol`, `set_read_timeout`, ...) are
/// [`Socket`]'s, which this dereferences to; receiving, writing and ending the connection are
/// here.
///
/// Dropping it never blocks: the socket is closed as it is, without a close frame if none was
/// written (the peer sees code 1006). To end a connection properly, await
/// [`finish`](Self::finish). Cancel safety of every method: see the crate docs.
#[derive(Debug)]
pub struct WebSocket<S> {
    pub(crate) socket: Socket<S>,
    pub(crate) state: CoreState,
    pub(crate) timer: Timer,
    /// The timer of the user's read and write timeouts (a receive that waits too long
    /// returns [`Recv::Timeout`], a flush `TimedOut`), apart from the connection's.
    pub(crate) user_timer: Timer,
    pub(crate) write_timeout: Option<Duration>,
    /// The `Stream` yielded the peer's close (it ends after that).
    #[cfg(feature = "stream")]
    pub(crate) close_yielded: bool,
}

impl<S> std::ops::Deref for WebSocket<S> {
    type Target = Socket<S>;

    #[inline(always)]
    fn deref(&self) -> &Socket<S> {
        &self.socket
    }
}

impl<S> std::ops::DerefMut for WebSocket<S> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Socket<S> {
        &mut self.socket
    }
}

impl<S: Transport> WebSocket<S> {
    /// Wraps a stream whose opening handshake is done. `bufs.read` holds any bytes that
    /// arrived after the handshake (see [`Buffers::with_read`]).
    pub fn from_parts(stream: S, conn: Connection, bufs: Buffers, role: Role) -> Self {
        Self::from_socket(
            Socket::new(stream, conn, bufs),
            CoreState::new(role),
            Timer::default(),
        )
    }

    pub(crate) fn from_socket(socket: Socket<S>, state: CoreState, timer: Timer) -> Self {
        Self {
            socket,
            state,
            timer,
            user_timer: Timer::default(),
            write_timeout: None,
            #[cfg(feature = "stream")]
            close_yielded: false,
        }
    }

    /// The connection an opening handshake opened (`None`: it did not complete, an
    /// [`Error::UnexpectedEof`]), with the builder's read and write timeouts.
    pub(crate) fn opened(
        stream: S,
        opened: Option<Opened>,
        role: Role,
        (read_timeout, write_timeout): (Option<Duration>, Option<Duration>),
    ) -> Result<Self, Error> {
        let opened = opened.ok_or(Error::UnexpectedEof)?;
        let mut ws = Self::from_socket(
            Socket::opened(stream, opened),
            CoreState::new(role),
            Timer::default(),
        );
        ws.set_read_timeout(read_timeout);
        ws.write_timeout = write_timeout;
        Ok(ws)
    }

    /// Waits for the next message, the end of the stream or the read timeout. The message is
    /// lent from the connection's buffer (no copy, no allocation). Pings are answered, and a
    /// peer's close is answered (the reply written) before it is returned, once, as
    /// [`Recv::Closed`] with its code and reason; every later call returns the same
    /// `Closed`.
    ///
    /// Returns [`Recv::Message`], [`Recv::Closed`] or, with a read timeout set,
    /// [`Recv::Timeout`]. `Err` is a failed connection: [`Error::Io`], [`Error::Protocol`]
    /// (a protocol error or a connection timer), [`Error::UnexpectedEof`], [`Error::Tls`].
    ///
    /// Cancel safe: a dropped future loses nothing (bytes read are in the connection's
    /// buffer, a parsed message waits for the next call).
    pub fn recv(&mut self) -> impl Future<Output = Result<Recv<'_>, Error>> + '_ {
        ReceiveOnly(Receive {
            ws: Some(self),
            deadline: None,
        })
    }

    /// Like [`recv`](Self::recv), and also lends the [`Sender`] so a reply can be queued while
    /// the message is still borrowed, with no copy. Cancel safe as `recv`.
    pub fn recv_with_sender(
        &mut self,
    ) -> impl Future<Output = Result<(Recv<'_>, Sender<'_>), Error>> + '_ {
        Receive {
            ws: Some(self),
            deadline: None,
        }
    }

    /// One poll of a receive. `this` is the connection, lent back to the future while it
    /// waits and handed to the result once ready; `deadline` is when the read timeout ends,
    /// counted from the first time the receive waits.
    ///
    /// See [`Receive`] for why this is not an `async fn`.
    #[inline(always)]
    fn poll_recv<'a>(
        this: &mut Option<&'a mut Self>,
        deadline: &mut Option<std::time::Instant>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(Recv<'a>, Sender<'a>), Error>> {
        let ws = this
            .take()
            .expect("a receive future polled after it completed");
        let progress = match ws.poll_fill(cx) {
            Poll::Ready(progress) => progress,
            Poll::Pending => {
                if ws.poll_read_timeout(deadline, cx).is_pending() {
                    *this = Some(ws);
                    return Poll::Pending;
                }
                Ok(Progress::NeedMore)
            }
        };
        Poll::Ready(match progress {
            Err(error) => Err(error),
            Ok(Progress::Ready) => ws
                .take_message()
                .map(|(message, sender)| (Recv::Message(message), sender)),
            Ok(Progress::Closed) => {
                let parts = ws.socket.parts_mut();
                let (frame, sender) = parts.connection.peer_close_with_sender(parts.buffers);
                Ok((Recv::Closed(frame), sender))
            }
            Ok(Progress::NeedMore) => Ok((Recv::Timeout, ws.sender())),
        })
    }

    /// Ready once the user's read timeout has run out for the receive whose `deadline` this
    /// is; pending forever without a read timeout (answered inline: a receive that waits
    /// asks on every pending poll).
    #[inline]
    fn poll_read_timeout(
        &mut self,
        deadline: &mut Option<std::time::Instant>,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        match self.read_timeout() {
            None => Poll::Pending,
            Some(timeout) => self.poll_user_deadline(timeout, deadline, cx),
        }
    }

    /// Ready once `timeout`, counted from the first time the caller's receive or flush
    /// waited (when `deadline` was set), has run out, on the user's timer. A receive and a
    /// flush never wait at once (both borrow the connection mutably), so they share it.
    #[inline(never)]
    fn poll_user_deadline(
        &mut self,
        timeout: Duration,
        deadline: &mut Option<std::time::Instant>,
        cx: &mut Context<'_>,
    ) -> Poll<()> {
        let at = match *deadline {
            Some(at) => at,
            // A timeout too large for the clock never ends.
            None => match now().checked_add(timeout) {
                Some(at) => *deadline.insert(at),
                None => return Poll::Pending,
            },
        };
        self.user_timer.poll_at(at, cx)
    }

    fn fill(&mut self) -> impl Future<Output = Result<Progress, Error>> + '_ {
        poll_fn(move |cx| self.poll_fill(cx))
    }

    /// Writes everything queued, bounded by the write timeout if one is set (then
    /// [`Error::Io`] of kind `TimedOut`, and the connection stays usable: the rest stays
    /// queued). Cancel safe: what was written is recorded, the rest stays queued, and a frame
    /// partly written goes on first at the next flush, never split by another frame.
    ///
    /// The write timeout counts from the first time the flush waits for the socket.
    pub fn flush(&mut self) -> impl Future<Output = Result<(), Error>> + '_ {
        // A `poll_fn` rather than an `async fn`: the common flush, written at its first
        // poll, skips the state machine (about 60 instructions of a 128 B round trip).
        let mut deadline = None;
        poll_fn(move |cx| self.poll_flush(&mut deadline, cx))
    }

    #[inline]
    fn poll_flush(
        &mut self,
        deadline: &mut Option<std::time::Instant>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<(), Error>> {
        if let Poll::Ready(result) = self.poll_write_out(cx.waker()) {
            return Poll::Ready(result);
        }
        match self.write_timeout {
            None => Poll::Pending,
            Some(timeout) => self
                .poll_user_deadline(timeout, deadline, cx)
                .map(|()| Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into())),
        }
    }

    /// Starts the close handshake with `code` and `reason` (≤ 123 bytes) and writes it,
    /// without waiting for the reply: keep calling [`recv`](Self::recv) until
    /// [`Recv::Closed`], then [`finish`](Self::finish); or call `finish` at once.
    /// Cancel safe: the close stays queued and goes out on the next flush.
    pub async fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), Error> {
        self.start_close(code, reason)?;
        self.flush().await
    }

    /// Queues the close with `code` and `reason` unless one was sent (or received).
    pub(crate) fn start_close(&mut self, code: CloseCode, reason: &str) -> Result<(), Error> {
        if self.connection().state() == ConnectionState::Open {
            let parts = self.socket.parts_mut();
            parts.connection.close(parts.buffers, code, reason, now())?;
        }
        Ok(())
    }

    /// Ends the connection: completes the close handshake (sending close 1000 if none was
    /// sent, dropping messages still in flight), closes the transport (the server first,
    /// RFC 6455 §7.1.1) and reads until the peer closes TCP, all within the connection's close
    /// timeout (`Config::close_timeout`, default 5 s; then
    /// `Err(Error::Protocol(CloseTimeout))`). On a connection that already failed it writes
    /// what is owed and returns `Ok`. Calling it again does nothing.
    ///
    /// Not cancel safe in the sense that a dropped `finish` leaves the handshake where it
    /// was; calling it again resumes it.
    pub async fn finish(&mut self) -> Result<(), Error> {
        if self.state.transport.done {
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + self.connection().config().close_timeout;
        let result = tokio::time::timeout_at(deadline, self.complete_close_handshake())
            .await
            .unwrap_or(Err(Error::Protocol(
                tickwire_codec::ws::Error::CloseTimeout,
            )));
        let _ = tokio::time::timeout_at(deadline, self.close_transport()).await;
        if self.connection().drains_before_close() {
            let _ = tokio::time::timeout_at(deadline, self.drain_until_eof()).await;
        }
        if self.state.transport.role == Role::Client {
            // The client's side, once the server has closed TCP (or did not in time).
            let _ = tokio::time::timeout_at(deadline, self.stream_mut().shutdown()).await;
        }
        self.state.transport.done = true;
        result
    }

    async fn complete_close_handshake(&mut self) -> Result<(), Error> {
        match self.connection().state() {
            ConnectionState::Open => self.close(CloseCode::NORMAL, "").await?,
            ConnectionState::Failed => {
                let _ = self.flush().await;
                return Ok(());
            }
            _ => {}
        }
        loop {
            match self.fill().await? {
                Progress::Ready => {
                    self.take_message()?;
                }
                Progress::Closed | Progress::NeedMore => return self.flush().await,
            }
        }
    }

    fn close_transport(&mut self) -> impl Future<Output = ()> + '_ {
        poll_fn(move |cx| self.poll_close_transport(cx.waker()))
    }

    /// Reads and discards until the peer closes: closing a socket with unread input makes
    /// the kernel send RST, which can destroy our close frame in the peer's receive queue.
    async fn drain_until_eof(&mut self) {
        let mut sink = [0u8; 1024];
        while let Ok(n) = self.stream_mut().read(&mut sink).await {
            if n == 0 {
                return;
            }
        }
    }

    /// Sets the write timeout that bounds [`flush`](Self::flush).
    pub fn set_write_timeout(&mut self, timeout: Option<Duration>) {
        self.write_timeout = timeout;
    }
}

/// The future of [`WebSocket::recv_with_sender`] (and, through [`ReceiveOnly`], of
/// [`WebSocket::recv`]).
///
/// Hand-written rather than an `async fn` so that its poll, with the buffered-message front
/// of `poll_fill`, inlines into the caller's own poll and the message comes back in
/// registers. The `async fn` was polled out of line and returned the message through memory,
/// written in one enum layout and read back in another: a failed store-to-load forward on
/// every message (bench/results/issue-16-earlier.md).
struct Receive<'a, S> {
    /// The connection: lent back while the receive waits, handed to the result when ready.
    ws: Option<&'a mut WebSocket<S>>,
    /// When the user's read timeout ends, set the first time this receive waits.
    deadline: Option<std::time::Instant>,
}

impl<'a, S: Transport> Future for Receive<'a, S> {
    type Output = Result<(Recv<'a>, Sender<'a>), Error>;

    #[inline(always)]
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        WebSocket::poll_recv(&mut this.ws, &mut this.deadline, cx)
    }
}

/// The future of [`WebSocket::recv`]: [`Receive`] without the sender.
struct ReceiveOnly<'a, S>(Receive<'a, S>);

impl<'a, S: Transport> Future for ReceiveOnly<'a, S> {
    type Output = Result<Recv<'a>, Error>;

    #[inline(always)]
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut self.get_mut().0;
        WebSocket::poll_recv(&mut this.ws, &mut this.deadline, cx)
            .map(|done| done.map(|(recv, _)| recv))
    }
}
