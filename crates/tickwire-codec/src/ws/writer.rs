//! The frame writer: messages in, encoded frames appended to a [`WriteBuf`].
//!
//! Owns frame encoding, client masking, outgoing fragmentation and the outgoing side of the
//! extension seam. It does not decide what to send or when to flush (the
//! [`Connection`](super::Connection) and the transport do), and it never touches a socket.

#[cfg(feature = "deflate")]
use super::PreparedMessage;
use super::{
    CloseCode, Compression, Error, Extension, MAX_CONTROL_PAYLOAD, MAX_HEADER_LEN, MaskSource,
    OpCode, Role, mask,
};
use crate::buf::WriteBuf;

std::thread_local! {
    /// What an extension encoded (a compressed payload) before it is framed: one buffer per
    /// thread, so a writer holds none between messages.
    static ENCODED: core::cell::RefCell<Vec<u8>> = const { core::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's encode buffer, cleared; capacity past 1 MiB is given back after
/// a message that needed it.
fn with_encoded<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    ENCODED.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => {
            scratch.clear();
            let result = f(&mut scratch);
            if scratch.capacity() > 1 << 20 {
                *scratch = Vec::new();
            }
            result
        }
        // Not reachable (an extension does not encode through a writer), but never a panic.
        Err(_) => f(&mut Vec::new()),
    })
}

/// Sans-IO WebSocket frame writer for one connection.
pub struct FrameWriter {
    role: Role,
    mask: MaskSource,
    extension: Option<Box<dyn Extension>>,
    /// Largest frame payload of a data message; `u32::MAX` (the default) never fragments in
    /// practice. A `u32` keeps the per-connection state small.
    fragment_size: u32,
    /// Payloads shorter than this go out as one unmasked frame with a 7- or 16-bit length and
    /// no extension: up to 0x10000 for a server without an extension (less when the fragment
    /// size is smaller), else 0 (the fast path is off). Recomputed whenever what it depends on
    /// changes.
    plain_below: u32,
}

impl FrameWriter {
    /// A writer for `role`. `mask` supplies the client's masking keys (unused by a server).
    pub fn new(role: Role, mask: MaskSource) -> Self {
        Self {
            role,
            mask,
            extension: None,
            fragment_size: u32::MAX,
            plain_below: 0,
        }
        .with_fast_path()
    }

    /// A writer for the server role. Server frames are never masked, so it needs no mask
    /// source (and, unlike `new(Role::Server, MaskSource::random())`, asks the OS for no seed).
    pub fn server() -> Self {
        Self::new(Role::Server, MaskSource::seeded(0))
    }

    /// A writer for the client role, masking every frame with a key from `mask`
    /// ([`MaskSource::random`] unless testing).
    pub fn client(mask: MaskSource) -> Self {
        Self::new(Role::Client, mask)
    }

    fn with_fast_path(mut self) -> Self {
        self.update_fast_path();
        self
    }

    fn update_fast_path(&mut self) {
        let plain = self.role == Role::Server && self.extension.is_none();
        self.plain_below = if plain {
            0x1_0000.min(self.fragment_size.saturating_add(1))
        } else {
            0
        };
    }

    /// Installs the negotiated extension; every later data message is offered to it.
    pub fn set_extension(&mut self, extension: Box<dyn Extension>) {
        self.extension = Some(extension);
        self.update_fast_path();
    }

    /// Data messages with payloads longer than `size` are sent as frames of at most `size`
    /// bytes. `None` (the default) sends every message as one frame.
    pub fn set_fragment_size(&mut self, size: Option<usize>) {
        self.fragment_size = size.map_or(u32::MAX, |s| s.clamp(1, u32::MAX as usize) as u32);
        self.update_fast_path();
    }

    #[inline(always)]
    fn fragment_size(&self) -> usize {
        self.fragment_size as usize
    }

    /// Asks the installed extension whether a prepared form encoded with a `window_bits`
    /// window may go out as it is (see [`Extension::accept_prepared`]); `None` without one.
    #[cfg(feature = "deflate")]
    pub(crate) fn accept_prepared(&mut self, window_bits: u8) -> Option<u8> {
        self.extension.as_mut()?.accept_prepared(window_bits)
    }

    /// True when a `len`-byte data message goes out in more than one frame.
    pub(crate) fn would_fragment(&self, len: usize) -> bool {
        len > self.fragment_size()
    }

    /// The role this writer encodes for.
    pub fn role(&self) -> Role {
        self.role
    }

    /// Appends a text message.
    #[inline]
    pub fn text(&mut self, out: &mut WriteBuf, text: &str) {
        self.message(out, OpCode::Text, text.as_bytes());
    }

    /// Appends a binary message.
    #[inline]
    pub fn binary(&mut self, out: &mut WriteBuf, payload: &[u8]) {
        self.message(out, OpCode::Binary, payload);
    }

    /// Appends a data message (`opcode` Text or Binary), through the extension if one is
    /// installed, fragmented if longer than the fragment size. The caller guarantees that a
    /// Text payload is UTF-8.
    #[inline(always)]
    pub fn message(&mut self, out: &mut WriteBuf, opcode: OpCode, payload: &[u8]) {
        debug_assert!(matches!(opcode, OpCode::Text | OpCode::Binary));
        let len = payload.len();
        if len < self.plain_below as usize {
            // The hot server send: FIN + opcode, a 7- or 16-bit length, the payload (§5.2).
            if len < 0x7e {
                let slot = out.append_slot(2 + len);
                slot[0] = 0x80 | opcode as u8;
                slot[1] = len as u8;
                slot[2..].copy_from_slice(payload);
            } else {
                let slot = out.append_slot(4 + len);
                let [hi, lo] = (len as u16).to_be_bytes();
                slot[..4].copy_from_slice(&[0x80 | opcode as u8, 0x7e, hi, lo]);
                slot[4..].copy_from_slice(payload);
            }
            return;
        }
        if self.extension.is_none() && len <= self.fragment_size() {
            // Every other plain frame (a client's masked one, a long one): one frame,
            // inlined as `message_into` is, so no out-of-line prologue.
            self.frame(out, opcode, true, 0, payload);
            return;
        }
        self.transformed_or_fragmented(out, opcode, payload, Compression::Auto);
    }

    /// [`message`](Self::message) with a per-message override of the extension's policy
    /// (with no extension negotiated, `compression` has no effect).
    pub fn message_with(
        &mut self,
        out: &mut WriteBuf,
        opcode: OpCode,
        payload: &[u8],
        compression: Compression,
    ) {
        debug_assert!(matches!(opcode, OpCode::Text | OpCode::Binary));
        self.message_general(out, opcode, payload, compression);
    }

    /// Appends a [`PreparedMessage`]: its compressed form when the installed extension can
    /// send it on this connection (RSV1 on the first frame), else its plain payload through
    /// [`message`](Self::message)'s usual path.
    #[cfg(feature = "deflate")]
    pub fn prepared(&mut self, out: &mut WriteBuf, message: &PreparedMessage) {
        if let (Some(compressed), Some(extension)) = (message.compressed(), self.extension.as_mut())
            && let Some(rsv) = extension.accept_prepared(message.window_bits())
        {
            self.fragments(out, message.opcode(), rsv, compressed);
            return;
        }
        self.message_general(out, message.opcode(), message.payload(), Compression::Never);
    }

    /// Every other data message: masked, long, fragmented or transformed. Out of line so the
    /// fast path above inlines into the caller without this one's register spills.
    #[inline(never)]
    fn message_general(
        &mut self,
        out: &mut WriteBuf,
        opcode: OpCode,
        payload: &[u8],
        compression: Compression,
    ) {
        if self.extension.is_none() && payload.len() <= self.fragment_size() {
            self.frame(out, opcode, true, 0, payload);
            return;
        }
        self.transformed_or_fragmented(out, opcode, payload, compression);
    }

    /// The path of [`message`](Self::message) with an extension installed or a payload over
    /// the fragment size. Out of line: it holds the extension call and the fragment loop.
    #[inline(never)]
    fn transformed_or_fragmented(
        &mut self,
        out: &mut WriteBuf,
        opcode: OpCode,
        payload: &[u8],
        compression: Compression,
    ) {
        if let Some(mut extension) = self.extension.take() {
            let encoded = with_encoded(|scratch| {
                let rsv = extension.encode(payload, scratch, compression)?;
                self.fragments(out, opcode, rsv, scratch);
                Some(())
            });
            self.extension = Some(extension);
            if encoded.is_some() {
                return;
            }
        }
        self.fragments(out, opcode, 0, payload);
    }

    /// Appends a ping. Errors if `payload` is over 125 bytes (§5.5).
    pub fn ping(&mut self, out: &mut WriteBuf, payload: &[u8]) -> Result<(), Error> {
        self.control(out, OpCode::Ping, payload)
    }

    /// Appends a pong. Errors if `payload` is over 125 bytes (§5.5).
    pub fn pong(&mut self, out: &mut WriteBuf, payload: &[u8]) -> Result<(), Error> {
        self.control(out, OpCode::Pong, payload)
    }

    /// Appends a close frame: empty when `code` is `None`, else the code and `reason`.
    /// Errors if the code may not be sent (§7.4.1) or the reason is over 123 bytes.
    pub fn close(
        &mut self,
        out: &mut WriteBuf,
        code: Option<CloseCode>,
        reason: &str,
    ) -> Result<(), Error> {
        let Some(code) = code else {
            self.frame(out, OpCode::Close, true, 0, &[]);
            return Ok(());
        };
        if !code.is_sendable() {
            return Err(Error::UnsendableCloseCode(code.0));
        }
        if reason.len() > MAX_CONTROL_PAYLOAD - 2 {
            return Err(Error::CloseReasonTooLong(reason.len()));
        }
        let mut body = [0u8; MAX_CONTROL_PAYLOAD];
        body[..2].copy_from_slice(&code.0.to_be_bytes());
        body[2..2 + reason.len()].copy_from_slice(reason.as_bytes());
        self.frame(out, OpCode::Close, true, 0, &body[..2 + reason.len()]);
        Ok(())
    }

    /// Appends one raw frame. No checks beyond encoding: the caller owns RFC compliance of
    /// `opcode`, `fin` and `rsv` (used for fragmented sends and tests).
    #[inline]
    pub fn frame(
        &mut self,
        out: &mut WriteBuf,
        opcode: OpCode,
        fin: bool,
        rsv: u8,
        payload: &[u8],
    ) {
        let size = self.frame_size(payload.len());
        // The header is written straight into the output, no staging copy.
        let slot = out.append_slot(size.total(payload.len()));
        self.write_frame(slot, size, opcode, fin, rsv, payload);
    }

    /// [`frame`](Self::frame) into the caller's slice: returns the bytes written, or
    /// [`Error::OutputTooSmall`] (nothing written, no masking key used) when `dst` is short.
    #[inline]
    pub fn frame_into(
        &mut self,
        dst: &mut [u8],
        opcode: OpCode,
        fin: bool,
        rsv: u8,
        payload: &[u8],
    ) -> Result<usize, Error> {
        let size = self.frame_size(payload.len());
        let total = size.total(payload.len());
        let Some(slot) = dst.get_mut(..total) else {
            return Err(Error::OutputTooSmall { needed: total });
        };
        self.write_frame(slot, size, opcode, fin, rsv, payload);
        Ok(total)
    }

    /// Encodes a data message (`opcode` Text or Binary) into the caller's slice, exactly as
    /// [`message`](Self::message) appends it to a [`WriteBuf`]: through the extension if one
    /// is installed, fragmented if longer than the fragment size. Returns the bytes written.
    ///
    /// When `dst` may be too short it returns [`Error::OutputTooSmall`] before anything is
    /// encoded, so no compressor state moves and no masking key is used: retry with
    /// [`max_encoded_len`](Self::max_encoded_len) bytes. The caller guarantees that a Text
    /// payload is UTF-8.
    #[inline]
    pub fn message_into(
        &mut self,
        dst: &mut [u8],
        opcode: OpCode,
        payload: &[u8],
    ) -> Result<usize, Error> {
        debug_assert!(matches!(opcode, OpCode::Text | OpCode::Binary));
        let len = payload.len();
        if self.extension.is_none() && len <= self.fragment_size() {
            return self.frame_into(dst, opcode, true, 0, payload);
        }
        let needed = self.max_encoded_len(len);
        if dst.len() < needed {
            return Err(Error::OutputTooSmall { needed });
        }
        if let Some(mut extension) = self.extension.take() {
            let written = with_encoded(|scratch| {
                let rsv = extension.encode(payload, scratch, Compression::Auto)?;
                Some(self.fragments_into(dst, opcode, rsv, scratch))
            });
            self.extension = Some(extension);
            if let Some(written) = written {
                return Ok(written);
            }
        }
        Ok(self.fragments_into(dst, opcode, 0, payload))
    }

    /// The most bytes [`message_into`](Self::message_into) writes for a `payload_len`-byte
    /// message with this writer's role, fragment size and extension (exact for one plain
    /// frame; with an extension, a bound that covers deflate's worst-case expansion).
    pub fn max_encoded_len(&self, payload_len: usize) -> usize {
        let body = if self.extension.is_some() {
            payload_len + payload_len / 8 + 64
        } else {
            payload_len
        };
        if self.extension.is_none() && body <= self.fragment_size() {
            return self.frame_size(body).total(body);
        }
        let frames = body.div_ceil(self.fragment_size()).max(1);
        body + frames * MAX_HEADER_LEN
    }

    /// The header layout of a `len`-byte frame in this writer's role.
    #[inline(always)]
    fn frame_size(&self, len: usize) -> FrameSize {
        let extended = if len < 0x7e {
            0
        } else if len <= 0xffff {
            2
        } else {
            8
        };
        let masked = self.role == Role::Client;
        FrameSize {
            extended,
            header: 2 + extended + if masked { 4 } else { 0 },
            masked,
        }
    }

    /// Writes one frame into `slot`, which is exactly `size.total(payload.len())` bytes.
    #[inline(always)]
    fn write_frame(
        &mut self,
        slot: &mut [u8],
        size: FrameSize,
        opcode: OpCode,
        fin: bool,
        rsv: u8,
        payload: &[u8],
    ) {
        let len = payload.len();
        let (head, body) = slot.split_at_mut(size.header);
        head[0] = (u8::from(fin) << 7) | ((rsv & 0x07) << 4) | opcode as u8;
        match size.extended {
            0 => head[1] = len as u8,
            2 => {
                head[1] = 0x7e;
                head[2..4].copy_from_slice(&(len as u16).to_be_bytes());
            }
            _ => {
                head[1] = 0x7f;
                head[2..10].copy_from_slice(&(len as u64).to_be_bytes());
            }
        }
        if size.masked {
            let key = self.mask.next_key();
            head[1] |= 0x80;
            head[2 + size.extended..].copy_from_slice(&key);
            // One pass: copy and mask together.
            mask::copy_masked(body, payload, key);
        } else {
            body.copy_from_slice(payload);
        }
    }

    /// [`fragments`](Self::fragments) into a slice the caller checked is long enough.
    fn fragments_into(&mut self, dst: &mut [u8], opcode: OpCode, rsv: u8, payload: &[u8]) -> usize {
        let mut at = 0;
        self.for_each_fragment(opcode, rsv, payload, |writer, op, fin, bits, chunk| {
            at += writer.write_checked(&mut dst[at..], op, fin, bits, chunk);
        });
        at
    }

    fn write_checked(
        &mut self,
        dst: &mut [u8],
        opcode: OpCode,
        fin: bool,
        rsv: u8,
        payload: &[u8],
    ) -> usize {
        let size = self.frame_size(payload.len());
        let total = size.total(payload.len());
        self.write_frame(&mut dst[..total], size, opcode, fin, rsv, payload);
        total
    }

    /// Frames the last `payload_len` bytes already queued in `out` as one frame, writing the
    /// header in front of them (into the headroom when they are all that is queued) and masking
    /// them in place. Lets a caller serialise straight into the write buffer with no copy.
    pub fn frame_in_place(
        &mut self,
        out: &mut WriteBuf,
        opcode: OpCode,
        fin: bool,
        payload_len: usize,
    ) {
        let (header, key) = self.header(opcode, fin, 0, payload_len);
        out.insert_before_tail(header.as_slice(), payload_len);
        if let Some(key) = key {
            let queued = out.as_mut_slice();
            let at = queued.len() - payload_len;
            mask::apply_mask(&mut queued[at..], key, 0);
        }
    }

    fn control(&mut self, out: &mut WriteBuf, opcode: OpCode, payload: &[u8]) -> Result<(), Error> {
        if payload.len() > MAX_CONTROL_PAYLOAD {
            return Err(Error::ControlPayloadTooLong(payload.len()));
        }
        self.frame(out, opcode, true, 0, payload);
        Ok(())
    }

    fn fragments(&mut self, out: &mut WriteBuf, opcode: OpCode, rsv: u8, payload: &[u8]) {
        self.for_each_fragment(opcode, rsv, payload, |writer, op, fin, bits, chunk| {
            writer.frame(out, op, fin, bits, chunk);
        });
    }

    /// Splits `payload` at the fragment size and hands each frame's opcode, FIN and RSV bits
    /// to `emit`: the first frame carries `opcode` and `rsv`, the rest are continuations, the
    /// last has FIN. A payload within the fragment size (an empty one too) is one frame.
    fn for_each_fragment(
        &mut self,
        opcode: OpCode,
        rsv: u8,
        payload: &[u8],
        mut emit: impl FnMut(&mut Self, OpCode, bool, u8, &[u8]),
    ) {
        if payload.len() <= self.fragment_size() {
            emit(self, opcode, true, rsv, payload);
            return;
        }
        let mut chunks = payload.chunks(self.fragment_size()).peekable();
        let mut first = true;
        while let Some(chunk) = chunks.next() {
            let fin = chunks.peek().is_none();
            let (op, bits) = if first {
                (opcode, rsv)
            } else {
                (OpCode::Continuation, 0)
            };
            emit(self, op, fin, bits, chunk);
            first = false;
        }
    }

    #[inline]
    fn header(
        &mut self,
        opcode: OpCode,
        fin: bool,
        rsv: u8,
        len: usize,
    ) -> (Header, Option<[u8; 4]>) {
        let mut bytes = [0u8; MAX_HEADER_LEN];
        bytes[0] = (u8::from(fin) << 7) | ((rsv & 0x07) << 4) | opcode as u8;
        let mut at = 2;
        if len < 0x7e {
            bytes[1] = len as u8;
        } else if len <= 0xffff {
            bytes[1] = 0x7e;
            bytes[2..4].copy_from_slice(&(len as u16).to_be_bytes());
            at = 4;
        } else {
            bytes[1] = 0x7f;
            bytes[2..10].copy_from_slice(&(len as u64).to_be_bytes());
            at = 10;
        }
        let key = match self.role {
            Role::Server => None,
            Role::Client => {
                let key = self.mask.next_key();
                bytes[1] |= 0x80;
                bytes[at..at + 4].copy_from_slice(&key);
                at += 4;
                Some(key)
            }
        };
        (Header { bytes, len: at }, key)
    }
}

impl core::fmt::Debug for FrameWriter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FrameWriter")
            .field("role", &self.role)
            .field("extension", &self.extension.is_some())
            .field("fragment_size", &self.fragment_size)
            .finish_non_exhaustive()
    }
}

struct Header {
    bytes: [u8; MAX_HEADER_LEN],
    len: usize,
}

/// How a frame's header is laid out: extended length bytes (0, 2 or 8), header length, masked.
#[derive(Clone, Copy)]
struct FrameSize {
    extended: usize,
    header: usize,
    masked: bool,
}

impl FrameSize {
    #[inline(always)]
    fn total(self, payload_len: usize) -> usize {
        self.header + payload_len
    }
}

impl Header {
    fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}
