//! Errors of the frame layer: what the peer did wrong, which limit was hit, what the local
//! caller misused, each with the close code to send.

use core::fmt;

use super::CloseCode;

/// Whose fault an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fault {
    /// The peer broke RFC 6455 (or the negotiated extension).
    Peer,
    /// The peer sent something legal that exceeds a configured limit.
    Limit,
    /// The local caller used the API wrongly; nothing went wrong on the wire.
    Local,
    /// A configured timer expired (pong, idle or close timeout).
    Timeout,
}

/// A frame-layer error. Every peer or limit variant maps to the close code that goes on the
/// wire ([`close_code`](Self::close_code)); after one, the reader is in a failed terminal
/// state and returns [`Error::Failed`] on every later call.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A client sent an unmasked frame (RFC 6455 §5.1: "a server MUST close the connection upon
    /// receiving a frame that is not masked"). Close 1002.
    UnmaskedFrame,
    /// A server sent a masked frame (§5.1: "a client MUST close a connection if it detects a
    /// masked frame"). Close 1002.
    MaskedFrame,
    /// RSV1, RSV2 or RSV3 set without a negotiated extension that owns the bit (§5.2). Close
    /// 1002. Carries the three bits as `0b0rrr`.
    ReservedBits(u8),
    /// Opcode 0x3-0x7 or 0xB-0xF (§5.2). Close 1002.
    ReservedOpcode(u8),
    /// A control frame payload over 125 bytes (§5.5). Close 1002.
    ControlFrameTooLong(u64),
    /// A control frame with FIN clear (§5.5: "control frames MUST NOT be fragmented"). Close
    /// 1002.
    FragmentedControlFrame,
    /// A payload length not in its shortest form, or a 64-bit length with the top bit set
    /// (§5.2: "the minimal number of bytes MUST be used"). Close 1002.
    NonMinimalLength,
    /// A continuation frame with no fragmented message in progress (§5.4). Close 1002.
    UnexpectedContinuation,
    /// A text or binary frame while a fragmented message is still open (§5.4). Close 1002.
    ExpectedContinuation,
    /// A Close frame with a one-byte payload (§5.5.1: a body starts with a 2-byte code). Close
    /// 1002.
    InvalidCloseLength,
    /// A Close frame whose code may not be sent on the wire (§7.4.1, §7.4.2). Close 1002.
    InvalidCloseCode(u16),
    /// A text message, or a close reason, that is not valid UTF-8 (§8.1). Detected as soon as
    /// the bytes seen so far cannot begin a valid sequence. Close 1007.
    InvalidUtf8,
    /// The negotiated extension rejected the message (e.g. a corrupt compressed stream). Close
    /// 1002 unless the extension says otherwise.
    Extension {
        /// Close code the extension asks for.
        code: CloseCode,
        /// What went wrong.
        reason: &'static str,
    },
    /// A frame payload longer than [`Limits::max_frame_size`](super::Limits). Close 1009.
    FrameTooLarge {
        /// Announced payload length.
        len: u64,
        /// The configured limit.
        limit: usize,
    },
    /// A message (all fragments, after any extension transform) longer than
    /// [`Limits::max_message_size`](super::Limits); checked as soon as a frame header announces
    /// the excess. Close 1009.
    MessageTooLarge {
        /// The configured limit.
        limit: usize,
    },
    /// More fragments in one message than [`Limits::max_fragments`](super::Limits). Close 1009.
    TooManyFragments {
        /// The configured limit.
        limit: usize,
    },
    /// The reader already failed; carries the close code sent for the first error.
    Failed(CloseCode),
    /// Local misuse: a control frame payload over 125 bytes was given to the writer.
    ControlPayloadTooLong(usize),
    /// Local misuse: a close code that may not be sent (§7.4.1) was given to the writer.
    UnsendableCloseCode(u16),
    /// Local misuse: a close reason longer than 123 bytes was given to the writer.
    CloseReasonTooLong(usize),
    /// Local misuse: a message was sent after the close handshake started on our side.
    SendAfterClose,
    /// Local misuse: a message was asked for when none was ready (call `advance` first).
    NotReady,
    /// The caller's output slice cannot hold the encoded message; nothing was encoded and the
    /// writer's state did not change. Retry with at least `needed` bytes.
    OutputTooSmall {
        /// Bytes the slice must have (an upper bound when an extension transforms the payload).
        needed: usize,
    },
    /// No pong arrived within the pong timeout after a keepalive ping. Close 1001.
    PongTimeout,
    /// Nothing was received for the idle timeout. Close 1001.
    IdleTimeout,
    /// The peer did not answer our close within the close timeout (§7.1.1 lets us drop the
    /// connection). Nothing more is sent.
    CloseTimeout,
}

impl Error {
    /// Whose fault the error is.
    pub const fn fault(&self) -> Fault {
        match self {
            Self::FrameTooLarge { .. }
            | Self::MessageTooLarge { .. }
            | Self::TooManyFragments { .. } => Fault::Limit,
            Self::ControlPayloadTooLong(_)
            | Self::UnsendableCloseCode(_)
            | Self::CloseReasonTooLong(_)
            | Self::SendAfterClose
            | Self::NotReady
            | Self::OutputTooSmall { .. } => Fault::Local,
            Self::Failed(_) => Fault::Local,
            Self::PongTimeout | Self::IdleTimeout | Self::CloseTimeout => Fault::Timeout,
            _ => Fault::Peer,
        }
    }

    /// The close code to send to the peer for this error; `None` for local misuse.
    pub const fn close_code(&self) -> Option<CloseCode> {
        Some(match self {
            Self::InvalidUtf8 => CloseCode::INVALID_PAYLOAD,
            Self::FrameTooLarge { .. }
            | Self::MessageTooLarge { .. }
            | Self::TooManyFragments { .. } => CloseCode::MESSAGE_TOO_BIG,
            Self::Extension { code, .. } => *code,
            Self::Failed(code) => *code,
            Self::PongTimeout | Self::IdleTimeout => CloseCode::GOING_AWAY,
            Self::CloseTimeout
            | Self::ControlPayloadTooLong(_)
            | Self::UnsendableCloseCode(_)
            | Self::CloseReasonTooLong(_)
            | Self::SendAfterClose
            | Self::NotReady
            | Self::OutputTooSmall { .. } => return None,
            _ => CloseCode::PROTOCOL_ERROR,
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnmaskedFrame => f.write_str("client frame not masked"),
            Self::MaskedFrame => f.write_str("server frame masked"),
            Self::ReservedBits(bits) => {
                write!(
                    f,
                    "reserved bits {bits:#05b} set where no negotiated extension allows them"
                )
            }
            Self::ReservedOpcode(op) => write!(f, "reserved opcode {op:#x}"),
            Self::ControlFrameTooLong(len) => {
                write!(f, "control frame payload of {len} bytes (max 125)")
            }
            Self::FragmentedControlFrame => f.write_str("fragmented control frame"),
            Self::NonMinimalLength => f.write_str("payload length not minimally encoded"),
            Self::UnexpectedContinuation => {
                f.write_str("continuation frame without a message to continue")
            }
            Self::ExpectedContinuation => f.write_str("new data frame inside a fragmented message"),
            Self::InvalidCloseLength => f.write_str("close frame with a 1-byte payload"),
            Self::InvalidCloseCode(code) => write!(f, "close code {code} may not be sent"),
            Self::InvalidUtf8 => f.write_str("text is not valid UTF-8"),
            Self::Extension { reason, .. } => write!(f, "extension error: {reason}"),
            Self::FrameTooLarge { len, limit } => {
                write!(f, "frame of {len} bytes exceeds the limit of {limit}")
            }
            Self::MessageTooLarge { limit } => {
                write!(f, "message exceeds the limit of {limit} bytes")
            }
            Self::TooManyFragments { limit } => {
                write!(f, "message has more than {limit} fragments")
            }
            Self::Failed(code) => write!(f, "connection already failed (close {code})"),
            Self::ControlPayloadTooLong(len) => {
                write!(f, "control payload of {len} bytes (max 125)")
            }
            Self::UnsendableCloseCode(code) => write!(f, "close code {code} may not be sent"),
            Self::CloseReasonTooLong(len) => write!(f, "close reason of {len} bytes (max 123)"),
            Self::SendAfterClose => f.write_str("send after close"),
            Self::NotReady => f.write_str("no message is ready"),
            Self::OutputTooSmall { needed } => {
                write!(
                    f,
                    "output slice too small: the message needs up to {needed} bytes"
                )
            }
            Self::PongTimeout => f.write_str("no pong before the pong timeout"),
            Self::IdleTimeout => f.write_str("nothing received before the idle timeout"),
            Self::CloseTimeout => f.write_str("no close reply before the close timeout"),
        }
    }
}

impl std::error::Error for Error {}
