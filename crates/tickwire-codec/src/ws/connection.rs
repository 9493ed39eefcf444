//! Connection-level rules on top of the frame reader and writer, sans-IO.
//!
//! Owns the close handshake (either side first, with a close timeout), automatic pongs,
//! client keepalive pings with a pong deadline, and the idle timeout. Time comes in through
//! [`Connection::filled`] and [`Connection::handle_timeout`]; the next deadline goes out
//! through [`Connection::poll_timeout`].
//!
//! The read path never writes: replies it owes (a pong, the close reply) are queued in the
//! [`Sender`] and reported by [`Connection::wants_write`]; the transport writes
//! [`Connection::output`]. Pongs go ahead of queued data frames that have not started going
//! out: only the one frame already partly written finishes first, never split. A close goes
//! after all queued data. Under a ping flood from a peer that never reads, queued pongs are
//! bounded and the most recent ping is still answered (RFC 6455 §5.5.3).
//!
//! It does not own the opening handshake or any socket.

use std::time::{Duration, Instant};

#[cfg(feature = "deflate")]
use super::PreparedMessage;
use super::{
    CloseCode, Compression, Error, Extension, FrameReader, FrameWriter, Limits, MaskSource,
    Message, OpCode, Role,
};
use crate::buf::{ReadBuf, WriteBuf};

/// Queued control bytes beyond which further automatic pongs are dropped (RFC 6455 §5.5.3
/// allows answering only the most recent ping); bounds memory against a ping flood from a
/// peer that never reads.
const MAX_QUEUED_CONTROL: usize = 16 << 10;

/// Connection configuration. [`Config::client`] and [`Config::server`] give the documented
/// defaults; every field may be changed.
#[derive(Debug, Clone)]
pub struct Config {
    /// Receive limits.
    pub limits: Limits,
    /// Answer pings with pongs automatically (default true).
    pub auto_pong: bool,
    /// Send a ping when nothing has been received for this long (default: none).
    pub ping_interval: Option<Duration>,
    /// How long to wait for a pong after a keepalive ping before failing (default 10 s).
    pub pong_timeout: Duration,
    /// Fail when nothing at all has been received for this long (default: none).
    pub idle_timeout: Option<Duration>,
    /// How long to wait for the peer's close reply after sending a close (default 5 s).
    pub close_timeout: Duration,
    /// Fragment outgoing data messages longer than this (default: never).
    pub fragment_size: Option<usize>,
    /// Initial receive buffer size (default 64 KiB client, 16 KiB server).
    pub read_buffer_size: usize,
    /// Initial send buffer size (default 64 KiB client, 16 KiB server).
    pub write_buffer_size: usize,
}

impl Config {
    /// Client defaults: [`Limits::client`], 64 KiB buffers.
    pub fn client() -> Self {
        Self {
            limits: Limits::client(),
            auto_pong: true,
            ping_interval: None,
            pong_timeout: Duration::from_secs(10),
            idle_timeout: None,
            close_timeout: Duration::from_secs(5),
            fragment_size: None,
            read_buffer_size: 64 << 10,
            write_buffer_size: 64 << 10,
        }
    }

    /// Server defaults: [`Limits::server`], 16 KiB buffers.
    pub fn server() -> Self {
        Self {
            limits: Limits::server(),
            read_buffer_size: 16 << 10,
            write_buffer_size: 16 << 10,
            ..Self::client()
        }
    }
}

/// Where the connection is in its life (RFC 6455 §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnectionState {
    /// Messages flow both ways.
    Open,
    /// We sent a close and wait for the peer's.
    CloseSent,
    /// Both closes are exchanged (or queued): flush, then close the transport.
    Closed,
    /// A protocol error, limit or timeout ended the connection; a close frame may be queued.
    Failed,
}

/// What [`Connection::poll`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// A message or control frame. Pings were already answered if auto-pong is on; a close
    /// was already answered.
    Message(Message<'a>),
    /// No complete message is buffered: read more.
    NeedMore,
    /// The close handshake is complete; no message will follow.
    Closed,
}

/// What [`Connection::advance`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// A message is ready: take it with [`Connection::message`].
    Ready,
    /// No complete message is buffered: read more.
    NeedMore,
    /// The close handshake is complete; no message will follow.
    Closed,
}

/// The sending half: encodes into the outgoing buffers. Borrowable while a received message
/// is held (see [`Connection::poll_with_sender`]).
#[derive(Debug)]
pub struct Sender {
    writer: FrameWriter,
    out: WriteBuf,
    control: WriteBuf,
    /// Bytes of the frame at the front of `out` still to be written after a partial write
    /// stopped inside it; 0 at a frame boundary. Control frames wait only for these.
    out_frame_left: usize,
    /// The most recent ping received while `control` was full: answered once it drains.
    latest_pong: Option<([u8; super::MAX_CONTROL_PAYLOAD], u8)>,
    /// A close frame is queued in `out` (or was written).
    close_queued: bool,
    /// The close frame has left `out`; nothing may follow it.
    close_written: bool,
    auto_pong: bool,
}

/// A WebSocket connection after the opening handshake, sans-IO.
#[derive(Debug)]
pub struct Connection {
    reader: FrameReader,
    sender: Sender,
    state: ConnectionState,
    /// The close code of the error that failed the connection.
    failure: CloseCode,
    config: Config,
    last_received: Instant,
    last_now: Instant,
    ping_sent_at: Option<Instant>,
    close_started_at: Option<Instant>,
    pings_sent: u64,
    extension: bool,
}

impl Connection {
    /// A connection in the open state, `now` being when the handshake completed.
    pub fn new(role: Role, config: Config, mask: MaskSource, now: Instant) -> Self {
        let mut writer = FrameWriter::new(role, mask);
        writer.set_fragment_size(config.fragment_size);
        Self {
            reader: FrameReader::new(role, config.limits, config.read_buffer_size),
            sender: Sender {
                writer,
                out: WriteBuf::new(config.write_buffer_size, super::MAX_HEADER_LEN),
                control: WriteBuf::new(256, 0),
                out_frame_left: 0,
                latest_pong: None,
                close_queued: false,
                close_written: false,
                auto_pong: config.auto_pong,
            },
            state: ConnectionState::Open,
            failure: CloseCode::ABNORMAL,
            config,
            last_received: now,
            last_now: now,
            ping_sent_at: None,
            close_started_at: None,
            pings_sent: 0,
            extension: false,
        }
    }

    /// The current state.
    pub fn state(&self) -> ConnectionState {
        self.state
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The frame reader.
    pub fn reader_mut(&mut self) -> &mut FrameReader {
        &mut self.reader
    }

    /// Installs a negotiated extension: `decoder` on the reader, `encoder` on the writer
    /// (for permessage-deflate, the decoder and encoder halves the deflate extension
    /// provides). Call once, right after the handshake and before the first poll or send.
    pub fn set_extension(&mut self, decoder: Box<dyn Extension>, encoder: Box<dyn Extension>) {
        self.reader.set_extension(decoder);
        self.sender.writer.set_extension(encoder);
        self.extension = true;
    }

    /// True when an extension was installed with [`set_extension`](Self::set_extension).
    pub fn has_extension(&self) -> bool {
        self.extension
    }

    /// The sending half.
    pub fn sender(&mut self) -> &mut Sender {
        &mut self.sender
    }

    /// Writable space for the next socket read (see [`FrameReader::spare`]).
    #[inline]
    pub fn spare(&mut self) -> &mut [u8] {
        self.reader.spare()
    }

    /// Records `n` bytes read into [`spare`](Self::spare) at `now`.
    #[inline]
    pub fn filled(&mut self, n: usize, now: Instant) {
        self.reader.filled(n);
        if n > 0 {
            self.last_received = now;
        }
        self.last_now = now;
    }

    /// Copies received bytes in (for transports that do not read into `spare`).
    pub fn feed(&mut self, bytes: &[u8], now: Instant) {
        self.reader.feed(bytes);
        if !bytes.is_empty() {
            self.last_received = now;
        }
        self.last_now = now;
    }

    /// Takes the bytes that arrived behind the opening handshake's head, left in the
    /// handshake's read buffer (the first frames): they are parsed before anything read
    /// later. Leaves `buf` empty. Call once, before the first poll; a server only after its
    /// 101 has been written (the handshake module's contract).
    ///
    /// They are copied once into the reader's buffer, which the reader owns; at most what one
    /// socket read brought in after the head.
    pub fn take_received(&mut self, buf: &mut ReadBuf, now: Instant) {
        if !buf.is_empty() {
            self.feed(buf.data(), now);
            buf.clear();
        }
    }

    /// The next event: [`advance`](Self::advance), then [`message`](Self::message) when one is
    /// ready. Replies owed for it are queued before it is returned.
    ///
    /// An error fails the connection: the close frame with its code is queued (unless one was
    /// already sent), the state becomes [`ConnectionState::Failed`], and later calls return
    /// [`Error::Failed`].
    #[inline]
    pub fn poll(&mut self) -> Result<Event<'_>, Error> {
        match self.advance()? {
            Progress::Ready => self.message().map(Event::Message),
            Progress::NeedMore => Ok(Event::NeedMore),
            Progress::Closed => Ok(Event::Closed),
        }
    }

    /// Like [`poll`](Self::poll), and also lends the [`Sender`], so a reply can be queued while
    /// the received message is still borrowed (no copy of the message).
    pub fn poll_with_sender(&mut self) -> Result<(Event<'_>, &mut Sender), Error> {
        match self.advance()? {
            Progress::Ready => self
                .message_with_sender()
                .map(|(m, s)| (Event::Message(m), s)),
            Progress::NeedMore => Ok((Event::NeedMore, &mut self.sender)),
            Progress::Closed => Ok((Event::Closed, &mut self.sender)),
        }
    }

    /// Parses buffered bytes up to the next message without borrowing it out, and queues
    /// the replies it owes (pong, close reply). Releases the previous message.
    pub fn advance(&mut self) -> Result<Progress, Error> {
        match self.state {
            ConnectionState::Open | ConnectionState::CloseSent => {}
            ConnectionState::Closed => return Ok(Progress::Closed),
            ConnectionState::Failed => return Err(Error::Failed(self.failure)),
        }
        let ready = match self.reader.advance() {
            Ok(ready) => ready,
            Err(error) => return Err(self.fail(error)),
        };
        if !ready {
            return Ok(Progress::NeedMore);
        }
        if self.reader.ready_opcode().is_some_and(OpCode::is_control) {
            let sender = &mut self.sender;
            match self.reader.message() {
                Ok(Message::Ping(payload)) => {
                    if sender.auto_pong && !sender.close_queued {
                        sender.queue_auto_pong(payload);
                    }
                }
                Ok(Message::Pong(_)) => self.ping_sent_at = None,
                Ok(Message::Close(frame)) => {
                    if !sender.close_queued {
                        // §5.5.1: echo the status code received.
                        let _ = sender
                            .writer
                            .close(&mut sender.out, frame.map(|f| f.code), "");
                        sender.close_queued = true;
                    }
                    self.state = ConnectionState::Closed;
                }
                Ok(_) => {}
                Err(error) => return Err(self.fail(error)),
            }
        }
        Ok(Progress::Ready)
    }

    /// The message [`advance`](Self::advance) made ready (text is validated here, once).
    #[inline]
    pub fn message(&mut self) -> Result<Message<'_>, Error> {
        self.message_with_sender().map(|(message, _)| message)
    }

    /// The ready message and the [`Sender`] together.
    #[inline]
    pub fn message_with_sender(&mut self) -> Result<(Message<'_>, &mut Sender), Error> {
        match self.reader.message() {
            Ok(message) => Ok((message, &mut self.sender)),
            Err(error) => {
                let code = error.close_code().unwrap_or(CloseCode::PROTOCOL_ERROR);
                if error != Error::NotReady {
                    fail_fields(&mut self.sender, &mut self.state, &mut self.failure, code);
                }
                Err(error)
            }
        }
    }

    /// Starts the close handshake: queues a close after any queued data. Further sends fail;
    /// received messages are still delivered until the peer's close arrives or the close
    /// timeout expires.
    pub fn close(&mut self, code: CloseCode, reason: &str, now: Instant) -> Result<(), Error> {
        self.sender.close(code, reason)?;
        self.note_close_started(now);
        Ok(())
    }

    /// True when there are bytes to write.
    #[inline]
    pub fn wants_write(&self) -> bool {
        !self.output().is_empty()
    }

    /// The bytes to write next. Call [`advance_output`](Self::advance_output) with how many
    /// were written, then ask again: queued control frames and data come out in turn.
    #[inline]
    pub fn output(&self) -> &[u8] {
        self.sender.output()
    }

    /// Records that `n` bytes of the last [`output`](Self::output) were written.
    #[inline]
    pub fn advance_output(&mut self, n: usize) {
        self.sender.advance_output(n);
    }

    /// True when the transport should be closed: the handshake is over (or failed) and every
    /// queued byte is written.
    pub fn should_close_transport(&self) -> bool {
        matches!(
            self.state,
            ConnectionState::Closed | ConnectionState::Failed
        ) && !self.wants_write()
    }

    /// The next instant at which [`handle_timeout`](Self::handle_timeout) must be called, if
    /// any timer is armed.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if matches!(
            self.state,
            ConnectionState::Closed | ConnectionState::Failed
        ) {
            return None;
        }
        let mut deadline: Option<Instant> = None;
        let mut consider = |at: Instant| deadline = Some(deadline.map_or(at, |d| d.min(at)));
        if self.sender.close_queued {
            // A close queued through the Sender arms its timer at the next call.
            consider(
                self.close_started_at
                    .map_or(self.last_now, |t| t + self.config.close_timeout),
            );
        }
        if let Some(idle) = self.config.idle_timeout {
            consider(self.last_received + idle);
        }
        if let Some(interval) = self.config.ping_interval {
            match self.ping_sent_at {
                Some(sent) => consider(sent + self.config.pong_timeout),
                // No keepalive ping goes out once a close is queued, so its deadline would
                // be one `handle_timeout` never acts on (a transport would spin on it).
                None if !self.sender.close_queued => consider(self.last_received + interval),
                None => {}
            }
        }
        deadline
    }

    /// Runs the timers due at `now`: sends a keepalive ping, or fails the connection with
    /// [`Error::PongTimeout`], [`Error::IdleTimeout`] or [`Error::CloseTimeout`].
    pub fn handle_timeout(&mut self, now: Instant) -> Result<(), Error> {
        self.last_now = now;
        if matches!(
            self.state,
            ConnectionState::Closed | ConnectionState::Failed
        ) {
            return Ok(());
        }
        if self.sender.close_queued {
            self.note_close_started(now);
            if let Some(started) = self.close_started_at {
                if now >= started + self.config.close_timeout {
                    self.state = ConnectionState::Closed;
                    return Err(Error::CloseTimeout);
                }
            }
        }
        if let Some(idle) = self.config.idle_timeout {
            if now >= self.last_received + idle {
                return Err(self.fail_timeout(Error::IdleTimeout));
            }
        }
        if let Some(interval) = self.config.ping_interval {
            match self.ping_sent_at {
                Some(sent) if now >= sent + self.config.pong_timeout => {
                    return Err(self.fail_timeout(Error::PongTimeout));
                }
                None if now >= self.last_received + interval && !self.sender.close_queued => {
                    self.pings_sent += 1;
                    let payload = self.pings_sent.to_be_bytes();
                    self.sender
                        .writer
                        .ping(&mut self.sender.control, &payload)?;
                    self.ping_sent_at = Some(now);
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn note_close_started(&mut self, now: Instant) {
        if self.close_started_at.is_none() {
            self.close_started_at = Some(now);
            if self.state == ConnectionState::Open {
                self.state = ConnectionState::CloseSent;
            }
        }
    }

    fn fail(&mut self, error: Error) -> Error {
        let code = error.close_code().unwrap_or(CloseCode::PROTOCOL_ERROR);
        fail_fields(&mut self.sender, &mut self.state, &mut self.failure, code);
        error
    }

    fn fail_timeout(&mut self, error: Error) -> Error {
        self.failure = CloseCode::GOING_AWAY;
        if !self.sender.close_queued {
            let _ = self
                .sender
                .writer
                .close(&mut self.sender.out, Some(CloseCode::GOING_AWAY), "");
            self.sender.close_queued = true;
        }
        self.state = ConnectionState::Failed;
        error
    }
}

/// Fails the connection: queues a close with `code` unless one was queued, and records it.
fn fail_fields(
    sender: &mut Sender,
    state: &mut ConnectionState,
    failure: &mut CloseCode,
    code: CloseCode,
) {
    if !sender.close_queued {
        let _ = sender.writer.close(&mut sender.out, Some(code), "");
        sender.close_queued = true;
    }
    *failure = code;
    *state = ConnectionState::Failed;
}

impl Sender {
    /// Queues a text message.
    #[inline]
    pub fn text(&mut self, text: &str) -> Result<(), Error> {
        self.message(OpCode::Text, text.as_bytes())
    }

    /// Queues a binary message.
    #[inline]
    pub fn binary(&mut self, payload: &[u8]) -> Result<(), Error> {
        self.message(OpCode::Binary, payload)
    }

    /// Queues a data message (`opcode` Text or Binary; a Text payload must be UTF-8).
    #[inline]
    pub fn message(&mut self, opcode: OpCode, payload: &[u8]) -> Result<(), Error> {
        if self.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.writer.message(&mut self.out, opcode, payload);
        Ok(())
    }

    /// Queues a data message with a per-message override of the extension's compression
    /// policy (no effect when no extension is negotiated).
    pub fn message_with(
        &mut self,
        opcode: OpCode,
        payload: &[u8],
        compression: Compression,
    ) -> Result<(), Error> {
        if self.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.writer
            .message_with(&mut self.out, opcode, payload, compression);
        Ok(())
    }

    /// Queues a message prepared once for many connections (fan-out): compressed when this
    /// connection negotiated permessage-deflate with a window that fits, plain otherwise.
    #[cfg(feature = "deflate")]
    pub fn prepared(&mut self, message: &PreparedMessage) -> Result<(), Error> {
        if self.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.writer.prepared(&mut self.out, message);
        Ok(())
    }

    /// Queues a ping (at most 125 bytes), ahead of data not yet started.
    pub fn ping(&mut self, payload: &[u8]) -> Result<(), Error> {
        if self.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.writer.ping(&mut self.control, payload)
    }

    /// Queues a pong (at most 125 bytes), ahead of data not yet started.
    pub fn pong(&mut self, payload: &[u8]) -> Result<(), Error> {
        if self.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.writer.pong(&mut self.control, payload)
    }

    /// Queues a close after any queued data. The close timeout starts at the connection's
    /// next timer call; prefer [`Connection::close`] when not holding a message.
    pub fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), Error> {
        if self.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.writer.close(&mut self.out, Some(code), reason)?;
        self.close_queued = true;
        Ok(())
    }

    /// True once a close frame is queued or sent.
    pub fn is_closing(&self) -> bool {
        self.close_queued
    }

    /// Bytes queued and not yet written.
    pub fn queued(&self) -> usize {
        self.out.len() + self.control.len()
    }

    /// Queues the pong that auto-pong owes for `payload` (at most 125 bytes, checked by the
    /// reader). Past [`MAX_QUEUED_CONTROL`] only the latest is kept, sent once `control` drains.
    fn queue_auto_pong(&mut self, payload: &[u8]) {
        if self.control.len() < MAX_QUEUED_CONTROL {
            let _ = self.writer.pong(&mut self.control, payload);
            return;
        }
        let mut latest = [0u8; super::MAX_CONTROL_PAYLOAD];
        latest[..payload.len()].copy_from_slice(payload);
        self.latest_pong = Some((latest, payload.len() as u8));
    }

    #[inline]
    fn output(&self) -> &[u8] {
        if self.out_frame_left > 0 {
            // Finish the frame in progress before anything else (it may not be split).
            return &self.out.as_slice()[..self.out_frame_left];
        }
        if !self.control.is_empty() && !self.close_written {
            return self.control.as_slice();
        }
        self.out.as_slice()
    }

    #[inline]
    fn advance_output(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        if self.out_frame_left == 0 && !self.control.is_empty() && !self.close_written {
            self.control.consume(n);
            if self.control.is_empty() {
                if let Some((payload, len)) = self.latest_pong.take() {
                    let _ = self
                        .writer
                        .pong(&mut self.control, &payload[..usize::from(len)]);
                }
            }
            return;
        }
        self.out_frame_left = if self.out_frame_left > 0 {
            self.out_frame_left - n
        } else {
            remainder_of_frame_at(self.out.as_slice(), n)
        };
        self.out.consume(n);
        if self.out.is_empty() && self.close_queued {
            // The close went out last; nothing may follow it (§5.5.1).
            self.close_written = true;
            self.control.clear();
            self.latest_pong = None;
        }
    }
}

/// How many bytes of the frame in which a write of `written` bytes stopped are still unwritten
/// (0 when it stopped on a frame boundary). `queued` starts on a frame boundary and holds whole
/// frames encoded by our own writer, so every header is complete and well formed.
fn remainder_of_frame_at(queued: &[u8], written: usize) -> usize {
    if written == queued.len() {
        return 0;
    }
    let mut at = 0;
    while at < written {
        at += encoded_frame_len(&queued[at..]);
    }
    at - written
}

/// Total length (header, mask key and payload) of the frame our writer encoded at `frame[0]`.
fn encoded_frame_len(frame: &[u8]) -> usize {
    let masked = frame[1] & 0x80 != 0;
    let (header, payload) = match frame[1] & 0x7f {
        0x7e => (4, usize::from(u16::from_be_bytes([frame[2], frame[3]]))),
        0x7f => {
            let mut len = [0u8; 8];
            len.copy_from_slice(&frame[2..10]);
            (10, u64::from_be_bytes(len) as usize)
        }
        short => (2, usize::from(short)),
    };
    header + if masked { 4 } else { 0 } + payload
}
