//! A data message encoded once and sent to many connections (fan-out).
//!
//! This module owns the type the frame writer sends: the plain payload, plus the form an
//! extension produced once from a fresh state, if any. It does not produce that form: the
//! extension that negotiates it does (permessage-deflate adds the compressing constructors
//! [`PreparedMessage::text`] and [`PreparedMessage::binary`]), and the writer asks the
//! connection's extension, through [`Extension::accept_prepared`](super::Extension), whether
//! the encoded form may go out as it is. It exists with the `deflate` feature, the one
//! extension that produces such a form.

use super::{OpCode, SharedFrame};

/// A data message prepared for many connections. The encoded form is a fresh stream (for
/// permessage-deflate: a deflate stream with no reference to earlier messages), which any
/// peer that negotiated the extension decodes whatever its context state; connections
/// without the extension, or whose negotiated window is too small, get the plain payload.
///
/// Send it with [`Sender::prepared`](super::Sender::prepared) (or the transports'
/// `send_prepared`). On a connection with context takeover on our side, sending one makes
/// that connection's next message start a fresh stream too, so it costs some ratio there.
///
/// Both forms are kept as server frames ([`SharedFrame`]s, the compressed one with RSV1), so
/// a server connection queues whichever fits by reference, without a copy; cloning is two
/// reference-count increments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedMessage {
    plain: SharedFrame,
    compressed: Option<SharedFrame>,
    window_bits: u8,
}

impl PreparedMessage {
    /// A message from its parts, for the extension that encoded it: `compressed` is the
    /// encoded payload (or `None` to always send `plain`), decodable with a `window_bits`
    /// window, sent with `rsv` set on its frame.
    pub(crate) fn from_parts(
        plain: SharedFrame,
        compressed: Option<&[u8]>,
        rsv: u8,
        window_bits: u8,
    ) -> Self {
        let compressed = compressed.map(|c| SharedFrame::with_rsv(plain.opcode(), rsv, c));
        Self {
            plain,
            compressed,
            window_bits,
        }
    }

    /// Text or Binary.
    pub fn opcode(&self) -> OpCode {
        self.plain.opcode()
    }

    /// The message as the application sees it.
    pub fn payload(&self) -> &[u8] {
        self.plain.payload()
    }

    /// The compressed payload (without the sync tail), or `None` when the policy left the
    /// message plain (below `min_size`, or not smaller).
    pub fn compressed(&self) -> Option<&[u8]> {
        self.compressed.as_ref().map(SharedFrame::payload)
    }

    /// The window (in bits) the receiving side needs to decode the compressed form.
    pub fn window_bits(&self) -> u8 {
        self.window_bits
    }

    /// The plain form as a server frame.
    pub(crate) fn plain_frame(&self) -> &SharedFrame {
        &self.plain
    }

    /// The compressed form as a server frame (RSV1 set), if any.
    pub(crate) fn compressed_frame(&self) -> Option<&SharedFrame> {
        self.compressed.as_ref()
    }
}
