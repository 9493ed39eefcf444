//! A server data frame encoded once and queued by reference on many connections (fan-out).
//!
//! This module owns [`SharedFrame`]: the wire bytes of one unmasked, unfragmented data frame
//! behind an `Arc`, so queueing it on a connection costs a reference count and a queue entry,
//! not a copy of the payload. The connection's output ([`Connection::output_vectored`]
//! (super::Connection::output_vectored)) hands those bytes to the socket as they are, between
//! the connection's own frames. It does not compress: a message compressed once for many
//! connections is a [`PreparedMessage`](super::PreparedMessage) (feature `deflate`).

use std::sync::Arc;

use super::{FrameWriter, MAX_HEADER_LEN, OpCode};
use crate::buf::WriteBuf;

/// What a fan-out layer attaches to a shared frame it queues with
/// [`Sender::shared_labeled`](super::Sender::shared_labeled): the codec only carries it, so that
/// [`Buffers::drop_shared`](super::Buffers::drop_shared) can pick frames to drop (a slow
/// subscriber's oldest messages, or an older message with the same key).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SharedLabel {
    /// The group the frame belongs to (a topic).
    pub group: u32,
    /// A key within the group (a symbol), for conflation.
    pub key: u64,
    /// The frame's sequence number within its group.
    pub seq: u64,
}

/// A data frame as a server sends it, encoded once: queue it on any number of server
/// connections with [`Sender::shared`](super::Sender::shared); each holds a reference to
/// the same bytes. Cloning is a reference-count increment.
///
/// Server frames are not masked, so the bytes fit every server connection. A client
/// connection (which must mask each frame with its own key) given one encodes the payload
/// like any message it sends; so does a connection with a fragment size set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharedFrame {
    /// Header and payload, as written to the socket.
    wire: Arc<[u8]>,
    header_len: u8,
    opcode: OpCode,
}

impl SharedFrame {
    /// A text message.
    pub fn text(text: &str) -> Self {
        Self::encode(OpCode::Text, text.as_bytes())
    }

    /// A binary message.
    pub fn binary(payload: &[u8]) -> Self {
        Self::encode(OpCode::Binary, payload)
    }

    fn encode(opcode: OpCode, payload: &[u8]) -> Self {
        Self::with_rsv(opcode, 0, payload)
    }

    /// One final frame with `rsv` set (an extension's encoded payload, RSV1 for
    /// permessage-deflate).
    pub(crate) fn with_rsv(opcode: OpCode, rsv: u8, payload: &[u8]) -> Self {
        let mut out = WriteBuf::new(payload.len() + MAX_HEADER_LEN, 0);
        FrameWriter::server().frame(&mut out, opcode, true, rsv, payload);
        let wire = out.as_slice();
        Self {
            header_len: (wire.len() - payload.len()) as u8,
            wire: wire.into(),
            opcode,
        }
    }

    /// The frame as it goes on the wire.
    pub fn wire(&self) -> &[u8] {
        &self.wire
    }

    /// The message payload.
    pub fn payload(&self) -> &[u8] {
        &self.wire[usize::from(self.header_len)..]
    }

    /// Text or Binary.
    pub fn opcode(&self) -> OpCode {
        self.opcode
    }

    /// How many queues (and handles) share these bytes.
    pub fn share_count(&self) -> usize {
        Arc::strong_count(&self.wire)
    }
}
