//! tickwire-nats: a fleet of [`tickwire_server`] nodes fed by NATS, so that one feed reaches
//! more WebSocket subscribers than one machine holds.
//!
//! - The feed publishes each topic's messages with a [`Publisher`], numbered per topic, to
//!   the subject `tw.TOPIC`: straight to core NATS, or through a JetStream stream per topic
//!   (`TW_TOPIC`) whose sequence numbers are then the topic's.
//! - Each node runs a [`Bridge`]: it subscribes to a topic's subject only while the node has
//!   local subscribers for it and relays each message to them through the server's
//!   encode-once path ([`ServerHandle::publish_at`](tickwire_server::ServerHandle::publish_at)),
//!   in sequence order. A jump in the numbers (NATS drops messages for a slow consumer, a
//!   node was cut off) is filled from the topic's stream when it has one, and whatever
//!   cannot be filled is reported to the subscribers
//!   ([`Handler::on_gap`](tickwire_server::Handler::on_gap)), in line with the messages:
//!   never skipped silently.
//! - A client that reconnects, to the same node or another, resumes from the last number it
//!   has ([`BridgeHandle::resume`]): the node replays what it missed from its recent
//!   history or the stream, reports what neither holds, then goes on live.
//! - Nodes are stateless. One that loses NATS keeps its clients, reconnects with backoff
//!   (the NATS client resubscribes), and fills or reports what it missed meanwhile.
//!
//! How a message looks on NATS: [`wire`]. Running a fleet and its capacity:
//! docs/SCALING.md.
//!
//! ```no_run
//! use std::net::SocketAddr;
//! use tickwire_nats::{BridgeBuilder, BridgeHandle};
//! use tickwire_server::{Conn, Decision, Handler, Message, Request, ServerBuilder};
//! use tickwire_server::{SlowConsumer, Topic};
//!
//! struct Node {
//!     book: Topic,
//!     bridge: BridgeHandle,
//! }
//!
//! impl Handler for Node {
//!     /// The last number the client had, if it is resuming.
//!     type State = Option<u64>;
//!     fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<Option<u64>> {
//!         // `/?after=1042`: the client had every message up to number 1042.
//!         let after = request.path().split_once("?after=").and_then(|(_, n)| n.parse().ok());
//!         Decision::accept(request, after)
//!     }
//!     fn on_open(&mut self, conn: &mut Conn<'_, Option<u64>>) {
//!         match *conn.state() {
//!             Some(after) => self.bridge.resume(conn.id(), &self.book, after),
//!             None => conn.subscribe(&self.book),
//!         }
//!     }
//!     fn on_message(&mut self, _conn: &mut Conn<'_, Option<u64>>, _message: Message<'_>) {}
//! }
//!
//! # fn main() -> std::io::Result<()> {
//! let bridge = BridgeBuilder::new("nats://127.0.0.1:4222").start()?;
//! let relay = bridge.handle().clone();
//! let running = ServerBuilder::new().bind("127.0.0.1:9001")?.start(move |worker| Node {
//!     book: worker.handle.topic("book", SlowConsumer::DropOldest).unwrap(),
//!     bridge: relay.clone(),
//! })?;
//! // From here on, topic `book` relays subject `tw.book` while it has subscribers.
//! bridge.attach(running.handle());
//! running.join();
//! # Ok(()) }
//! ```
#![forbid(unsafe_code)]

mod bridge;
mod publisher;
mod relay;
mod stats;
pub mod wire;

pub use bridge::{Bridge, BridgeBuilder, BridgeHandle, BridgeStats};
pub use publisher::{Backing, PublishError, Publisher};
pub use wire::Kind;

pub use async_nats;
/// The reactor server this crate feeds ([`tickwire_server`]).
pub use tickwire_server as server;
