//! [`Session`]: the rules of one packet connection above the framing, both roles, sans-IO.
//!
//! It owns the [`PacketReader`] and [`PacketWriter`] with the connection's buffers (bytes
//! received, the inflated payload of a compressed packet, bytes queued for the socket), the
//! control packets on request id 0 ([`Control`]: pings are answered, pongs taken, busy
//! refusals reported) and the keepalive timers. It does not own sockets, the clock or request
//! matching: the transport reads into [`spare`](Session::spare), writes
//! [`transmit`](Session::transmit), passes `now` in, and puts a multiplexer on top.
//!
//! # Contract
//!
//! - [`poll_event`](Session::poll_event) returns one event at a time; a packet's payload is
//!   lent by [`payload`](Session::payload) until the next `poll_event`, `spare` or
//!   [`received`](Session::received). Answers the session owes (pongs) are queued, never
//!   written: [`wants_write`](Session::wants_write) tells the transport.
//! - [`poll_timeout`](Session::poll_timeout) is the next keepalive deadline;
//!   [`handle_timeout`](Session::handle_timeout) at or after it queues the due ping or fails
//!   the session with [`SessionError::KeepaliveTimeout`]. A transport should read what the
//!   socket already holds before it calls `handle_timeout` (a pong that arrived counts).
//! - Every error is terminal: the session is failed and every later call returns
//!   [`SessionError::Failed`], except [`SessionError::Encode`] (nothing queued, carry on).
//! - Between packets, with nothing queued ([`is_idle`](Session::is_idle)), the buffers can be
//!   lent out with [`release_buffers`](Session::release_buffers) and given back with
//!   [`restore_buffers`](Session::restore_buffers) (rule 11 of docs/ARCHITECTURE.md: an idle connection owns
//!   no buffer).

use std::time::{Duration, Instant};

use super::{Control, EncodeError, Header, PacketConfig, PacketError, PacketReader, PacketWriter};
use super::{ReadEvent, control::CONTROL_LEN};
use crate::buf::{ReadBuf, WriteBuf};

/// Keepalive timing: a ping after `interval` without one, and the session fails when its
/// pong has not come `timeout` later.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Keepalive {
    /// Time between pings.
    pub interval: Duration,
    /// How long a pong may take before the session fails with
    /// [`SessionError::KeepaliveTimeout`].
    pub timeout: Duration,
}

/// The pong deadline of a ping sent by [`Session::ping`] without keepalive configured.
pub const DEFAULT_PONG_TIMEOUT: Duration = Duration::from_secs(10);

/// What [`Session::poll_event`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionEvent {
    /// A packet on a request id (not 0); its payload is [`Session::payload`].
    Packet(Header),
    /// A busy control packet refusing the request with this id.
    Busy(u64),
    /// A pong: the pong deadline is disarmed.
    Pong,
    /// No complete packet in the bytes received: read more.
    NeedMore,
}

/// What a [`Session`] fails with.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SessionError {
    /// The peer sent a malformed packet or one over the limit. Terminal.
    Protocol(PacketError),
    /// A payload to queue is over the packet limit. Nothing was queued; the session
    /// carries on.
    Encode(EncodeError),
    /// A control packet (request id 0) that is not a ping, pong or busy of the documented
    /// layout. Peer violation; terminal.
    MalformedControl,
    /// No pong within the keepalive timeout after a ping. Terminal.
    KeepaliveTimeout,
    /// The session failed earlier (or the transport called [`Session::fail`]).
    Failed,
}

impl std::fmt::Display for SessionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Protocol(e) => write!(f, "packet protocol: {e}"),
            Self::Encode(e) => write!(f, "cannot send: {e}"),
            Self::MalformedControl => f.write_str("malformed control packet on request id 0"),
            Self::KeepaliveTimeout => f.write_str("no pong within the keepalive timeout"),
            Self::Failed => f.write_str("packet session already failed"),
        }
    }
}

impl std::error::Error for SessionError {}

/// A session's buffers, lent out while it is idle ([`Session::release_buffers`]).
#[derive(Debug)]
pub struct SessionBuffers {
    received: ReadBuf,
    inflated: Vec<u8>,
    queued: WriteBuf,
}

impl SessionBuffers {
    /// Fresh buffers: 8 KiB for reads and for writes; the inflate buffer grows on the first
    /// compressed packet.
    pub fn new() -> Self {
        Self {
            received: ReadBuf::with_capacity(8 << 10),
            inflated: Vec::new(),
            queued: WriteBuf::new(8 << 10, 0),
        }
    }

    /// Buffers that hold (almost) nothing: what an idle session keeps.
    fn empty() -> Self {
        Self {
            received: ReadBuf::with_capacity(0),
            inflated: Vec::new(),
            queued: WriteBuf::new(0, 0),
        }
    }

    /// Bytes of storage held.
    pub fn capacity(&self) -> usize {
        self.received.capacity() + self.inflated.capacity() + self.queued.capacity()
    }
}

impl Default for SessionBuffers {
    fn default() -> Self {
        Self::new()
    }
}

/// One packet connection's protocol state, both roles. See the module docs.
#[derive(Debug)]
pub struct Session {
    reader: PacketReader,
    writer: PacketWriter,
    buffers: SessionBuffers,
    /// Whether `buffers` are lent out (the session holds empty ones).
    released: bool,
    /// The empty set held while the buffers are lent out, kept between loans so that a
    /// loan allocates nothing.
    empty: Option<SessionBuffers>,
    keepalive: Option<Keepalive>,
    next_ping: Option<Instant>,
    pong_due: Option<Instant>,
    nonce: u64,
    failed: bool,
    /// [`PacketConfig::max_queued`].
    max_queued: usize,
}

impl Session {
    /// A session under `config`; with `keepalive`, the first ping is due `interval` after
    /// `now`.
    pub fn new(config: PacketConfig, keepalive: Option<Keepalive>, now: Instant) -> Self {
        Self {
            max_queued: config.max_queued,
            reader: PacketReader::new(config.clone()),
            writer: PacketWriter::new(config),
            buffers: SessionBuffers::new(),
            released: false,
            empty: None,
            keepalive,
            next_ping: keepalive.map(|k| now + k.interval),
            pong_due: None,
            nonce: 0,
            failed: false,
        }
    }

    /// Whether the session failed (an error, or [`fail`](Self::fail)).
    pub fn is_failed(&self) -> bool {
        self.failed
    }

    /// Marks the session failed; returns whether it was open until now.
    pub fn fail(&mut self) -> bool {
        !std::mem::replace(&mut self.failed, true)
    }

    /// Queues one packet (compressed as the configuration says).
    pub fn queue(&mut self, id: u64, payload: &[u8]) -> Result<(), SessionError> {
        self.check_open()?;
        self.restore_if_released();
        self.writer
            .encode(&mut self.buffers.queued, id, payload)
            .map(drop)
            .map_err(SessionError::Encode)
    }

    /// Queues a control packet (request id 0, never compressed).
    pub fn queue_control(&mut self, control: Control) -> Result<(), SessionError> {
        self.check_open()?;
        self.restore_if_released();
        let body: [u8; CONTROL_LEN] = control.encode();
        self.writer
            .encode_uncompressed(&mut self.buffers.queued, 0, &body)
            .map(drop)
            .map_err(SessionError::Encode)
    }

    /// Queues a ping and arms its pong deadline (the keepalive timeout, or
    /// [`DEFAULT_PONG_TIMEOUT`]) unless one is armed; the next keepalive ping is due
    /// `interval` after `now`.
    pub fn ping(&mut self, now: Instant) -> Result<(), SessionError> {
        self.nonce = self.nonce.wrapping_add(1);
        self.queue_control(Control::Ping(self.nonce))?;
        let timeout = self.keepalive.map_or(DEFAULT_PONG_TIMEOUT, |k| k.timeout);
        self.pong_due.get_or_insert(now + timeout);
        self.next_ping = self.keepalive.map(|k| now + k.interval);
        Ok(())
    }

    /// Whether a ping is waiting for its pong.
    pub fn awaits_pong(&self) -> bool {
        self.pong_due.is_some()
    }

    /// The next keepalive deadline (a ping to send, a pong overdue), if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.failed {
            return None;
        }
        [self.next_ping, self.pong_due].into_iter().flatten().min()
    }

    /// Runs the keepalive timers at `now`: a pong overdue fails the session with
    /// [`SessionError::KeepaliveTimeout`]; a ping due is queued.
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), SessionError> {
        self.check_open()?;
        if self.pong_due.is_some_and(|at| now >= at) {
            self.failed = true;
            return Err(SessionError::KeepaliveTimeout);
        }
        if self.next_ping.is_some_and(|at| now >= at) {
            self.ping(now)?;
        }
        Ok(())
    }

    /// The next event from the bytes received. Pings are answered (a pong queued) and
    /// skipped; a pong disarms the pong deadline.
    pub fn poll_event(&mut self) -> Result<SessionEvent, SessionError> {
        self.check_open()?;
        loop {
            let buffers = &mut self.buffers;
            let packet = match self
                .reader
                .poll(&mut buffers.received, &mut buffers.inflated)
            {
                Ok(ReadEvent::Packet(packet)) => packet,
                Ok(ReadEvent::NeedMore { .. }) => return Ok(SessionEvent::NeedMore),
                Err(error) => {
                    self.failed = true;
                    return Err(SessionError::Protocol(error));
                }
            };
            if packet.header.request_id != 0 {
                return Ok(SessionEvent::Packet(packet.header));
            }
            match Control::decode(packet.payload) {
                Some(Control::Ping(nonce)) => self.queue_control(Control::Pong(nonce))?,
                Some(Control::Pong(_)) => {
                    self.pong_due = None;
                    return Ok(SessionEvent::Pong);
                }
                Some(Control::Busy(id)) => return Ok(SessionEvent::Busy(id)),
                None => {
                    self.failed = true;
                    return Err(SessionError::MalformedControl);
                }
            }
        }
    }

    /// The payload of `header`, the packet [`poll_event`](Self::poll_event) returned last.
    pub fn payload(&self, header: &Header) -> &[u8] {
        payload_of(header, &self.buffers.received, &self.buffers.inflated)
    }

    /// The payload of the packet returned last, and the writer with its queue, borrowed
    /// apart: an answer is encoded while the request is still borrowed.
    pub fn payload_and_writer(
        &mut self,
        header: &Header,
    ) -> (&[u8], &mut PacketWriter, &mut WriteBuf) {
        let buffers = &mut self.buffers;
        let payload = payload_of(header, &buffers.received, &buffers.inflated);
        (payload, &mut self.writer, &mut buffers.queued)
    }

    /// Space for the transport's next read (the packet returned last is released). Call
    /// [`received`](Self::received) with the count read.
    pub fn spare(&mut self) -> &mut [u8] {
        self.restore_if_released();
        self.reader.spare(&mut self.buffers.received)
    }

    /// Records `n` bytes read into [`spare`](Self::spare).
    pub fn received(&mut self, n: usize) {
        self.buffers.received.filled(n);
    }

    /// Bytes queued for the socket.
    pub fn transmit(&self) -> &[u8] {
        self.buffers.queued.as_slice()
    }

    /// Records that the first `n` bytes of [`transmit`](Self::transmit) were written.
    pub fn wrote(&mut self, n: usize) {
        self.buffers.queued.consume(n);
    }

    /// Whether bytes are queued for the socket.
    pub fn wants_write(&self) -> bool {
        !self.buffers.queued.is_empty()
    }

    /// Whether more than [`PacketConfig::max_queued`] bytes are queued: the transport
    /// should stop reading and parsing (no [`poll_event`](Self::poll_event)) and write until
    /// the queue is empty, so the peer's sending waits on TCP instead of on this end's
    /// memory.
    pub fn output_full(&self) -> bool {
        self.buffers.queued.len() > self.max_queued
    }

    /// Whether nothing is partly received (once the packet returned last is released) and
    /// nothing is queued: the buffers can be released.
    pub fn is_idle(&mut self) -> bool {
        self.reader.release(&mut self.buffers.received);
        self.buffers.received.is_empty() && self.buffers.queued.is_empty()
    }

    /// Lends the buffers out while the session [`is_idle`](Self::is_idle) (`None` otherwise,
    /// or when they are already out). The session takes fresh ones, or those given to
    /// [`restore_buffers`](Self::restore_buffers), when it next needs them.
    pub fn release_buffers(&mut self) -> Option<SessionBuffers> {
        if self.released || !self.is_idle() {
            return None;
        }
        self.released = true;
        let empty = self.empty.take().unwrap_or_else(SessionBuffers::empty);
        Some(std::mem::replace(&mut self.buffers, empty))
    }

    /// Gives the session buffers to use after [`release_buffers`](Self::release_buffers)
    /// (any session's: they are cleared). Returned unused when the session holds its own.
    pub fn restore_buffers(&mut self, mut buffers: SessionBuffers) -> Option<SessionBuffers> {
        if !self.released {
            return Some(buffers);
        }
        buffers.received.clear();
        buffers.queued.clear();
        buffers.inflated.clear();
        self.empty = Some(std::mem::replace(&mut self.buffers, buffers));
        self.released = false;
        None
    }

    /// Whether the buffers are lent out.
    pub fn buffers_released(&self) -> bool {
        self.released
    }

    fn restore_if_released(&mut self) {
        if self.released {
            let _ = self.restore_buffers(SessionBuffers::new());
        }
    }

    fn check_open(&self) -> Result<(), SessionError> {
        if self.failed {
            Err(SessionError::Failed)
        } else {
            Ok(())
        }
    }
}

/// A returned packet's payload: decompressed into `inflated`, or in place in `received`
/// (which still starts at the packet: the reader releases it on its next call).
fn payload_of<'a>(header: &Header, received: &'a ReadBuf, inflated: &'a [u8]) -> &'a [u8] {
    if header.codec.is_compressed() {
        // The reader puts the payload at the end of `inflated`, after alignment padding.
        &inflated[inflated.len() - header.payload_len as usize..]
    } else {
        &received.data()[header.header_len()..header.packet_len()]
    }
}
