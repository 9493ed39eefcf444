//! [`Recv`]: what a WebSocket receive call of either transport found.

use tickwire_codec::ws::Message;

/// What a receive call found: a message, nothing yet, or the end of the stream.
///
/// The normal loop is `while let Recv::Message(message) = ws.recv()? { .. }`: it ends at
/// [`Recv::Closed`] (or at [`Recv::Timeout`] when a read timeout is set). A closed connection
/// is a value, not an error, and "nothing arrived" is never a made-up I/O error (rule 2
/// of docs/ARCHITECTURE.md); `Err` means the connection failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Recv<'a> {
    /// A message. Pings were already answered; a close was already answered, and the next
    /// call returns [`Recv::Closed`].
    Message(Message<'a>),
    /// `WebSocket::recv` only: the read timeout the user set
    /// (`WebSocket::set_read_timeout`, `ClientBuilder::read_timeout`) expired with no
    /// message. The connection stays usable.
    Timeout,
    /// `WebSocket::try_recv` only: the socket has nothing to read now.
    WouldBlock,
    /// The close handshake is complete (or the peer closed TCP after our close): end of
    /// stream. Every later receive returns it again. Call `WebSocket::finish` to close the
    /// transport cleanly.
    Closed,
}
