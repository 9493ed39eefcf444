//! The extension seam (RFC 6455 §9): who owns the RSV bits and how a message payload is
//! transformed. permessage-deflate (RFC 7692) plugs in here; this module defines only the
//! contract.

use super::Error;

/// A negotiated per-message extension.
///
/// The reader routes a data message through [`decode`](Self::decode) when its first frame has
/// one of [`reserved_bits`](Self::reserved_bits) set; other messages bypass the extension.
/// The writer asks [`encode`](Self::encode) for every outgoing data message.
pub trait Extension: Send {
    /// RSV bits this extension owns, as `0b0rrr` (RSV1 = `0b100`). Frames with other RSV bits
    /// set are protocol errors.
    fn reserved_bits(&self) -> u8;

    /// Decodes the payload of one frame of a transformed message, appending to `out`.
    ///
    /// `fin` is true on the message's last frame. The extension must not let `out` grow past
    /// `max_len` bytes in total; it returns [`Error::MessageTooLarge`] as soon as it would,
    /// checking while it decodes (a decompression bomb must not be inflated first).
    fn decode(
        &mut self,
        payload: &[u8],
        fin: bool,
        out: &mut Vec<u8>,
        max_len: usize,
    ) -> Result<(), Error>;

    /// Encodes an outgoing message payload into `out` (cleared by the caller) and returns the
    /// RSV bits to set on its first frame, or `None` to send this message untransformed.
    /// `compression` is the caller's per-message choice; [`Compression::Auto`] leaves it to
    /// the extension's policy.
    fn encode(&mut self, payload: &[u8], out: &mut Vec<u8>, compression: Compression)
    -> Option<u8>;

    /// Whether a payload this extension's format produced once, for many connections, from a
    /// fresh state with a `window_bits` window (a
    /// prepared message), may be sent on this connection
    /// as it is. Returns the RSV bits for its first frame, after making sure the extension's
    /// later output does not depend on state the peer's copy of the stream now differs from;
    /// `None` sends the plain payload instead. The default accepts nothing.
    fn accept_prepared(&mut self, window_bits: u8) -> Option<u8> {
        let _ = window_bits;
        None
    }
}

/// A per-message override of the extension's policy for one outgoing data message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// The negotiated extension's policy decides (for permessage-deflate: the size threshold
    /// and, when configured, whether compressing made the message smaller).
    #[default]
    Auto,
    /// Transform (compress) this message whenever an extension is negotiated, whatever its
    /// size or the result.
    Always,
    /// Send this message as it is.
    Never,
}
