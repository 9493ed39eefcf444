//! [`Link`]: one packet connection's socket on tokio, both roles: a thin async driver over
//! the sans-IO [`Session`] (framing, buffers, control packets, keepalive timers), as the
//! blocking crate's link is. It owns the stream, its reads and writes, the read and write
//! timeouts and the idle wait without buffers (rule 11 of docs/ARCHITECTURE.md, below).
//!
//! Every poll records what it did before it returns: bytes read go to the session in the
//! poll that read them, bytes written are consumed in the poll that wrote them, and a packet
//! is returned in the poll that parsed it. A future dropped at any `.await` loses nothing.
//!
//! # Idle connections without buffers
//!
//! With `release_idle`, when the session is idle (nothing partly received, nothing queued)
//! and the stream can signal readiness ([`Transport::can_signal_read_ready`]: plain TCP),
//! the wait for the next packet lends the session's buffers to a small per-thread free list
//! and awaits readiness with none; buffers (those or another connection's) are taken back
//! when the socket is readable.

use std::cell::RefCell;
use std::io::ErrorKind;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Instant;

use tokio::io::ReadBuf;

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::mux::RequestId;
use tickwire_codec::packet::{
    Control, Expiry, Header, Incoming, LinkTimers, PacketWriter, Session, SessionBuffers,
};
use tickwire_core::packet::{Error, LinkOptions, PacketLink};

use crate::Transport;
use crate::core::{Timer, now};

thread_local! {
    /// Buffers lent by idle connections, for the next connection on this thread that
    /// receives bytes. Per thread (a runtime worker): no lock, and buffers stay in the cache
    /// of the core that last used them.
    static FREE_BUFFERS: RefCell<Vec<SessionBuffers>> = const { RefCell::new(Vec::new()) };
}
/// The free list's length cap: past it, lent buffers are dropped.
const FREE_LIST_CAP: usize = 64;
/// Buffers larger than this (grown by a large packet) are dropped rather than kept.
const FREE_BUFFER_MAX: usize = 256 << 10;

/// One packet connection's socket and session on tokio: the transport's side of a
/// [`PacketClient`](super::PacketClient) (its [`ClientIo`], whose waits are named futures)
/// and of a server connection. Made by the builders; its methods are the client's.
///
/// [`ClientIo`]: tickwire_core::packet::ClientIo
#[derive(Debug)]
pub struct Link<S> {
    stream: S,
    session: Session,
    /// The read and write timeouts, and which one counts (the codec's).
    timers: LinkTimers,
    /// Whether the idle wait lends the buffers out.
    release_idle: bool,
    timer: Timer,
    /// The write side's shutdown was started after a failure.
    shut: bool,
}

impl<S: Transport> PacketLink for Link<S> {
    type Stream = S;

    /// The session, to read its state (failed, a pong awaited, buffers lent out) and the
    /// payload of the packet the last wait returned.
    fn session(&self) -> &Session {
        &self.session
    }

    fn stream(&self) -> &S {
        &self.stream
    }

    /// Takes lent buffers back first; nothing is written until the next flush or wait.
    fn queue(&mut self, id: RequestId, payload: &[u8]) -> Result<(), Error> {
        self.take_back_buffers();
        self.session.queue(id.0, payload).map_err(Error::from)
    }

    /// Tokio's clock: paused in tests.
    fn now(&self) -> Instant {
        now()
    }
}

impl<S: Transport> Link<S> {
    /// A link over `stream` as `options` say.
    pub(crate) fn new(stream: S, options: &LinkOptions) -> Self {
        Self {
            stream,
            session: Session::new(options.packet.clone(), options.keepalive, now()),
            timers: LinkTimers::new(options.read_timeout, options.write_timeout, now()),
            release_idle: options.release_idle_buffers,
            timer: Timer::default(),
            shut: false,
        }
    }

    /// Queues a control packet (request id 0, never compressed).
    pub(crate) fn queue_control(&mut self, control: Control) -> Result<(), Error> {
        self.take_back_buffers();
        self.session.queue_control(control).map_err(Error::from)
    }

    /// Queues a ping and arms its pong deadline; written by the next flush or wait.
    pub(crate) fn ping(&mut self) -> Result<(), Error> {
        self.take_back_buffers();
        self.session.ping(now()).map_err(Error::from)
    }

    /// Buffers lent out while idle are taken back (from the free list) before anything is
    /// queued, rather than the session growing fresh ones.
    fn take_back_buffers(&mut self) {
        if self.session.buffers_released() {
            let _ = self.session.restore_buffers(borrow());
        }
    }

    /// Marks the link failed (the socket's write side is shut by the next wait or flush,
    /// and the socket closed when the connection is dropped).
    pub(crate) fn fail(&mut self, error: Error) -> Error {
        self.session.fail();
        error
    }

    /// The payload of the packet returned last and the writer with its queue, borrowed apart.
    pub(crate) fn payload_and_writer(
        &mut self,
        header: &Header,
    ) -> (&[u8], &mut PacketWriter, &mut WriteBuf) {
        self.session.payload_and_writer(header)
    }

    /// Writes everything queued, one poll of it (for a named future). What the socket took
    /// is recorded, the rest stays queued. Fails the link with a `TimedOut` [`Error::Io`]
    /// when the socket takes none of it for the write timeout.
    pub(crate) fn poll_flush_timed(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        let result = match self.poll_flush(cx) {
            Poll::Ready(result) => result,
            Poll::Pending => {
                let Some(at) = self.timers.write_deadline() else {
                    return Poll::Pending;
                };
                ready!(self.timer.poll_at(at, cx));
                Err(self.write_timed_out())
            }
        };
        Poll::Ready(self.shut_if_failed(cx, result))
    }

    /// Fails the link: the socket took nothing for the write timeout.
    fn write_timed_out(&mut self) -> Error {
        self.fail(Error::Io(ErrorKind::TimedOut.into()))
    }

    /// Starts a wait for [`poll_incoming`](Self::poll_incoming) (the read timeout counts
    /// from here).
    pub(crate) fn wait_started(&mut self) {
        self.timers.wait_started(now());
    }

    /// The next packet on a request id, a busy refusal, a pong, or [`Incoming::Deadline`]
    /// once `deadline` passes, one poll of it after [`wait_started`](Self::wait_started) (for
    /// a named future). Writes what is queued before it waits, answers pings, sends keepalive
    /// pings and fails the link when a pong is overdue. Any error but
    /// [`Error::ReadTimeout`] leaves the link failed. Cancel safe (module docs).
    pub(crate) fn poll_incoming(
        &mut self,
        cx: &mut Context<'_>,
        deadline: Option<Instant>,
    ) -> Poll<Result<Incoming, Error>> {
        let result = ready!(self.poll_next(cx, deadline));
        Poll::Ready(self.shut_if_failed(cx, result))
    }

    /// [`fail`](Self::fail), then starts shutting the write side (best effort) in this poll.
    pub(crate) fn fail_and_shut(&mut self, cx: &mut Context<'_>, error: Error) -> Error {
        let error = self.fail(error);
        let _ = self.shut_if_failed(cx, Ok(()));
        error
    }

    /// After a fatal error, starts shutting the stream's write side (TLS close_notify, then
    /// FIN), best effort and once, so the peer sees the connection end while the caller
    /// still holds it.
    fn shut_if_failed<T>(
        &mut self,
        cx: &mut Context<'_>,
        result: Result<T, Error>,
    ) -> Result<T, Error> {
        if self.session.is_failed() && !self.shut {
            self.shut = true;
            let _ = Pin::new(&mut self.stream).poll_shutdown(cx);
        }
        result
    }

    fn poll_next(
        &mut self,
        cx: &mut Context<'_>,
        deadline: Option<Instant>,
    ) -> Poll<Result<Incoming, Error>> {
        loop {
            if self.session.output_full() {
                // The peer sends faster than it reads: nothing is read or parsed until the
                // queue is written, so its sending waits on TCP. Timers still run below.
                match self.poll_flush(cx) {
                    Poll::Ready(Ok(())) => continue,
                    Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                    Poll::Pending => {}
                }
            } else {
                match self.session.poll_event().map(Incoming::from_event) {
                    Ok(Some(incoming)) => return Poll::Ready(Ok(incoming)),
                    Ok(None) => {}
                    Err(error) => return Poll::Ready(Err(Error::from(error))),
                }
                // A write the socket does not take yet does not stop the reads: a peer that
                // waits for us to read before it reads our bytes cannot deadlock the two.
                if let Poll::Ready(Err(error)) = self.poll_flush(cx) {
                    return Poll::Ready(Err(error));
                }
                match self.poll_read(cx) {
                    Poll::Ready(Ok(())) => {
                        self.timers.received(now());
                        continue;
                    }
                    Poll::Ready(Err(error)) => return Poll::Ready(Err(error)),
                    Poll::Pending => {}
                }
            }
            // Nothing to read: the timers. An answer that arrived was read above, so it
            // wins over a deadline that passed meanwhile.
            let Some(at) = self.timers.next_wake(deadline, &self.session) else {
                return Poll::Pending;
            };
            ready!(self.timer.poll_at(at, cx));
            let now = now();
            if self.session.poll_timeout().is_some_and(|at| at <= now) {
                // A ping due goes into buffers from the free list rather than fresh ones.
                self.take_back_buffers();
            }
            let expiry = self.timers.expire(&mut self.session, now, deadline);
            return Poll::Ready(match expiry.map_err(Error::from) {
                Ok(Expiry::WriteTimedOut) => Err(self.write_timed_out()),
                Ok(Expiry::Deadline) => Ok(Incoming::Deadline),
                Ok(Expiry::ReadTimedOut) => Err(Error::ReadTimeout),
                Ok(_) => continue,
                Err(error) => Err(error),
            });
        }
    }

    /// One read into the session; `Ready(Ok)` when bytes came. While the session is idle
    /// and the stream can signal readiness, waits with the buffers lent out.
    ///
    /// With buffers, it reads at once; a read that would block (which clears tokio's
    /// readiness and registers the waker) lends them out when the session is idle. Without
    /// buffers, it asks for readiness and takes buffers back only when the socket is
    /// readable.
    fn poll_read(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if self.session.buffers_released() {
            match self.stream.poll_read_ready(cx) {
                Some(Poll::Pending) => return Poll::Pending,
                Some(Poll::Ready(Err(e))) => return Poll::Ready(Err(self.io_failed(e))),
                Some(Poll::Ready(Ok(()))) | None => self.take_back_buffers(),
            }
        }
        let mut buf = ReadBuf::new(self.session.spare());
        match Pin::new(&mut self.stream).poll_read(cx, &mut buf) {
            Poll::Ready(Ok(())) => {
                let n = buf.filled().len();
                if n == 0 {
                    return Poll::Ready(Err(self.fail(Error::Closed)));
                }
                self.session.received(n);
                Poll::Ready(Ok(()))
            }
            Poll::Pending => {
                // Bytes that came after tokio last cleared the socket's readiness are read
                // now rather than after a turn of the reactor (what a pipelined link finds
                // most of the time; one answered packet at a time pays an empty read).
                match self.stream.read_now(self.session.spare()) {
                    Some(Ok(0)) => return Poll::Ready(Err(self.fail(Error::Closed))),
                    Some(Ok(n)) => {
                        self.session.received(n);
                        return Poll::Ready(Ok(()));
                    }
                    Some(Err(e))
                        if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
                    Some(Err(e)) => return Poll::Ready(Err(self.io_failed(e))),
                    None => {}
                }
                if self.release_idle
                    && self.stream.can_signal_read_ready()
                    && let Some(buffers) = self.session.release_buffers()
                {
                    lend(buffers);
                }
                Poll::Pending
            }
            Poll::Ready(Err(e)) if e.kind() == ErrorKind::Interrupted => {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(self.io_failed(e))),
        }
    }

    fn poll_flush(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        if self.session.is_failed() {
            return Poll::Ready(Err(Error::Closed));
        }
        let mut progress = false;
        while self.session.wants_write() {
            let written = Pin::new(&mut self.stream).poll_write(cx, self.session.transmit());
            match written {
                Poll::Pending => return self.stalled(progress),
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(self.io_failed(ErrorKind::WriteZero.into())));
                }
                Poll::Ready(Ok(n)) => {
                    self.session.wrote(n);
                    progress = true;
                }
                Poll::Ready(Err(e)) if e.kind() == ErrorKind::Interrupted => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(self.io_failed(e))),
            }
        }
        match Pin::new(&mut self.stream).poll_flush(cx) {
            Poll::Pending => self.stalled(progress),
            Poll::Ready(Ok(())) => {
                self.timers.flushed();
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(self.io_failed(e))),
        }
    }

    /// The socket took no more of what is queued: the write timeout counts from the last
    /// byte it took.
    fn stalled<T>(&mut self, progress: bool) -> Poll<T> {
        self.timers.wrote(progress, true, now());
        Poll::Pending
    }

    /// A socket error, typed by the stream (a TLS failure), fatal.
    fn io_failed(&mut self, error: std::io::Error) -> Error {
        let typed = match self.stream.failure() {
            Some(failure) => Error::from(failure),
            None => Error::Io(error),
        };
        self.fail(typed)
    }
}

/// Puts an idle connection's buffers on the free list (dropped when it is full or they grew
/// large).
fn lend(buffers: SessionBuffers) {
    if buffers.capacity() > FREE_BUFFER_MAX {
        return;
    }
    FREE_BUFFERS.with_borrow_mut(|free| {
        if free.len() < FREE_LIST_CAP {
            free.push(buffers);
        }
    });
}

/// Buffers from the free list, or fresh ones.
fn borrow() -> SessionBuffers {
    FREE_BUFFERS.with_borrow_mut(Vec::pop).unwrap_or_default()
}
