//! Sans-IO protocol codecs for tickwire.
//!
//! This crate owns the byte-level protocols: [`buf`] (the caller-owned buffers), [`ws`] (RFC 6455
//! frames, messages and connection state), [`handshake`] (the HTTP/1.1 upgrade, both sides) and
//! `deflate` (permessage-deflate, RFC 7692, and bounded inflation of compressed payloads).
//! [`http`] holds the HTTP/1.1 message readers and writers (RFC 9110, RFC 9112); [`rest`]
//! builds whole REST requests on top of the writers, without allocating. [`packet`] is the
//! binary packet codec for service-to-service links, and [`compress`] the bounded
//! decompression interface that it and `deflate` share. [`mux`] multiplexes requests over
//! one connection (ids, out-of-order responses, caps, timeouts, a circuit breaker for
//! pools) on request ids and lengths alone. [`feed`] is the client side of an exchange feed
//! over one or several WebSocket connections: reconnects with back-off, subscriptions,
//! liveness, per-key sequences merged across redundant connections, rotation and send
//! quotas, as decisions and events for a driver that owns the sockets. [`rpc`] is order
//! entry on top of it: requests matched to responses by id, deadlines, a login step,
//! weighted rate limits shared with REST, and an outcome for every request. [`connect`] is the
//! connect path's decisions: Happy Eyeballs v2 over resolved addresses (RFC 8305), fixed
//! addresses for a host (curl's `--resolve`), the HTTP CONNECT and SOCKS5 proxy handshakes
//! as byte state machines, and the proxy a URL takes from the environment as curl reads it.
//! It performs no I/O, reads no clock and spawns nothing: bytes come in, events come out, and
//! time is passed in by the transport.
//!
//! # Layers
//!
//! Modules depend on each other in one direction only (`a <- b`: `b` uses `a`, never the
//! reverse, not even in a doc link):
//!
//! - `buf <- ws <- deflate`: the frame reader and writer know extensions only through the
//!   [`ws::Extension`] seam; permessage-deflate plugs into it and adds the compressing
//!   constructors of [`ws::PreparedMessage`], which the writer sends.
//! - `buf <- http <- rest`: the REST builder writes through the HTTP writers and shares their
//!   byte checks, which live in `http`. `deflate <- rest` too: `rest::GzipBody` inflates gzip
//!   response bodies with `deflate`'s bounded inflater.
//! - `buf <- compress <- deflate, packet`: [`compress`] holds the
//!   [`BoundedDecompress`](compress::BoundedDecompress) trait, its error and the LZ4 and Zstd
//!   implementations; `deflate` implements it for gzip, raw deflate and zlib; [`packet`]
//!   decompresses through it. Nothing uses `packet`.
//! - `http, ws, deflate <- handshake`: the opening handshake reads and writes its heads with
//!   the HTTP readers and writers (one set of header rules for every head), negotiates
//!   permessage-deflate with `deflate`'s functions, and hands out a ready [`ws::Connection`].
//!   Nothing below it names it. Transports drive it and take no protocol decision of their
//!   own.
//! - `mux <- packet`: `mux` counts requests by id and length and never sees a byte, so it
//!   names no other module; `packet`'s client and server cores (`packet::ClientCore`,
//!   `packet::ServerCore`) glue it to the packet framing, and the transports drive those.
//! - `connect` names no other module: the plan sees addresses and outcomes, the proxy
//!   handshakes see bytes, and the driver glues them to its sockets and to the handshake
//!   that follows (TLS, the WebSocket upgrade, HTTP) on the tunnel.
//! - `mux <- feed`: the feed session takes its reconnect back-off ([`mux::Backoff`], with
//!   [`mux::Jitter`]) from `mux` and nothing else; it sees whole messages as bytes and never
//!   a frame, so a driver glues it to its `ws::Connection`s without `feed` naming `ws`.
//! - `mux, feed <- rpc`: the RPC session takes the deadline heap from `mux` and reads the
//!   feed session's events (connections, messages) through [`feed::Event`]; it writes and
//!   reads ids in JSON text itself, so it names neither `ws` nor `http`.
//!
//! # Features
//!
//! - `deflate` (default): the `deflate` module, through `flate2` over `zlib-rs`:
//!   permessage-deflate, [`ws::PreparedMessage`] (and [`ws::Sender::prepared`]) and the
//!   standalone inflaters for compressed payloads. Turn it off
//!   (`default-features = false`) for a build without a compressor: nothing in this crate then
//!   compresses or inflates, and a transport that follows the handshake's extension list
//!   simply never negotiates permessage-deflate (RFC 7692 lets a server ignore an offer). A
//!   message that arrives with RSV1 set anyway is a protocol error (close code 1002), as for
//!   any unnegotiated RSV bit.
//! - `lz4` (off by default): LZ4 packets ([`packet::Compression`]) and
//!   `compress::Lz4Decompressor`: `lz4_flex` compresses, the reference C library (`lz4-sys`)
//!   decodes.
//! - `zstd` (off by default): Zstd packets, with or without a shared dictionary, and
//!   `compress::ZstdDecompressor`, through the `zstd` crate (the reference C library, so it
//!   needs a C compiler to build). Without these features the packet reader refuses
//!   compressed packets with [`packet::PacketError::UnsupportedCodec`]; the two are off by
//!   default because only packet links use them and each adds a dependency the WebSocket and
//!   HTTP users do not need.
#![deny(unsafe_code)] // allowed in two modules: ws::mask::simd, compress::lz4 (docs/UNSAFE.md)

/// Builder-style methods for the public fields of a `#[non_exhaustive]` configuration struct
/// (which callers cannot build with a struct literal): `set with_x => x: T` sets field `x`,
/// `const_set` does the same in a `const fn`, `push with_x => xs: T` appends to a `Vec` field.
macro_rules! with_methods {
    ($($(#[$attr:meta])* $kind:ident $with:ident => $field:ident: $ty:ty),* $(,)?) => {
        $(with_methods!(@one [$(#[$attr])*] $kind $with $field $ty);)*
    };
    (@one [$($attr:tt)*] set $with:ident $field:ident $ty:ty) => {
        $($attr)*
        #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
        #[must_use]
        pub fn $with(mut self, $field: $ty) -> Self {
            self.$field = $field;
            self
        }
    };
    (@one [$($attr:tt)*] const_set $with:ident $field:ident $ty:ty) => {
        $($attr)*
        #[doc = concat!("Sets [`", stringify!($field), "`](Self::", stringify!($field), ").")]
        #[must_use]
        pub const fn $with(mut self, $field: $ty) -> Self {
            self.$field = $field;
            self
        }
    };
    (@one [$($attr:tt)*] push $with:ident $field:ident $ty:ty) => {
        $($attr)*
        #[doc = concat!("Appends to [`", stringify!($field), "`](Self::", stringify!($field), ").")]
        #[must_use]
        pub fn $with(mut self, item: $ty) -> Self {
            self.$field.push(item.into());
            self
        }
    };
}

pub mod buf;
pub mod compress;
pub mod connect;
#[cfg(feature = "deflate")]
pub mod deflate;
pub mod feed;
pub mod handshake;
pub mod http;
pub mod mux;
pub mod packet;
pub mod rest;
pub mod rpc;
pub mod ws;
