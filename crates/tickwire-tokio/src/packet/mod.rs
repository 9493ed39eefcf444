//! Packet transports on tokio: the binary packet protocol of [`tickwire_codec::packet`]
//! (framing, per-packet LZ4 / Zstd) with requests multiplexed by [`tickwire_codec::mux`],
//! over TCP or TLS (mutual TLS included), with the shape of the blocking
//! `tickwire_blocking::packet`: code moves between the two by adding `.await`.
//!
//! This module does I/O only and makes no decision. The protocol of a connection (framing,
//! limits, the control packets on request id 0, keepalive timers, its buffers) is the
//! codec's sans-IO [`Session`](tickwire_codec::packet::Session), driven here exactly as the
//! blocking transport drives it; what each arrival means for which request is the codec's
//! [`ClientCore`](tickwire_codec::packet::ClientCore) and
//! [`ServerCore`](tickwire_codec::packet::ServerCore); a pool's backoff and breaker are
//! [`mux`](tickwire_codec::mux)'s. The builders, their options, the [`Responder`] and
//! [`Error`] are tickwire-core's, shared with the blocking transport; [`Tokio`] is this
//! transport's marker for them.
//!
//! - [`PacketClient`] (made by [`PacketClientBuilder`]): [`request`](PacketClient::request)
//!   for one request at a time, or [`send_request`](PacketClient::send_request) /
//!   [`recv_response`](PacketClient::recv_response) for many in flight, answered in any
//!   order, each with its own timeout, cancellable.
//! - [`PacketServer`] and [`PacketConnection`]: the accept side, a task per connection
//!   ([`PacketServer::spawn`]), [`serve`](PacketConnection::serve) with a handler, or
//!   [`recv_request`](PacketConnection::recv_request) /
//!   [`respond`](PacketConnection::respond) to answer out of order. Past the in-flight cap
//!   a request is refused with the "busy" control packet.
//! - [`PacketPool`] (made by [`PacketPoolBuilder`]): connections to one address shared by
//!   tasks, reconnected with backoff, health-checked, behind the codec's circuit breaker.
//! - Typed requests and answers through serde, the same bytes as the blocking transport's:
//!   `request_json` / `send_json` / `respond_json` (feature `serde-json`) and
//!   `request_bincode` / `send_bincode` / `respond_bincode` (feature `bincode`).
//!
//! Control packets, keepalive and flushing follow the blocking transport's rules
//! (`tickwire_blocking::packet` module docs, docs/PACKET.md "Transports"): sends queue, and what is
//! queued is written by `flush`, by [`PacketClient::request`], and before a call waits for
//! bytes. Timers run on tokio's clock (paused and advanced in tests).
//!
//! # Idle connections and their buffers
//!
//! rule 11 of docs/ARCHITECTURE.md. With `release_idle_buffers(true)` on a builder (a setter only the tokio
//! builders have), a connection waiting for
//! bytes with nothing partly received and nothing queued lends its read, inflate and write
//! buffers (16 KiB and up) to a small per-thread free list and waits for socket readiness
//! without them; when the socket is readable it takes buffers back (its own or another
//! connection's). This needs a readiness signal
//! ([`Transport::can_signal_read_ready`](crate::Transport::can_signal_read_ready)): plain
//! TCP has one; over TLS the buffers are kept (decrypted bytes may wait inside the TLS
//! stream with no socket readiness to announce them, and rustls keeps its own record buffers
//! per connection).
//!
//! Lending and taking back allocate nothing (the zero-allocation test runs both ways). It
//! is on by default for [`PacketServer`] (a server holds many connections, most of them idle
//! most of the time) and off for [`PacketClientBuilder`] (a client holds a few, and each
//! round trip counts): one 64-byte request at a time over loopback, both ends releasing,
//! measured 0.09 to 0.13 µs more per round trip at p50 and p90 (18.85 µs against 18.75 µs,
//! about 0.6 %, in each of three alternating runs of 240 000 round trips; p99 and beyond
//! within noise), with the example `packet_idle_buffers`.
//!
//! # Cancel safety
//!
//! Every future here may be dropped at any `.await` (a `tokio::select!` branch that lost,
//! a `tokio::time::timeout`). What happens then:
//!
//! | method | if the future is dropped |
//! |---|---|
//! | [`PacketClient::recv_response`], [`PacketConnection::recv_request`] | Nothing is lost: bytes read are in the connection's buffer (recorded in the poll that read them); a packet is taken only in the poll that returns it; requests stay in flight for the next call. |
//! | [`PacketClient::request`] | The request stays in flight until the next `request`, which cancels it: its answer, if it comes, is dropped, never returned for another request. |
//! | [`PacketClient::flush`], [`PacketConnection::flush`] | What the socket took is recorded; the rest (a packet partly written first in line) goes out on the next flush or wait. |
//! | [`PacketClient::ping`] | The ping stays sent and its pong deadline armed; the pong is taken by the next wait. |
//! | [`PacketConnection::serve`] | A request is answered before the next `.await`; answers queued and not yet written go out on the next flush. |
//! | [`PacketClient::connect`], [`PacketClientBuilder::connect`], [`PacketServer::accept`] | The half-open connection is dropped (socket closed). |
//! | `request_json`, `request_bincode` (client and pool) | As `request`; the client's reused serialization buffer is dropped with the future and grown again by the next call. |
//! | [`PacketPool::request`], [`PacketPool::request_with`] | The connection goes back to the pool; its next request cancels the abandoned one. The breaker counts it neither way. |
//! | [`PacketPool::check_health`] | Connections not checked yet are checked next time. |
//! | [`ServerHandle::shutdown`] | The server is stopped either way (the listener closes when its task ends). |
//! | `send_request`, `respond`, `cancel` | Not async. |

use std::future::Future;
use std::pin::Pin;

mod client;
mod link;
mod pool;
mod server;
#[cfg(any(feature = "serde-json", feature = "bincode"))]
mod typed;

pub use client::{
    FlushFuture, PacketClient, PacketClientBuilder, PingFuture, RequestFuture, ResponseFuture,
};
pub use link::Link;
pub use pool::{PacketPool, PacketPoolBuilder};
pub use server::{
    AnswersFlushFuture, PacketConnection, PacketServer, RecvRequestFuture, ServeFuture,
    ServerHandle,
};
pub use tickwire_codec::mux::RequestId;
pub use tickwire_codec::packet::Keepalive;
pub use tickwire_core::packet::{
    Error, Handler, PacketClientOptions, PacketPoolOptions, PacketServerOptions, Responder,
};

pub use crate::Tokio;

/// A boxed `Send` future of a connect or an accept.
type Connecting<'a, T> = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>>;

impl tickwire_core::packet::PacketTransport for Tokio {
    type Connect<'a> = Connecting<'a, PacketClient>;
    type Socket = tokio::net::TcpStream;
    type Accept<'a> = Connecting<'a, PacketConnection>;
    type Listener = tokio::net::TcpListener;
    type Handle = ServerHandle;
    type Pool = PacketPool;
    type PoolSlot = pool::PoolSlot;

    fn connect<'a>(
        builder: &'a PacketClientBuilder,
        host: &'a str,
        port: u16,
    ) -> Self::Connect<'a> {
        Box::pin(client::connect(builder.options(), host, port))
    }

    fn accept(server: &PacketServer, tcp: Self::Socket) -> Self::Accept<'_> {
        Box::pin(server::accept(server.options(), tcp))
    }

    fn spawn<H: Handler>(
        server: &PacketServer,
        listener: Self::Listener,
        handler: H,
    ) -> Result<ServerHandle, Error> {
        server::spawn(server, listener, handler)
    }
}

impl<S: crate::Transport> tickwire_core::packet::PacketStreams<S> for Tokio {
    type Client = PacketClient<S>;
    type Connection = PacketConnection<S>;

    fn client_over(builder: &PacketClientBuilder, stream: S) -> PacketClient<S> {
        client::client_over(builder.options(), stream)
    }

    fn connection_over(server: &PacketServer, stream: S) -> PacketConnection<S> {
        server::connection_over(server.options(), stream)
    }
}

/// Tokio connections lend their buffers out while idle (module docs).
impl tickwire_core::packet::LendsIdleBuffers for Tokio {}
#[cfg(feature = "bincode")]
pub use tickwire_core::packet::{decode_bincode, encode_bincode};
#[cfg(feature = "serde-json")]
pub use tickwire_core::packet::{decode_json, encode_json};
