//! What the application writes: a [`Handler`] per worker, with typed per-connection state.

use std::net::SocketAddr;

use tickwire_codec::handshake::{HandshakeError, Request, Response};
use tickwire_codec::ws::{CloseCode, Error, Message, OpCode, Sender, SharedFrame};

use crate::topic::{self, Gap, Subscription, Topic};
use crate::{ConnId, ServerHandle};

/// The application's side of the server. Each worker thread has its own handler (made by the
/// factory given to [`Server::start`](crate::Server::start)), so a handler needs no lock for
/// what it keeps per worker; what it keeps per connection is [`State`](Self::State), owned by
/// the connection and lent to every callback for it.
///
/// Callbacks run on the worker's thread between reads and writes: a callback that blocks
/// stalls every connection of the worker. A callback that panics closes its connection with
/// 1011 (internal error) and nothing else: the worker, its handler and every other connection
/// go on, and the connection's [`on_close`](Self::on_close) still runs.
pub trait Handler: 'static {
    /// Per-connection state, attached by [`upgrade`](Self::upgrade).
    type State: 'static;

    /// Decides on a valid upgrade request (a malformed one was already answered with its 4xx
    /// status). `peer` is the client's address.
    fn upgrade(&mut self, request: &Request, peer: SocketAddr) -> Decision<Self::State>;

    /// The 101 was written: the connection is open. Messages sent here go out before any
    /// reply to the client's first messages.
    fn on_open(&mut self, conn: &mut Conn<'_, Self::State>) {
        let _ = conn;
    }

    /// A text or binary message, borrowed from the worker's buffers until this returns;
    /// `conn` can reply without copying it first. Pings are answered and closes handled
    /// before this is called; neither is passed here.
    fn on_message(&mut self, conn: &mut Conn<'_, Self::State>, message: Message<'_>);

    /// Output that had to wait for the socket (more than the builder's backpressure limit,
    /// or anything the socket would not take) has all been written.
    fn on_writable(&mut self, conn: &mut Conn<'_, Self::State>) {
        let _ = conn;
    }

    /// Messages of `topic` were dropped for this subscriber (its output passed the send
    /// budget; the topic's policy is [`SlowConsumer::DropOldest`](crate::SlowConsumer) or
    /// `Conflate`): the application can tell the client, which sees the gap in the sequence
    /// numbers it was sent. Called after the round of deliveries that dropped them.
    fn on_gap(&mut self, conn: &mut Conn<'_, Self::State>, topic: &Topic, gap: Gap) {
        let _ = (conn, topic, gap);
    }

    /// The connection is gone (its socket is closed); `state` is handed back.
    fn on_close(&mut self, id: ConnId, state: Self::State, disconnect: Disconnect) {
        let _ = (id, state, disconnect);
    }

    /// A connection ended before it opened (its socket is closed; `on_close` does not follow):
    /// why, and the client's address when it could still be read. For logs and metrics.
    fn on_handshake_error(&mut self, peer: Option<SocketAddr>, failure: HandshakeFailure) {
        let _ = (peer, failure);
    }
}

/// Why an opening handshake failed (see [`Handler::on_handshake_error`]).
#[derive(Debug)]
#[non_exhaustive]
pub enum HandshakeFailure {
    /// A malformed or unsupported upgrade request, answered with the error's status (4xx).
    Request(HandshakeError),
    /// The upgrade hook refused with this status (500: the hook panicked, or its response
    /// could not be written).
    Refused(u16),
    /// TLS failed (the handshake or a record); the alert rustls owed went out first.
    #[cfg(feature = "tls")]
    Tls(tickwire_tls::TlsError),
    /// The handshake timeout passed before the upgrade request was read (a client trickling
    /// it, or sending nothing).
    Timeout,
    /// Past the worker's connection cap: answered with 503 (plain) or closed (TLS).
    OverCapacity,
    /// The client left (end of stream, reset) or another I/O error.
    Io(std::io::Error),
}

impl std::fmt::Display for HandshakeFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Request(error) => write!(f, "bad upgrade request: {error}"),
            Self::Refused(status) => write!(f, "upgrade refused with {status}"),
            #[cfg(feature = "tls")]
            Self::Tls(error) => write!(f, "TLS: {error}"),
            Self::Timeout => f.write_str("handshake timed out"),
            Self::OverCapacity => f.write_str("over the connection cap: 503"),
            Self::Io(error) => write!(f, "during the handshake: {error}"),
        }
    }
}

impl std::error::Error for HandshakeFailure {}

/// What the factory given to [`Server::start`](crate::Server::start) gets when it makes a
/// worker's handler: the worker's index and the server's handle (for a handler that sends to
/// connections of other workers, or shuts the server down).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct WorkerContext {
    /// The worker's index, from 0 ([`ConnId::worker`] of its connections).
    pub index: usize,
    /// The server's handle.
    pub handle: ServerHandle,
}

/// The answer to an upgrade request: open the connection with this state, or refuse it.
#[derive(Debug)]
pub enum Decision<S> {
    /// Answer with this 101 (built by [`Response::accept`], optionally with a subprotocol and
    /// headers) and attach `state`.
    Accept(Response, S),
    /// Answer with this refusal ([`Response::reject`]) and close.
    Reject(Response),
}

impl<S> Decision<S> {
    /// Accepts `request` as it is (the builder's subprotocols and deflate policy apply).
    pub fn accept(request: &Request, state: S) -> Self {
        Self::Accept(Response::accept(request), state)
    }

    /// Refuses with `status` (a 4xx or 5xx) and an empty body.
    pub fn reject(status: u16) -> Self {
        Self::Reject(Response::reject(status))
    }
}

/// How a connection ended, given to [`Handler::on_close`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Disconnect {
    /// Why.
    pub kind: DisconnectKind,
    /// The close code: the peer's (for [`DisconnectKind::Closed`]; `None` when its close
    /// frame had no body) or the one sent (for the others; `None` when nothing could be).
    pub code: Option<CloseCode>,
}

/// Why a connection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DisconnectKind {
    /// The close handshake completed (started by either side).
    Closed,
    /// The peer broke the protocol or a limit, or a timer expired (pong, idle or close
    /// timeout): a close with [`Disconnect::code`] was sent, then the socket closed.
    Failed,
    /// The TCP connection ended without a close handshake (end of stream, reset or another
    /// I/O error): 1006 in RFC 6455's terms.
    Reset,
    /// A callback panicked: a close with 1011 was sent.
    Panicked,
    /// The server shut down and the connection did not finish its close handshake within the
    /// grace period.
    Shutdown,
}

/// One open connection as a callback sees it: its id, its state, and a sender writing into
/// the buffers the worker lent it for this wake-up. Everything sent is written when the
/// callback returns (one write per wake-up for all of it).
#[derive(Debug)]
pub struct Conn<'a, S> {
    pub(crate) id: ConnId,
    pub(crate) state: &'a mut S,
    pub(crate) sender: Sender<'a>,
}

impl<'a, S> Conn<'a, S> {
    /// The connection's id, valid for [`ServerHandle`](crate::ServerHandle) calls from any
    /// thread until it closes.
    pub fn id(&self) -> ConnId {
        self.id
    }

    /// The connection's state.
    pub fn state(&mut self) -> &mut S {
        self.state
    }

    /// Queues a text message.
    pub fn send_text(&mut self, text: &str) -> Result<(), Error> {
        self.sender.text(text)
    }

    /// Queues a binary message.
    pub fn send_binary(&mut self, payload: &[u8]) -> Result<(), Error> {
        self.sender.binary(payload)
    }

    /// Queues a message with `opcode` (text or binary; text must be UTF-8, which a received
    /// text message being echoed is).
    pub fn send(&mut self, opcode: OpCode, payload: &[u8]) -> Result<(), Error> {
        self.sender.message(opcode, payload)
    }

    /// Queues a frame encoded once for many connections (no copy).
    pub fn send_shared(&mut self, frame: &SharedFrame) -> Result<(), Error> {
        self.sender.shared(frame)
    }

    /// Starts the close handshake with `code` and `reason`; the socket closes when the peer
    /// answers, or after the close timeout.
    pub fn close(&mut self, code: CloseCode, reason: &str) -> Result<(), Error> {
        self.sender.close(code, reason)
    }

    /// Subscribes this connection to `topic` (in effect once the callback returns; twice is
    /// once). Its subscriptions end when it closes.
    pub fn subscribe(&mut self, topic: &Topic) {
        topic::ask(Subscription {
            id: self.id,
            topic: topic.clone(),
            subscribe: true,
        });
    }

    /// Ends this connection's subscription to `topic` (once the callback returns). Messages
    /// of the topic already queued still go out.
    pub fn unsubscribe(&mut self, topic: &Topic) {
        topic::ask(Subscription {
            id: self.id,
            topic: topic.clone(),
            subscribe: false,
        });
    }

    /// Bytes queued and not yet written (the backpressure measure).
    pub fn queued(&self) -> usize {
        self.sender.queued()
    }

    /// The codec's sender itself, for what the methods above do not cover (prepared
    /// compressed messages, pings).
    pub fn sender(&mut self) -> &mut Sender<'a> {
        &mut self.sender
    }
}
