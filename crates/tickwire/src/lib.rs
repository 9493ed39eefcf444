//! tickwire: low-latency WebSocket, HTTP/1.1 and binary packet protocol primitives for
//! trading systems. This is the crate to add: its features pick the transports, and its
//! modules are named for the job.
//!
//! | module | what it holds | feature |
//! | --- | --- | --- |
//! | [`ws`] | WebSocket messages, configuration, limits, close codes, errors: the types every transport shares | always |
//! | [`http`] | the HTTP client's error and the sans-IO HTTP/1.1 codec | always |
//! | [`packet`] | the binary packet protocol's error, options and request ids | always |
//! | [`feed`] | exchange feed sessions: configuration, events, receive stamps (the drivers are `blocking::feed` and `tokio::feed`) | always |
//! | [`rpc`] | order entry: requests matched to responses by id, deadlines, login, rate limits, outcomes (the drivers are `blocking::rpc` and `tokio::rpc`) | always |
//! | [`codec`] | every sans-IO codec and state machine ([`tickwire_codec`]) | always |
//! | `blocking` | `std::net` transports: WebSocket client and server, HTTP client, packet links | `blocking` (default) |
//! | `tokio` | the same transports on tokio | `tokio` |
//! | `server` | the epoll reactor WebSocket server, one worker per core, with topics | `server` |
//! | `nats` | a fleet of reactor servers fed by NATS (Rust 1.89) | `nats` |
//! | `tls` | TLS configuration and the sans-IO TLS codec, through rustls | `tls` (default) |
//! | `spsc` | the lock-free SPSC ring buffer and channel | `spsc` |
//!
//! Other features: `deflate` (default; permessage-deflate and gzip bodies), `aws-lc-rs` (the
//! other rustls crypto provider), `lz4` and `zstd` (packet compression), `serde-json` and
//! `bincode` (typed packet requests), `stream` (the tokio WebSocket as a futures `Stream` and
//! `Sink`).
//!
//! Each module re-exports an implementation crate (`tickwire-blocking`, `tickwire-tokio`,
//! `tickwire-server`, ...), which stays usable on its own; code written against this crate
//! names none of them.
//!
//! ```no_run
//! # #[cfg(feature = "blocking")]
//! # fn main() -> Result<(), tickwire::ws::Error> {
//! use tickwire::blocking::connect;
//! use tickwire::ws::{Message, Recv};
//!
//! let mut ws = connect("ws://127.0.0.1:9001/feed")?;
//! ws.send_text_now(r#"{"op":"subscribe"}"#)?;
//! while let Recv::Message(message) = ws.recv()? {
//!     if let Message::Text(text) = message {
//!         println!("{text}");
//!     }
//! }
//! # Ok(()) }
//! # #[cfg(not(feature = "blocking"))]
//! # fn main() {}
//! ```
#![forbid(unsafe_code)]

pub use tickwire_codec as codec;
pub use tickwire_core::TransportError;

pub mod ws {
    //! WebSocket (RFC 6455, permessage-deflate RFC 7692): the types every transport shares.
    //! A connection is opened by a transport: [`crate::blocking`], [`crate::tokio`] or
    //! [`crate::server`] (each behind its feature). The sans-IO state machine itself is
    //! [`Connection`].

    #[cfg(feature = "deflate")]
    pub use tickwire_codec::deflate::{DeflateConfig, DeflateParams};
    pub use tickwire_codec::handshake::{
        HandshakeError, Request as UpgradeRequest, Response as UpgradeResponse,
    };
    /// A protocol violation, limit or timer failure found by the codec, with the close code
    /// that went on the wire: what [`Error::Protocol`] carries.
    pub use tickwire_codec::ws::Error as ProtocolError;
    #[cfg(feature = "deflate")]
    pub use tickwire_codec::ws::PreparedMessage;
    pub use tickwire_codec::ws::{
        CloseCode, CloseFrame, Compression, Config, Connection, Limits, MaskSource, Message,
        OpCode, Role, Sender, SharedFrame,
    };
    /// The builders, generic over the transport (`blocking::ClientBuilder` is
    /// `ClientBuilder<Blocking>`, `tokio::ClientBuilder` is `ClientBuilder<Tokio>`): to
    /// write a builder's options once for both.
    pub use tickwire_core::ws::{ClientBuilder, ClientOptions, ServerBuilder, ServerOptions};
    /// The connection every transport's `WebSocket` dereferences to: its sends that only
    /// queue and its accessors.
    pub use tickwire_core::ws::{Negotiated, Socket};
    pub use tickwire_core::{Error, Recv};
}

pub mod http {
    //! HTTP/1.1: the clients' error ([`ClientError`]) and the sans-IO codec (readers and
    //! writers of requests and responses, chunked bodies). The clients are in
    //! [`crate::blocking`] and [`crate::tokio`].

    pub use tickwire_codec::http::*;
    pub use tickwire_codec::rest::RequestWriter;
    /// The client builder, generic over the transport (`blocking::HttpClientBuilder` is
    /// `HttpClientBuilder<Blocking>`): to write a client's options once for both.
    pub use tickwire_core::http::HttpClientBuilder;
    pub use tickwire_core::http::HttpClientError as ClientError;
}

pub mod connect {
    //! How every client opens its TCP connection: [`ConnectOptions`] (Happy Eyeballs v2, the
    //! resolver hook and fixed addresses, the local address or interface, the socket options,
    //! the proxy), the plan behind it ([`ConnectPlan`]) and a failed connect's
    //! [`ConnectError`], with every address's [`Reason`].

    pub use tickwire_codec::connect::{
        ConnectError, ConnectPlan, HttpProxyError, NoProxy, ProxyKind, ProxyUrl, ProxyUrlError,
        Reason, ReplyCode, ResolveEntry, ResolveError, Socks5Error,
    };
    pub use tickwire_core::connect::{
        ConnectOptions, Keepalive, Proxy, Resolve, Resolver, Route, SocketOptions, SystemResolver,
    };
}

pub mod packet {
    //! The binary packet protocol: framing with per-packet LZ4 / Zstd, requests multiplexed
    //! by id. The links (client, server, pool) are in [`crate::blocking`] and
    //! [`crate::tokio`]; this module has what both share.

    pub use tickwire_core::packet::*;
}

pub mod feed {
    //! Exchange feed sessions: one state machine ([`FeedSession`]) that keeps a market-data
    //! feed connected and correct through disconnects, stalls, gaps and rate limits, over
    //! one or several WebSocket connections, and the feed its drivers are ([`Feed`] over a
    //! transport's [`FeedIo`], derefs to [`FeedControl`]). The drivers are
    //! `blocking::feed::Feed` and `tokio::feed::Feed`:
    //!
    //! ```no_run
    //! # #[cfg(feature = "blocking")]
    //! # fn main() -> Result<(), Box<dyn std::error::Error>> {
    //! use tickwire::blocking::ClientBuilder;
    //! use tickwire::blocking::feed::Feed;
    //! use tickwire::feed::{Event, FeedConfig, Timestamps};
    //!
    //! let config = FeedConfig::new("ws://127.0.0.1:9001/feed")
    //!     .with_subscription("BTC")
    //!     .with_timestamps(Timestamps::Kernel);
    //! let mut feed = Feed::new(config, ClientBuilder::new())?;
    //! while let Some(event) = feed.next_event()? {
    //!     if let Event::Message(message) = event {
    //!         println!("{:?} {:?}", message.stamp.kernel_ns, message.payload);
    //!     }
    //! }
    //! # Ok(()) }
    //! # #[cfg(not(feature = "blocking"))]
    //! # fn main() {}
    //! ```

    pub use tickwire_codec::feed::*;
    pub use tickwire_core::feed::{Feed, FeedControl, FeedIo};
}

pub mod rpc {
    //! Order entry over WebSocket: requests matched to responses by id ([`RpcSession`]),
    //! deadlines, a login step, weighted [`RateLimits`] shared with REST, and an outcome for
    //! every request that tells "never written" ([`Outcome::NotSent`]) from "written, then
    //! lost" ([`Outcome::OutcomeUnknown`]). The drivers are `blocking::rpc::Rpc` and
    //! `tokio::rpc::Rpc`, over a feed session's connections:
    //!
    //! ```no_run
    //! # #[cfg(feature = "blocking")]
    //! # fn main() -> Result<(), Box<dyn std::error::Error>> {
    //! use tickwire::blocking::ClientBuilder;
    //! use tickwire::blocking::rpc::Rpc;
    //! use tickwire::feed::FeedConfig;
    //! use tickwire::rpc::{Event, Outcome, Request, RpcConfig};
    //!
    //! let feed = FeedConfig::new("ws://127.0.0.1:9001/ws-api");
    //! let mut rpc = Rpc::new(feed, RpcConfig::new(), ClientBuilder::new())?;
    //! let order = rpc.submit(r#"{"method":"order.place","params":{}}"#, Request::new())?;
    //! while let Some(event) = rpc.next_event()? {
    //!     if let Event::Resolved { ticket, outcome, .. } = event
    //!         && ticket == order
    //!     {
    //!         match outcome {
    //!             Outcome::Response(text) => println!("{}", String::from_utf8_lossy(text)),
    //!             Outcome::NotSent(_) => println!("never sent: safe to send again"),
    //!             other => println!("{}: look the order up before sending again", other.name()),
    //!         }
    //!         break;
    //!     }
    //! }
    //! # Ok(()) }
    //! # #[cfg(not(feature = "blocking"))]
    //! # fn main() {}
    //! ```

    pub use tickwire_codec::rpc::*;
    pub use tickwire_core::rpc::{Rpc, RpcIo};
}

#[cfg(feature = "tls")]
pub mod tls {
    //! TLS through rustls: client and server configuration, the typed handshake failures, and
    //! the sans-IO [`TlsCodec`] the transports drive.

    pub use tickwire_tls::*;
}

#[cfg(feature = "blocking")]
pub mod blocking {
    //! Blocking `std::net` transports (the `tickwire-blocking` crate): WebSocket [`connect`]
    //! and [`ClientBuilder`], [`accept`] and [`ServerBuilder`], the [`HttpClient`] for REST
    //! APIs, and packet links ([`packet`]).

    pub use tickwire_blocking::*;
}

#[cfg(feature = "tokio")]
pub mod tokio {
    //! The transports on tokio (the `tickwire-tokio` crate): WebSocket [`connect`] and
    //! [`ClientBuilder`], [`accept`] and [`ServerBuilder`], a [`WebSocket`] that splits into
    //! reader and writer, the pooled async [`HttpClient`], and packet links ([`packet`]).

    pub use tickwire_tokio::*;
}

#[cfg(feature = "server")]
pub mod server {
    //! The epoll reactor WebSocket server (the `tickwire-server` crate): one worker per core,
    //! a [`Handler`] per worker, topics published once to every subscriber.

    pub use tickwire_server::*;
}

#[cfg(feature = "nats")]
pub mod nats {
    //! A fleet of reactor servers fed by NATS (the `tickwire-nats` crate).

    pub use tickwire_nats::*;
}

#[cfg(feature = "spsc")]
pub mod spsc {
    //! The lock-free single-producer single-consumer ring buffer and channel (the
    //! `tickwire-spsc` crate).

    pub use tickwire_spsc::*;
}

/// The README's examples, compiled as doc tests: its code is the code users copy first. Built
/// when the features they use are on (`cargo test --workspace` turns them on through the CLI,
/// which depends on this crate as a user does).
#[cfg(all(doctest, feature = "blocking", feature = "tokio", feature = "server"))]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
