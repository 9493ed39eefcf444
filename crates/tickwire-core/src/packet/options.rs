//! What the packet builders of both transports share: the blocking ones here and the async
//! ones of tickwire-tokio. The options common to both clients ([`PacketClientOptions`]), to
//! both servers ([`PacketServerOptions`]) and to both pools ([`PacketPoolOptions`]) are one
//! struct each, defaulted here; the builders expand the same setter macros, so an option is
//! documented, defaulted and applied in one place (as the HTTP clients' are, in
//! `crate::http::options`). Hidden: not API, and only for the packet builders, which wrap
//! these in a field `options`. What one transport adds (each transport's write timeout, set
//! on the socket or kept by the async link's timer; the async transport's idle-buffer
//! release) stays in its own builders.

use std::time::Duration;

use tickwire_codec::mux::{BreakerConfig, ClientConfig, ServerConfig};
use tickwire_codec::packet::{Keepalive, PacketConfig};

/// What a packet client builder of either transport holds. The defaults are the builders'
/// documented ones: [`PacketConfig::client`], [`ClientConfig::new`], TCP_NODELAY on, a 10 s
/// connect timeout, no read timeout, a 30 s request timeout, keepalive pings every 30 s with
/// a 10 s pong deadline, plain TCP.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct PacketClientOptions {
    /// Packet limits, checksum and compression of this end.
    pub packet: PacketConfig,
    /// Multiplexer caps.
    pub mux: ClientConfig,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// Of the TCP connect and the TLS handshake together.
    pub connect_timeout: Duration,
    /// Of one wait for response bytes.
    pub read_timeout: Option<Duration>,
    /// Of each request, from its send to its response.
    pub request_timeout: Option<Duration>,
    /// This end's pings.
    pub keepalive: Option<Keepalive>,
    /// TLS when set.
    #[cfg(feature = "tls")]
    pub tls: Option<crate::ClientTlsConfig>,
}

impl Default for PacketClientOptions {
    fn default() -> Self {
        Self {
            packet: PacketConfig::client(),
            mux: ClientConfig::new(),
            nodelay: true,
            connect_timeout: Duration::from_secs(10),
            read_timeout: None,
            request_timeout: Some(Duration::from_secs(30)),
            keepalive: Some(Keepalive {
                interval: Duration::from_secs(30),
                timeout: Duration::from_secs(10),
            }),
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

/// What a packet server builder of either transport holds. The defaults are the builders'
/// documented ones: [`PacketConfig::server`], [`ServerConfig::new`], TCP_NODELAY on, a 10 s
/// TLS handshake timeout, no read timeout, no keepalive pings of its own, plain TCP.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct PacketServerOptions {
    /// Packet limits, checksum and compression of this end.
    pub packet: PacketConfig,
    /// Multiplexer caps per connection.
    pub mux: ServerConfig,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// Of the TLS handshake.
    pub handshake_timeout: Duration,
    /// Of one wait for a request.
    pub read_timeout: Option<Duration>,
    /// This end's pings.
    pub keepalive: Option<Keepalive>,
    /// TLS when set.
    #[cfg(feature = "tls")]
    pub tls: Option<crate::ServerTlsConfig>,
}

impl Default for PacketServerOptions {
    fn default() -> Self {
        Self {
            packet: PacketConfig::server(),
            mux: ServerConfig::new(),
            nodelay: true,
            handshake_timeout: Duration::from_secs(10),
            read_timeout: None,
            keepalive: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

/// What a packet pool builder of either transport holds besides its client builder. The
/// defaults are the builders' documented ones: 4 connections, [`BreakerConfig::new`],
/// reconnect backoff from 50 ms doubling to 5 s.
#[doc(hidden)]
#[derive(Debug, Clone)]
pub struct PacketPoolOptions {
    /// Connections in the pool (at least 1).
    pub size: usize,
    /// The circuit breaker's thresholds.
    pub breaker: BreakerConfig,
    /// The wait after a first failed connection attempt.
    pub backoff_initial: Duration,
    /// The longest wait between attempts (at least `backoff_initial`).
    pub backoff_max: Duration,
}

impl Default for PacketPoolOptions {
    fn default() -> Self {
        Self {
            size: 4,
            breaker: BreakerConfig::new(),
            backoff_initial: Duration::from_millis(50),
            backoff_max: Duration::from_secs(5),
        }
    }
}

impl PacketPoolOptions {
    /// The wait before the next connection attempt of a slot whose attempt just failed after
    /// `earlier_failures` failed ones in a row: the initial backoff doubled once per earlier
    /// failure (20 times at most), capped at the maximum.
    pub fn reconnect_delay(&self, earlier_failures: u32) -> Duration {
        self.backoff_initial
            .saturating_mul(1 << earlier_failures.min(20))
            .min(self.backoff_max)
    }
}

/// Setters both packet builders of a transport have, for the field `options` (a
/// [`PacketClientOptions`] or a [`PacketServerOptions`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __packet_link_builder_options {
    () => {
        /// Packet limits, checksum and compression policy of this end's reader and writer.
        pub fn packet_config(mut self, config: $crate::codec::packet::PacketConfig) -> Self {
            self.options.packet = config;
            self
        }

        /// TCP_NODELAY (default on).
        pub fn nodelay(mut self, on: bool) -> Self {
            self.options.nodelay = on;
            self
        }

        /// This end's keepalive pings (`None`: none; pings from the peer are answered
        /// either way).
        pub fn keepalive(mut self, keepalive: Option<$crate::packet::Keepalive>) -> Self {
            self.options.keepalive = keepalive;
            self
        }
    };
}

/// Setters of a packet client builder with the field `options` ([`PacketClientOptions`]).
/// The caller's crate needs the `tls` feature to mean what it means here.
#[doc(hidden)]
#[macro_export]
macro_rules! __packet_client_builder_options {
    () => {
        $crate::__packet_link_builder_options!();

        /// Multiplexer caps: requests in flight, request and response sizes.
        pub fn mux_config(mut self, config: $crate::codec::mux::ClientConfig) -> Self {
            self.options.mux = config;
            self
        }

        /// Bounds the TCP connect (per resolved address) and the TLS handshake together.
        pub fn connect_timeout(mut self, timeout: ::std::time::Duration) -> Self {
            self.options.connect_timeout = timeout;
            self
        }

        /// A wait for a response that receives nothing for this long returns
        /// [`Error::ReadTimeout`](crate::packet::Error::ReadTimeout) (the connection carries
        /// on). Default none.
        pub fn read_timeout(mut self, timeout: Option<::std::time::Duration>) -> Self {
            self.options.read_timeout = timeout;
            self
        }

        /// Each request fails with [`Error::TimedOut`](crate::packet::Error::TimedOut) when
        /// its response has not come within this (default 30 s; `None`: never).
        pub fn request_timeout(mut self, timeout: Option<::std::time::Duration>) -> Self {
            self.options.request_timeout = timeout;
            self
        }

        /// Connect with TLS under this configuration (its roots, and a client certificate for
        /// mutual TLS).
        #[cfg(feature = "tls")]
        pub fn tls(mut self, config: $crate::ClientTlsConfig) -> Self {
            self.options.tls = Some(config);
            self
        }
    };
}

/// Setters of a packet server builder with the field `options` ([`PacketServerOptions`]).
/// The caller's crate needs the `tls` feature to mean what it means here.
#[doc(hidden)]
#[macro_export]
macro_rules! __packet_server_builder_options {
    () => {
        $crate::__packet_link_builder_options!();

        /// Multiplexer caps: requests in flight per connection (past it: "busy") and request size.
        pub fn mux_config(mut self, config: $crate::codec::mux::ServerConfig) -> Self {
            self.options.mux = config;
            self
        }

        /// Bounds the TLS handshake.
        pub fn handshake_timeout(mut self, timeout: ::std::time::Duration) -> Self {
            self.options.handshake_timeout = timeout;
            self
        }

        /// A connection that sends nothing for this long while the server waits for a request
        /// ends with [`Error::ReadTimeout`](crate::packet::Error::ReadTimeout). Default none.
        pub fn read_timeout(mut self, timeout: Option<::std::time::Duration>) -> Self {
            self.options.read_timeout = timeout;
            self
        }

        /// Serve TLS with this configuration (mutual TLS when it requires client certificates).
        #[cfg(feature = "tls")]
        pub fn tls(mut self, config: $crate::ServerTlsConfig) -> Self {
            self.options.tls = Some(config);
            self
        }
    };
}

/// Setters of a packet pool builder with the fields `client` (a `$client`, the transport's
/// client builder) and `options` ([`PacketPoolOptions`]).
#[doc(hidden)]
#[macro_export]
macro_rules! __packet_pool_builder_options {
    ($client:ty) => {
        /// How each connection is made (timeouts, TLS, limits, keepalive).
        pub fn client(mut self, client: $client) -> Self {
            self.client = client;
            self
        }

        /// Connections in the pool (at least 1).
        pub fn size(mut self, size: usize) -> Self {
            self.options.size = size.max(1);
            self
        }

        /// The circuit breaker's thresholds.
        pub fn breaker(mut self, config: $crate::codec::mux::BreakerConfig) -> Self {
            self.options.breaker = config;
            self
        }

        /// After a failed connection attempt a slot waits `initial`, doubling per further
        /// failure up to `max`, before it tries again
        /// ([`Error::Reconnecting`](crate::packet::Error::Reconnecting) meanwhile).
        pub fn backoff(
            mut self,
            initial: ::std::time::Duration,
            max: ::std::time::Duration,
        ) -> Self {
            self.options.backoff_initial = initial;
            self.options.backoff_max = max.max(initial);
            self
        }
    };
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::PacketPoolOptions;

    #[test]
    fn the_reconnect_delay_doubles_from_the_initial_backoff_up_to_the_maximum() {
        let options = PacketPoolOptions::default();
        let delays: Vec<_> = (0..9).map(|n| options.reconnect_delay(n)).collect();
        let millis = [50, 100, 200, 400, 800, 1_600, 3_200, 5_000, 5_000];
        assert_eq!(delays, millis.map(Duration::from_millis));
        assert_eq!(options.reconnect_delay(u32::MAX), Duration::from_secs(5));
    }
}
