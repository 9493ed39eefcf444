//! [`Socket`]: what a WebSocket connection is apart from the driver that moves its bytes.
//!
//! Every transport's `WebSocket` owns one and dereferences to it, so the calls that need no
//! I/O (queueing a message, a ping or a shared frame; the stream, the connection, what the
//! handshake negotiated, the read timeout) are written here once. The driver keeps what is
//! its own: receiving, writing, ending the connection, and its timers.

use std::time::Duration;

#[cfg(feature = "deflate")]
use tickwire_codec::deflate::{DeflateParams, PreparedMessage};
use tickwire_codec::ws::{Buffers, Compression, Connection, OpCode, Sender, SharedFrame};

use super::Opened;
use crate::Error;

/// A WebSocket connection's stream, its sans-IO [`Connection`] with the [`Buffers`] lent to it
/// on every call, what the opening handshake settled on, and the user's read timeout.
///
/// A transport's `WebSocket` dereferences to this: `ws.send_text(..)`, `ws.ping(..)`,
/// `ws.connection()` are these methods. Sends only queue; the driver writes them.
#[derive(Debug)]
pub struct Socket<S> {
    stream: S,
    connection: Connection,
    buffers: Buffers,
    negotiated: Negotiated,
    read_timeout: Option<Duration>,
}

/// What the opening handshake settled on: the subprotocol and the permessage-deflate
/// parameters.
#[derive(Debug, Default, Clone)]
pub struct Negotiated {
    subprotocol: Option<String>,
    #[cfg(feature = "deflate")]
    deflate: Option<DeflateParams>,
}

impl Negotiated {
    /// The subprotocol the opening handshake selected, if any.
    pub fn subprotocol(&self) -> Option<&str> {
        self.subprotocol.as_deref()
    }

    /// The permessage-deflate parameters in force, or `None` when it was not negotiated.
    #[cfg(feature = "deflate")]
    pub fn deflate(&self) -> Option<&DeflateParams> {
        self.deflate.as_ref()
    }
}

/// A [`Socket`]'s parts borrowed at once, for the driver that moves its bytes.
#[derive(Debug)]
pub struct SocketMut<'a, S> {
    /// The stream.
    pub stream: &'a mut S,
    /// The sans-IO connection.
    pub connection: &'a mut Connection,
    /// Its buffers.
    pub buffers: &'a mut Buffers,
    /// The user's read timeout.
    pub read_timeout: &'a mut Option<Duration>,
}

impl<S> Socket<S> {
    /// A connection over `stream` whose opening handshake is done; `buffers.read` holds any
    /// bytes that arrived after the handshake (see [`Buffers::with_read`]).
    pub fn new(stream: S, connection: Connection, buffers: Buffers) -> Self {
        Self::with_negotiated(stream, connection, buffers, Negotiated::default())
    }

    /// [`new`](Self::new) with what the handshake negotiated (a connection put back
    /// together from its parts).
    pub fn with_negotiated(
        stream: S,
        connection: Connection,
        buffers: Buffers,
        negotiated: Negotiated,
    ) -> Self {
        Self {
            stream,
            connection,
            buffers,
            negotiated,
            read_timeout: None,
        }
    }

    /// The connection an opening handshake opened, over `stream`.
    pub fn opened(stream: S, opened: Opened) -> Self {
        let negotiated = Negotiated {
            subprotocol: opened.subprotocol,
            #[cfg(feature = "deflate")]
            deflate: opened.deflate,
        };
        Self::with_negotiated(stream, opened.connection, opened.buffers, negotiated)
    }

    /// Every part at once, mutably, for the driver. A caller that advances the connection
    /// itself takes the messages from under its driver.
    #[inline(always)]
    pub fn parts_mut(&mut self) -> SocketMut<'_, S> {
        SocketMut {
            stream: &mut self.stream,
            connection: &mut self.connection,
            buffers: &mut self.buffers,
            read_timeout: &mut self.read_timeout,
        }
    }

    /// The parts, to split the connection or move it elsewhere.
    pub fn into_parts(self) -> (S, Connection, Buffers, Negotiated) {
        (self.stream, self.connection, self.buffers, self.negotiated)
    }

    /// What the opening handshake settled on.
    pub fn negotiated(&self) -> &Negotiated {
        &self.negotiated
    }

    /// The subprotocol the opening handshake selected, if any.
    pub fn subprotocol(&self) -> Option<&str> {
        self.negotiated.subprotocol()
    }

    /// The permessage-deflate parameters in force, or `None` when it was not negotiated.
    #[cfg(feature = "deflate")]
    pub fn deflate(&self) -> Option<&DeflateParams> {
        self.negotiated.deflate()
    }

    /// The sans-IO connection (state, configuration).
    pub fn connection(&self) -> &Connection {
        &self.connection
    }

    /// The connection's buffers (received bytes not yet parsed, queued output).
    pub fn buffers(&self) -> &Buffers {
        &self.buffers
    }

    /// The stream.
    pub fn stream(&self) -> &S {
        &self.stream
    }

    /// The stream, mutably (to change socket options; reading or writing it directly
    /// corrupts the connection).
    pub fn stream_mut(&mut self) -> &mut S {
        &mut self.stream
    }

    /// The user's read timeout: a receive that waits longer returns `Recv::Timeout`, and the
    /// connection stays usable. `None` (the default): a receive waits for the peer, bounded
    /// only by the connection's own timers (keepalive, idle, close).
    pub fn read_timeout(&self) -> Option<Duration> {
        self.read_timeout
    }

    /// Sets the [read timeout](Self::read_timeout).
    pub fn set_read_timeout(&mut self, timeout: Option<Duration>) {
        self.read_timeout = timeout;
    }

    /// The sending half, to queue several messages before one flush.
    #[inline]
    pub fn sender(&mut self) -> Sender<'_> {
        self.connection.sender(&mut self.buffers)
    }

    /// Queues a text message (written by the driver's next flush, or by a receive that is
    /// about to wait).
    pub fn send_text(&mut self, text: &str) -> Result<(), Error> {
        Ok(self.sender().text(text)?)
    }

    /// Queues a binary message.
    pub fn send_binary(&mut self, payload: &[u8]) -> Result<(), Error> {
        Ok(self.sender().binary(payload)?)
    }

    /// Queues a text message, overriding the permessage-deflate policy for this one message
    /// (`Compression::Never` for a latency-critical order, `Always` for a snapshot).
    pub fn send_text_with(&mut self, text: &str, compression: Compression) -> Result<(), Error> {
        self.send_with(OpCode::Text, text.as_bytes(), compression)
    }

    /// Queues a binary message, overriding the permessage-deflate policy for this one
    /// message.
    pub fn send_binary_with(
        &mut self,
        payload: &[u8],
        compression: Compression,
    ) -> Result<(), Error> {
        self.send_with(OpCode::Binary, payload, compression)
    }

    fn send_with(
        &mut self,
        op: OpCode,
        payload: &[u8],
        compression: Compression,
    ) -> Result<(), Error> {
        Ok(self.sender().message_with(op, payload, compression)?)
    }

    /// Queues a message compressed once for many connections (see [`PreparedMessage`]).
    #[cfg(feature = "deflate")]
    pub fn send_prepared(&mut self, message: &PreparedMessage) -> Result<(), Error> {
        Ok(self.sender().prepared(message)?)
    }

    /// Queues a frame encoded once for many connections, by reference: no copy of its bytes
    /// per connection (see [`SharedFrame`]); the driver writes it with the connection's own
    /// frames in one vectored write.
    pub fn send_shared(&mut self, frame: &SharedFrame) -> Result<(), Error> {
        Ok(self.sender().shared(frame)?)
    }

    /// Queues a ping (at most 125 bytes).
    pub fn ping(&mut self, payload: &[u8]) -> Result<(), Error> {
        Ok(self.sender().ping(payload)?)
    }
}
