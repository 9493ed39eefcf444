//! RFC 6455 WebSocket framing, sans-IO.
//!
//! This module owns the frame format and message semantics: [`FrameReader`] turns received
//! bytes into [`Message`]s that borrow its buffer, [`FrameWriter`] encodes messages into a
//! [`WriteBuf`](crate::buf::WriteBuf), and [`Connection`] adds the connection-level rules on
//! top (close handshake, automatic pongs, keepalive pings, timeouts). It does not own sockets,
//! clocks or the opening handshake (the `handshake` module, a layer above, builds a
//! [`Connection`] when the upgrade succeeds).
//!
//! The extension seam ([`Extension`]) is part of the reader and writer: an extension owns
//! RSV bits and transforms whole message payloads. With none negotiated the hot path pays one
//! predictable branch.

mod close;
mod connection;
mod error;
mod extension;
mod limits;
pub mod mask;
mod output;
#[cfg(feature = "deflate")]
mod prepared;
mod reader;
mod shared;
mod utf8;
mod writer;

#[cfg(test)]
mod connection_tests;
#[cfg(test)]
mod tests;

pub use close::CloseCode;
pub use connection::{
    Buffers, Config, Connection, ConnectionState, Event, Progress, ReadHalf, Sender, WriteHalf,
};
pub use error::{Error, Fault};
pub use extension::{Compression, Extension};
pub use limits::{Limits, LimitsSource};
pub use mask::{MaskSource, apply_mask};
pub use output::DroppedShared;
#[cfg(feature = "deflate")]
pub use prepared::PreparedMessage;
pub use reader::{FrameReader, ReadEvent};
pub use shared::{SharedFrame, SharedLabel};
pub use writer::FrameWriter;

/// Which end of the connection this endpoint is. It decides masking (§5.1): clients mask
/// every frame they send and servers never do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The endpoint that opened the connection: masks what it sends, expects unmasked frames.
    Client,
    /// The endpoint that accepted it: sends unmasked frames, requires masked ones.
    Server,
}

/// Frame opcodes (RFC 6455 §5.2, §11.8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum OpCode {
    /// 0x0: continues a fragmented message.
    Continuation = 0x0,
    /// 0x1: first frame of a text message.
    Text = 0x1,
    /// 0x2: first frame of a binary message.
    Binary = 0x2,
    /// 0x8: connection close.
    Close = 0x8,
    /// 0x9: ping.
    Ping = 0x9,
    /// 0xA: pong.
    Pong = 0xa,
}

impl OpCode {
    /// The opcode for a 4-bit value, or `None` for the reserved ones.
    pub const fn from_bits(bits: u8) -> Option<Self> {
        Some(match bits {
            0x0 => Self::Continuation,
            0x1 => Self::Text,
            0x2 => Self::Binary,
            0x8 => Self::Close,
            0x9 => Self::Ping,
            0xa => Self::Pong,
            _ => return None,
        })
    }

    /// True for Close, Ping and Pong (§5.5).
    pub const fn is_control(self) -> bool {
        (self as u8) & 0x8 != 0
    }
}

/// A received message, borrowing the reader's buffer until the next call into the reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// A complete text message, validated as UTF-8.
    Text(&'a str),
    /// A complete binary message.
    Binary(&'a [u8]),
    /// A ping, with its application data (at most 125 bytes).
    Ping(&'a [u8]),
    /// A pong, with its application data (at most 125 bytes).
    Pong(&'a [u8]),
    /// A close frame: `None` when it had no body (the peer sent no status code).
    Close(Option<CloseFrame<'a>>),
}

/// The body of a close frame (§5.5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CloseFrame<'a> {
    /// The status code, already checked to be one that may be sent (§7.4).
    pub code: CloseCode,
    /// The reason, validated as UTF-8; at most 123 bytes.
    pub reason: &'a str,
}

/// Largest control frame payload (§5.5).
pub const MAX_CONTROL_PAYLOAD: usize = 0x7d;
/// Largest frame header: 2 bytes, 8 bytes of extended length, 4 bytes of mask (§5.2).
pub const MAX_HEADER_LEN: usize = 14;
