//! [`Link`]: one packet connection's socket, both roles: a thin blocking driver over the
//! sans-IO [`Session`], which owns the protocol (framing, buffers, control packets on request
//! id 0, keepalive timers). The link owns the stream, its reads and writes and the read
//! timeout; the client and the server connection put their multiplexer on top of it.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::mux::RequestId;
use tickwire_codec::packet::{
    Control, Expiry, Header, Incoming, LinkTimers, PacketWriter, Session, SessionError,
};
use tickwire_core::packet::{LinkOptions, PacketLink};

use super::Error;
use crate::Transport;

/// How long a read waits when a timer has already passed: long enough for the kernel to
/// hand over what is already buffered, short enough not to delay the timer noticeably.
const QUICK_READ: Duration = Duration::from_millis(1);

/// One packet connection's socket and session on the blocking transport: the transport's
/// side of a [`PacketClient`](super::PacketClient) (its [`ClientIo`]) and of a server
/// connection. Made by the builders; its methods are the client's.
///
/// [`ClientIo`]: tickwire_core::packet::ClientIo
#[derive(Debug)]
pub struct Link<S> {
    stream: S,
    session: Session,
    /// The read and write timeouts, and which one counts (the codec's).
    timers: LinkTimers,
}

impl<S: Transport> PacketLink for Link<S> {
    type Stream = S;

    fn now(&self) -> Instant {
        Instant::now()
    }

    /// The session, to read its state (failed, a pong awaited) and the payload of the packet
    /// the last wait returned.
    fn session(&self) -> &Session {
        &self.session
    }

    fn stream(&self) -> &S {
        &self.stream
    }

    /// Nothing is written until the next flush or wait.
    fn queue(&mut self, id: RequestId, payload: &[u8]) -> Result<(), Error> {
        self.session.queue(id.0, payload).map_err(|e| self.lost(e))
    }
}

impl<S: Transport> Link<S> {
    /// A link over `stream` as `options` say; sets the stream's write timeout.
    pub(crate) fn new(mut stream: S, options: &LinkOptions) -> Result<Self, Error> {
        stream.set_write_timeout(options.write_timeout)?;
        let now = Instant::now();
        Ok(Self {
            stream,
            session: Session::new(options.packet.clone(), options.keepalive, now),
            timers: LinkTimers::new(options.read_timeout, options.write_timeout, now),
        })
    }

    /// Queues a control packet (request id 0, never compressed).
    pub(crate) fn queue_control(&mut self, control: Control) -> Result<(), Error> {
        self.session
            .queue_control(control)
            .map_err(|e| self.lost(e))
    }

    /// Writes everything queued, blocking (bounded by the stream's write timeout); reads
    /// nothing meanwhile.
    pub(crate) fn flush(&mut self) -> Result<(), Error> {
        if self.session.is_failed() {
            return Err(Error::Closed);
        }
        let mut result = Ok(());
        if self.session.wants_write() {
            result = self.stream.write_all(self.session.transmit());
            let written = self.session.transmit().len();
            self.session.wrote(written);
        }
        if result.is_ok() && self.stream.has_pending_write() {
            result = self.stream.flush();
        }
        self.timers.flushed();
        result.map_err(|e| self.fail(crate::stream::io_error(&self.stream, e).into()))
    }

    /// Sends a ping now (flushing what is queued) and arms its pong deadline.
    pub(crate) fn ping(&mut self, now: Instant) -> Result<(), Error> {
        self.session.ping(now).map_err(|e| self.lost(e))?;
        self.flush()
    }

    /// The next packet on a request id, a busy refusal, a pong, or [`Incoming::Deadline`] once
    /// `deadline` passes. Writes what is queued while it waits (an unsent request cannot be
    /// answered), reading what arrives meanwhile, so two ends that both queue more than the
    /// sockets hold cannot block each other (see [`wait`](Self::wait)); answers pings, takes pongs, sends keepalive pings and fails the link when a
    /// pong is overdue. Any error but [`Error::ReadTimeout`] leaves the link failed.
    pub(crate) fn next(&mut self, deadline: Option<Instant>) -> Result<Incoming, Error> {
        if self.session.is_failed() {
            return Err(Error::Closed);
        }
        self.timers.wait_started(Instant::now());
        loop {
            if self.session.output_full() {
                // The peer sends faster than it reads: stop taking packets in until the queue
                // is written (the write timeout bounds it), so its sending waits on TCP.
                self.flush()?;
            }
            let event = self.session.poll_event().map_err(|e| self.lost(e))?;
            if let Some(incoming) = Incoming::from_event(event) {
                return Ok(incoming);
            }
            if let Some(passed) = self.wait(deadline)? {
                return Ok(passed);
            }
        }
    }

    /// The payload of the packet [`next`](Self::next) returned last, and the writer with
    /// its queue, borrowed apart: an answer is encoded while the request is still borrowed.
    pub(crate) fn payload_and_writer(
        &mut self,
        header: &Header,
    ) -> (&[u8], &mut PacketWriter, &mut WriteBuf) {
        self.session.payload_and_writer(header)
    }

    /// Marks the link failed and shuts the socket's write side (best effort).
    pub(crate) fn fail(&mut self, error: Error) -> Error {
        if self.session.fail() {
            let _ = self.stream.shutdown_write();
        }
        error
    }

    /// A session error as the transport's: terminal ones fail the link (and shut the
    /// socket's write side).
    fn lost(&mut self, error: SessionError) -> Error {
        let error = Error::from(error);
        if self.session.is_failed() {
            let _ = self.stream.shutdown_write();
        }
        error
    }

    /// Writes what the socket takes now, then reads once. A timer that has passed fires only when a quick read finds nothing more in the
    /// socket: what arrived while the caller was away (an answer, a pong) counts before a
    /// deadline does. `Some` when the caller's deadline passed.
    ///
    /// While queued bytes remain (the socket's buffer is full), it waits for the socket to
    /// be readable or writable and reads what arrived, at most what the session's reader
    /// asks for: the peer may be writing to us before it reads again. The write timeout
    /// bounds a wait in which the socket takes none of them. The fast path (the socket takes
    /// everything at once) makes the same syscalls as a blocking write then a read.
    fn wait(&mut self, deadline: Option<Instant>) -> Result<Option<Incoming>, Error> {
        let pending = self.write_now()?;
        let now = Instant::now();
        if self.timers.write_timed_out(now) {
            return Err(self.write_timed_out());
        }
        // A timer that has passed gets a quick read; a zero timeout would mean "block
        // forever" to the socket.
        let timeout = (self.timers.next_wake(deadline, &self.session))
            .map(|at| at.saturating_duration_since(now).max(QUICK_READ));
        // Writable only: the timers below are checked, then the next turn writes.
        let readable = !pending
            || match self.stream.wait_duplex(true, timeout) {
                Ok(ready) => ready.readable,
                Err(e) => {
                    let error = crate::stream::io_error(&self.stream, e).into();
                    return Err(self.fail(error));
                }
            };
        if readable && self.read_once(timeout, pending)? {
            self.timers.received(Instant::now());
            return Ok(None);
        }
        // A ping due is queued (written on the next turn); a pong overdue fails the link.
        let expiry = self.timers.expire(&mut self.session, now, deadline);
        match expiry.map_err(|e| self.lost(e))? {
            Expiry::WriteTimedOut => Err(self.write_timed_out()),
            Expiry::Deadline => Ok(Some(Incoming::Deadline)),
            Expiry::ReadTimedOut => Err(Error::ReadTimeout),
            _ => Ok(None),
        }
    }

    /// Fails the link: the socket took none of the queued bytes for the write timeout.
    fn write_timed_out(&mut self) -> Error {
        let error = std::io::Error::from(ErrorKind::TimedOut);
        self.fail(crate::TransportError::Io(error).into())
    }

    /// Writes what is queued as far as the socket takes it without blocking; true when bytes
    /// remain (in the session or in the stream, a TLS stream's ciphertext).
    fn write_now(&mut self) -> Result<bool, Error> {
        let mut progress = false;
        let result = if self.session.wants_write() {
            self.stream.try_write(self.session.transmit())
        } else if self.stream.has_pending_write() {
            self.stream.try_write(&[])
        } else {
            return Ok(false);
        };
        match result {
            Ok(n) => {
                self.session.wrote(n);
                progress = true;
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::Interrupted) => {}
            Err(e) => {
                let error = crate::stream::io_error(&self.stream, e).into();
                return Err(self.fail(error));
            }
        }
        let pending = self.session.wants_write() || self.stream.has_pending_write();
        self.timers.wrote(progress, pending, Instant::now());
        Ok(pending)
    }

    /// One read into the session's spare space, bounded by `timeout`; false when it timed out.
    /// `ready`: the stream reported itself readable, read only what that gives.
    fn read_once(&mut self, timeout: Option<Duration>, ready: bool) -> Result<bool, Error> {
        self.stream.set_read_timeout(timeout)?;
        let spare = self.session.spare();
        let read = if ready {
            self.stream.read_ready(spare)
        } else {
            self.stream.read(spare)
        };
        match read {
            Ok(0) => Err(self.fail(Error::Closed)),
            Ok(n) => {
                self.session.received(n);
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::Interrupted => Ok(false),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Ok(false),
            Err(e) => {
                let error = crate::stream::io_error(&self.stream, e).into();
                Err(self.fail(error))
            }
        }
    }
}
