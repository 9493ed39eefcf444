//! [`WebSocket::split`]: a [`WebSocketReader`] and a [`WebSocketWriter`] for two tasks.
//!
//! # Design
//!
//! The connection is cut in two in the codec ([`ReadHalf`] and [`WriteHalf`]), and each half
//! here owns its part:
//!
//! - **The reader** owns the codec's read half: the frame reader and the receive buffer. A
//!   message it lends ([`WebSocketReader::recv`]) borrows from the reader alone, so the writer
//!   sends, flushes and closes while the reader holds one, and a received message may be
//!   held across an `.await` in a spawned task.
//! - **The writer** owns the send path: the codec's write half (the sending state, the
//!   output queue, the close handshake's state) and the transport's bookkeeping, behind a
//!   `std::sync::Mutex` the reader also takes, only for what the codec needs from it: to
//!   queue a pong or the close reply, to fail the connection, to run the timers and to write
//!   what is owed. A data message is parsed and lent without it.
//! - **The stream** is shared behind a second mutex, taken for each poll of the socket
//!   (a read, a write, a flush): with TLS, the codec's record state is one for both
//!   directions. Only the reader reads.
//!
//! Every lock is held for one synchronous step and released before the step returns: never
//! while a message is lent, never across an `.await`. When both are needed the writer's state
//! is taken first, then the stream, so the two halves cannot deadlock. Both halves come from
//! one `Arc` allocated at `split`; nothing is allocated per message.
//!
//! - **Owed control frames.** While the reader waits for the peer it writes what is owed
//!   (pongs, the close reply, keepalive pings, and anything else queued). A connection
//!   whose writer half is idle, or gone, still answers pings and completes the close
//!   handshake: only the reader needs to be polled.
//! - **One write waker for two tasks.** A socket remembers one waker per direction, so a
//!   reader that polled a write would replace the writer's waker (and the writer would never
//!   wake). Every socket write is therefore polled with one waker made at `split` that wakes
//!   both halves (each half records its own task's waker before writing); a wake-up may be
//!   spurious, never lost.
//! - **Order.** Pongs go ahead of data not yet started and the close reply after the data
//!   queued before it (RFC 6455 §5.5), as for a whole connection: it is the write half's
//!   one output queue.
//! - **Timers** (keepalive pings, pong deadline, idle and close timeouts) run in the reader's
//!   `recv`, as they need the peer's bytes; a connection whose reader is not polled runs none.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Wake, Waker, ready};
use std::time::Duration;

#[cfg(feature = "deflate")]
use tickwire_codec::ws::PreparedMessage;
use tickwire_codec::ws::{
    CloseCode, ConnectionState, OpCode, Progress, ReadHalf, Sender, SharedFrame, WriteHalf,
};
use tickwire_core::ws::{Negotiated, Socket};
use tokio::io::ReadBuf;

use crate::core::{CoreState, Timer, TransportState, now};
use crate::{Error, Recv, Transport, WebSocket};

/// The receiving half of a split [`WebSocket`]: owns the received bytes and lends each
/// message from them. Runs the connection's timers and writes owed control frames; see the
/// [module docs](self).
#[derive(Debug)]
pub struct WebSocketReader<S> {
    half: ReadHalf,
    shared: Arc<Shared<S>>,
    timer: Timer,
    read_timeout: Option<Duration>,
    /// A message was parsed and not taken yet: a `recv` dropped after parsing leaves it for
    /// the next one.
    ready: bool,
    negotiated: Negotiated,
}

/// The sending half of a split [`WebSocket`]: queues messages and flushes them. Never waits
/// for a message the reader holds.
#[derive(Debug)]
pub struct WebSocketWriter<S> {
    shared: Arc<Shared<S>>,
}

#[derive(Debug)]
struct Shared<S> {
    /// The send path: the codec's write half and the transport's state. Taken before
    /// `stream` when both are needed.
    sending: Mutex<Sending>,
    stream: Mutex<S>,
    wakers: Arc<WriteWakers>,
    /// Wakes both halves: every socket write is polled with it.
    write_waker: Waker,
}

#[derive(Debug)]
struct Sending {
    half: WriteHalf,
    transport: TransportState,
    write_timeout: Option<Duration>,
}

/// The two tasks waiting for the socket to take bytes.
#[derive(Debug, Default)]
struct WriteWakers {
    reader: Mutex<Option<Waker>>,
    writer: Mutex<Option<Waker>>,
}

impl Wake for WriteWakers {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        for slot in [&self.reader, &self.writer] {
            let waker = lock(slot).take();
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

/// Locks `mutex`; a panic in another half while it held the lock leaves state that is still
/// consistent (every step records what it did before it can panic), so poisoning is ignored.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Records `waker` in `slot` (no clone when the same task is already there).
fn register(slot: &Mutex<Option<Waker>>, waker: &Waker) {
    let mut slot = lock(slot);
    if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
        *slot = Some(waker.clone());
    }
}

impl<S> Shared<S> {
    fn sending(&self) -> MutexGuard<'_, Sending> {
        lock(&self.sending)
    }
}

/// The codec's write half inside a locked [`Sending`], as the codec's read half asks for it.
struct WriteGuard<'a>(MutexGuard<'a, Sending>);

impl std::ops::Deref for WriteGuard<'_> {
    type Target = WriteHalf;

    fn deref(&self) -> &WriteHalf {
        &self.0.half
    }
}

impl std::ops::DerefMut for WriteGuard<'_> {
    fn deref_mut(&mut self) -> &mut WriteHalf {
        &mut self.0.half
    }
}

impl<S: Transport> WebSocket<S> {
    /// Splits the connection into a reader and a writer that may live in different tasks
    /// (TLS included). See the [`split` module docs](crate::split) for how they share it.
    pub fn split(self) -> (WebSocketReader<S>, WebSocketWriter<S>) {
        let read_timeout = self.read_timeout();
        let CoreState { ready, transport } = self.state;
        let (stream, conn, bufs, negotiated) = self.socket.into_parts();
        let (read, write) = conn.split(bufs);
        let wakers = Arc::new(WriteWakers::default());
        let shared = Arc::new(Shared {
            sending: Mutex::new(Sending {
                half: write,
                transport,
                write_timeout: self.write_timeout,
            }),
            stream: Mutex::new(stream),
            write_waker: Waker::from(Arc::clone(&wakers)),
            wakers,
        });
        let reader = WebSocketReader {
            half: read,
            shared: Arc::clone(&shared),
            timer: self.timer,
            read_timeout,
            ready,
            negotiated,
        };
        (reader, WebSocketWriter { shared })
    }
}

impl<S: Transport> WebSocketReader<S> {
    /// Waits for the next message, the end of the close handshake, or the read timeout, as
    /// [`WebSocket::recv`] does (answering pings and the peer's close on the way). The
    /// message is lent from the reader; the writer half may send meanwhile. Cancel safe: a
    /// dropped future loses nothing.
    pub async fn recv(&mut self) -> Result<Recv<'_>, Error> {
        let read_timeout = self.read_timeout;
        let fill = poll_fn(|cx| self.poll_fill(cx));
        let progress = match read_timeout {
            None => fill.await?,
            Some(timeout) => match tokio::time::timeout(timeout, fill).await {
                Ok(progress) => progress?,
                Err(_) => Progress::NeedMore,
            },
        };
        match progress {
            Progress::Ready => {
                self.ready = false;
                let shared = &self.shared;
                let message = self.half.message(|| WriteGuard(shared.sending()));
                Ok(Recv::Message(message.map_err(Error::Protocol)?))
            }
            Progress::Closed => Ok(Recv::Closed(self.half.peer_close())),
            Progress::NeedMore => Ok(Recv::Timeout),
        }
    }

    /// Puts the halves back together (to [`finish`](WebSocket::finish) the connection, for
    /// example); `None` when `writer` is another connection's.
    pub fn reunite(self, writer: WebSocketWriter<S>) -> Option<WebSocket<S>> {
        if !Arc::ptr_eq(&self.shared, &writer.shared) {
            return None;
        }
        drop(writer);
        let shared = Arc::into_inner(self.shared)?;
        let sending = shared
            .sending
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let stream = shared
            .stream
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let (conn, bufs) = self.half.unsplit(sending.half);
        let mut socket = Socket::with_negotiated(stream, conn, bufs, self.negotiated);
        socket.set_read_timeout(self.read_timeout);
        let state = CoreState {
            ready: self.ready,
            transport: sending.transport,
        };
        let mut ws = WebSocket::from_socket(socket, state, self.timer);
        ws.write_timeout = sending.write_timeout;
        Some(ws)
    }

    /// Sets the read timeout: a `recv` that waits longer gives [`Recv::Timeout`].
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// Reads until a message is ready or the close handshake is over, writing what is owed
    /// while it waits and running the timers. Never `Progress::NeedMore`.
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<Result<Progress, Error>> {
        let shared = &*self.shared;
        loop {
            if !self.ready {
                match self.half.advance(|| WriteGuard(shared.sending())) {
                    Ok(Progress::Ready) => self.ready = true,
                    Ok(Progress::NeedMore) => {}
                    Ok(Progress::Closed) => {
                        ready!(self.poll_close_transport(cx));
                        return Poll::Ready(Ok(Progress::Closed));
                    }
                    Err(error) => return Poll::Ready(Err(self.failed(cx, error))),
                }
            }
            if self.ready {
                return Poll::Ready(Ok(Progress::Ready));
            }
            // About to wait for the peer: write what is owed (a full socket is no reason to
            // stop reading; the bytes stay queued), and run the timers.
            {
                let mut sending = shared.sending();
                let Sending {
                    half, transport, ..
                } = &mut *sending;
                if half.wants_write() {
                    register(&shared.wakers.reader, cx.waker());
                    let mut stream = lock(&shared.stream);
                    let written = transport.poll_write_out(half, &mut *stream, &shared.write_waker);
                    if let Poll::Ready(Err(e)) = written {
                        return Poll::Ready(Err(e));
                    }
                }
                // The clock is read only when a deadline is set.
                if let Some(at) = self.half.poll_timeout(half)
                    && (at <= now() || self.timer.poll_at(at, cx).is_ready())
                {
                    let timed_out = self.half.handle_timeout(half, now());
                    drop(sending);
                    if let Err(error) = timed_out {
                        return Poll::Ready(Err(self.failed(cx, error)));
                    }
                    continue;
                }
            }
            let mut stream = lock(&shared.stream);
            let mut buf = ReadBuf::new(self.half.spare());
            match Pin::new(&mut *stream).poll_read(cx, &mut buf) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(())) => {
                    let n = buf.filled().len();
                    drop(stream);
                    if n == 0 {
                        let mut sending = shared.sending();
                        let state = sending.half.state();
                        return Poll::Ready(sending.transport.end_of_stream(state));
                    }
                    self.half.filled_with(n, now);
                }
                Poll::Ready(Err(e)) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => {
                    // The stream's lock is released before the writer's state is taken.
                    let failure = stream.failure();
                    drop(stream);
                    let error = shared.sending().transport.io_failed_ref(e, failure);
                    return Poll::Ready(Err(error));
                }
            }
        }
    }

    /// Writes what is owed and, on the server, shuts the write direction (see
    /// [`TransportState::poll_close_transport`]).
    fn poll_close_transport(&self, cx: &mut Context<'_>) -> Poll<()> {
        let shared = &*self.shared;
        register(&shared.wakers.reader, cx.waker());
        let mut sending = shared.sending();
        let Sending {
            half, transport, ..
        } = &mut *sending;
        let mut stream = lock(&shared.stream);
        transport.poll_close_transport(half, &mut *stream, &shared.write_waker)
    }

    /// A protocol error or timer failure: the queued close goes out if the socket takes it
    /// now (the rest is `finish`'s after `reunite`), and the error is returned.
    fn failed(&self, cx: &mut Context<'_>, error: tickwire_codec::ws::Error) -> Error {
        let _ = self.poll_close_transport(cx);
        Error::Protocol(error)
    }
}

impl<S: Transport> WebSocketWriter<S> {
    /// Queues a text message (not written until [`flush`](Self::flush)).
    pub fn send_text(&mut self, text: &str) -> Result<(), Error> {
        self.with_sender(|sender| sender.text(text))
    }

    /// Queues a binary message.
    pub fn send_binary(&mut self, payload: &[u8]) -> Result<(), Error> {
        self.with_sender(|sender| sender.binary(payload))
    }

    /// Queues a text message with its own permessage-deflate policy.
    pub fn send_text_with(
        &mut self,
        text: &str,
        compression: tickwire_codec::ws::Compression,
    ) -> Result<(), Error> {
        self.with_sender(|sender| sender.message_with(OpCode::Text, text.as_bytes(), compression))
    }

    /// Queues a message compressed once for many connections.
    #[cfg(feature = "deflate")]
    pub fn send_prepared(&mut self, message: &PreparedMessage) -> Result<(), Error> {
        self.with_sender(|sender| sender.prepared(message))
    }

    /// Queues a frame encoded once for many connections, by reference.
    pub fn send_shared(&mut self, frame: &SharedFrame) -> Result<(), Error> {
        self.with_sender(|sender| sender.shared(frame))
    }

    /// Queues a ping (at most 125 bytes).
    pub fn ping(&mut self, payload: &[u8]) -> Result<(), Error> {
        self.with_sender(|sender| sender.ping(payload))
    }

    /// Runs `queue` with the connection's [`Sender`] under one lock: several messages queued
    /// at the cost of one.
    pub fn with_sender<R>(
        &mut self,
        queue: impl FnOnce(&mut Sender<'_>) -> Result<R, tickwire_codec::ws::Error>,
    ) -> Result<R, Error> {
        Ok(queue(&mut self.shared.sending().half.sender())?)
    }

    /// Writes everything queued (the reader's owed control frames too), bounded by the write
    /// timeout if one is set. Cancel safe as [`WebSocket::flush`].
    pub async fn flush(&mut self) -> Result<(), Error> {
        let shared = &*self.shared;
        let timeout = shared.sending().write_timeout;
        let write = poll_fn(|cx| {
            register(&shared.wakers.writer, cx.waker());
            let mut sending = shared.sending();
            let Sending {
                half, transport, ..
            } = &mut *sending;
            if transport.done {
                return Poll::Ready(Ok(()));
            }
            let mut stream = lock(&shared.stream);
            transport.poll_write_out(half, &mut *stream, &shared.write_waker)
        });
        match timeout {
            None => write.await,
            Some(timeout) => tokio::time::timeout(timeout, write)
                .await
                .unwrap_or_else(|_| Err(std::io::Error::from(std::io::ErrorKind::TimedOut).into())),
        }
    }

    /// Starts the close handshake and writes the close frame. The reader's `recv` then
    /// returns the messages still in flight and [`Recv::Closed`] at the peer's reply (or a
    /// close timeout error). Cancel safe: the close stays queued.
    pub async fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), Error> {
        {
            let mut sending = self.shared.sending();
            if sending.half.state() == ConnectionState::Open {
                sending.half.close(code, reason, now())?;
            }
        }
        self.flush().await
    }
}
