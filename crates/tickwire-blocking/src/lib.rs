//! tickwire: low-latency WebSocket transports on sans-IO codecs.
//!
//! This crate owns the blocking transports over `std::net`: [`connect`] / [`ClientBuilder`]
//! for clients, [`accept`] / [`ServerBuilder`] for the server side of an accepted
//! `TcpStream`, and [`WebSocket`], the connection both return; and [`HttpClient`], a
//! keep-alive HTTP/1.1 client for REST APIs. Protocol logic lives in
//! [`tickwire_codec`], re-exported here as [`codec`], the opening handshake included; this
//! crate adds sockets, timeouts, TLS streams and the handshake's reads and writes.
//!
//! ```no_run
//! use tickwire_blocking::{Message, Recv, connect};
//!
//! let mut ws = connect("ws://127.0.0.1:9001/feed")?;
//! ws.send_text("{\"op\":\"subscribe\"}")?;
//! ws.flush()?;
//! // Reply while the received message is still borrowed: no copy. The loop ends at
//! // `Recv::Closed`, the end of the close handshake.
//! while let (Recv::Message(message), mut sender) = ws.recv_with_sender()? {
//!     if let Message::Text(text) = message {
//!         sender.text(text)?;
//!     }
//!     ws.flush()?;
//! }
//! # Ok::<(), tickwire_blocking::Error>(())
//! ```
//!
//! # Layers
//!
//! Internal modules depend one way (`a <- b`: `b` uses `a`, never the reverse): `error` and
//! `stream` (the [`Transport`] trait) at the bottom; `stream <- tls_stream <- maybe_tls <- net`;
//! `stream <- websocket <- client, server` (both read and write the upgrade's bytes through
//! `stream`'s deadline helpers and leave every decision to [`tickwire_codec::handshake`]);
//! `net <- client, http, packet`; `options <- client, server` (the builders' setters, as
//! macros the tokio transport expands too); `stream, maybe_tls <- packet` (the packet
//! transports: client, server, pool, with their own [`packet::Error`]). The protocol logic is
//! [`tickwire_codec`]'s, below all of them.
//!
//! Each protocol has its own error: [`Error`] for the WebSocket, [`HttpClientError`] for the
//! HTTP client. The shared layers below them (`stream`, `tls`, `net`) fail with
//! [`TransportError`], which both convert with `From`.
//!
//! # Features
//!
//! - `tls` (default): `wss://` and `https://` through rustls ([`tickwire_tls`]), ring provider.
//! - `aws-lc-rs`: `tls` with aws-lc-rs as the crypto provider instead of ring.
//! - `lz4`, `zstd`: LZ4 and Zstd compression on [`packet`] links (the codec's features).
//! - `deflate` (default): permessage-deflate (RFC 7692) through flate2, on both sides
//!   (`ClientBuilder::deflate`, `ServerBuilder::deflate`, `PreparedMessage` and
//!   `WebSocket::send_prepared`), and gzip response bodies in the HTTP client
//!   (`HttpClientBuilder::gzip`). With it off (`default-features = false`, adding back
//!   `tls` if wanted) those items do not exist, and:
//!   - a client never offers permessage-deflate, and a server ignores a client's offer and
//!     answers the upgrade without it, which RFC 7692 §5 allows; a frame with RSV1 set is then
//!     a protocol error (close code 1002);
//!   - the HTTP client sends no `Accept-Encoding`, and a response a server compressed anyway
//!     is handed over as it came: [`ClientResponse::body`] holds the gzip bytes,
//!     `Content-Encoding` stays visible in its headers, and
//!     [`ClientResponse::was_decompressed`] is false. Nothing is dropped or guessed; decode it
//!     yourself if you must.
#![forbid(unsafe_code)]

mod client;
#[cfg(unix)]
pub mod feed;
mod http;
mod maybe_tls;
mod net;
pub mod packet;
#[cfg(unix)]
pub mod rpc;
mod server;
#[cfg(unix)]
mod stamp;
mod stream;
#[cfg(feature = "tls")]
mod tls_stream;
mod websocket;

pub use client::{Blocking, ClientBuilder, connect};
pub use http::{
    ClientRequest, ClientResponse, HttpClient, HttpClientBuilder, HttpClientError, HttpConnection,
};
// What tickwire-tokio's HTTP client shares with the blocking one; not API.
#[doc(hidden)]
pub use http::HttpSocketOptions;
pub use maybe_tls::MaybeTlsStream;
pub use net::tcp_connect;
pub use packet::{PacketClient, PacketClientBuilder, PacketConnection, PacketServer};
pub use server::{ServerBuilder, accept};
pub use stream::{Readiness, Transport};
pub use tickwire_core::ws::names::*;
pub use websocket::WebSocket;

/// TLS configuration and the sans-IO TLS codec ([`tickwire_tls`]).
#[cfg(feature = "tls")]
pub use tickwire_tls as tls;
#[cfg(feature = "tls")]
pub use tls_stream::TlsStream;
