//! [`Link`]: one packet connection's bytes, both roles. It owns the stream, the
//! [`PacketReader`] and [`PacketWriter`] with their buffers, and the control packets on
//! request id 0 (ping, pong, busy; see the module docs); the client and the server
//! connection put their multiplexer on top of it.

use std::io::ErrorKind;
use std::time::{Duration, Instant};

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::mux::RequestId;
use tickwire_codec::packet::{Header, PacketConfig, PacketReader, PacketWriter, ReadEvent};

use super::Error;
use super::control::Control;
use crate::Stream;

/// Keepalive timing: a ping after `interval` without one, and the connection fails when its
/// pong has not come `timeout` later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Time between pings.
    pub interval: Duration,
    /// How long a pong may take before the connection fails with
    /// [`Error::KeepaliveTimeout`].
    pub timeout: Duration,
}

/// What [`Link::next`] found.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Incoming {
    /// A packet on a request id (not 0): its payload is [`Link::payload`] until the next call.
    Packet(Header),
    /// A "busy" control packet refusing this request.
    Busy(RequestId),
    /// The pong to the last ping: the keepalive deadline is disarmed.
    Pong,
    /// The caller's deadline passed.
    Deadline,
}

/// How long a read waits when a timer has already passed: long enough for the kernel to
/// hand over what is already buffered, short enough not to delay the timer noticeably.
const QUICK_READ: Duration = Duration::from_millis(1);

#[derive(Debug)]
pub(crate) struct Link<S> {
    stream: S,
    reader: PacketReader,
    writer: PacketWriter,
    received: ReadBuf,
    inflated: Vec<u8>,
    queued: WriteBuf,
    keepalive: Option<Keepalive>,
    next_ping: Option<Instant>,
    pong_due: Option<Instant>,
    nonce: u64,
    read_timeout: Option<Duration>,
    failed: bool,
}

impl<S: Stream> Link<S> {
    pub(crate) fn new(
        stream: S,
        config: PacketConfig,
        keepalive: Option<Keepalive>,
        read_timeout: Option<Duration>,
    ) -> Self {
        Self {
            stream,
            reader: PacketReader::new(config.clone()),
            writer: PacketWriter::new(config),
            received: ReadBuf::with_capacity(8 << 10),
            inflated: Vec::new(),
            queued: WriteBuf::new(8 << 10, 0),
            keepalive,
            next_ping: keepalive.map(|k| Instant::now() + k.interval),
            pong_due: None,
            nonce: 0,
            read_timeout,
            failed: false,
        }
    }

    pub(crate) fn stream(&self) -> &S {
        &self.stream
    }

    pub(crate) fn is_failed(&self) -> bool {
        self.failed
    }

    /// Queues one packet; nothing is written until [`flush`](Self::flush).
    pub(crate) fn queue(&mut self, id: RequestId, payload: &[u8]) -> Result<(), Error> {
        self.check_open()?;
        self.writer
            .encode(&mut self.queued, id.0, payload)
            .map(drop)
            .map_err(Error::Encode)
    }

    /// Queues a control packet (request id 0, never compressed).
    pub(crate) fn queue_control(&mut self, control: Control) -> Result<(), Error> {
        self.check_open()?;
        let (body, len) = control.encode();
        self.writer
            .encode_uncompressed(&mut self.queued, 0, &body[..len])
            .map(drop)
            .map_err(Error::Encode)
    }

    /// Writes everything queued (bounded by the stream's write timeout).
    pub(crate) fn flush(&mut self) -> Result<(), Error> {
        self.check_open()?;
        if self.queued.is_empty() {
            return Ok(());
        }
        let result = self.stream.write_all(self.queued.as_slice());
        let written = self.queued.len();
        self.queued.consume(written);
        result.map_err(|e| self.fail(crate::stream::io_error(&self.stream, e).into()))
    }

    /// Sends a ping now (flushing what is queued) and arms its pong deadline.
    pub(crate) fn ping(&mut self, now: Instant) -> Result<(), Error> {
        self.nonce = self.nonce.wrapping_add(1);
        self.queue_control(Control::Ping(self.nonce))?;
        self.flush()?;
        let timeout = self
            .keepalive
            .map_or(Duration::from_secs(10), |k| k.timeout);
        if self.pong_due.is_none() {
            self.pong_due = Some(now + timeout);
        }
        self.next_ping = self.keepalive.map(|k| now + k.interval);
        Ok(())
    }

    /// Whether a ping is waiting for its pong.
    pub(crate) fn awaits_pong(&self) -> bool {
        self.pong_due.is_some()
    }

    /// The next packet on a request id, a busy refusal, a pong, or [`Incoming::Deadline`] once
    /// `deadline` passes. Writes what is queued before it blocks (an unsent request cannot be
    /// answered), answers pings, takes pongs, sends keepalive pings and fails the link when a
    /// pong is overdue. Any error but [`Error::ReadTimeout`] leaves the link failed.
    pub(crate) fn next(&mut self, deadline: Option<Instant>) -> Result<Incoming, Error> {
        self.check_open()?;
        let mut last_byte = Instant::now();
        loop {
            match self.reader.poll(&mut self.received, &mut self.inflated) {
                Ok(ReadEvent::Packet(packet)) if packet.header.request_id != 0 => {
                    return Ok(Incoming::Packet(packet.header));
                }
                Ok(ReadEvent::Packet(packet)) => match Control::decode(packet.payload) {
                    Some(Control::Ping(nonce)) => self.queue_control(Control::Pong(nonce))?,
                    Some(Control::Pong(_)) => {
                        self.pong_due = None;
                        return Ok(Incoming::Pong);
                    }
                    Some(Control::Busy(id)) => return Ok(Incoming::Busy(id)),
                    None => return Err(self.fail(Error::MalformedControl)),
                },
                Ok(ReadEvent::NeedMore { .. }) => {
                    if let Some(passed) = self.wait(&mut last_byte, deadline)? {
                        return Ok(passed);
                    }
                }
                Err(error) => return Err(self.fail(Error::Protocol(error))),
            }
        }
    }

    /// The payload of the packet [`next`](Self::next) returned last.
    pub(crate) fn payload(&self, header: &Header) -> &[u8] {
        payload_of(header, &self.received, &self.inflated)
    }

    /// The payload of the packet [`next`](Self::next) returned last, and the writer with
    /// its queue, borrowed apart: an answer is encoded while the request is still borrowed.
    pub(crate) fn payload_and_writer(
        &mut self,
        header: &Header,
    ) -> (&[u8], &mut PacketWriter, &mut WriteBuf) {
        let payload = payload_of(header, &self.received, &self.inflated);
        (payload, &mut self.writer, &mut self.queued)
    }

    /// Marks the link failed and shuts the socket's write side (best effort).
    pub(crate) fn fail(&mut self, error: Error) -> Error {
        if !self.failed {
            self.failed = true;
            let _ = self.stream.shutdown_write();
        }
        error
    }

    /// Sends a due keepalive ping, flushes, then reads once (moving `last_byte` on when
    /// bytes came). A timer that has passed fires only when a quick read finds nothing more
    /// in the socket: what arrived while the caller was away (an answer, a pong) counts
    /// before a deadline does. `Some` when the caller's deadline passed.
    fn wait(
        &mut self,
        last_byte: &mut Instant,
        deadline: Option<Instant>,
    ) -> Result<Option<Incoming>, Error> {
        let now = Instant::now();
        if self.next_ping.is_some_and(|at| now >= at) {
            self.ping(now)?;
        }
        self.flush()?;
        let read_deadline = self.read_timeout.map(|t| *last_byte + t);
        let passed = |at: Option<Instant>| at.is_some_and(|at| now >= at);
        let timer_passed = passed(deadline) || passed(self.pong_due) || passed(read_deadline);
        let timeout = if timer_passed {
            Some(QUICK_READ)
        } else {
            [deadline, self.pong_due, self.next_ping, read_deadline]
                .into_iter()
                .flatten()
                .min()
                // A zero timeout would mean "block forever" to the socket.
                .map(|at| at.saturating_duration_since(now).max(QUICK_READ))
        };
        if self.read_once(timeout)? {
            *last_byte = Instant::now();
            return Ok(None);
        }
        if passed(deadline) {
            Ok(Some(Incoming::Deadline))
        } else if passed(self.pong_due) {
            Err(self.fail(Error::KeepaliveTimeout))
        } else if passed(read_deadline) {
            Err(Error::ReadTimeout)
        } else {
            // Woken for a timer that has not passed yet (a ping to send): the next turn.
            Ok(None)
        }
    }

    /// One read into the reader's spare space, bounded by `timeout`; false when it timed out.
    fn read_once(&mut self, timeout: Option<Duration>) -> Result<bool, Error> {
        self.stream.set_read_timeout(timeout)?;
        let spare = self.reader.spare(&mut self.received);
        match self.stream.read(spare) {
            Ok(0) => Err(self.fail(Error::Closed)),
            Ok(n) => {
                self.received.filled(n);
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

    fn check_open(&self) -> Result<(), Error> {
        if self.failed {
            Err(Error::Closed)
        } else {
            Ok(())
        }
    }
}

/// A returned packet's payload: decompressed into `inflated`, or in place in `received`
/// (which still starts at the packet: the reader releases it on its next call).
fn payload_of<'a>(header: &Header, received: &'a ReadBuf, inflated: &'a [u8]) -> &'a [u8] {
    if header.codec.is_compressed() {
        inflated
    } else {
        &received.data()[header.header_len()..header.packet_len()]
    }
}
