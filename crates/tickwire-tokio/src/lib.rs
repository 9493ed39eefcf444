//! tickwire-tokio: the WebSocket transport of `tickwire-blocking` on tokio, over the same sans-IO
//! codecs ([`tickwire_codec`], TLS through [`tickwire_tls`]) and with the same shape:
//! [`connect`] / [`ClientBuilder`], [`accept`] / [`ServerBuilder`], and [`WebSocket`], whose
//! `recv` lends each message from the connection's buffer. It also carries the async HTTP
//! client ([`HttpClient`]) and the [`packet`] transport (client, server, pool for the binary
//! packet protocol, the shape of `tickwire_blocking::packet`). This crate does I/O only: every
//! protocol decision, the opening handshake included, is the codec's.
//!
//! ```no_run
//! use tickwire_tokio::{Message, Recv, connect};
//!
//! # async fn run() -> Result<(), tickwire_tokio::Error> {
//! let mut ws = connect("ws://127.0.0.1:9001/feed").await?;
//! ws.send_text("{\"op\":\"subscribe\"}")?;
//! ws.flush().await?;
//! // Reply while the received message is still borrowed: no copy.
//! while let (Recv::Message(message), mut sender) = ws.recv_with_sender().await? {
//!     if let Message::Text(text) = message {
//!         sender.text(text)?;
//!     }
//!     ws.flush().await?;
//! }
//! # Ok(()) }
//! ```
//!
//! Errors and results are tickwire-core's types, the blocking transport's too ([`Error`], [`Recv`],
//! [`TransportError`]), so code can move between the two transports. Sends queue; nothing is
//! written before [`WebSocket::flush`] or a `recv` that is about to wait (which writes what is
//! owed first). Timers (keepalive pings, pong deadline, idle and close timeouts) are the
//! codec's `poll_timeout`, run on tokio's clock by `recv`. The runtime needs its I/O and time
//! drivers (`#[tokio::main]` and `Builder::enable_all` turn both on): the handshakes are
//! bounded by tokio timers.
//!
//! # Cancel safety
//!
//! Every future here may be dropped at any `.await` (a `tokio::select!` branch that lost).
//! What happens then:
//!
//! | method | if the future is dropped |
//! |---|---|
//! | [`WebSocket::recv`], [`WebSocket::recv_with_sender`], [`WebSocketReader::recv`] | Nothing is lost: bytes read are already in the connection's buffer (recorded in the poll that read them), a partial frame stays there, and a message already parsed waits for the next call, which returns it whole. Owed pongs stay queued. |
//! | `Stream::poll_next` (feature `stream`) | As `recv`: nothing is lost. |
//! | [`WebSocket::flush`], [`WebSocketWriter::flush`], `Sink::poll_flush` / `poll_ready` / `poll_close` (feature `stream`) | What the socket took is recorded; the rest stays queued and goes out on the next flush (or `recv`). A frame already partly written is first in line and completed before any other frame, so the peer never sees a frame cut or interleaved, and the connection stays usable. (Over TLS, bytes the codec accepted are encrypted whole records, written before anything else.) The only way a peer sees half a frame is the connection being dropped before the next flush. |
//! | `send_*`, `ping`, [`WebSocketWriter::with_sender`] | Not async: a message is queued whole or not at all. |
//! | [`WebSocket::close`], [`WebSocketWriter::close`] | The close frame is queued before the first `.await`; a dropped future leaves it queued, and it goes out on the next flush or `recv`. |
//! | [`WebSocket::finish`] | The close handshake stays where it was (close queued or sent, transport maybe shut); calling `finish` again resumes it. |
//! | [`connect`], [`ClientBuilder::connect`], [`accept`], [`ServerBuilder`] `accept*` | The half-open connection is dropped (socket closed); nothing to resume. |
//!
//! The packet transport's table is in the [`packet`] module docs.
//!
//! # Split
//!
//! [`WebSocket::split`] gives a [`WebSocketReader`] and a [`WebSocketWriter`] for two tasks,
//! TLS included; pongs and the close handshake still work when only the reader is polled.
//! The design is in the [`split`] module's docs.
//!
//! # Layers
//!
//! Internal modules depend one way (`a <- b`: `b` uses `a`): `tls <- stream <- net` (the
//! transport base: TCP connect with a timeout, TLS over [`tickwire_tls::TlsCodec`] driven by
//! this crate, `MaybeTls`), `stream <- transport <- core <- websocket <- split`, and
//! `handshake, net, websocket <- client, server`; `net <- http` ([`HttpClient`], the async
//! HTTP/1.1 client with a pool of keep-alive connections per origin); `net, core <- packet`
//! (the packet transport takes the connection setup and `core`'s timer and clock, nothing of
//! the WebSocket).
//!
//! # Features
//!
//! - `tls` (default), `aws-lc-rs`, `deflate` (default): as in `tickwire-blocking`.
//! - `lz4`, `zstd`: packet compression ([`packet`]), forwarded to the codec and to
//!   tickwire-core; `serde-json`, `bincode`: typed packet requests, as in `tickwire-blocking`.
//! - `stream`: [`WebSocket`] as a `futures_core::Stream` of `OwnedMessage`s and a
//!   `futures_sink::Sink` of them, for code written against tokio-tungstenite (one
//!   allocation per received message: the owned copy).
#![forbid(unsafe_code)]

mod client;
mod core;
pub mod feed;
mod handshake;
mod http;
mod net;
#[cfg(feature = "stream")]
mod owned;
pub mod packet;
pub mod rpc;
mod server;
pub mod split;
mod stamp;
mod stream;
#[cfg(feature = "tls")]
mod tls;
mod transport;
mod websocket;

pub use client::{ClientBuilder, Handshaking, Tokio, connect};
pub use http::{
    ClientRequest, ClientResponse, HttpClient, HttpClientBuilder, HttpPool, ResponseFuture,
};
pub use net::tcp_connect;
#[cfg(feature = "stream")]
pub use owned::OwnedMessage;
pub use server::{ServerBuilder, accept};
pub use split::{WebSocketReader, WebSocketWriter};
pub use tickwire_core::http::HttpClientError;
pub use tickwire_core::ws::names::*;
pub use transport::{MaybeTlsStream, Transport};
pub use websocket::WebSocket;
