//! [`ClientBuilder`] and the [`ClientOptions`] it holds.

use std::marker::PhantomData;
use std::time::Duration;

use tickwire_codec::handshake;
use tickwire_codec::ws::{Config, Limits, MaskSource};
#[cfg(feature = "tls")]
use tickwire_tls::ClientTlsConfig;

/// Everything a WebSocket client connection is opened with, whatever the transport.
///
/// Defaults: [`Config::client`] (16 MiB frames, 64 MiB messages) with a keepalive ping after
/// [`ClientOptions::KEEPALIVE_INTERVAL`] without traffic and a pong deadline of
/// [`ClientOptions::PONG_TIMEOUT`], TCP_NODELAY on, a 10 s connect timeout per resolved
/// address, a 10 s handshake timeout, no read or write timeout, a CSPRNG-seeded masking-key
/// source, and Mozilla's roots for `wss://`.
#[derive(Debug)]
#[non_exhaustive]
pub struct ClientOptions {
    /// The opening handshake's request and the connection's configuration.
    pub handshake: handshake::ClientOptions,
    /// TCP_NODELAY.
    pub nodelay: bool,
    /// Of the TCP connect, per address attempted (`None`: bounded by the connect plan's
    /// total deadline only).
    pub connect_timeout: Option<Duration>,
    /// How the TCP connection is opened: Happy Eyeballs, fixed addresses, local address.
    pub connect: crate::connect::ConnectOptions,
    /// Of the whole opening handshake (TLS and the upgrade) once TCP is up.
    pub handshake_timeout: Duration,
    /// Of one receive; a receive that waits longer returns `Recv::Timeout`.
    pub read_timeout: Option<Duration>,
    /// Of one write to the socket.
    pub write_timeout: Option<Duration>,
    /// The masking-key source (`None`: the default CSPRNG-seeded one).
    pub mask: Option<MaskSource>,
    /// For `wss://` (`None`: [`ClientTlsConfig::shared_default`]).
    #[cfg(feature = "tls")]
    pub tls: Option<ClientTlsConfig>,
}

impl ClientOptions {
    /// The opening handshake for `url` these options ask for, the request already written.
    /// It takes the handshake options and the masking-key source (the default one if none
    /// was set) out of `self`, leaving what the transport still needs: timeouts, TLS.
    pub fn opening(&mut self, url: &url::Url) -> Result<super::ClientOpening, crate::Error> {
        let mask = self.mask.take().unwrap_or_default();
        super::ClientOpening::new(url, std::mem::take(&mut self.handshake), mask)
    }

    /// The TCP connection `url` asks for under these options (the host and port its
    /// [`endpoint`](super::endpoint) names, TLS for `wss://`), or the URL's error.
    pub fn route<'a>(
        &'a self,
        url: &'a url::Url,
    ) -> Result<crate::connect::Route<'a>, crate::Error> {
        let endpoint = super::endpoint(url)?;
        Ok(crate::connect::Route {
            scheme: url.scheme(),
            host: endpoint.host,
            port: endpoint.port,
            attempt_timeout: self.connect_timeout,
            nodelay: self.nodelay,
            secure: endpoint.secure,
            options: &self.connect,
        })
    }

    /// The default keepalive interval: 20 s, under the 30 s after which some exchanges (OKX)
    /// close a connection that sent nothing, and far below any rate limit on pings.
    pub const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(20);
    /// The default pong deadline of a keepalive ping: 10 s.
    pub const PONG_TIMEOUT: Duration = Duration::from_secs(10);
}

impl Default for ClientOptions {
    fn default() -> Self {
        let mut handshake = handshake::ClientOptions::default();
        handshake.config.ping_interval = Some(Self::KEEPALIVE_INTERVAL);
        handshake.config.pong_timeout = Self::PONG_TIMEOUT;
        Self {
            handshake,
            nodelay: true,
            connect_timeout: Some(Duration::from_secs(10)),
            connect: crate::connect::ConnectOptions::default(),
            handshake_timeout: Duration::from_secs(10),
            read_timeout: None,
            write_timeout: None,
            mask: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

/// Options for a WebSocket client connection, then `connect`. `T` is the transport's marker;
/// use the transport's alias (`tickwire_blocking::ClientBuilder`,
/// `tickwire_tokio::ClientBuilder`). Defaults: those of [`ClientOptions`].
pub struct ClientBuilder<T> {
    options: ClientOptions,
    transport: PhantomData<fn() -> T>,
}

/// A transport that connects a [`ClientBuilder`] to a `ws://` or `wss://` URL.
pub trait Connect {
    /// What `connect` returns: the open connection or the error, or a future of them.
    type Output;

    /// Connects over TCP (and TLS for `wss://`) and performs the opening handshake, the
    /// handshake timeout bounding the TLS and WebSocket handshakes together.
    fn connect(options: ClientOptions, url: &str) -> Self::Output;
}

/// A transport that performs the client's opening handshake over a stream of type `S` that
/// is already connected.
pub trait HandshakeOver<S> {
    /// What `handshake` returns: the open connection or the error, or a future of them.
    type Output;

    /// Performs the opening handshake over `stream` within the handshake timeout; socket
    /// options are the caller's.
    fn handshake(options: ClientOptions, stream: S, url: &url::Url) -> Self::Output;
}

impl<T> std::fmt::Debug for ClientBuilder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("options", &self.options)
            .finish()
    }
}

impl<T> Default for ClientBuilder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Connect> ClientBuilder<T> {
    /// Connects to `url` (`ws://` or `wss://host[:port]/path?query`) over TCP (and TLS for
    /// `wss://`) and performs the opening handshake. The handshake timeout bounds the TLS and
    /// WebSocket handshakes together.
    pub fn connect(self, url: &str) -> T::Output {
        T::connect(self.options, url)
    }
}

impl<T> ClientBuilder<T> {
    /// The defaults of [`ClientOptions`].
    pub fn new() -> Self {
        Self::from_options(ClientOptions::default())
    }

    /// A builder holding `options`.
    pub fn from_options(options: ClientOptions) -> Self {
        Self {
            options,
            transport: PhantomData,
        }
    }

    /// The options set so far.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// The options set so far, for another transport's builder.
    pub fn into_options(self) -> ClientOptions {
        self.options
    }

    /// Performs the opening handshake over an already connected stream (TCP, TLS, or a
    /// stream the transport did not open), within the handshake timeout. Socket options are
    /// the caller's.
    pub fn handshake<S>(self, stream: S, url: &url::Url) -> <T as HandshakeOver<S>>::Output
    where
        T: HandshakeOver<S>,
    {
        T::handshake(self.options, stream, url)
    }

    /// Replaces the whole connection configuration.
    pub fn config(mut self, config: Config) -> Self {
        self.options.handshake.config = config;
        self
    }

    /// Sets the receive limits.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.options.handshake.config.limits = limits;
        self
    }

    /// Sets the initial read and write buffer sizes.
    pub fn buffer_sizes(mut self, read: usize, write: usize) -> Self {
        self.options.handshake.config.read_buffer_size = read;
        self.options.handshake.config.write_buffer_size = write;
        self
    }

    /// Sets the size up to which the read buffer doubles when a read fills it (a peer sending
    /// faster than it is read): fewer, larger reads. Default 128 KiB.
    pub fn max_read_buffer(mut self, size: usize) -> Self {
        self.options.handshake.config.max_read_buffer_size = size;
        self
    }

    /// TCP_NODELAY (default on: each frame goes on the wire at once).
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.options.nodelay = nodelay;
        self
    }

    /// Read timeout: a receive that waits longer returns `Recv::Timeout`, and the connection
    /// stays usable.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.read_timeout = timeout;
        self
    }

    /// Write timeout for the socket.
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.write_timeout = timeout;
        self
    }

    /// Adds a request header (Authorization, Origin, a cookie...). A name that is not an HTTP
    /// token, or a value with CR, LF, NUL or another control byte, is refused when connecting
    /// (the HTTP writers' rule).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.options
            .handshake
            .headers
            .push((name.into(), value.into()));
        self
    }

    /// Offers a subprotocol; the server may select one of those offered.
    pub fn subprotocol(mut self, protocol: impl Into<String>) -> Self {
        self.options.handshake.subprotocols.push(protocol.into());
        self
    }

    /// Offers an extension (a raw `Sec-WebSocket-Extensions` item).
    pub fn extension_offer(mut self, offer: impl Into<String>) -> Self {
        self.options.handshake.extensions.push(offer.into());
        self
    }

    /// Offers permessage-deflate (RFC 7692) with `config`. When the server accepts, received
    /// compressed messages are inflated (the message size limit applies to inflated bytes)
    /// and outgoing ones compressed per the config's policy; an invalid answer fails the
    /// connect with [`HandshakeError::BadExtensionResponse`](handshake::HandshakeError::BadExtensionResponse).
    #[cfg(feature = "deflate")]
    pub fn deflate(mut self, config: tickwire_codec::deflate::DeflateConfig) -> Self {
        self.options.handshake.deflate = Some(config);
        self
    }

    /// Sends a keepalive ping after `interval` without traffic, and fails the connection when
    /// no pong comes within `pong_timeout`. On by default
    /// ([`ClientOptions::KEEPALIVE_INTERVAL`], [`ClientOptions::PONG_TIMEOUT`]).
    pub fn keepalive(mut self, interval: Duration, pong_timeout: Duration) -> Self {
        self.options.handshake.config.ping_interval = Some(interval);
        self.options.handshake.config.pong_timeout = pong_timeout;
        self
    }

    /// Sends no keepalive pings. The connection then notices a silent peer only through the
    /// read timeout or the peer's own pings.
    pub fn no_keepalive(mut self) -> Self {
        self.options.handshake.config.ping_interval = None;
        self
    }

    /// Fails the connection when nothing at all arrives for `timeout` (not a frame, not a
    /// byte): the next receive returns the codec's idle-timeout error, after a close with
    /// 1001 (going away). Off by default; keepalive pings are the usual way to notice a
    /// silent peer, this bounds silence whatever the peer answers.
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.handshake.config.idle_timeout = timeout;
        self
    }

    /// Timeout for the TCP connect, per address attempted (`None`: bounded by the connect
    /// plan's total deadline only).
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.connect_timeout = timeout;
        self
    }

    /// How the TCP connection is opened (see [`ConnectOptions`](crate::connect::ConnectOptions)):
    /// the Happy Eyeballs stagger and total deadline, fixed addresses, the local address.
    pub fn connect_options(mut self, options: crate::connect::ConnectOptions) -> Self {
        self.options.connect = options;
        self
    }

    /// Timeout for the whole opening handshake once TCP is up.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.options.handshake_timeout = timeout;
        self
    }

    /// Replaces the masking-key source (deterministic keys in tests).
    pub fn mask_source(mut self, mask: MaskSource) -> Self {
        self.options.mask = Some(mask);
        self
    }

    /// Uses this TLS configuration for `wss://` (default:
    /// [`ClientTlsConfig::shared_default`], Mozilla's roots with session resumption).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: ClientTlsConfig) -> Self {
        self.options.tls = Some(config);
        self
    }
}
