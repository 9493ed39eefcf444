//! [`TlsError`]: why a TLS configuration or connection failed, named by cause.

use std::{fmt, io};

pub use rustls::AlertDescription;

/// A TLS failure. Certificate and alert variants name the cause a user can act on; the rest
/// carry rustls's description. After any error except [`TlsError::Config`] and
/// [`TlsError::InvalidServerName`] the connection is finished: the fatal alert rustls queued
/// (if any) should still be written to the peer.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsError {
    /// The peer's certificate chain does not lead to a trusted root (RFC 5280 path
    /// validation: unknown issuer, bad signature, not a CA).
    UntrustedCertificate(String),
    /// The certificate is valid, but not for the host name or IP address we connected to
    /// (RFC 6125).
    HostnameMismatch(String),
    /// The certificate (or one in its chain) has expired.
    CertificateExpired,
    /// The certificate (or one in its chain) is not valid yet.
    CertificateNotYetValid,
    /// Another certificate problem (bad encoding, revoked, wrong key usage...).
    BadCertificate(String),
    /// Client authentication is required and the client presented no certificate.
    ClientCertificateRequired,
    /// The peer sent a fatal alert: it refused our certificate, our protocol versions or
    /// cipher suites, or found an error (RFC 8446 §6).
    AlertReceived(AlertDescription),
    /// The peer sent bytes that are not TLS records: plaintext (an HTTP request or
    /// response) on a TLS connection.
    NotTls,
    /// The connection ended in the middle of a TLS record.
    TruncatedRecord,
    /// The connection ended before the TLS handshake completed.
    HandshakeEof,
    /// The peer broke the TLS protocol in another way (rustls's description).
    Protocol(String),
    /// The host name cannot be a TLS server name (not a DNS name nor an IP address).
    InvalidServerName(String),
    /// The configuration is unusable: unparsable PEM, no certificate in it, a key that does
    /// not match the certificate, no usable protocol version.
    Config(String),
}

impl TlsError {
    /// Maps a rustls error to its cause.
    pub fn from_rustls(error: rustls::Error) -> Self {
        use rustls::{CertificateError as C, Error as E, InvalidMessage};
        match error {
            E::InvalidCertificate(cert) => match cert {
                C::UnknownIssuer | C::BadSignature | C::InvalidPurpose => {
                    Self::UntrustedCertificate(format!("{cert:?}"))
                }
                C::NotValidForNameContext {
                    expected,
                    presented,
                } => Self::HostnameMismatch(format!(
                    "connected to {}, the certificate names {}",
                    expected.to_str(),
                    presented.join(", ")
                )),
                C::NotValidForName => Self::HostnameMismatch("no name matches".into()),
                C::Expired | C::ExpiredContext { .. } => Self::CertificateExpired,
                C::NotValidYet | C::NotValidYetContext { .. } => Self::CertificateNotYetValid,
                other => Self::BadCertificate(format!("{other:?}")),
            },
            E::NoCertificatesPresented => Self::ClientCertificateRequired,
            E::AlertReceived(alert) => Self::AlertReceived(alert),
            E::InvalidMessage(InvalidMessage::InvalidContentType) => Self::NotTls,
            other => Self::Protocol(other.to_string()),
        }
    }

    /// Wraps this error in an `io::Error` (kind `InvalidData`), for a `Read` / `Write`
    /// implementation that must return one. Whoever needs the typed error asks the codec
    /// ([`TlsCodec::error`](crate::TlsCodec::error)) rather than unpacking the `io::Error`.
    pub fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }
}

impl fmt::Display for TlsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UntrustedCertificate(why) => {
                write!(
                    f,
                    "untrusted certificate: no path to a trusted root ({why})"
                )
            }
            Self::HostnameMismatch(why) => {
                write!(f, "certificate is not valid for the host name ({why})")
            }
            Self::CertificateExpired => f.write_str("certificate expired"),
            Self::CertificateNotYetValid => f.write_str("certificate not valid yet"),
            Self::BadCertificate(why) => write!(f, "bad certificate ({why})"),
            Self::ClientCertificateRequired => {
                f.write_str("client certificate required but none presented")
            }
            Self::AlertReceived(alert) => write!(f, "peer sent TLS alert {alert:?}"),
            Self::NotTls => {
                f.write_str("peer sent data that is not TLS (plaintext on a TLS port?)")
            }
            Self::TruncatedRecord => f.write_str("connection ended inside a TLS record"),
            Self::HandshakeEof => f.write_str("connection ended during the TLS handshake"),
            Self::Protocol(why) => write!(f, "TLS protocol error: {why}"),
            Self::InvalidServerName(name) => write!(f, "invalid TLS server name {name:?}"),
            Self::Config(why) => write!(f, "TLS configuration: {why}"),
        }
    }
}

impl std::error::Error for TlsError {}

impl From<rustls::Error> for TlsError {
    fn from(error: rustls::Error) -> Self {
        Self::from_rustls(error)
    }
}
