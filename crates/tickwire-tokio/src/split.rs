//! [`WebSocket::split`]: a [`WebSocketReader`] and a [`WebSocketWriter`] for two tasks.
//!
//! # Design
//!
//! The two halves share one `Arc` (allocated once, at `split`) holding a `std::sync::Mutex`
//! around the stream and the connection's state (`Connection` and `Buffers`). The codec's [`Connection`] is one state
//! machine (the reader queues pongs and the close reply into the same output the writer
//! fills, in the order RFC 6455 needs), so it is shared rather than cut in two, and every
//! lock is held only for one synchronous step: a poll of the socket, or queueing a message.
//! No lock is ever held across an `.await` inside this crate, and nothing is allocated per
//! message: the lock is an uncontended atomic in the common case, and a received message is
//! lent straight from the connection's buffer through a [`Received`] guard.
//!
//! - **Owed control frames.** While the reader waits for the peer it writes what is owed
//!   (pongs, the close reply, keepalive pings, and anything else queued) through the shared
//!   stream. A connection whose writer half is idle, or gone, still answers pings and
//!   completes the close handshake: only the reader needs to be polled.
//! - **One write waker for two tasks.** A socket remembers one waker per direction, so a
//!   reader that polled a write would replace the writer's waker (and the writer would never
//!   wake). Every socket write is therefore polled with one waker made at `split` that wakes
//!   both halves (each half records its own task's waker before writing); a wake-up may be
//!   spurious, never lost. Only the reader reads.
//! - **Lending.** [`WebSocketReader::recv`] returns a [`Received`] that holds the lock while
//!   the message is borrowed from it. The writer's calls wait for it to be dropped, which is
//!   why it is `!Send`: it cannot be held across an `.await` in a spawned task. Drop it before
//!   awaiting anything; to reply while holding it, use
//!   [`Received::message_with_sender`] (never the writer half from the same task: that would
//!   wait on itself).
//! - **Timers** (keepalive pings, pong deadline, idle and close timeouts) run in the reader's
//!   `recv`, as they need the peer's bytes; a connection whose reader is not polled runs none.
//!
//! [`Connection`]: tickwire_codec::ws::Connection

use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Wake, Waker};
use std::time::Duration;

#[cfg(feature = "deflate")]
use tickwire_codec::ws::PreparedMessage;
use tickwire_codec::ws::{CloseCode, ConnectionState, OpCode, Progress, Sender, SharedFrame};

use crate::core::{Core, Timer, now};
use crate::websocket::Negotiated;
use crate::{Error, Recv, Transport, WebSocket};

/// The receiving half of a split [`WebSocket`]. Runs the connection's timers and writes owed
/// control frames; see the [module docs](self).
#[derive(Debug)]
pub struct WebSocketReader<S> {
    shared: Arc<Shared<S>>,
    timer: Timer,
    read_timeout: Option<Duration>,
}

/// The sending half of a split [`WebSocket`]: queues messages and flushes them.
#[derive(Debug)]
pub struct WebSocketWriter<S> {
    shared: Arc<Shared<S>>,
}

/// What [`WebSocketReader::recv`] found, holding the connection while a message is lent.
/// `!Send`: drop it before the next `.await`. Dropped before [`message`](Self::message) was
/// called, it leaves the message for the next `recv` (nothing is lost).
#[derive(Debug)]
pub struct Received<'a, S> {
    inner: MutexGuard<'a, Inner<S>>,
    progress: Progress,
}

#[derive(Debug)]
struct Shared<S> {
    inner: Mutex<Inner<S>>,
    wakers: Arc<WriteWakers>,
    /// Wakes both halves: every socket write is polled with it.
    write_waker: Waker,
}

#[derive(Debug)]
struct Inner<S> {
    stream: S,
    core: Core,
    write_timeout: Option<Duration>,
    negotiated: Negotiated,
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
            let waker = slot.lock().unwrap_or_else(PoisonError::into_inner).take();
            if let Some(waker) = waker {
                waker.wake();
            }
        }
    }
}

/// Records `waker` in `slot` (no clone when the same task is already there).
fn register(slot: &Mutex<Option<Waker>>, waker: &Waker) {
    let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
    if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
        *slot = Some(waker.clone());
    }
}

impl<S> Shared<S> {
    fn lock(&self) -> MutexGuard<'_, Inner<S>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<S: Transport> WebSocket<S> {
    /// Splits the connection into a reader and a writer that may live in different tasks
    /// (TLS included). See the [`split` module docs](crate::split) for how they share it.
    pub fn split(self) -> (WebSocketReader<S>, WebSocketWriter<S>) {
        let read_timeout = self.read_timeout;
        let wakers = Arc::new(WriteWakers::default());
        let shared = Arc::new(Shared {
            inner: Mutex::new(Inner {
                stream: self.stream,
                core: self.core,
                write_timeout: self.write_timeout,
                negotiated: self.negotiated,
            }),
            write_waker: Waker::from(Arc::clone(&wakers)),
            wakers,
        });
        let reader = WebSocketReader {
            shared: Arc::clone(&shared),
            timer: self.timer,
            read_timeout,
        };
        (reader, WebSocketWriter { shared })
    }
}

impl<S: Transport> WebSocketReader<S> {
    /// Waits for the next message, the end of the close handshake, or the read timeout, as
    /// [`WebSocket::recv`] does (answering pings and the peer's close on the way). The
    /// result is read from the returned [`Received`]. Cancel safe: a dropped future loses
    /// nothing.
    pub async fn recv(&mut self) -> Result<Received<'_, S>, Error> {
        let Self {
            shared,
            timer,
            read_timeout,
        } = self;
        let fill = poll_fn(|cx| {
            let mut inner = shared.lock();
            register(&shared.wakers.reader, cx.waker());
            let Inner { stream, core, .. } = &mut *inner;
            core.poll_fill(stream, cx, Some(&shared.write_waker), timer)
        });
        let progress = match read_timeout {
            None => fill.await?,
            Some(timeout) => match tokio::time::timeout(*timeout, fill).await {
                Ok(progress) => progress?,
                Err(_) => Progress::NeedMore,
            },
        };
        Ok(Received {
            inner: shared.lock(),
            progress,
        })
    }

    /// Puts the halves back together (to [`finish`](WebSocket::finish) the connection, for
    /// example); `None` when `writer` is another connection's.
    pub fn reunite(self, writer: WebSocketWriter<S>) -> Option<WebSocket<S>> {
        if !Arc::ptr_eq(&self.shared, &writer.shared) {
            return None;
        }
        drop(writer);
        let shared = Arc::into_inner(self.shared)?;
        let inner = shared
            .inner
            .into_inner()
            .unwrap_or_else(PoisonError::into_inner);
        let mut ws = WebSocket::from_core(inner.stream, inner.core, self.timer);
        ws.read_timeout = self.read_timeout;
        ws.write_timeout = inner.write_timeout;
        ws.negotiated = inner.negotiated;
        Some(ws)
    }

    /// Sets the read timeout: a `recv` that waits longer gives [`Recv::Timeout`].
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }
}

impl<S> Received<'_, S> {
    /// The message (lent from the connection's buffer), [`Recv::Closed`] or
    /// [`Recv::Timeout`]. An invalid text message is [`Error::Protocol`]: the connection
    /// failed, and the close it owes goes out on the next call.
    pub fn message(&mut self) -> Result<Recv<'_>, Error> {
        self.message_with_sender().map(|(recv, _)| recv)
    }

    /// [`message`](Self::message) and the [`Sender`], to queue a reply while the message is
    /// borrowed (the writer half waits while this guard lives). Flush it with the writer, or
    /// let the reader's next `recv` write it.
    pub fn message_with_sender(&mut self) -> Result<(Recv<'_>, Sender<'_>), Error> {
        let core = &mut self.inner.core;
        match self.progress {
            Progress::Ready => core
                .take_message()
                .map(|(message, sender)| (Recv::Message(message), sender)),
            Progress::Closed => Ok((Recv::Closed, core.conn.sender(&mut core.bufs))),
            Progress::NeedMore => Ok((Recv::Timeout, core.conn.sender(&mut core.bufs))),
        }
    }

    /// True at the end of the close handshake ([`Recv::Closed`]).
    pub fn is_closed(&self) -> bool {
        self.progress == Progress::Closed
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
        let mut inner = self.shared.lock();
        let core = &mut inner.core;
        Ok(queue(&mut core.conn.sender(&mut core.bufs))?)
    }

    /// Writes everything queued (the reader's owed control frames too), bounded by the write
    /// timeout if one is set. Cancel safe as [`WebSocket::flush`].
    pub async fn flush(&mut self) -> Result<(), Error> {
        let shared = &self.shared;
        let timeout = shared.lock().write_timeout;
        let write = poll_fn(|cx| {
            let mut inner = shared.lock();
            register(&shared.wakers.writer, cx.waker());
            let Inner { stream, core, .. } = &mut *inner;
            if core.transport_done {
                return Poll::Ready(Ok(()));
            }
            core.poll_write_out(stream, &shared.write_waker)
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
            let mut inner = self.shared.lock();
            let core = &mut inner.core;
            if core.conn.state() == ConnectionState::Open {
                core.conn.close(&mut core.bufs, code, reason, now())?;
            }
        }
        self.flush().await
    }
}
