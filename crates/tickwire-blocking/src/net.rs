//! TCP connection setup shared by the WebSocket and HTTP clients.

use std::io::{self, ErrorKind};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

#[cfg(feature = "tls")]
use std::time::Instant;

#[cfg(feature = "tls")]
use crate::{MaybeTlsStream, TransportError};

/// Connects to the first address of `host:port` that answers, each attempt bounded by
/// `timeout` (`None`: the OS default). The last attempt's error is returned when none does.
pub(crate) fn tcp_connect(
    host: &str,
    port: u16,
    timeout: Option<Duration>,
) -> io::Result<TcpStream> {
    let addrs = (host, port).to_socket_addrs()?;
    let mut last = None;
    for addr in addrs {
        let attempt = match timeout {
            Some(timeout) => TcpStream::connect_timeout(&addr, timeout),
            None => TcpStream::connect(addr),
        };
        match attempt {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| ErrorKind::NotFound.into()))
}

/// Wraps `tcp` in TLS for `host` (SNI and certificate name; an IP address is checked against
/// the certificate's IP SANs) and completes the handshake before `deadline`.
#[cfg(feature = "tls")]
pub(crate) fn tls_connect(
    tcp: TcpStream,
    host: &str,
    config: Option<&tickwire_tls::ClientTlsConfig>,
    deadline: Instant,
) -> Result<MaybeTlsStream, TransportError> {
    let config = config
        .cloned()
        .unwrap_or_else(tickwire_tls::ClientTlsConfig::shared_default);
    let codec = tickwire_tls::TlsCodec::client(&config, host)?;
    let mut stream = crate::TlsStream::new(tcp, codec);
    stream.handshake(deadline)?;
    Ok(MaybeTlsStream::tls_over(stream))
}
