//! The frame reader: received bytes in, one [`Message`] at a time out.
//!
//! Owns frame parsing and validation, reassembly of fragmented messages, incremental UTF-8
//! checking and the receive limits. The receive buffer is lent by the caller on every call
//! (a [`ReadBuf`]), as the HTTP readers take theirs: a transport may keep one per connection,
//! or lend a shared scratch buffer and keep only the bytes of a partial frame between reads.
//! It does not answer pings or closes (the [`Connection`](super::Connection) queues those for
//! the writer) and never writes. The fast paths live in `fast`; the general path is here.
//!
//! Zero-copy contract: a single-frame message, and every control frame, is returned as a slice
//! of the receive buffer (unmasked in place in the server role). A fragmented message is copied
//! once, into a reassembly buffer that is reused. The bytes a message borrows are released on
//! the next call that takes `&mut self`.

use super::utf8::Utf8Stream;
use super::{
    CloseCode, CloseFrame, Error, Extension, Limits, LimitsSource, MAX_CONTROL_PAYLOAD, Message,
    OpCode, Role, mask,
};
use crate::buf::ReadBuf;
use fast::Quick;

mod fast;

/// Room [`FrameReader::spare`] makes in a full buffer beyond the frame in progress.
const MIN_READ: usize = 4096;

/// What [`FrameReader::poll`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadEvent<'a> {
    /// A complete message or control frame.
    Message(Message<'a>),
    /// The buffered bytes do not hold a complete message yet: read more from the socket into
    /// [`FrameReader::spare`] and poll again.
    NeedMore,
}

/// Sans-IO WebSocket frame reader for one connection.
///
/// It holds only parsing state; the bytes are in the [`ReadBuf`] passed to each call. The
/// buffer may change between calls (another `ReadBuf`, or the same one moved) provided that,
/// after [`release`](Self::release), its data still starts with the bytes it held: the reader
/// refers to the unparsed bytes by their offset from the start of the buffer's data.
///
/// `L` is where the limits come from: a [`Limits`] of its own (the default), or a
/// configuration shared with other connections (see [`LimitsSource`]).
pub struct FrameReader<L = Limits> {
    role: Role,
    config: L,
    /// Bytes of the single frame last made ready, released from the buffer on the next call.
    pending_consume: usize,
    /// A frame whose header was parsed but whose payload is still arriving.
    partial: Option<Partial>,
    /// The fragmented (or transformed) message being assembled.
    message: Option<Assembly>,
    assembly: Vec<u8>,
    utf8: Utf8Stream,
    /// How many bytes of `assembly` the UTF-8 stream has seen (untransformed text). Fragments
    /// that arrive whole are checked lazily: only when the reader is about to return without
    /// completing the message, so fail-fast holds, and not at all when the message completes
    /// in the same pass (the `&str` is validated whole when it is made).
    utf8_fed: usize,
    extension: Option<Box<dyn Extension>>,
    failed: Option<CloseCode>,
    /// What the last `advance` made ready.
    ready: Option<Step>,
}

#[derive(Debug, Clone, Copy)]
struct Header {
    fin: bool,
    rsv: u8,
    opcode: OpCode,
    mask: Option<[u8; 4]>,
    /// At most 14.
    header_len: u8,
    payload_len: usize,
}

#[derive(Debug, Clone, Copy)]
struct Partial {
    header: Header,
    /// Payload bytes already unmasked (and, for plain text, fed to the UTF-8 stream).
    processed: usize,
}

#[derive(Debug, Clone, Copy)]
struct Assembly {
    opcode: OpCode,
    /// Frames so far; saturates (a `u32` keeps the per-connection state small, and no
    /// fragment limit above 4 billion is meaningful).
    fragments: u32,
    transformed: bool,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    NeedMore,
    Frame {
        opcode: OpCode,
        /// The header's length: the frame starts the buffer's data.
        start: u8,
        len: usize,
    },
    Assembled(OpCode),
}

impl<L: LimitsSource> FrameReader<L> {
    /// A reader for `role` with the limits `config` gives (a [`Limits`], or a shared
    /// configuration). The buffers passed in grow to hold the largest frame the limits allow,
    /// when one arrives.
    pub fn new(role: Role, config: L) -> Self {
        Self {
            role,
            config,
            pending_consume: 0,
            partial: None,
            message: None,
            assembly: Vec::new(),
            utf8: Utf8Stream::default(),
            utf8_fed: 0,
            extension: None,
            failed: None,
            ready: None,
        }
    }

    /// Installs the negotiated extension. Call once, before the first poll.
    pub fn set_extension(&mut self, extension: Box<dyn Extension>) {
        self.extension = Some(extension);
    }

    /// The limits in force.
    pub fn limits(&self) -> &Limits {
        self.config.limits()
    }

    /// Where the limits come from.
    pub fn config(&self) -> &L {
        &self.config
    }

    /// Writable space in `buf` for the transport's next read. Releases the last returned
    /// message.
    ///
    /// After [`poll`](Self::poll) has returned [`ReadEvent::NeedMore`] this is never empty:
    /// the reader reserves room for the whole frame it is waiting for (bounded by
    /// [`Limits::max_frame_size`]). Read only after polling to `NeedMore`, then call
    /// [`ReadBuf::filled`].
    ///
    /// The buffer may be another one than before (a reactor parks a partial frame in a small
    /// buffer): when it has no room, room is made here for the rest of the frame in progress.
    #[inline(always)]
    pub fn spare<'b>(&mut self, buf: &'b mut ReadBuf) -> &'b mut [u8] {
        self.release(buf);
        // Only a frame in progress can fill a buffer of 16 bytes or more (a partial header
        // is at most 13 bytes, and compacting frees the rest).
        if self.partial.is_some() && buf.is_full() {
            self.make_room(buf);
        }
        buf.spare()
    }

    /// Grows a full buffer to hold the rest of the frame in progress, and at least
    /// [`MIN_READ`] bytes more.
    #[cold]
    #[inline(never)]
    fn make_room(&self, buf: &mut ReadBuf) {
        let rest = self.partial.map_or(0, |p| {
            (usize::from(p.header.header_len) + p.header.payload_len).saturating_sub(buf.len())
        });
        buf.reserve(rest.max(MIN_READ));
    }

    /// Copies `bytes` into `buf` (for transports that do not read into [`spare`](Self::spare)).
    pub fn feed(&mut self, buf: &mut ReadBuf, bytes: &[u8]) {
        self.release(buf);
        buf.extend_from_slice(bytes);
    }

    /// Bytes of `buf` not yet returned as messages.
    pub fn buffered(&self, buf: &ReadBuf) -> usize {
        buf.len() - self.pending_consume
    }

    /// True when the reader is between messages: no frame or fragmented message is partly
    /// received and nothing returned is still borrowed. With an empty buffer after
    /// [`release`](Self::release), the buffer may then be given back (to a pool) and a
    /// different one lent on the next call.
    pub fn is_between_messages(&self) -> bool {
        self.partial.is_none() && self.message.is_none() && self.ready.is_none()
    }

    /// Frees the reassembly buffer's memory when no fragmented message is in progress (for a
    /// connection about to sit idle; the next fragmented message allocates it again).
    pub fn trim(&mut self) {
        if self.message.is_none() && !matches!(self.ready, Some(Step::Assembled(_))) {
            self.assembly = Vec::new();
        }
    }

    /// The next message, or [`ReadEvent::NeedMore`]: [`advance`](Self::advance) then
    /// [`message`](Self::message).
    ///
    /// Errors are terminal: the first one leaves the reader failed, and every later call
    /// returns [`Error::Failed`] with the close code of the first.
    #[inline]
    pub fn poll<'b>(&'b mut self, buf: &'b mut ReadBuf) -> Result<ReadEvent<'b>, Error> {
        if self.advance(buf)? {
            self.message(buf).map(ReadEvent::Message)
        } else {
            Ok(ReadEvent::NeedMore)
        }
    }

    /// Parses buffered bytes up to the next complete message without borrowing them out.
    /// Returns true when one is ready for [`message`](Self::message), false when more bytes
    /// are needed. Releases the previous message.
    ///
    /// This split lets a transport loop "advance, read more, advance" and then borrow the
    /// message once, outside the loop.
    #[inline(always)]
    pub fn advance(&mut self, buf: &mut ReadBuf) -> Result<bool, Error> {
        if self.failed.is_none() {
            self.release(buf);
            if let Some(step) = self.complete_single_frame(buf) {
                self.ready = Some(step);
                return Ok(true);
            }
            if !buf.is_empty() {
                match self.partial_rest(buf) {
                    Quick::Ready => return Ok(true),
                    Quick::NeedMore => return Ok(false),
                    Quick::General => {}
                }
            } else if self.partial.is_none() {
                // Nothing to parse: what `advance_general` would conclude (no header in no
                // bytes), without its call. A transport asks once before each read and, async,
                // once more on the wake-up before the read that brings the bytes.
                return match self.feed_deferred_utf8() {
                    Ok(()) => Ok(false),
                    Err(error) => Err(self.fail(error)),
                };
            }
        }
        self.advance_general(buf)
    }

    /// True when [`advance`](Self::advance) on `buf` would only release the frame lent last
    /// and say "need more": nothing buffered beyond that frame, no message assembling, no
    /// frame in progress, no failure. An async transport asks on every wake-up before it
    /// reads; after a request and its response the buffer holds exactly the response, so a
    /// lent frame and nothing else is the common case.
    #[inline]
    pub fn is_starved(&self, buf: &ReadBuf) -> bool {
        buf.len() == self.pending_consume
            && !matches!(self.ready, Some(Step::Assembled(_)))
            && self.partial.is_none()
            && self.message.is_none()
            && self.failed.is_none()
    }

    /// What `advance` does when [`is_starved`](Self::is_starved) holds, short of saying
    /// "need more": releases the lent frame, which is all the buffer holds.
    #[inline]
    pub(crate) fn release_starved(&mut self, buf: &mut ReadBuf) {
        debug_assert!(self.is_starved(buf));
        if self.pending_consume > 0 {
            buf.clear();
            self.pending_consume = 0;
        }
        self.ready = None;
    }

    /// [`advance`](Self::advance) for everything but a complete plain frame: partial frames,
    /// fragments, control frames, extensions, errors. Out of line so the fast path stays small
    /// where it is inlined.
    #[inline(never)]
    fn advance_general(&mut self, buf: &mut ReadBuf) -> Result<bool, Error> {
        if let Some(code) = self.failed {
            return Err(Error::Failed(code));
        }
        self.release(buf);
        match self.step(buf) {
            Ok(Step::NeedMore) => Ok(false),
            Ok(step) => {
                self.ready = Some(step);
                Ok(true)
            }
            Err(error) => Err(self.fail(error)),
        }
    }

    /// The opcode of the message [`advance`](Self::advance) made ready, if any.
    #[inline]
    pub fn ready_opcode(&self) -> Option<OpCode> {
        match self.ready {
            Some(Step::Frame { opcode, .. } | Step::Assembled(opcode)) => Some(opcode),
            _ => None,
        }
    }

    /// The message [`advance`](Self::advance) made ready, borrowing `buf` (the buffer that
    /// `advance` was given). Text (and a close reason) is validated as UTF-8 here, once;
    /// invalid text fails the reader. Returns [`Error::NotReady`] when no message is ready.
    #[inline(always)]
    pub fn message<'b>(&'b mut self, buf: &'b ReadBuf) -> Result<Message<'b>, Error> {
        let (opcode, payload) = match self.ready {
            Some(Step::Frame { opcode, start, len }) => {
                let start = usize::from(start);
                (opcode, &buf.data()[start..start + len])
            }
            Some(Step::Assembled(opcode)) => (opcode, &self.assembly[..]),
            _ => return Err(Error::NotReady),
        };
        match frame_message(opcode, payload) {
            Ok(message) => Ok(message),
            Err(error) => {
                self.failed = error.close_code();
                self.ready = None;
                Err(error)
            }
        }
    }

    /// The close frame [`advance`](Self::advance) made ready and that is still held (not
    /// released), read again from `buf`: `None` when the ready frame is not a close, or has
    /// no body. For a connection that stops parsing at the peer's close and reports what it
    /// said later, without a copy.
    pub fn held_close<'b>(&self, buf: &'b ReadBuf) -> Option<CloseFrame<'b>> {
        match self.ready {
            Some(Step::Frame {
                opcode: OpCode::Close,
                start,
                len,
            }) => {
                let start = usize::from(start);
                let payload = buf.data().get(start..start + len)?;
                close_body(payload).ok().flatten()
            }
            _ => None,
        }
    }

    fn fail(&mut self, error: Error) -> Error {
        self.failed = error.close_code().or(Some(CloseCode::PROTOCOL_ERROR));
        error
    }

    /// Releases the last returned message: its bytes leave `buf`, which then holds only bytes
    /// not parsed yet. Every call that parses releases first; a transport calls this itself
    /// before it gives the buffer back or moves its bytes elsewhere.
    #[inline(always)]
    pub fn release(&mut self, buf: &mut ReadBuf) {
        if self.pending_consume > 0 {
            buf.consume(self.pending_consume);
            self.pending_consume = 0;
        }
        if let Some(Step::Assembled(_)) = self.ready.take() {
            self.release_assembly();
        }
    }

    fn release_assembly(&mut self) {
        self.assembly.clear();
        if self.assembly.capacity() > self.config.limits().max_frame_size.max(1 << 20) {
            // A huge message was assembled once: do not pin its memory forever.
            self.assembly = Vec::new();
        }
    }

    /// Parses frames until one completes a message or the bytes run out. Borrows of the
    /// buffer end before it returns, so `poll` can hand out the message.
    fn step(&mut self, buf: &mut ReadBuf) -> Result<Step, Error> {
        loop {
            let step = match self.step_frame(buf) {
                Ok(step) => step,
                Err(error) => {
                    // Unchecked text came earlier in the stream than this error: its verdict
                    // goes first, as it would had the bytes arrived in pieces.
                    self.feed_deferred_utf8()?;
                    return Err(error);
                }
            };
            if let Some(step) = step {
                if !matches!(step, Step::Assembled(_)) {
                    // Returning with a text message unfinished: check what it holds so far.
                    self.feed_deferred_utf8()?;
                }
                return Ok(step);
            }
        }
    }

    /// Feeds the UTF-8 stream the assembled text it has not seen yet (see `utf8_fed`).
    fn feed_deferred_utf8(&mut self) -> Result<(), Error> {
        let deferred = self
            .message
            .is_some_and(|m| m.opcode == OpCode::Text && !m.transformed);
        if deferred && self.utf8_fed < self.assembly.len() {
            self.utf8
                .feed(&self.assembly[self.utf8_fed..])
                .map_err(|_| Error::InvalidUtf8)?;
            self.utf8_fed = self.assembly.len();
        }
        Ok(())
    }

    /// Parses at most one frame: `None` when it was a fragment that did not end a message.
    fn step_frame(&mut self, buf: &mut ReadBuf) -> Result<Option<Step>, Error> {
        let (header, processed) = match self.partial.take() {
            Some(partial) => (partial.header, partial.processed),
            None => match self.parse_header(buf.data())? {
                Some(header) => (header, 0),
                None => return Ok(Some(Step::NeedMore)),
            },
        };
        let start = usize::from(header.header_len);
        let total = start + header.payload_len;
        let available = buf.len();
        if available < total {
            self.process_partial(buf, header, processed, available - start)?;
            buf.reserve(total - available);
            return Ok(Some(Step::NeedMore));
        }
        let len = header.payload_len;
        if let Some(key) = header.mask {
            let payload = &mut buf.data_mut()[start + processed..start + len];
            mask::apply_mask(payload, key, processed);
        }
        if header.opcode.is_control() {
            self.pending_consume = total;
            return Ok(Some(Step::Frame {
                opcode: header.opcode,
                start: header.header_len,
                len,
            }));
        }
        let plain_single = header.fin && header.rsv == 0 && self.message.is_none();
        if plain_single {
            self.pending_consume = total;
            if processed > 0 {
                // The prefix was checked incrementally; the whole payload is validated again
                // when the &str is made, so the stream state is no longer needed.
                self.utf8.reset();
            }
            return Ok(Some(Step::Frame {
                opcode: header.opcode,
                start: header.header_len,
                len,
            }));
        }
        self.assemble(buf, header, processed, total)
    }

    #[inline(always)]
    fn parse_header(&self, data: &[u8]) -> Result<Option<Header>, Error> {
        let [b0, b1, ..] = *data else { return Ok(None) };
        let opcode = OpCode::from_bits(b0 & 0x0f).ok_or(Error::ReservedOpcode(b0 & 0x0f))?;
        let fin = b0 & 0x80 != 0;
        let rsv = (b0 >> 4) & 0x07;
        if rsv != 0 {
            let owned = match (&self.extension, opcode) {
                (Some(ext), OpCode::Text | OpCode::Binary) => ext.reserved_bits(),
                _ => 0,
            };
            if rsv & !owned != 0 {
                return Err(Error::ReservedBits(rsv));
            }
        }
        let masked = b1 & 0x80 != 0;
        match (self.role, masked) {
            (Role::Server, false) => return Err(Error::UnmaskedFrame),
            (Role::Client, true) => return Err(Error::MaskedFrame),
            _ => {}
        }
        let len7 = b1 & 0x7f;
        if opcode.is_control() {
            if !fin {
                return Err(Error::FragmentedControlFrame);
            }
            if usize::from(len7) > MAX_CONTROL_PAYLOAD {
                return Err(Error::ControlFrameTooLong(u64::from(len7)));
            }
        } else {
            match (opcode, self.message.is_some()) {
                (OpCode::Continuation, false) => return Err(Error::UnexpectedContinuation),
                (OpCode::Text | OpCode::Binary, true) => return Err(Error::ExpectedContinuation),
                _ => {}
            }
        }
        let (payload_len, mut header_len) = match len7 {
            0x7e => {
                let Some(bytes) = data.get(2..4) else {
                    return Ok(None);
                };
                let len = u64::from(u16::from_be_bytes([bytes[0], bytes[1]]));
                if len < 0x7e {
                    return Err(Error::NonMinimalLength);
                }
                (len, 4)
            }
            0x7f => {
                let Some(bytes) = data.get(2..10) else {
                    return Ok(None);
                };
                let len = u64::from_be_bytes(bytes.try_into().unwrap_or([0xff; 8]));
                if len <= 0xffff || len >> 63 != 0 {
                    return Err(Error::NonMinimalLength);
                }
                (len, 10)
            }
            short => (u64::from(short), 2),
        };
        let mask = if masked {
            let Some(key) = data.get(header_len..header_len + 4) else {
                return Ok(None);
            };
            header_len += 4;
            Some([key[0], key[1], key[2], key[3]])
        } else {
            None
        };
        if payload_len > self.config.limits().max_frame_size as u64 {
            return Err(Error::FrameTooLarge {
                len: payload_len,
                limit: self.config.limits().max_frame_size,
            });
        }
        let payload_len = payload_len as usize;
        if !opcode.is_control() {
            let transformed = rsv != 0 || self.message.is_some_and(|m| m.transformed);
            if !transformed
                && self.assembly.len() + payload_len > self.config.limits().max_message_size
            {
                return Err(Error::MessageTooLarge {
                    limit: self.config.limits().max_message_size,
                });
            }
            if let Some(message) = &self.message {
                if message.fragments as usize >= self.config.limits().max_fragments {
                    return Err(Error::TooManyFragments {
                        limit: self.config.limits().max_fragments,
                    });
                }
            } else if !fin && self.config.limits().max_fragments < 2 {
                return Err(Error::TooManyFragments {
                    limit: self.config.limits().max_fragments,
                });
            }
        }
        Ok(Some(Header {
            fin,
            rsv,
            opcode,
            mask,
            header_len: header_len as u8,
            payload_len,
        }))
    }

    /// Unmasks and, for untransformed text, validates the part of a payload that has arrived,
    /// so invalid UTF-8 fails before the frame completes.
    fn process_partial(
        &mut self,
        buf: &mut ReadBuf,
        header: Header,
        processed: usize,
        arrived: usize,
    ) -> Result<(), Error> {
        let text = match header.opcode {
            OpCode::Text => header.rsv == 0,
            OpCode::Continuation => self
                .message
                .is_some_and(|m| m.opcode == OpCode::Text && !m.transformed),
            _ => false,
        };
        let mut done = processed;
        if arrived > processed && (text || header.mask.is_some()) {
            let start = usize::from(header.header_len);
            let fresh = &mut buf.data_mut()[start + processed..start + arrived];
            if let Some(key) = header.mask {
                mask::apply_mask(fresh, key, processed);
            }
            if text {
                // Keep the stream in order: earlier fragments first.
                self.feed_deferred_utf8()?;
                let fresh = &buf.data()[start + processed..start + arrived];
                self.utf8.feed(fresh).map_err(|_| Error::InvalidUtf8)?;
            }
            done = arrived;
        }
        self.partial = Some(Partial {
            header,
            processed: done,
        });
        Ok(())
    }

    /// Moves one complete data frame of a fragmented or transformed message into the
    /// reassembly buffer.
    fn assemble(
        &mut self,
        buf: &mut ReadBuf,
        header: Header,
        processed: usize,
        total: usize,
    ) -> Result<Option<Step>, Error> {
        let message = match self.message {
            Some(mut message) => {
                message.fragments = message.fragments.saturating_add(1);
                message
            }
            None => Assembly {
                opcode: header.opcode,
                fragments: 1,
                transformed: header.rsv != 0,
            },
        };
        if header.rsv != 0 && header.opcode == OpCode::Continuation {
            // RFC 7692 §6.1: only the first frame of a message carries RSV1.
            return Err(Error::ReservedBits(header.rsv));
        }
        let payload_range = usize::from(header.header_len)..total;
        let before = self.assembly.len();
        if message.transformed {
            let Some(extension) = self.extension.as_mut() else {
                return Err(Error::ReservedBits(header.rsv));
            };
            let payload = &buf.data()[payload_range];
            extension.decode(
                payload,
                header.fin,
                &mut self.assembly,
                self.config.limits().max_message_size,
            )?;
            if self.assembly.len() > self.config.limits().max_message_size {
                return Err(Error::MessageTooLarge {
                    limit: self.config.limits().max_message_size,
                });
            }
            // A compressed text message that is one frame is validated once, whole, when
            // its &str is made; fragments are checked as they inflate (fail fast).
            let whole = header.fin && message.fragments == 1;
            if message.opcode == OpCode::Text && !whole {
                self.utf8
                    .feed(&self.assembly[before..])
                    .map_err(|_| Error::InvalidUtf8)?;
            }
        } else {
            let payload = &buf.data()[payload_range];
            self.assembly.extend_from_slice(payload);
            if message.opcode == OpCode::Text && processed > 0 {
                // The first `processed` bytes were fed while the frame was arriving (after
                // everything before them); the rest is deferred like a whole fragment.
                self.utf8_fed = before + processed;
            }
        }
        buf.consume(total);
        if header.fin {
            self.message = None;
            if message.opcode == OpCode::Text {
                if message.transformed && message.fragments > 1 {
                    self.utf8.finish().map_err(|_| Error::InvalidUtf8)?;
                } else {
                    // The whole text is validated when its &str is made (`message`); the
                    // stream's partial view is no longer needed.
                    self.utf8.reset();
                }
                self.utf8_fed = 0;
            }
            Ok(Some(Step::Assembled(message.opcode)))
        } else {
            self.message = Some(message);
            Ok(None)
        }
    }
}

impl<L: LimitsSource> core::fmt::Debug for FrameReader<L> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FrameReader")
            .field("role", &self.role)
            .field("limits", self.config.limits())
            .field("partial", &self.partial.is_some())
            .field("failed", &self.failed)
            .finish_non_exhaustive()
    }
}

/// Builds the message for a complete payload, validating text and close bodies.
#[inline(always)]
fn frame_message(opcode: OpCode, payload: &[u8]) -> Result<Message<'_>, Error> {
    Ok(match opcode {
        OpCode::Text => {
            Message::Text(simdutf8::basic::from_utf8(payload).map_err(|_| Error::InvalidUtf8)?)
        }
        OpCode::Binary => Message::Binary(payload),
        OpCode::Ping => Message::Ping(payload),
        OpCode::Pong => Message::Pong(payload),
        OpCode::Close => Message::Close(close_body(payload)?),
        OpCode::Continuation => return Err(Error::UnexpectedContinuation),
    })
}

/// Validates a close payload (§5.5.1, §7.4).
#[cold]
#[inline(never)]
fn close_body(payload: &[u8]) -> Result<Option<CloseFrame<'_>>, Error> {
    match payload {
        [] => Ok(None),
        [_] => Err(Error::InvalidCloseLength),
        [hi, lo, reason @ ..] => {
            let code = CloseCode(u16::from_be_bytes([*hi, *lo]));
            if !code.is_sendable() {
                return Err(Error::InvalidCloseCode(code.0));
            }
            let reason = simdutf8::basic::from_utf8(reason).map_err(|_| Error::InvalidUtf8)?;
            Ok(Some(CloseFrame { code, reason }))
        }
    }
}
