//! The options a packet builder holds, for either transport: what both roles share
//! ([`LinkOptions`]), and one struct for clients ([`PacketClientOptions`]), one for servers
//! ([`PacketServerOptions`]) and one for pools ([`PacketPoolOptions`]), each defaulted here,
//! once. The builders ([`PacketBuilder`](super::PacketBuilder)) set them; the transports
//! read them when they connect or accept. Each field's setter documents it; a field only one
//! transport reads says so (`release_idle_buffers`: tokio-only, and only its builders have
//! the setter).

use std::time::Duration;

use tickwire_codec::mux::{Backoff, BreakerConfig, ClientConfig, ServerConfig};
use tickwire_codec::packet::{Keepalive, PacketConfig};

/// What a packet connection of either role and either transport is set up with, below the
/// multiplexer: its packet limits, socket options, timeouts and keepalive.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LinkOptions {
    /// Packet limits, checksum and compression of this end.
    pub packet: PacketConfig,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// This end's pings.
    pub keepalive: Option<Keepalive>,
    /// Of one wait for the peer's bytes (a response, or a request).
    pub read_timeout: Option<Duration>,
    /// How long queued bytes may wait for the socket to take any of them.
    pub write_timeout: Option<Duration>,
    /// Lend the buffers out while idle (tokio transport only; the blocking one keeps them).
    pub release_idle_buffers: bool,
}

/// What a packet client builder of either transport holds. The defaults are the builders'
/// documented ones: [`PacketConfig::client`], [`ClientConfig::new`], TCP_NODELAY on, a 10 s
/// connect timeout, no read or write timeout, a 30 s request timeout, keepalive pings every
/// 30 s with a 10 s pong deadline, buffers kept while idle, plain TCP.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PacketClientOptions {
    /// The connection's own options.
    pub link: LinkOptions,
    /// Multiplexer caps.
    pub mux: ClientConfig,
    /// Of the TCP connect and the TLS handshake together.
    pub connect_timeout: Duration,
    /// How the TCP connection is opened.
    pub connect: crate::connect::ConnectOptions,
    /// Of each request, from its send to its response.
    pub request_timeout: Option<Duration>,
    /// TLS when set.
    #[cfg(feature = "tls")]
    pub tls: Option<crate::ClientTlsConfig>,
}

impl Default for PacketClientOptions {
    fn default() -> Self {
        Self {
            link: LinkOptions {
                packet: PacketConfig::client(),
                nodelay: true,
                keepalive: Some(Keepalive {
                    interval: Duration::from_secs(30),
                    timeout: Duration::from_secs(10),
                }),
                read_timeout: None,
                write_timeout: None,
                // Off: a client holds a few connections, and each round trip counts.
                release_idle_buffers: false,
            },
            mux: ClientConfig::new(),
            connect_timeout: Duration::from_secs(10),
            connect: crate::connect::ConnectOptions::default(),
            request_timeout: Some(Duration::from_secs(30)),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

impl PacketClientOptions {
    /// The TCP connection to `host:port` under these options (TLS on it when configured).
    pub fn route<'a>(&'a self, host: &'a str, port: u16) -> crate::connect::Route<'a> {
        crate::connect::Route {
            scheme: "tcp",
            host,
            port,
            attempt_timeout: Some(self.connect_timeout),
            nodelay: self.link.nodelay,
            #[cfg(feature = "tls")]
            secure: self.tls.is_some(),
            #[cfg(not(feature = "tls"))]
            secure: false,
            options: &self.connect,
        }
    }
}

/// What a packet server builder of either transport holds. The defaults are the builders'
/// documented ones: [`PacketConfig::server`], [`ServerConfig::new`], TCP_NODELAY on, a 10 s
/// TLS handshake timeout, no read or write timeout, no keepalive pings of its own, buffers
/// lent out while idle (tokio), plain TCP.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PacketServerOptions {
    /// Each connection's own options.
    pub link: LinkOptions,
    /// Multiplexer caps per connection.
    pub mux: ServerConfig,
    /// Of the TLS handshake.
    pub handshake_timeout: Duration,
    /// TLS when set.
    #[cfg(feature = "tls")]
    pub tls: Option<crate::ServerTlsConfig>,
}

impl Default for PacketServerOptions {
    fn default() -> Self {
        Self {
            link: LinkOptions {
                packet: PacketConfig::server(),
                nodelay: true,
                keepalive: None,
                read_timeout: None,
                write_timeout: None,
                // On, unlike a client's: a server holds many mostly idle connections.
                release_idle_buffers: true,
            },
            mux: ServerConfig::new(),
            handshake_timeout: Duration::from_secs(10),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

/// What a packet pool builder of either transport holds besides its client builder. The
/// defaults are the builders' documented ones: 4 connections, [`BreakerConfig::new`],
/// reconnect backoff from 50 ms doubling to 5 s ([`Backoff::default`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PacketPoolOptions {
    /// Connections in the pool (at least 1).
    pub size: usize,
    /// The circuit breaker's thresholds.
    pub breaker: BreakerConfig,
    /// The waits between a slot's failed connection attempts.
    pub backoff: Backoff,
}

impl Default for PacketPoolOptions {
    fn default() -> Self {
        Self {
            size: 4,
            breaker: BreakerConfig::new(),
            backoff: Backoff::default(),
        }
    }
}

/// An options struct with the [`LinkOptions`] of its connections: what the setters both
/// roles share work on.
pub trait HasLinkOptions {
    /// The link options, to change.
    fn link_mut(&mut self) -> &mut LinkOptions;
}

impl HasLinkOptions for PacketClientOptions {
    fn link_mut(&mut self) -> &mut LinkOptions {
        &mut self.link
    }
}

impl HasLinkOptions for PacketServerOptions {
    fn link_mut(&mut self) -> &mut LinkOptions {
        &mut self.link
    }
}
