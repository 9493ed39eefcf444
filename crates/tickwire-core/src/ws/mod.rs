//! What the WebSocket builders of every transport share: the options they hold
//! ([`ClientOptions`], [`ServerOptions`]) and the builders themselves, generic over the
//! transport that opens the connection ([`ClientBuilder`], [`ServerBuilder`]).
//!
//! Each setter is written and documented here once. A transport names its builder as an alias
//! (`tickwire_blocking::ClientBuilder` is `ClientBuilder<Blocking>`) and implements the
//! traits below for its marker type, which gives the builder its terminal methods (`connect`,
//! `accept`, ...) with that transport's result types: a `Result` for the blocking transport,
//! a future for tokio's. The builder owns no socket and decides nothing about the protocol:
//! the opening handshake is the codec's ([`tickwire_codec::handshake`]).

mod client;
mod opening;
mod server;
mod socket;

pub use client::{ClientBuilder, ClientOptions, Connect, HandshakeOver};
pub use opening::{
    ClientOpening, Opened, Responded, ServerOpening, endpoint, parse_url, tls_not_built,
};
pub use server::{Accept, AcceptAll, AcceptOver, ServerBuilder, ServerOptions, Upgrade};
#[cfg(feature = "tls")]
pub use server::{AcceptTls, TlsUpgrade};
pub use socket::{Negotiated, Socket, SocketMut};

/// The names every transport crate re-exports beside its own `WebSocket` and builders (one
/// glob, `pub use tickwire_core::ws::names::*`): the errors, the receive outcome, and the
/// codec's WebSocket and handshake types a user writes.
pub mod names {
    pub use super::{ClientOptions, Negotiated, ServerOptions, Socket};
    pub use crate::connect::{ConnectOptions, Route};
    pub use crate::{Error, Recv, TransportError};
    pub use tickwire_codec as codec;
    #[cfg(feature = "deflate")]
    pub use tickwire_codec::deflate::{DeflateConfig, DeflateParams, PreparedMessage};
    pub use tickwire_codec::handshake::{Request, Response};
    pub use tickwire_codec::ws::{
        CloseCode, CloseFrame, Compression, Config, Limits, Message, Sender, SharedFrame,
    };
    #[cfg(feature = "tls")]
    pub use tickwire_tls::{ClientTlsConfig, ServerTlsConfig, TlsError};
}
