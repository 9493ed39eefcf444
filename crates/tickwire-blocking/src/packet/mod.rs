//! Blocking packet transports: the binary packet protocol of [`tickwire_codec::packet`]
//! (framing, per-packet LZ4 / Zstd) with requests multiplexed by
//! [`tickwire_codec::mux`], over TCP or TLS (mutual TLS included).
//!
//! This module owns sockets, timeouts, threads and TLS streams; it owns no protocol rule and
//! makes no decision. The connection's protocol (framing, limits, buffers, control packets,
//! keepalive timers) is the codec's sans-IO [`Session`](tickwire_codec::packet::Session),
//! driven by a thin blocking link; what each arrival means for which request is the codec's
//! [`ClientCore`](tickwire_codec::packet::ClientCore) and
//! [`ServerCore`](tickwire_codec::packet::ServerCore); a pool's backoff and breaker are
//! [`mux`](tickwire_codec::mux)'s. The builders, their options and the [`Responder`] are
//! tickwire-core's, shared with tickwire-tokio, whose `packet` module drives the same cores
//! with the same API shape; [`Blocking`] is this transport's marker for them. Its parts:
//!
//! - [`PacketClient`] (made by [`PacketClientBuilder`]): [`request`](PacketClient::request)
//!   for one request at a time, or [`send_request`](PacketClient::send_request) /
//!   [`recv_response`](PacketClient::recv_response) for many in flight, answered in any
//!   order, each with its own timeout, cancellable.
//! - [`PacketServer`] and [`PacketConnection`]: the accept side, a thread per connection
//!   ([`PacketServer::spawn`]), [`serve`](PacketConnection::serve) with a handler, or
//!   [`recv_request`](PacketConnection::recv_request) / [`respond`](PacketConnection::respond)
//!   to answer out of order.
//! - [`PacketPool`] (made by [`PacketPoolBuilder`]): connections to one address shared by
//!   threads, reconnected with backoff, health-checked, behind a circuit breaker.
//! - Typed requests and answers through serde: `request_json` / `respond_json` (feature
//!   `serde-json`) and `request_bincode` / `respond_bincode` (feature `bincode`, bincode 2).
//! - [`Error`]: every failure, typed; [`Error::is_fatal`] tells a finished connection from a
//!   finished request.
//!
//! # Control packets
//!
//! Request id 0 is reserved by the multiplexer; the transport sends its own messages on it.
//! Each body is 9 bytes, a kind and a little-endian `u64`, never compressed: `0x01` ping
//! (a nonce), `0x02` pong (the ping's nonce), `0x03` busy (the id of a request refused
//! because the server's in-flight cap was reached). Anything else on id 0 is
//! [`Error::MalformedControl`] and closes the connection. docs/PACKET.md, "Transports",
//! has the bytes.
//!
//! # Keepalive
//!
//! With [`Keepalive`] set, a connection sends a ping every `interval` while it waits, and
//! fails with [`Error::KeepaliveTimeout`] when the pong has not come `timeout` later. Either
//! end answers pings whether or not it sends its own. Clients ping by default (30 s, 10 s);
//! servers do not.
//!
//! # Flushing
//!
//! Nothing is written implicitly on send: [`PacketClient::send_request`] and
//! [`PacketConnection::respond`] queue. What is queued is written by `flush`, by
//! [`PacketClient::request`] (the one-shot helper), and before a call blocks waiting for
//! bytes (a request that was not written cannot be answered, and answers queued while
//! requests kept arriving go out in one write).
//!
//! While a call waits for bytes with bytes still queued, the link writes what the socket
//! takes without blocking and reads what the peer sent meanwhile (only as much as the packet
//! it waits for needs), so two ends that each queue more than their sockets' buffers hold do
//! not block each other, over TCP or TLS. The write timeout bounds a wait in which the socket
//! takes none of the queued bytes ([`Error::Io`], fatal). An explicit `flush` (and
//! [`PacketClient::request`], [`PacketClient::ping`]) is a plain blocking write that reads
//! nothing meanwhile: leave the writing of a large pipelined batch to
//! [`recv_response`](PacketClient::recv_response). This needs Unix and a
//! [`Transport`](crate::Transport) that implements [`wait_duplex`](crate::Transport::wait_duplex)
//! (`TcpStream`, the TLS stream);
//! elsewhere everything queued is written before the next read (docs/PACKET.md, "Writes").

mod client;
mod link;
mod pool;
mod server;
#[cfg(any(feature = "serde-json", feature = "bincode"))]
mod typed;

pub use client::{PacketClient, PacketClientBuilder};
pub use link::Link;
pub use pool::{PacketPool, PacketPoolBuilder};
pub use server::{PacketConnection, PacketServer, ServerHandle};
pub use tickwire_codec::mux::RequestId;
pub use tickwire_codec::packet::Keepalive;
pub use tickwire_core::packet::{
    Error, Handler, PacketClientOptions, PacketPoolOptions, PacketServerOptions, Responder,
};
#[cfg(feature = "bincode")]
pub use tickwire_core::packet::{decode_bincode, encode_bincode};
#[cfg(feature = "serde-json")]
pub use tickwire_core::packet::{decode_json, encode_json};

pub use crate::Blocking;

impl tickwire_core::packet::PacketTransport for Blocking {
    type Connect<'a> = Result<PacketClient, Error>;
    type Socket = std::net::TcpStream;
    type Accept<'a> = Result<PacketConnection, Error>;
    type Listener = std::net::TcpListener;
    type Handle = ServerHandle;
    type Pool = PacketPool;
    type PoolSlot = pool::PoolSlot;

    fn connect<'a>(
        builder: &'a PacketClientBuilder,
        host: &'a str,
        port: u16,
    ) -> Self::Connect<'a> {
        client::connect(builder.options(), host, port)
    }

    fn accept(server: &PacketServer, tcp: Self::Socket) -> Self::Accept<'_> {
        server::accept(server, tcp)
    }

    fn spawn<H: Handler>(
        server: &PacketServer,
        listener: Self::Listener,
        handler: H,
    ) -> Result<ServerHandle, Error> {
        server::spawn(server, listener, handler)
    }
}

impl<S: crate::Transport> tickwire_core::packet::PacketStreams<S> for Blocking {
    type Client = Result<PacketClient<S>, Error>;
    type Connection = Result<PacketConnection<S>, Error>;

    fn client_over(builder: &PacketClientBuilder, stream: S) -> Self::Client {
        client::client_over(builder.options(), stream)
    }

    fn connection_over(server: &PacketServer, stream: S) -> Self::Connection {
        server::connection_over(server.options(), stream)
    }
}

/// Locks, ignoring poisoning: what the packet transports keep behind a mutex (a pool's
/// slots and breaker, a server's open sockets) is consistent between calls.
fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
