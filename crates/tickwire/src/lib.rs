//! tickwire: low-latency WebSocket transports on sans-IO codecs.
//!
//! This crate owns the blocking transports over `std::net`: [`connect`] / [`ClientBuilder`]
//! for clients, [`accept`] / [`ServerBuilder`] for the server side of an accepted
//! `TcpStream`, and [`WebSocket`], the connection both return; and [`HttpClient`], a
//! keep-alive HTTP/1.1 client for REST APIs. Protocol logic lives in
//! [`tickwire_codec`], re-exported here as [`codec`]; this crate adds sockets, timeouts and
//! the opening handshake's I/O.
//!
//! ```no_run
//! use tickwire::{Message, connect};
//!
//! let mut ws = connect("ws://127.0.0.1:9001/feed")?;
//! ws.send_text("{\"op\":\"subscribe\"}")?;
//! ws.flush()?;
//! loop {
//!     // Reply while the received message is still borrowed: no copy.
//!     let (message, sender) = ws.recv_with_sender()?;
//!     match message {
//!         Message::Text(text) => sender.text(text)?,
//!         Message::Close(_) => break,
//!         _ => {}
//!     }
//!     ws.flush()?;
//! }
//! # Ok::<(), tickwire::Error>(())
//! ```
#![forbid(unsafe_code)]

mod client;
mod error;
mod head;
mod http;
mod net;
mod server;
mod stream;
#[cfg(feature = "tls")]
mod tls;
mod websocket;

pub use client::{ClientBuilder, connect};
pub use error::Error;
pub use http::{ClientRequest, ClientResponse, HttpClient, HttpClientBuilder};
pub use server::{ServerBuilder, accept};
pub use stream::{MaybeTlsStream, Stream};
pub use tickwire_codec as codec;
pub use tickwire_codec::deflate::{DeflateConfig, DeflateParams, PreparedMessage};
pub use tickwire_codec::handshake::{Request, Response};
pub use tickwire_codec::ws::{CloseCode, CloseFrame, Compression, Config, Limits, Message, Sender};
pub use websocket::{Recv, WebSocket};

/// TLS configuration and the sans-IO TLS codec ([`tickwire_tls`]).
#[cfg(feature = "tls")]
pub use tickwire_tls as tls_codec;
#[cfg(feature = "tls")]
pub use tickwire_tls::{ClientTlsConfig, ServerTlsConfig, TlsError};
#[cfg(feature = "tls")]
pub use tls::TlsStream;
