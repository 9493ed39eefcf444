//! The packet builders of both transports, written once: [`PacketClientBuilder`],
//! [`PacketServer`] (the accept side's builder; both are a [`PacketBuilder`] over their
//! options, so the setters both roles share are written once too) and
//! [`PacketPoolBuilder`], each generic over a transport marker
//! (`tickwire_blocking::packet::Blocking`, `tickwire_tokio::packet::Tokio`) and holding an
//! options struct ([`PacketClientOptions`] and friends). Every setter is an inherent method
//! here, so `PacketClientBuilder::new().nodelay(true).connect(host, port)`
//! reads the same on both transports with no trait to import; each transport names its
//! builders with a type alias (`pub type PacketClientBuilder =
//! tickwire_core::packet::PacketClientBuilder<Blocking>`).
//!
//! This module owns the setters and their documentation. It does not own connecting,
//! accepting or serving: those are the transport's, reached through [`PacketTransport`] and
//! [`PacketStreams`], which each marker implements (tokio's connect and accept are boxed
//! `Send` futures: they run once per connection, never per request).
//!
//! Transport-only settings: the write timeout is a field of the options, because both
//! transports have one with the same meaning to the user (queued bytes the socket takes none
//! of for that long fail the connection). Lending idle buffers out is tokio's only
//! (rule 11 of docs/ARCHITECTURE.md); it is a field too, so its per-role default (off for clients, on for
//! servers) sits with the others, but its setter exists only where the marker implements
//! [`LendsIdleBuffers`]: a blocking user never sees a setting that would do nothing.

use std::marker::PhantomData;
use std::time::Duration;

use tickwire_codec::mux::{Backoff, BreakerConfig, ClientConfig, ServerConfig};
use tickwire_codec::packet::{Keepalive, PacketConfig};

use super::{
    Error, Handler, HasLinkOptions, PacketClientOptions, PacketPoolOptions, PacketServerOptions,
    PoolParts,
};

/// What a transport does with a packet client builder and a pool builder: connect a
/// client, hold a pool's slots. Implemented by each transport's marker type (its client
/// module); the server side is [`PacketServe`].
pub trait PacketTransport: Sized {
    /// What [`PacketClientBuilder::connect`] returns (tokio: a future of it).
    type Connect<'a>
    where
        Self: 'a;
    /// A pool, made from its parts by [`PacketPoolBuilder::build`].
    type Pool: From<PoolParts<Self, Self::PoolSlot>>;
    /// A pool's slot: a lock (the transport's mutex) around an empty [`Slot`](super::Slot).
    type PoolSlot: Default;

    /// Connects as `dial` says.
    fn connect(dial: Dial<'_>) -> Self::Connect<'_>;
}

/// One connect of a packet client: what [`PacketTransport::connect`] is given.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Dial<'a> {
    /// The client's options.
    pub options: &'a PacketClientOptions,
    /// The host to connect to (and to check a TLS certificate against).
    pub host: &'a str,
    /// The port.
    pub port: u16,
}

/// What a transport does with a [`PacketServer`]: accept a connection, serve a listener.
/// Implemented by each transport's marker type in its server module.
pub trait PacketServe: Sized + Clone + std::fmt::Debug {
    /// An accepted TCP socket.
    type Socket;
    /// What [`PacketServer::accept`] returns (tokio: a future of it).
    type Accept<'a>
    where
        Self: 'a;
    /// What [`PacketServer::spawn`] accepts on.
    type Listener;
    /// A spawned server.
    type Handle;

    /// Sets up an accepted connection as `server` says.
    fn accept(server: &PacketServer<Self>, tcp: Self::Socket) -> Self::Accept<'_>;

    /// Accepts and serves connections on `spawn.listener` with clones of `spawn.handler`.
    fn spawn<H: Handler>(spawn: Spawn<Self, H>) -> Result<Self::Handle, Error>;
}

/// One server to start: what [`PacketServe::spawn`] is given. The server is a copy the
/// spawned accept loop owns.
#[non_exhaustive]
pub struct Spawn<T: PacketServe, H> {
    /// The server's options.
    pub server: PacketServer<T>,
    /// The listener to accept on.
    pub listener: T::Listener,
    /// The handler each connection is served with a clone of.
    pub handler: H,
}

impl<T: PacketServe, H> std::fmt::Debug for Spawn<T, H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawn")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// A packet client or server connection over a stream of type `S` the caller set up.
pub trait PacketStreams<S>: Sized {
    /// What [`PacketClientBuilder::client_over`] returns.
    type Client;
    /// What [`PacketServer::connection_over`] returns.
    type Connection;

    /// A client over `stream`.
    fn client_over(builder: &PacketClientBuilder<Self>, stream: S) -> Self::Client;

    /// A server connection over `stream`.
    fn connection_over(server: &PacketServer<Self>, stream: S) -> Self::Connection;
}

/// A transport that can lend an idle connection's buffers out (tokio's).
pub trait LendsIdleBuffers {}

/// A packet builder: options `O` ([`PacketClientOptions`] or [`PacketServerOptions`]) for
/// transport `T`. Named by its two uses, [`PacketClientBuilder`] and [`PacketServer`];
/// each transport's docs give the defaults.
#[derive(Debug, Clone, Default)]
pub struct PacketBuilder<O, T> {
    options: O,
    /// The transport marker: which [`PacketTransport`] connects, accepts and serves.
    transport: PhantomData<T>,
}

/// Options for a packet client of transport `T`.
pub type PacketClientBuilder<T> = PacketBuilder<PacketClientOptions, T>;

/// Options for the accept side of transport `T`, and what accepts and serves connections.
pub type PacketServer<T> = PacketBuilder<PacketServerOptions, T>;

impl<O: Default, T: Default> PacketBuilder<O, T> {
    /// The defaults ([`PacketClientOptions::default`], [`PacketServerOptions::default`]).
    pub fn new() -> Self {
        Self::default()
    }
}

impl<O: HasLinkOptions, T> PacketBuilder<O, T> {
    /// The options set so far.
    pub fn options(&self) -> &O {
        &self.options
    }

    /// Packet limits, checksum and compression policy of this end's reader and writer.
    pub fn packet_config(mut self, config: PacketConfig) -> Self {
        self.options.link_mut().packet = config;
        self
    }

    /// TCP_NODELAY (default on).
    pub fn nodelay(mut self, on: bool) -> Self {
        self.options.link_mut().nodelay = on;
        self
    }

    /// This end's keepalive pings (`None`: none; pings from the peer are answered either
    /// way). Clients ping by default (30 s, 10 s); servers do not.
    pub fn keepalive(mut self, keepalive: Option<Keepalive>) -> Self {
        self.options.link_mut().keepalive = keepalive;
        self
    }

    /// A wait for the peer (a client's for a response, a server's for a request) that
    /// receives nothing for this long: the client's call returns [`Error::ReadTimeout`] and
    /// the connection carries on; the server's connection ends with it. Default none.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.link_mut().read_timeout = timeout;
        self
    }

    /// Bounds how long queued packets may wait for the socket to take any of their bytes
    /// (a peer that stopped reading), counted from the last byte it took; the blocking
    /// transport also bounds each blocking write with it. Past it the connection fails
    /// with a `TimedOut` (or `WouldBlock`) [`Error::Io`], fatal. Default none.
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.link_mut().write_timeout = timeout;
        self
    }
}

impl<O: HasLinkOptions, T: LendsIdleBuffers> PacketBuilder<O, T> {
    /// Whether an idle connection lends its buffers out while it waits (plain TCP only).
    /// Default off for a client (it holds a few connections, and each round trip counts),
    /// on for a server (it holds many mostly idle ones); the cost: the transport's module
    /// docs, "Idle connections and their buffers".
    pub fn release_idle_buffers(mut self, on: bool) -> Self {
        self.options.link_mut().release_idle_buffers = on;
        self
    }
}

impl<T> PacketClientBuilder<T> {
    /// Multiplexer caps: requests in flight, request and response sizes.
    pub fn mux_config(mut self, config: ClientConfig) -> Self {
        self.options.mux = config;
        self
    }

    /// Bounds the TCP connect (per address attempted) and the TLS handshake together.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.options.connect_timeout = timeout;
        self
    }

    /// How the TCP connection is opened (see
    /// [`ConnectOptions`](crate::connect::ConnectOptions)).
    pub fn connect_options(mut self, options: crate::connect::ConnectOptions) -> Self {
        self.options.connect = options;
        self
    }

    /// Each request fails with [`Error::TimedOut`] when its response has not come within
    /// this (default 30 s; `None`: never).
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.request_timeout = timeout;
        self
    }

    /// Connect with TLS under this configuration (its roots, and a client certificate for
    /// mutual TLS).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: crate::ClientTlsConfig) -> Self {
        self.options.tls = Some(config);
        self
    }

    /// A client over an already connected stream (socket options are the caller's; the
    /// blocking transport sets the write timeout).
    pub fn client_over<S>(&self, stream: S) -> T::Client
    where
        T: PacketStreams<S>,
    {
        T::client_over(self, stream)
    }
}

impl<T: PacketTransport> PacketClientBuilder<T> {
    /// Connects to `host:port` (TCP, then TLS when configured, checked against `host`).
    /// Tokio: a future, cancel safe (a dropped connect closes the half-open socket).
    pub fn connect<'a>(&'a self, host: &'a str, port: u16) -> T::Connect<'a> {
        T::connect(Dial {
            options: self.options(),
            host,
            port,
        })
    }
}

impl<T> PacketServer<T> {
    /// Multiplexer caps: requests in flight per connection (past it: "busy") and request
    /// size.
    pub fn mux_config(mut self, config: ServerConfig) -> Self {
        self.options.mux = config;
        self
    }

    /// Bounds the TLS handshake.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.options.handshake_timeout = timeout;
        self
    }

    /// Serve TLS with this configuration (mutual TLS when it requires client certificates).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: crate::ServerTlsConfig) -> Self {
        self.options.tls = Some(config);
        self
    }

    /// A connection over an already set-up stream.
    pub fn connection_over<S>(&self, stream: S) -> T::Connection
    where
        T: PacketStreams<S>,
    {
        T::connection_over(self, stream)
    }
}

impl<T: PacketServe> PacketServer<T> {
    /// Sets up an accepted connection: socket options, then the TLS handshake when
    /// configured (bounded by the handshake timeout). Tokio: a future, cancel safe.
    pub fn accept(&self, tcp: T::Socket) -> T::Accept<'_> {
        T::accept(self, tcp)
    }

    /// Accepts connections on `listener` and serves each with a clone of `handler`
    /// (`PacketConnection::serve`), on a thread (blocking) or task (tokio) of its own.
    /// Returns at once; the handle's `shutdown` stops accepting and closes every
    /// connection.
    pub fn spawn<H: Handler>(&self, listener: T::Listener, handler: H) -> Result<T::Handle, Error> {
        T::spawn(Spawn {
            server: self.clone(),
            listener,
            handler,
        })
    }
}

/// Options for a packet pool of transport `T`: its client builder and
/// [`PacketPoolOptions`].
#[derive(Debug, Clone, Default)]
pub struct PacketPoolBuilder<T> {
    client: PacketClientBuilder<T>,
    options: PacketPoolOptions,
}

impl<T: Default> PacketPoolBuilder<T> {
    /// The defaults: 4 connections, the default client builder, [`BreakerConfig::new`],
    /// [`Backoff::default`].
    pub fn new() -> Self {
        Self::default()
    }
}

impl<T> PacketPoolBuilder<T> {
    /// The client builder each connection is made with.
    pub fn client_builder(&self) -> &PacketClientBuilder<T> {
        &self.client
    }

    /// The options set so far.
    pub fn options(&self) -> &PacketPoolOptions {
        &self.options
    }

    /// How each connection is made (timeouts, TLS, limits, keepalive).
    pub fn client(mut self, client: PacketClientBuilder<T>) -> Self {
        self.client = client;
        self
    }

    /// Connections in the pool (at least 1).
    pub fn size(mut self, size: usize) -> Self {
        self.options.size = size.max(1);
        self
    }

    /// The circuit breaker's thresholds.
    pub fn breaker(mut self, config: BreakerConfig) -> Self {
        self.options.breaker = config;
        self
    }

    /// After a failed connection attempt a slot waits `initial`, doubling per further
    /// failure up to `max`, before it tries again ([`Error::Reconnecting`] meanwhile).
    pub fn backoff(mut self, initial: Duration, max: Duration) -> Self {
        self.options.backoff = Backoff {
            initial,
            max: max.max(initial),
        };
        self
    }
}

impl<T: PacketTransport> PacketPoolBuilder<T> {
    /// A pool for `host:port`. Connects lazily: the first request on each slot connects.
    ///
    /// Each request takes one connection for its round trip: an idle one if any
    /// (round-robin from the last one used, so it is also least-in-flight), else it waits
    /// for the round-robin one. A connection that fails fatally is dropped and reconnected
    /// by the next request on its slot; a failed connection attempt backs the slot off.
    /// Every request first asks the circuit breaker: while it is open, requests fail at once
    /// with [`Error::CircuitOpen`]; half-open, one probe goes through (ignoring the slot's
    /// backoff).
    pub fn build(self, host: &str, port: u16) -> T::Pool {
        PoolParts::new(self, host, port, T::PoolSlot::default).into()
    }
}
