//! The async client: URL to an open [`WebSocket`] over TCP, TLS for `wss://`.
//!
//! A driver only, as the blocking client: it connects, bounds the handshake with its deadline,
//! writes what [`ClientHandshake`] wrote and feeds it what the socket returns. Every protocol
//! decision (the request, the checks on the answer, negotiation) is the codec's.

use std::time::Duration;

use tokio::time::Instant;

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::handshake::{ClientHandshake, ClientOptions, Endpoint, HandshakeError, Parsed};
use tickwire_codec::ws::{Buffers, MaskSource, Role};
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

/// Options for a client connection, those of the blocking `tickwire_blocking::ClientBuilder`.
/// Defaults: [`Config::client`](tickwire_codec::ws::Config::client) (16 MiB frames, 64 MiB messages), TCP_NODELAY on, a 10 s
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

    tickwire_core::__client_builder_options!();

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
