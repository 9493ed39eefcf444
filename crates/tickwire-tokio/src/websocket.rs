//! [`WebSocket`]: a sans-IO [`Connection`] driven over an async [`Transport`].
//!
//! Owns the connection's stream, its [`Core`] (connection and buffers) and its timer. Sends
//! only queue: nothing is written until [`WebSocket::flush`], or a receive that is about to
//! wait for the peer (which first writes what is owed: pongs, the close reply, keepalive
//! pings, and whatever the caller queued). Ending a connection waits only in
//! [`WebSocket::finish`]; dropping one never blocks nor writes.

use std::future::poll_fn;
use std::time::Duration;

#[cfg(feature = "deflate")]
use tickwire_codec::deflate::DeflateParams;
#[cfg(feature = "deflate")]
use tickwire_codec::ws::PreparedMessage;
use tickwire_codec::ws::{
    Buffers, CloseCode, Compression, Connection, ConnectionState, OpCode, Progress, Role, Sender,
    SharedFrame,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::core::{Core, Timer, now};
use crate::{Error, Recv, Transport};

/// A WebSocket connection over an async stream.
///
/// Dropping it never blocks: the socket is closed as it is, without a close frame if none was
/// written (the peer sees code 1006). To end a connection properly, await
/// [`finish`](Self::finish). Cancel safety of every method: see the crate docs.
#[derive(Debug)]
pub struct WebSocket<S> {
    pub(crate) stream: S,
    pub(crate) core: Core,
    pub(crate) timer: Timer,
    pub(crate) read_timeout: Option<Duration>,
    pub(crate) write_timeout: Option<Duration>,
    pub(crate) negotiated: Negotiated,
}

/// What the opening handshake settled on.
#[derive(Debug, Default)]
pub(crate) struct Negotiated {
    subprotocol: Option<String>,
    #[cfg(feature = "deflate")]
    deflate: Option<DeflateParams>,
}

impl<S: Transport> WebSocket<S> {
    /// Wraps a stream whose opening handshake is done. `bufs.read` holds any bytes that
    /// arrived after the handshake (see [`Buffers::with_read`]).
    pub fn from_parts(stream: S, conn: Connection, bufs: Buffers, role: Role) -> Self {
        Self::from_core(stream, Core::new(conn, bufs, role), Timer::default())
    }

    pub(crate) fn from_core(stream: S, core: Core, timer: Timer) -> Self {
        Self {
            stream,
            core,
            timer,
            read_timeout: None,
            write_timeout: None,
            negotiated: Negotiated::default(),
        }
    }

    /// Records what the handshake settled on, and the builder's timeouts.
    pub(crate) fn with_handshake(
        mut self,
        subprotocol: Option<String>,
        read_timeout: Option<Duration>,
        write_timeout: Option<Duration>,
    ) -> Self {
        self.negotiated.subprotocol = subprotocol;
        self.read_timeout = read_timeout;
        self.write_timeout = write_timeout;
        self
    }

    /// Records the permessage-deflate parameters the handshake negotiated.
    #[cfg(feature = "deflate")]
    pub(crate) fn with_deflate(mut self, negotiated: Option<DeflateParams>) -> Self {
        self.negotiated.deflate = negotiated;
        self
    }

    /// The permessage-deflate parameters in force, or `None` when it was not negotiated.
    #[cfg(feature = "deflate")]
    pub fn deflate(&self) -> Option<&DeflateParams> {
        self.negotiated.deflate.as_ref()
    }

    /// The subprotocol the opening handshake selected, if any.
    pub fn subprotocol(&self) -> Option<&str> {
        self.negotiated.subprotocol.as_deref()
    }

    /// Waits for the next message, the end of the stream or the read timeout. The message is
    /// lent from the connection's buffer (no copy, no allocation). Pings are answered, and a
    /// peer's close is answered before it is returned as `Message::Close`; the call after
    /// that returns [`Recv::Closed`].
    ///
    /// Returns [`Recv::Message`], [`Recv::Closed`] or, with a read timeout set,
    /// [`Recv::Timeout`]. `Err` is a failed connection: [`Error::Io`], [`Error::Protocol`]
    /// (a protocol error or a connection timer), [`Error::UnexpectedEof`], [`Error::Tls`].
    ///
    /// Cancel safe: a dropped future loses nothing (bytes read are in the connection's
    /// buffer, a parsed message waits for the next call).
    pub async fn recv(&mut self) -> Result<Recv<'_>, Error> {
        self.recv_with_sender().await.map(|(recv, _)| recv)
    }

    /// Like [`recv`](Self::recv), and also lends the [`Sender`] so a reply can be queued while
    /// the message is still borrowed, with no copy. Cancel safe as `recv`.
    pub async fn recv_with_sender(&mut self) -> Result<(Recv<'_>, Sender<'_>), Error> {
        let progress = match self.read_timeout {
            None => self.fill().await?,
            Some(timeout) => match tokio::time::timeout(timeout, self.fill()).await {
                Ok(progress) => progress?,
                Err(_) => Progress::NeedMore,
            },
        };
        match progress {
            Progress::Ready => self
                .core
                .take_message()
                .map(|(message, sender)| (Recv::Message(message), sender)),
            Progress::Closed => Ok((Recv::Closed, self.sender())),
            Progress::NeedMore => Ok((Recv::Timeout, self.sender())),
        }
    }

    fn fill(&mut self) -> impl Future<Output = Result<Progress, Error>> + '_ {
        let Self {
            stream,
            core,
            timer,
            ..
        } = self;
        poll_fn(move |cx| core.poll_fill(stream, cx, None, timer))
    }

    /// Queues a text message (not written until [`flush`](Self::flush)).
    pub fn send_text(&mut self, text: &str) -> Result<(), Error> {
        Ok(self.sender().text(text)?)
    }

    /// Queues a binary message.
    pub fn send_binary(&mut self, payload: &[u8]) -> Result<(), Error> {
        Ok(self.sender().binary(payload)?)
    }

    /// Queues a text message, overriding the permessage-deflate policy for this message.
    pub fn send_text_with(&mut self, text: &str, compression: Compression) -> Result<(), Error> {
        Ok(self
            .sender()
            .message_with(OpCode::Text, text.as_bytes(), compression)?)
    }

    /// Queues a binary message, overriding the permessage-deflate policy for this message.
    pub fn send_binary_with(
        &mut self,
        payload: &[u8],
        compression: Compression,
    ) -> Result<(), Error> {
        Ok(self
            .sender()
            .message_with(OpCode::Binary, payload, compression)?)
    }

    /// Queues a message compressed once for many connections (see [`PreparedMessage`]).
    #[cfg(feature = "deflate")]
    pub fn send_prepared(&mut self, message: &PreparedMessage) -> Result<(), Error> {
        Ok(self.sender().prepared(message)?)
    }

    /// Queues a frame encoded once for many connections, by reference (see [`SharedFrame`]).
    pub fn send_shared(&mut self, frame: &SharedFrame) -> Result<(), Error> {
        Ok(self.sender().shared(frame)?)
    }

    /// Queues a ping (at most 125 bytes).
    pub fn ping(&mut self, payload: &[u8]) -> Result<(), Error> {
        Ok(self.sender().ping(payload)?)
    }

    /// The sending half, to queue several messages before one flush.
    pub fn sender(&mut self) -> Sender<'_> {
        self.core.conn.sender(&mut self.core.bufs)
    }

    /// Writes everything queued, bounded by the write timeout if one is set (then
    /// [`Error::Io`] of kind `TimedOut`, and the connection stays usable: the rest stays
    /// queued). Cancel safe: what was written is recorded, the rest stays queued, and a frame
    /// partly written goes on first at the next flush, never split by another frame.
    pub async fn flush(&mut self) -> Result<(), Error> {
        let Self {
            stream,
            core,
            write_timeout,
            ..
        } = self;
        let write = poll_fn(|cx| core.poll_write_out(stream, cx.waker()));
        match write_timeout {
            None => write.await,
            Some(timeout) => tokio::time::timeout(*timeout, write)
                .await
                .unwrap_or_else(|_| Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into())),
        }
    }

    /// Starts the close handshake with `code` and `reason` (≤ 123 bytes) and writes it,
    /// without waiting for the reply: keep calling [`recv`](Self::recv) until
    /// [`Recv::Closed`], then [`finish`](Self::finish); or call `finish` at once.
    /// Cancel safe: the close stays queued and goes out on the next flush.
    pub async fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), Error> {
        if self.core.conn.state() == ConnectionState::Open {
            self.core
                .conn
                .close(&mut self.core.bufs, code, reason, now())?;
        }
        self.flush().await
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
        if self.core.transport_done {
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + self.core.conn.config().close_timeout;
        let result = tokio::time::timeout_at(deadline, self.complete_close_handshake())
            .await
            .unwrap_or(Err(Error::Protocol(
                tickwire_codec::ws::Error::CloseTimeout,
            )));
        let _ = tokio::time::timeout_at(deadline, self.close_transport()).await;
        let _ = tokio::time::timeout_at(deadline, self.drain_until_eof()).await;
        if self.core.role() == Role::Client {
            // The client's side, once the server has closed TCP (or did not in time).
            let _ = tokio::time::timeout_at(deadline, self.stream.shutdown()).await;
        }
        self.core.transport_done = true;
        result
    }

    async fn complete_close_handshake(&mut self) -> Result<(), Error> {
        match self.core.conn.state() {
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
                    self.core.take_message()?;
                }
                Progress::Closed | Progress::NeedMore => return self.flush().await,
            }
        }
    }

    fn close_transport(&mut self) -> impl Future<Output = ()> + '_ {
        let Self { stream, core, .. } = self;
        poll_fn(move |cx| core.poll_close_transport(stream, cx.waker()))
    }

    /// Reads and discards until the peer closes: closing a socket with unread input makes
    /// the kernel send RST, which can destroy our close frame in the peer's receive queue.
    async fn drain_until_eof(&mut self) {
        let mut sink = [0u8; 1024];
        while let Ok(n) = self.stream.read(&mut sink).await {
            if n == 0 {
                return;
            }
        }
    }

    /// The sans-IO connection (state, configuration).
    pub fn connection(&self) -> &Connection {
        &self.core.conn
    }

    /// The connection's buffers (received bytes not yet parsed, queued output).
    pub fn buffers(&self) -> &Buffers {
        &self.core.bufs
    }

    /// The stream.
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// The stream, mutably (socket options).
    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// Sets the read timeout: a [`recv`](Self::recv) that waits longer returns
    /// [`Recv::Timeout`] and the connection stays usable.
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// Sets the write timeout that bounds [`flush`](Self::flush).
    pub fn set_write_timeout(&mut self, timeout: Option<Duration>) {
        self.write_timeout = timeout;
    }
}
