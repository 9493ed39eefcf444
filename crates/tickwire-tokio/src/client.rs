//! The async client: URL to an open [`WebSocket`] over TCP, TLS for `wss://`.
//!
//! A driver only, as the blocking client: it connects, bounds the handshake with its deadline,
//! writes what [`ClientHandshake`] wrote and feeds it what the socket returns. Every protocol
//! decision (the request, the checks on the answer, negotiation) is the codec's.

use std::time::Duration;

use tokio::time::Instant;

use tickwire_codec::buf::{ReadBuf, WriteBuf};
#[cfg(feature = "deflate")]
use tickwire_codec::deflate::DeflateConfig;
use tickwire_codec::handshake::{ClientHandshake, ClientOptions, Endpoint, HandshakeError, Parsed};
use tickwire_codec::ws::{Buffers, Config, Limits, MaskSource, Role};
#[cfg(feature = "tls")]
use tickwire_tls::ClientTlsConfig;

use crate::core::now;
use crate::stream::MaybeTls;
use crate::{Error, MaybeTlsStream, Transport, WebSocket};

/// Connects to `url` (`ws://` or `wss://host[:port]/path?query`) with the default
/// [`ClientBuilder`].
pub async fn connect(url: &str) -> Result<WebSocket<MaybeTlsStream>, Error> {
    ClientBuilder::new().connect(url).await
}

/// Options for a client connection, those of the blocking `tickwire::ClientBuilder`.
/// Defaults: [`Config::client`] (16 MiB frames, 64 MiB messages), TCP_NODELAY on, a 10 s
/// connect timeout and a 10 s handshake timeout, no read or write timeout.
#[derive(Debug)]
#[non_exhaustive]
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

    /// Adds a request header. A name that is not an HTTP token, or a value with a control
    /// byte, is refused when connecting.
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

    /// Offers permessage-deflate (RFC 7692) with `config` (see the blocking builder).
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

    /// Sets the size up to which the read buffer doubles when a read fills it.
    pub fn max_read_buffer(mut self, size: usize) -> Self {
        self.options.config.max_read_buffer_size = size;
        self
    }

    /// Sends a keepalive ping after `interval` without traffic; fails the connection when
    /// no pong comes within `pong_timeout`. Driven by `recv` (the reader half when split).
    pub fn keepalive(mut self, interval: Duration, pong_timeout: Duration) -> Self {
        self.options.config.ping_interval = Some(interval);
        self.options.config.pong_timeout = pong_timeout;
        self
    }

    /// TCP_NODELAY (default on).
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.nodelay = nodelay;
        self
    }

    /// Timeout for resolving and for each TCP connect attempt (`None`: the OS default).
    pub fn connect_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Timeout for the whole opening handshake (TLS and upgrade) once TCP is up.
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// Read timeout: a `recv` that waits longer returns [`Recv::Timeout`](crate::Recv).
    pub fn read_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Write timeout: bounds each `flush`.
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
    /// [`ClientTlsConfig::shared_default`]).
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: ClientTlsConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Connects over TCP (and TLS for `wss://`) and performs the opening handshake. The
    /// handshake timeout bounds the TLS and WebSocket handshakes together.
    pub async fn connect(self, url: &str) -> Result<WebSocket<MaybeTlsStream>, Error> {
        let parsed = url::Url::parse(url).map_err(|e| Error::InvalidUrl(e.to_string()))?;
        let Endpoint { secure, host, port } = Endpoint::of(&parsed).map_err(|e| match e {
            HandshakeError::InvalidUrl(why) => Error::InvalidUrl(why),
            other => Error::Handshake(other),
        })?;
        let tcp = crate::net::tcp_connect(host, port, self.connect_timeout, self.nodelay).await?;
        let deadline = Instant::now() + self.handshake_timeout;
        let stream = if secure {
            #[cfg(feature = "tls")]
            {
                crate::net::tls_connect(tcp, host, self.tls.as_ref(), deadline).await?
            }
            #[cfg(not(feature = "tls"))]
            {
                let _ = tcp;
                return Err(Error::UnsupportedScheme(
                    "a TLS scheme (build with the `tls` feature)".into(),
                ));
            }
        } else {
            MaybeTls::Plain(tcp)
        };
        self.upgrade(MaybeTlsStream(stream), &parsed, deadline)
            .await
    }

    /// Performs the opening handshake over an already connected stream, within the
    /// handshake timeout. Socket options are the caller's.
    pub async fn handshake<S: Transport>(
        self,
        stream: S,
        url: &url::Url,
    ) -> Result<WebSocket<S>, Error> {
        let deadline = Instant::now() + self.handshake_timeout;
        self.upgrade(stream, url, deadline).await
    }

    async fn upgrade<S: Transport>(
        self,
        mut stream: S,
        url: &url::Url,
        deadline: Instant,
    ) -> Result<WebSocket<S>, Error> {
        let mask = self.mask.unwrap_or_default();
        let mut handshake = ClientHandshake::new(url, self.options, mask)?;
        let mut request = WriteBuf::new(512, 0);
        handshake.write_request(&mut request)?;
        let exchange = async {
            crate::handshake::write_all(&mut stream, request.as_slice()).await?;
            let mut received = ReadBuf::with_capacity(4 << 10);
            loop {
                match handshake.read_response(&mut received, now())? {
                    Parsed::Complete(accepted) => return Ok::<_, Error>((accepted, received)),
                    Parsed::NeedMore => {
                        crate::handshake::read_some(&mut stream, &mut received).await?
                    }
                }
            }
        };
        let (accepted, received) = tokio::time::timeout_at(deadline, exchange)
            .await
            .map_err(|_| Error::HandshakeTimeout)??;
        let conn = accepted.connection;
        let bufs = Buffers::with_read(received, conn.config());
        let ws = WebSocket::from_parts(stream, conn, bufs, Role::Client).with_handshake(
            accepted.subprotocol,
            self.read_timeout,
            self.write_timeout,
        );
        #[cfg(feature = "deflate")]
        let ws = ws.with_deflate(accepted.deflate);
        Ok(ws)
    }
}
