//! The blocking client: URL to an open [`WebSocket`] over TCP.
//!
//! A driver only: it connects (TCP, TLS for `wss://`), bounds the handshake with its
//! deadline, writes what [`ClientHandshake`] wrote and feeds it what the socket returns.
//! Every protocol decision (the request, the checks on the answer, negotiation) is the
//! codec's.

use std::time::{Duration, Instant};

use tickwire_codec::buf::{ReadBuf, WriteBuf};
#[cfg(feature = "deflate")]
use tickwire_codec::deflate::DeflateConfig;
use tickwire_codec::handshake::{ClientHandshake, ClientOptions, Endpoint, HandshakeError, Parsed};
use tickwire_codec::ws::{Buffers, Config, Limits, MaskSource, Role};

#[cfg(feature = "tls")]
use tickwire_tls::ClientTlsConfig;

use crate::{Error, MaybeTlsStream, Stream, WebSocket};

/// Connects to `url` (`ws://` or `wss://host[:port]/path?query`) with the default
/// [`ClientBuilder`].
pub fn connect(url: &str) -> Result<WebSocket<MaybeTlsStream>, Error> {
    ClientBuilder::new().connect(url)
}

/// Options for a client connection. Defaults: [`Config::client`] (16 MiB frames, 64 MiB
/// messages), TCP_NODELAY on, a 10 s connect timeout and a 10 s handshake timeout, no read or
/// write timeout.
#[derive(Debug)]
pub struct ClientBuilder {
    options: ClientOptions,
    nodelay: bool,
    connect_timeout: Option<Duration>,
    handshake_timeout: Duration,
    read_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    mask: Option<MaskSource>,
    #[cfg(feature = "tls")]
    tls: Option<ClientTlsConfig>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ClientBuilder {
    /// The defaults above.
    pub fn new() -> Self {
        Self {
            options: ClientOptions::default(),
            nodelay: true,
            connect_timeout: Some(Duration::from_secs(10)),
            handshake_timeout: Duration::from_secs(10),
            read_timeout: None,
            write_timeout: None,
            mask: None,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

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
    pub fn deflate(mut self, config: DeflateConfig) -> Self {
        self.options.deflate = Some(config);
        self
    }

    /// Replaces the whole connection configuration.
    pub fn config(mut self, config: Config) -> Self {
        self.options.config = config;
        self
    }

    /// Sets the receive limits.
    pub fn limits(mut self, limits: Limits) -> Self {
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
    /// faster than it is read): fewer, larger reads. Default 1 MiB for a client, 16 KiB (no
    /// growth) for a server.
    pub fn max_read_buffer(mut self, size: usize) -> Self {
        self.options.config.max_read_buffer_size = size;
        self
    }

    /// Sends a keepalive ping after `interval` without traffic; fails the connection when
    /// no pong comes within `pong_timeout`.
    pub fn keepalive(mut self, interval: Duration, pong_timeout: Duration) -> Self {
        self.options.config.ping_interval = Some(interval);
        self.options.config.pong_timeout = pong_timeout;
        self
    }

    /// TCP_NODELAY (default on: a trading client wants each frame on the wire at once).
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.nodelay = nodelay;
        self
    }

    /// Timeout for the TCP connect, per resolved address (`None`: the OS default).
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Timeout for the whole opening handshake once TCP is up.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Read timeout: a [`WebSocket::recv`](crate::WebSocket::recv) that waits longer returns
    /// [`Recv::Timeout`](crate::Recv::Timeout), and the connection stays usable.
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Write timeout for the socket.
    pub fn write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// Replaces the masking-key source (deterministic keys in tests).
    pub fn mask_source(mut self, mask: MaskSource) -> Self {
        self.mask = Some(mask);
        self
    }

    /// Uses this TLS configuration for `wss://` (default:
    /// [`ClientTlsConfig::shared_default`], Mozilla's roots with session resumption).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: ClientTlsConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Connects over TCP (and TLS for `wss://`) and performs the opening handshake. The
    /// handshake timeout bounds the TLS and WebSocket handshakes together.
    pub fn connect(self, url: &str) -> Result<WebSocket<MaybeTlsStream>, Error> {
        let parsed = url::Url::parse(url).map_err(|e| Error::InvalidUrl(e.to_string()))?;
        let Endpoint { secure, host, port } = Endpoint::of(&parsed).map_err(|e| match e {
            HandshakeError::InvalidUrl(why) => Error::InvalidUrl(why),
            other => Error::Handshake(other),
        })?;
        let tcp = crate::net::tcp_connect(host, port, self.connect_timeout)?;
        tcp.set_nodelay(self.nodelay)?;
        let deadline = Instant::now() + self.handshake_timeout;
        let stream = if secure {
            #[cfg(feature = "tls")]
            {
                crate::net::tls_connect(tcp, host, self.tls.as_ref(), deadline)?
            }
            #[cfg(not(feature = "tls"))]
            {
                let _ = tcp;
                return Err(Error::UnsupportedScheme(
                    "a TLS scheme (build with the `tls` feature)".into(),
                ));
            }
        } else {
            MaybeTlsStream::Plain(tcp)
        };
        self.upgrade(stream, &parsed, deadline)
    }

    /// Performs the opening handshake over an already connected stream (TCP, TLS, or a
    /// stream this crate did not open), within the handshake timeout. Socket options are the
    /// caller's.
    pub fn handshake<S: Stream>(self, stream: S, url: &url::Url) -> Result<WebSocket<S>, Error> {
        let deadline = Instant::now() + self.handshake_timeout;
        self.upgrade(stream, url, deadline)
    }

    fn upgrade<S: Stream>(
        self,
        mut stream: S,
        url: &url::Url,
        deadline: Instant,
    ) -> Result<WebSocket<S>, Error> {
        let mask = self.mask.unwrap_or_default();
        let mut handshake = ClientHandshake::new(url, self.options, mask)?;
        let mut request = WriteBuf::new(512, 0);
        handshake.write_request(&mut request)?;
        crate::stream::write_before(&mut stream, request.as_slice(), deadline)?;
        let mut received = ReadBuf::with_capacity(4 << 10);
        let accepted = loop {
            match handshake.read_response(&mut received, Instant::now())? {
                Parsed::Complete(accepted) => break accepted,
                Parsed::NeedMore => {
                    crate::stream::read_before(&mut stream, &mut received, deadline)?
                }
            }
        };
        stream.set_write_timeout(self.write_timeout)?;
        stream.set_read_timeout(None)?;
        let conn = accepted.connection;
        let bufs = Buffers::with_read(received, conn.config());
        let ws = WebSocket::from_parts(stream, conn, bufs, Role::Client, self.read_timeout)
            .with_subprotocol(accepted.subprotocol);
        #[cfg(feature = "deflate")]
        let ws = ws.with_deflate(accepted.deflate);
        Ok(ws)
    }
}
