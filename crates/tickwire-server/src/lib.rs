//! tickwire-server: a WebSocket server on an epoll reactor (mio), one worker thread per
//! core, over the tickwire sans-IO codecs ([`tickwire_codec`]). This crate does I/O and
//! bookkeeping only: the opening handshake, framing, limits, close codes and timers are the
//! codec's decisions.
//!
//! ```no_run
//! use std::net::SocketAddr;
//! use tickwire_server::{Conn, Decision, Handler, Message, Request, ServerBuilder};
//!
//! struct Echo;
//!
//! impl Handler for Echo {
//!     type State = ();
//!     fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<()> {
//!         Decision::accept(request, ())
//!     }
//!     fn on_message(&mut self, conn: &mut Conn<'_, ()>, message: Message<'_>) {
//!         // The message is borrowed from the worker's read buffer; the reply is queued
//!         // and written once, when every message of this wake-up has been handled.
//!         let _ = match message {
//!             Message::Text(text) => conn.send_text(text),
//!             Message::Binary(bytes) => conn.send_binary(bytes),
//!             _ => Ok(()),
//!         };
//!     }
//! }
//!
//! # fn main() -> std::io::Result<()> {
//! let server = ServerBuilder::new().bind("127.0.0.1:9001")?;
//! let running = server.start(|_worker| Echo)?;
//! running.join();
//! # Ok(()) }
//! ```
//!
//! # Memory per connection
//!
//! A connection with no partial message and no pending output owns no buffer (rule 11
//! of docs/ARCHITECTURE.md). Each worker reads into one scratch buffer set ([`tickwire_codec::ws::Buffers`]) and
//! lends it to the connection being served; when a wake-up ends with bytes still owed (a
//! frame cut by the read, or output the socket would not take), the connection keeps that set
//! and the worker takes a fresh one from its pool; the set goes back to the pool as soon as
//! the connection is idle again. An idle connection is its codec state
//! ([`tickwire_codec::ws::Connection`]), its socket, its [`Handler::State`] and a few words
//! of bookkeeping; the configuration is shared by all connections.
//!
//! # Backpressure
//!
//! Output is written at the end of each wake-up (one vectored write for everything the
//! handler queued). What the socket does not take stays queued; once more than the
//! backpressure limit is queued, the worker stops reading that connection (the peer's
//! sends then wait in TCP) until the output drains, then calls [`Handler::on_writable`]. A
//! client that stops reading therefore costs at most the limit plus one read's replies.
//!
//! # Topics
//!
//! A topic ([`ServerHandle::topic`]) fans one message out to every subscriber: publishing
//! ([`ServerHandle::publish`], from any thread, handlers included) frames the message once
//! and hands it to each worker once, whatever the number of subscribers; each worker queues
//! the same bytes on its subscribers at the end of its wake-up, one write per subscriber for
//! everything the round gave it. A subscriber whose queue would pass the send budget
//! ([`ServerBuilder::send_budget`]) is handled by the topic's [`SlowConsumer`] policy (closed
//! with a code, its oldest messages dropped, or conflated by key), so publishing never waits
//! and one slow client cannot hold memory without bound; what is dropped is counted
//! ([`Topic::stats`]) and reported to [`Handler::on_gap`] with the sequence numbers missed.
//!
//! ```no_run
//! use std::net::SocketAddr;
//! use tickwire_server::{Conn, Decision, Handler, Message, Request, ServerBuilder};
//! use tickwire_server::{SharedFrame, SlowConsumer, Topic};
//!
//! struct Ticks(Topic);
//!
//! impl Handler for Ticks {
//!     type State = ();
//!     fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<()> {
//!         Decision::accept(request, ())
//!     }
//!     fn on_open(&mut self, conn: &mut Conn<'_, ()>) {
//!         conn.subscribe(&self.0);
//!     }
//!     fn on_message(&mut self, _conn: &mut Conn<'_, ()>, _message: Message<'_>) {}
//! }
//!
//! # fn main() -> std::io::Result<()> {
//! let running = ServerBuilder::new()
//!     .bind("127.0.0.1:9001")?
//!     .start(|worker| {
//!         Ticks(worker.handle.topic("ticks", SlowConsumer::DropOldest).unwrap())
//!     })?;
//! let handle = running.handle().clone();
//! let ticks = handle.topic("ticks", SlowConsumer::DropOldest).unwrap();
//! // The sequence number goes into the message, so a client can see a gap.
//! handle
//!     .publish(&ticks, 0, |seq| SharedFrame::text(&format!("{{\"seq\":{seq},\"px\":101.5}}")))
//!     .unwrap();
//! # Ok(()) }
//! ```
//!
//! # Layers
//!
//! Internal modules depend one way (`a <- b`: `b` uses `a`): `topic <- handle, handler,
//! transport, wheel <- worker <- server` (`topic` names `ConnId`, a plain id type of
//! `handle`'s). Inside `worker` too; its module docs give the order.
// One module may use `unsafe`: worker/batch_send.rs, the batched sender (docs/UNSAFE.md).
#![deny(unsafe_code)]

mod handle;
mod handler;
mod server;
mod topic;
mod transport;
mod wheel;
mod worker;

pub use handle::{ConnId, HandleError, Replay, ServerHandle};
pub use handler::{
    Conn, Decision, Disconnect, DisconnectKind, Handler, HandshakeFailure, WorkerContext,
};
pub use server::{Running, Server, ServerBuilder};
pub use topic::{Gap, SlowConsumer, Topic, TopicStats};
pub use worker::spin::BusyPoll;

/// The sans-IO codecs this server drives ([`tickwire_codec`]).
pub use tickwire_codec as codec;
#[cfg(feature = "deflate")]
pub use tickwire_codec::deflate::DeflateConfig;
pub use tickwire_codec::handshake::{Request, Response, ServerLimits};
pub use tickwire_codec::ws::{CloseCode, Config, Error, Limits, Message, OpCode, SharedFrame};
/// TLS configuration and the sans-IO TLS codec ([`tickwire_tls`]).
#[cfg(feature = "tls")]
pub use tickwire_tls as tls;
#[cfg(feature = "tls")]
pub use tickwire_tls::ServerTlsConfig;
