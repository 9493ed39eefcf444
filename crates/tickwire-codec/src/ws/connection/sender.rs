//! The sending half of a [`Connection`](super::Connection): [`Sender`], which encodes into
//! the lent output buffers and can be held while a received message is borrowed, and the
//! sending state the connection keeps (the writer, where the close is).

use super::*;

/// Sending state: the writer and where the close is.
#[derive(Debug)]
pub(super) struct SendState {
    pub(super) writer: FrameWriter,
    /// A close frame is queued (or was written).
    pub(super) close_queued: bool,
    /// The close frame is written; nothing may follow it.
    pub(super) close_written: bool,
    pub(super) auto_pong: bool,
}

/// The sending half: encodes into the lent output buffers. Can be held while a received
/// message is borrowed (see [`Connection::poll_with_sender`]).
#[derive(Debug)]
pub struct Sender<'a> {
    pub(super) state: &'a mut SendState,
    pub(super) out: &'a mut Output,
}

impl Sender<'_> {
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
        if self.state.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.state
            .writer
            .message(&mut self.out.data, opcode, payload);
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
        if self.state.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.state
            .writer
            .message_with(&mut self.out.data, opcode, payload, compression);
        Ok(())
    }

    /// Queues a message prepared once for many connections (fan-out): compressed when this
    /// connection negotiated permessage-deflate with a window that fits, plain otherwise.
    ///
    /// A server connection queues the chosen form by reference (no copy), as
    /// [`shared`](Self::shared) does, unless it must be fragmented.
    #[cfg(feature = "deflate")]
    pub fn prepared(&mut self, message: &PreparedMessage) -> Result<(), Error> {
        if self.state.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.queue_prepared(message, None);
        Ok(())
    }

    /// Queues `message` like [`prepared`](Self::prepared), with a label for
    /// [`Buffers::drop_shared`] (see [`shared_labeled`](Self::shared_labeled)).
    #[cfg(feature = "deflate")]
    pub fn prepared_labeled(
        &mut self,
        message: &PreparedMessage,
        label: SharedLabel,
    ) -> Result<(), Error> {
        if self.state.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.queue_prepared(message, Some(label));
        Ok(())
    }

    #[cfg(feature = "deflate")]
    fn queue_prepared(&mut self, message: &PreparedMessage, label: Option<SharedLabel>) {
        let writer = &mut self.state.writer;
        if writer.role() == Role::Server {
            let compressed = message
                .compressed_frame()
                .filter(|frame| !writer.would_fragment(frame.payload().len()));
            if let Some(frame) = compressed
                && writer.accept_prepared(message.window_bits()).is_some()
            {
                self.out.push_shared(frame, label);
                return;
            }
            // Plain: no extension, a window too small, or left uncompressed by the policy.
            let plain = message.plain_frame();
            if message.compressed().is_none_or(|_| compressed.is_some())
                && !writer.would_fragment(plain.payload().len())
            {
                self.out.push_shared(plain, label);
                return;
            }
        }
        self.state.writer.prepared(&mut self.out.data, message);
    }

    /// Queues a ping (at most 125 bytes), ahead of data not yet started.
    pub fn ping(&mut self, payload: &[u8]) -> Result<(), Error> {
        if self.state.close_queued {
            return Err(Error::SendAfterClose);
        }
        let queued = self.state.writer.ping(&mut self.out.control, payload);
        self.out.counted_control(queued)
    }

    /// Queues a pong (at most 125 bytes), ahead of data not yet started.
    pub fn pong(&mut self, payload: &[u8]) -> Result<(), Error> {
        if self.state.close_queued {
            return Err(Error::SendAfterClose);
        }
        let queued = self.state.writer.pong(&mut self.out.control, payload);
        self.out.counted_control(queued)
    }

    /// Queues a close after any queued data. The close timeout starts at the connection's
    /// next timer call; prefer [`Connection::close`] when not holding a message.
    pub fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), Error> {
        if self.state.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.state
            .writer
            .close(&mut self.out.data, Some(code), reason)?;
        self.state.close_queued = true;
        Ok(())
    }

    /// True once a close frame is queued or sent.
    pub fn is_closing(&self) -> bool {
        self.state.close_queued
    }

    /// Queues a frame encoded once for many connections, by reference (no copy of its
    /// bytes): it goes out between this connection's own frames, in order, through
    /// [`Connection::output_vectored`]. A client connection, or one whose fragment size the
    /// payload exceeds, encodes the payload like any message instead.
    pub fn shared(&mut self, frame: &SharedFrame) -> Result<(), Error> {
        if self.state.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.queue_shared(frame, None);
        Ok(())
    }

    /// Queues `frame` like [`shared`](Self::shared), with a label that
    /// [`Buffers::drop_shared`] can later select it by while it has not started going out.
    /// A frame the connection has to encode itself (see [`shared`](Self::shared)) is not
    /// labelled: it is part of the connection's own data and is never dropped.
    pub fn shared_labeled(&mut self, frame: &SharedFrame, label: SharedLabel) -> Result<(), Error> {
        if self.state.close_queued {
            return Err(Error::SendAfterClose);
        }
        self.queue_shared(frame, Some(label));
        Ok(())
    }

    fn queue_shared(&mut self, frame: &SharedFrame, label: Option<SharedLabel>) {
        let writer = &mut self.state.writer;
        if writer.role() == Role::Client || writer.would_fragment(frame.payload().len()) {
            writer.message(&mut self.out.data, frame.opcode(), frame.payload());
        } else {
            self.out.push_shared(frame, label);
        }
    }

    /// Bytes queued and not yet written, shared frames included.
    pub fn queued(&self) -> usize {
        self.out.len()
    }

    /// Queues a close with `code` (no reason) unless one is already queued.
    pub(super) fn queue_close(&mut self, code: Option<CloseCode>) {
        if !self.state.close_queued {
            let _ = self.state.writer.close(&mut self.out.data, code, "");
            self.state.close_queued = true;
        }
    }

    /// Queues the pong that auto-pong owes for `payload` (at most 125 bytes, checked by the
    /// reader). Past [`MAX_QUEUED_CONTROL`] only the most recent ping is answered: its pong
    /// replaces the one queued for the previous ping past the bound (RFC 6455 §5.5.3).
    pub(super) fn queue_auto_pong(&mut self, payload: &[u8]) {
        let control = &mut self.out.control;
        if control.len() < MAX_QUEUED_CONTROL {
            self.out.latest_pong = 0;
            let queued = self.state.writer.pong(control, payload);
            let _ = self.out.counted_control(queued);
            return;
        }
        // The bound is far above one pong, so the one being replaced has not started going
        // out.
        let replaced = self.out.latest_pong;
        control.truncate(control.len() - usize::from(replaced));
        let before = control.len();
        let queued = self.state.writer.pong(control, payload);
        self.out.latest_pong = (control.len() - before) as u8;
        if replaced == 0 {
            let _ = self.out.counted_control(queued);
        }
    }

    #[inline]
    pub(super) fn advance_output(&mut self, n: usize) {
        if n == 0 {
            return;
        }
        self.out.advance(n, !self.state.close_written);
        if self.state.close_queued && !self.out.has_data() && !self.state.close_written {
            // The close went out last; nothing may follow it (§5.5.1).
            self.state.close_written = true;
            self.out.clear_control();
        }
    }
}
