//! Connection setup shared by the crate's clients (the WebSocket's, and the HTTP client's):
//! an async TCP connect with a timeout, and the TLS handshakes that turn a `TcpStream` into a
//! [`MaybeTls`]. Below every protocol: it knows TCP and TLS, nothing else.

use std::io::{self, ErrorKind};
use std::time::Duration;

use tokio::net::TcpStream;
#[cfg(feature = "tls")]
use {
    crate::stream::MaybeTls, crate::tls::TlsStream, tickwire_core::TransportError,
    tokio::time::Instant,
};

/// Resolves `host:port` and connects to the first address that answers, each attempt (and the
/// resolution) bounded by `timeout` (`None`: the OS default). TCP_NODELAY is set to `nodelay`.
/// An expired attempt is an `io::Error` of kind `TimedOut`; the last attempt's error is
/// returned when no address answers.
pub(crate) async fn tcp_connect(
    host: &str,
    port: u16,
    timeout: Option<Duration>,
    nodelay: bool,
) -> io::Result<TcpStream> {
    let addrs = bounded(timeout, tokio::net::lookup_host((host, port))).await??;
    let mut last = None;
    for addr in addrs {
        match bounded(timeout, TcpStream::connect(addr)).await {
            Ok(Ok(tcp)) => {
                tcp.set_nodelay(nodelay)?;
                return Ok(tcp);
            }
            Ok(Err(e)) | Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| ErrorKind::NotFound.into()))
}

/// Runs `future` for at most `timeout`; an expired one is an `io::Error` of kind `TimedOut`.
async fn bounded<T>(timeout: Option<Duration>, future: impl Future<Output = T>) -> io::Result<T> {
    match timeout {
        Some(timeout) => tokio::time::timeout(timeout, future)
            .await
            .map_err(|_| io::Error::new(ErrorKind::TimedOut, "connect timed out")),
        None => Ok(future.await),
    }
}

/// Wraps `tcp` in TLS for `host` (SNI and certificate name; an IP address is checked against
/// the certificate's IP SANs; `config` `None` is [`ClientTlsConfig::shared_default`]) and
/// completes the handshake before `deadline` (else [`TransportError::HandshakeTimeout`]).
///
/// [`ClientTlsConfig::shared_default`]: tickwire_tls::ClientTlsConfig::shared_default
#[cfg(feature = "tls")]
pub(crate) async fn tls_connect(
    tcp: TcpStream,
    host: &str,
    config: Option<&tickwire_tls::ClientTlsConfig>,
    deadline: Instant,
) -> Result<MaybeTls, TransportError> {
    let config = config
        .cloned()
        .unwrap_or_else(tickwire_tls::ClientTlsConfig::shared_default);
    let codec = tickwire_tls::TlsCodec::client(&config, host)?;
    let mut stream = TlsStream::new(tcp, codec);
    stream.handshake(deadline).await?;
    Ok(MaybeTls::Tls(Box::new(stream)))
}

/// The server side of [`tls_connect`]: the TLS handshake on an accepted `tcp` with `config`,
/// before `deadline`. A client that sent plaintext gets an HTTP 400; one that failed the
/// handshake gets the alert rustls chose.
#[cfg(feature = "tls")]
pub(crate) async fn tls_accept(
    tcp: TcpStream,
    config: &tickwire_tls::ServerTlsConfig,
    deadline: Instant,
) -> Result<MaybeTls, TransportError> {
    let codec = tickwire_tls::TlsCodec::server(config)?;
    let mut stream = TlsStream::new(tcp, codec);
    stream.handshake(deadline).await?;
    Ok(MaybeTls::Tls(Box::new(stream)))
}
