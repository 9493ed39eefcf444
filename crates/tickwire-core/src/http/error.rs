//! [`HttpClientError`]: what an [`HttpClient`](super::HttpClient) call can fail with.

use std::time::Duration;
use std::{fmt, io};

use tickwire_codec::http::{HttpError, WriteError};

use crate::TransportError;

/// Everything an `HttpClient`, `ClientRequest` or
/// `ClientResponse` call (of either transport) can fail with.
#[derive(Debug)]
#[non_exhaustive]
pub enum HttpClientError {
    /// The socket failed: the TCP connect (its timeout included: kind `TimedOut`), a write, or
    /// a read. An expired read or write timeout has kind `WouldBlock` or `TimedOut`
    /// ([`HttpClientError::is_timeout`]); the connection was dropped.
    Io(io::Error),
    /// TLS failed: an untrusted or expired certificate, a host name mismatch, an alert from
    /// the server, a truncated record. The connection was dropped.
    #[cfg(feature = "tls")]
    Tls(tickwire_tls::TlsError),
    /// The base URL could not be parsed, names no host, has a query or fragment, or its
    /// scheme is not `http` or `https`.
    InvalidUrl(String),
    /// The URL scheme is not supported by this build (`https://` needs the `tls` feature).
    UnsupportedScheme(String),
    /// The TLS handshake did not complete within the connect timeout (or the read timeout
    /// when there is none, or 10 s).
    HandshakeTimeout,
    /// The request did not complete within its total deadline
    /// (`HttpClientBuilder::request_deadline`,
    /// the configured duration is carried): connecting, writing the request and reading the
    /// response to the end of its body together took longer, however often bytes arrived.
    /// Distinct from a read timeout ([`HttpClientError::Io`] of kind `WouldBlock` /
    /// `TimedOut`), which is a single wait with no byte. The connection was dropped.
    DeadlineExceeded {
        /// The total time the request was allowed.
        deadline: Duration,
    },
    /// A response broke RFC 9112 framing or a configured limit; the connection was dropped.
    Http(HttpError),
    /// A request could not be written: a header name that is not a token, CR, LF or NUL in a
    /// value or the path. Nothing was sent.
    Write(WriteError),
    /// The server closed the connection before any byte of the response (after one
    /// automatic retry for an idempotent request on a reused connection).
    NoResponse,
    /// A gzip response body is corrupt, ends early or inflates past the body limit.
    Decompress(String),
    /// The closure writing a request body failed (its error is the source); nothing was
    /// sent.
    Body(Box<dyn std::error::Error + Send + Sync>),
}

impl HttpClientError {
    /// True when a timer expired: [`HttpClientError::Io`] of kind `WouldBlock` or `TimedOut`
    /// (a read, write or TCP connect timeout), [`HttpClientError::HandshakeTimeout`] or
    /// [`HttpClientError::DeadlineExceeded`].
    pub fn is_timeout(&self) -> bool {
        match self {
            Self::Io(e) => matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            ),
            Self::HandshakeTimeout | Self::DeadlineExceeded { .. } => true,
            _ => false,
        }
    }
}

impl fmt::Display for HttpClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Io(e) => write!(f, "I/O error: {e}"),
            #[cfg(feature = "tls")]
            Self::Tls(e) => write!(f, "TLS: {e}"),
            Self::InvalidUrl(reason) => write!(f, "invalid URL: {reason}"),
            Self::UnsupportedScheme(scheme) => {
                write!(f, "unsupported URL scheme {scheme}:// in this build")
            }
            Self::HandshakeTimeout => f.write_str("TLS handshake timed out"),
            Self::DeadlineExceeded { deadline } => {
                write!(
                    f,
                    "the request did not complete within its {deadline:?} deadline"
                )
            }
            Self::Http(e) => write!(f, "HTTP: {e}"),
            Self::Write(e) => write!(f, "HTTP request not written: {e}"),
            Self::NoResponse => f.write_str("the server closed the connection without a response"),
            Self::Decompress(reason) => write!(f, "{reason}"),
            Self::Body(e) => write!(f, "request body: {e}"),
        }
    }
}

impl std::error::Error for HttpClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Io(e) => Some(e),
            #[cfg(feature = "tls")]
            Self::Tls(e) => Some(e),
            Self::Http(e) => Some(e),
            Self::Write(e) => Some(e),
            Self::Body(e) => Some(&**e),
            Self::InvalidUrl(_)
            | Self::UnsupportedScheme(_)
            | Self::HandshakeTimeout
            | Self::DeadlineExceeded { .. }
            | Self::NoResponse
            | Self::Decompress(_) => None,
        }
    }
}

impl From<io::Error> for HttpClientError {
    /// [`HttpClientError::Io`]. (A stream's typed failure, TLS, is asked of the stream with
    /// `Transport::failure`, not unpacked from the `io::Error`.)
    fn from(e: io::Error) -> Self {
        Self::Io(e)
    }
}

impl From<TransportError> for HttpClientError {
    fn from(e: TransportError) -> Self {
        match e {
            TransportError::Io(e) => Self::Io(e),
            #[cfg(feature = "tls")]
            TransportError::Tls(e) => Self::Tls(e),
            TransportError::HandshakeTimeout => Self::HandshakeTimeout,
            // Only a WebSocket upgrade reads through the handshake helpers; a TLS handshake
            // cut short is `TlsError::HandshakeEof`. Kept typed as an I/O end of stream.
            TransportError::UnexpectedEof => Self::Io(io::ErrorKind::UnexpectedEof.into()),
        }
    }
}

#[cfg(feature = "deflate")]
impl From<tickwire_codec::deflate::InflateError> for HttpClientError {
    /// [`HttpClientError::Decompress`], saying what was wrong with the gzip body.
    fn from(e: tickwire_codec::deflate::InflateError) -> Self {
        use tickwire_codec::deflate::InflateError;
        Self::Decompress(match e {
            InflateError::TooLarge { limit } => {
                format!("gzip body inflates past the {limit}-byte limit")
            }
            InflateError::Truncated => "gzip body ends early".into(),
            e => format!("gzip body: {e}"),
        })
    }
}

impl From<HttpError> for HttpClientError {
    fn from(e: HttpError) -> Self {
        Self::Http(e)
    }
}

impl From<WriteError> for HttpClientError {
    fn from(e: WriteError) -> Self {
        Self::Write(e)
    }
}
