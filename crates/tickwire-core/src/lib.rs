//! tickwire-core: the types every tickwire transport shares, so that no transport crate
//! depends on another and code moves between them unchanged.
//!
//! It owns [`Error`] (a WebSocket call's failure), [`TransportError`] (a failure below any
//! protocol: socket, TLS, handshake deadline), [`Recv`] (what a WebSocket receive found),
//! [`http::HttpClientError`] and [`packet::Error`], and the option structs the builders of the
//! blocking transport (`tickwire-blocking`) and the tokio one (`tickwire-tokio`) hold. It owns
//! no socket, no timer and no protocol decision: those are the codec's ([`tickwire_codec`])
//! and the transports'. Most users reach these types through the `tickwire` crate.
//!
//! # Features
//!
//! | feature | what it adds |
//! | --- | --- |
//! | `tls` (default) | the TLS variants of the errors and the builders' TLS options |
//! | `deflate` (default) | the builders' permessage-deflate and gzip options |
//! | `lz4`, `zstd` | packet compression, forwarded to the codec |
//! | `serde-json`, `bincode` | the payload formats of typed packet requests (`packet::Format`) |
#![deny(unsafe_code)] // allowed in one module: feed::kernel (docs/UNSAFE.md)

pub mod connect;
mod error;
pub mod feed;
pub mod http;
pub mod packet;
mod recv;
pub mod rpc;
pub mod ws;

pub use error::{Error, TransportError};
pub use recv::Recv;
pub use tickwire_codec as codec;
#[cfg(feature = "tls")]
pub use tickwire_tls::{ClientTlsConfig, ServerTlsConfig, TlsError};
