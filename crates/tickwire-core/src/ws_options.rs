//! The option setters the WebSocket builders share: the blocking [`ClientBuilder`] and
//! [`ServerBuilder`] here, and the async ones of tickwire-tokio, expand the same macros, so an
//! option is documented and applied in one place. Hidden: not API, and only for builders with
//! the fields each macro names.
//!
//! [`ClientBuilder`]: crate::ClientBuilder
//! [`ServerBuilder`]: crate::ServerBuilder

/// Setters both WebSocket builders have, for the fields `options` (whose `config` is a
/// `tickwire_codec::ws::Config`), `nodelay`, `read_timeout` and `write_timeout`.
#[doc(hidden)]
#[macro_export]
macro_rules! __connection_builder_options {
    () => {
        /// Replaces the whole connection configuration.
        pub fn config(mut self, config: $crate::codec::ws::Config) -> Self {
            self.options.config = config;
            self
        }

        /// Sets the receive limits.
        pub fn limits(mut self, limits: $crate::codec::ws::Limits) -> Self {
            self.options.config.limits = limits;
            self
        }

        /// Sets the initial read and write buffer sizes.
        pub fn buffer_sizes(mut self, read: usize, write: usize) -> Self {
            self.options.config.read_buffer_size = read;
            self.options.config.write_buffer_size = write;
            self
        }

        /// Sets the size up to which the read buffer doubles when a read fills it (a peer sending
        /// faster than it is read): fewer, larger reads. Default 128 KiB for a client, 16 KiB (no
        /// growth) for a server.
        pub fn max_read_buffer(mut self, size: usize) -> Self {
            self.options.config.max_read_buffer_size = size;
            self
        }

        /// TCP_NODELAY (default on: each frame goes on the wire at once).
        pub fn nodelay(mut self, nodelay: bool) -> Self {
            self.nodelay = nodelay;
            self
        }

        /// Read timeout: a [`WebSocket::recv`](crate::WebSocket::recv) that waits longer returns
        /// [`Recv::Timeout`](crate::Recv::Timeout), and the connection stays usable.
        pub fn read_timeout(mut self, timeout: Option<::std::time::Duration>) -> Self {
            self.read_timeout = timeout;
            self
        }

        /// Write timeout for the socket.
        pub fn write_timeout(mut self, timeout: Option<::std::time::Duration>) -> Self {
            self.write_timeout = timeout;
            self
        }
    };
}

/// Setters of a WebSocket client builder with the fields `options` (a
/// `tickwire_codec::handshake::ClientOptions`), `nodelay`, `connect_timeout`,
/// `handshake_timeout`, `read_timeout`, `write_timeout`, `mask` and, with the `tls`
/// feature, `tls`. The caller's crate needs the `deflate` and `tls` features to mean what
/// they mean here.
#[doc(hidden)]
#[macro_export]
macro_rules! __client_builder_options {
    () => {
        $crate::__connection_builder_options!();

        /// Adds a request header (Authorization, Origin, a cookie...). A name that is not an HTTP
        /// token, or a value with CR, LF, NUL or another control byte, is refused when connecting
        /// (the HTTP writers' rule).
        pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.options.headers.push((name.into(), value.into()));
            self
        }

        /// Offers a subprotocol; the server may select one of those offered.
        pub fn subprotocol(mut self, protocol: impl Into<String>) -> Self {
            self.options.subprotocols.push(protocol.into());
            self
        }

        /// Offers an extension (a raw `Sec-WebSocket-Extensions` item).
        pub fn extension_offer(mut self, offer: impl Into<String>) -> Self {
            self.options.extensions.push(offer.into());
            self
        }

        /// Offers permessage-deflate (RFC 7692) with `config`. When the server accepts, received
        /// compressed messages are inflated (the message size limit applies to inflated bytes)
        /// and outgoing ones compressed per the config's policy; an invalid answer fails the
        /// connect with [`HandshakeError::BadExtensionResponse`](tickwire_codec::handshake::HandshakeError::BadExtensionResponse). Needs the `deflate` feature.
        #[cfg(feature = "deflate")]
        pub fn deflate(mut self, config: $crate::codec::deflate::DeflateConfig) -> Self {
            self.options.deflate = Some(config);
            self
        }

        /// Sends a keepalive ping after `interval` without traffic; fails the connection when
        /// no pong comes within `pong_timeout`.
        pub fn keepalive(
            mut self,
            interval: ::std::time::Duration,
            pong_timeout: ::std::time::Duration,
        ) -> Self {
            self.options.config.ping_interval = Some(interval);
            self.options.config.pong_timeout = pong_timeout;
            self
        }

        /// Timeout for the TCP connect, per resolved address (`None`: the OS default).
        pub fn connect_timeout(mut self, timeout: Option<::std::time::Duration>) -> Self {
            self.connect_timeout = timeout;
            self
        }

        /// Timeout for the whole opening handshake once TCP is up.
        pub fn handshake_timeout(mut self, timeout: ::std::time::Duration) -> Self {
            self.handshake_timeout = timeout;
            self
        }

        /// Replaces the masking-key source (deterministic keys in tests).
        pub fn mask_source(mut self, mask: $crate::codec::ws::MaskSource) -> Self {
            self.mask = Some(mask);
            self
        }

        /// Uses this TLS configuration for `wss://` (default:
        /// [`ClientTlsConfig::shared_default`](tickwire_tls::ClientTlsConfig::shared_default), Mozilla's roots with session resumption).
        #[cfg(feature = "tls")]
        pub fn tls(mut self, config: $crate::ClientTlsConfig) -> Self {
            self.tls = Some(config);
            self
        }
    };
}

/// Setters of a WebSocket server builder with the fields `options` (a
/// `tickwire_codec::handshake::ServerOptions`), `nodelay`, `handshake_timeout`,
/// `read_timeout` and `write_timeout`.
#[doc(hidden)]
#[macro_export]
macro_rules! __server_builder_options {
    () => {
        $crate::__connection_builder_options!();

        /// Limits on the upgrade request head.
        pub fn head_limits(mut self, limits: $crate::codec::handshake::ServerLimits) -> Self {
            self.options.limits = limits;
            self
        }

        /// Fails connections that send nothing for `timeout`.
        pub fn idle_timeout(mut self, timeout: Option<::std::time::Duration>) -> Self {
            self.options.config.idle_timeout = timeout;
            self
        }

        /// Timeout for reading the upgrade request and writing the response.
        pub fn handshake_timeout(mut self, timeout: ::std::time::Duration) -> Self {
            self.handshake_timeout = timeout;
            self
        }

        /// Accepts permessage-deflate (RFC 7692) with `config`: the first valid offer is
        /// answered; invalid offers (duplicate, unknown or out-of-range parameters) are declined,
        /// and a request whose every permessage-deflate offer is invalid gets 400. The message
        /// size limit applies to inflated bytes. Needs the `deflate` feature; without it an offer
        /// is ignored (the 101 names no extension, as RFC 7692 §5 allows).
        #[cfg(feature = "deflate")]
        pub fn deflate(mut self, config: $crate::codec::deflate::DeflateConfig) -> Self {
            self.options.deflate = Some(config);
            self
        }

        /// Speaks `protocol`: when the accept hook selects no subprotocol, the first one the
        /// client offered (in its order of preference) among those given here is selected.
        pub fn subprotocol(mut self, protocol: impl Into<String>) -> Self {
            self.options.subprotocols.push(protocol.into());
            self
        }

        /// Adds a header to every 101 (before the hook's own). A name that is not an HTTP token,
        /// or a value with a control byte, fails the handshake with a 500.
        pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
            self.options.headers.push((name.into(), value.into()));
            self
        }
    };
}
