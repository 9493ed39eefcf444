//! The errors of the transport layer and of the WebSocket: [`TransportError`], what the
//! shared stream helpers (TCP and TLS setup, handshake reads and writes) fail with, and
//! [`Error`], the WebSocket's, which is the codec's typed errors plus I/O, URL and lifecycle
//! failures. The HTTP client has its own, [`HttpClientError`](crate::http::HttpClientError); both
//! are made from a [`TransportError`] with `From`.

use std::{fmt, io};

use tickwire_codec::handshake::HandshakeError;
use tickwire_codec::ws;

/// A failure below any protocol: of the socket, of TLS, or of a deadline or read during an
/// opening handshake. `TlsStream::handshake` returns it and
/// `Transport::failure` (the transport's) reports it; the WebSocket's [`Error`] and the
/// HTTP client's [`HttpClientError`](crate::http::HttpClientError) convert it with `From`.
#[derive(Debug)]
#[non_exhaustive]
pub enum TransportError {
    /// The socket failed.
    Io(io::Error),
    /// TLS failed: an untrusted or expired certificate, a host name mismatch, an alert from
    /// the peer, a truncated record, plaintext from the peer. The connection is finished.
    #[cfg(feature = "tls")]
    Tls(tickwire_tls::TlsError),
    /// An opening handshake (TLS, or the WebSocket upgrade) did not complete before its
    /// deadline.
    HandshakeTimeout,
    /// The peer closed the connection during an opening handshake.
    UnexpectedEof,
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "I/O error: {e}"),
            #[cfg(feature = "tls")]
            Self::Tls(e) => write!(f, "TLS: {e}"),
            Self::HandshakeTimeout => f.write_str("handshake timed out"),
            Self::UnexpectedEof => f.write_str("peer closed the connection during the handshake"),
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            #[cfg(feature = "tls")]
            Self::Tls(e) => Some(e),
            Self::HandshakeTimeout | Self::UnexpectedEof => None,
        }
    }
}

impl From<io::Error> for TransportError {
    /// [`TransportError::Io`]. (A stream's typed failure, TLS, is asked of the stream with
    /// `Transport::failure` (the transport's), not unpacked from the `io::Error`.)
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

#[cfg(feature = "tls")]
impl From<tickwire_tls::TlsError> for TransportError {
    fn from(e: tickwire_tls::TlsError) -> Self {
        Self::Tls(e)
    }
}

/// Everything a blocking WebSocket call can fail with.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The socket failed. A write timeout set by the user surfaces here with kind
    /// `WouldBlock` or `TimedOut` ([`Error::is_timeout`]); a WebSocket reports its read
    /// timeout as `Recv::Timeout` instead.
    Io(io::Error),
    /// The peer broke the protocol, a limit was exceeded or a connection timer expired. The
    /// close frame with [`ws::Error::close_code`] was sent (best effort) and the connection
    /// is finished.
    Protocol(ws::Error),
    /// The opening handshake failed. On the server side the HTTP error response
    /// ([`HandshakeError::response`]) was written before returning.
    Handshake(HandshakeError),
    /// The server's accept hook rejected the request with this HTTP status, which was sent.
    Rejected(u16),
    /// The URL could not be parsed or names no host.
    InvalidUrl(String),
    /// The URL scheme is not supported by this build (`wss://` needs the `tls` feature).
    UnsupportedScheme(String),
    /// TLS failed: an untrusted or expired certificate, a host name mismatch, an alert from
    /// the peer, a truncated record, plaintext from the peer. The connection is finished.
    #[cfg(feature = "tls")]
    Tls(tickwire_tls::TlsError),
    /// The opening handshake did not complete within the handshake timeout.
    HandshakeTimeout,
    /// The peer closed the TCP connection without a close frame (close code 1006).
    UnexpectedEof,
}

impl Error {
    /// True for [`Error::Io`] of kind `WouldBlock` or `TimedOut`: a write timeout expired.
    /// (A read timeout gives `Recv::Timeout` and `Recv::WouldBlock` instead, and an opening
    /// handshake's [`Error::HandshakeTimeout`].)
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Io(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "I/O error: {e}"),
            Self::Protocol(e) => match e.close_code() {
                Some(code) => write!(f, "{e} (close {code})"),
                None => write!(f, "{e}"),
            },
            Self::Handshake(e) => write!(f, "handshake failed: {e}"),
            Self::Rejected(status) => write!(f, "handshake rejected with HTTP {status}"),
            Self::InvalidUrl(reason) => write!(f, "invalid URL: {reason}"),
            Self::UnsupportedScheme(scheme) => {
                write!(f, "unsupported URL scheme {scheme}:// in this build")
            }
            #[cfg(feature = "tls")]
            Self::Tls(e) => write!(f, "TLS: {e}"),
            Self::HandshakeTimeout => f.write_str("handshake timed out"),
            Self::UnexpectedEof => f.write_str("peer closed the connection without a close frame"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            Self::Protocol(e) => Some(e),
            Self::Handshake(e) => Some(e),
            #[cfg(feature = "tls")]
            Self::Tls(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    /// [`Error::Io`]. (A stream's typed failure, TLS, is asked of the stream with
    /// `Transport::failure` (the transport's), not unpacked from the `io::Error`.)
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

#[cfg(feature = "tls")]
impl From<tickwire_tls::TlsError> for Error {
    fn from(e: tickwire_tls::TlsError) -> Self {
        Self::Tls(e)
    }
}

impl From<ws::Error> for Error {
    fn from(e: ws::Error) -> Self {
        Self::Protocol(e)
    }
}

impl From<HandshakeError> for Error {
    fn from(e: HandshakeError) -> Self {
        Self::Handshake(e)
    }
}

impl From<TransportError> for Error {
    fn from(e: TransportError) -> Self {
        match e {
            TransportError::Io(e) => Self::Io(e),
            #[cfg(feature = "tls")]
            TransportError::Tls(e) => Self::Tls(e),
            TransportError::HandshakeTimeout => Self::HandshakeTimeout,
            TransportError::UnexpectedEof => Self::UnexpectedEof,
        }
    }
}
