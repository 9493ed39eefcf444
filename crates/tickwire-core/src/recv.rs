//! [`Recv`]: what a WebSocket receive call of either transport found.

use tickwire_codec::ws::{CloseFrame, Message};

/// What a receive call found: a message, nothing yet, or the end of the stream.
///
/// The normal loop is `while let Recv::Message(message) = ws.recv()? { .. }`: it ends at
/// [`Recv::Closed`] (or at [`Recv::Timeout`] when a read timeout is set). The peer's close
/// reaches the caller once, as `Closed` with what it said; it is never a
/// [`Message::Close`]. A closed connection
/// is a value, not an error, and "nothing arrived" is never a made-up I/O error (rule 2
/// of docs/ARCHITECTURE.md); `Err` means the connection failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recv<'a> {
    /// A text or binary message, or a ping or pong (pings were already answered). Never
    /// [`Message::Close`]: the peer's close is [`Recv::Closed`].
    Message(Message<'a>),
    /// `WebSocket::recv` only: the read timeout the user set
    /// (`WebSocket::set_read_timeout`, `ClientBuilder::read_timeout`) expired with no
    /// message. The connection stays usable.
    Timeout,
    /// `WebSocket::try_recv` only: the socket has nothing to read now.
    WouldBlock,
    /// The close handshake is complete: end of stream. Carries what the peer's close frame
    /// said (its code and reason, borrowed from the connection's buffer), `None` when its
    /// close had no body or when the peer closed TCP after our close without one. The
    /// peer's close was answered before this is returned. Every later receive returns the
    /// same `Closed` again. Call `WebSocket::finish` to close the transport cleanly.
    Closed(Option<CloseFrame<'a>>),
}
