//! [`BaseUrl`]: a REST client's base URL, checked once when the client is built, so that every
//! tickwire HTTP client (blocking or async) accepts and refuses the same URLs and derives the
//! same [`Origin`] to connect to, `Host` header and base path from them. Connecting is the
//! transport's: nothing here resolves or opens anything.

use core::fmt;

use super::RequestWriter;
use crate::http::WriteError;

/// The parts of an `http://` or `https://` base URL a client needs: where to connect, what
/// to write as `Host`, and the path every request path is joined to.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BaseUrl {
    /// Where to connect.
    pub origin: Origin,
    /// The `Host` header's value (RFC 9110 §7.2): IPv6 brackets kept, the port named only
    /// when the URL names it.
    pub authority: String,
    /// The URL's path without trailing `/`s (`""` for the root).
    pub base_path: String,
}

/// Where an HTTP client's requests go: what a transport needs to open a connection, as
/// [`Endpoint`](crate::handshake::Endpoint) is for a WebSocket URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `https://`: TLS first.
    pub secure: bool,
    /// The host to resolve and to name in TLS (SNI, certificate check): IPv6 brackets removed.
    pub host: String,
    /// The port, the scheme's default (80, 443) when the URL names none.
    pub port: u16,
}

/// Why a base URL was refused: it does not parse, its scheme is not `http` or `https`, it
/// names no host, or it has a query or fragment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidBaseUrl(pub String);

impl fmt::Display for InvalidBaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for InvalidBaseUrl {}

impl BaseUrl {
    /// Parses and checks `url`.
    pub fn parse(url: &str) -> Result<Self, InvalidBaseUrl> {
        let url = url::Url::parse(url).map_err(|e| InvalidBaseUrl(e.to_string()))?;
        let secure = match url.scheme() {
            "http" => false,
            "https" => true,
            other => {
                return Err(InvalidBaseUrl(format!(
                    "scheme {other}:// is not http:// or https://"
                )));
            }
        };
        if url.query().is_some() || url.fragment().is_some() {
            return Err(InvalidBaseUrl(
                "a base URL takes no query or fragment".into(),
            ));
        }
        let host = url
            .host_str()
            .ok_or_else(|| InvalidBaseUrl("no host".into()))?;
        let port = url.port().unwrap_or(if secure { 443 } else { 80 });
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Ok(Self {
            origin: Origin {
                secure,
                host: host
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_owned(),
                port,
            },
            authority,
            base_path: url.path().trim_end_matches('/').to_owned(),
        })
    }
}

impl BaseUrl {
    /// The request writer of a client of this URL: `Host` from
    /// [`authority`](Self::authority), the [`base_path`](Self::base_path), and default headers
    /// in this order: `User-Agent: user_agent` when given, `Accept-Encoding: gzip` when
    /// `accept_gzip`, then `headers`. An invalid header is [`WriteError`].
    pub fn request_writer<'h>(
        &self,
        user_agent: Option<&str>,
        accept_gzip: bool,
        headers: impl IntoIterator<Item = (&'h str, &'h [u8])>,
    ) -> Result<RequestWriter, WriteError> {
        let mut writer = RequestWriter::new(&self.authority, &self.base_path)?;
        if let Some(agent) = user_agent {
            writer.default_header("User-Agent", agent.as_bytes())?;
        }
        if accept_gzip {
            writer.default_header("Accept-Encoding", b"gzip")?;
        }
        for (name, value) in headers {
            writer.default_header(name, value)?;
        }
        Ok(writer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parts_of_a_base_url() {
        let url = BaseUrl::parse("https://[::1]:8443/api/v3/").unwrap();
        let origin = Origin {
            secure: true,
            host: "::1".into(),
            port: 8443,
        };
        assert_eq!(url.origin, origin);
        assert_eq!(url.authority, "[::1]:8443");
        assert_eq!(url.base_path, "/api/v3");
        let url = BaseUrl::parse("http://api.example.com").unwrap();
        assert_eq!(
            (url.origin.secure, url.origin.port, url.authority.as_str()),
            (false, 80, "api.example.com")
        );
        assert_eq!(url.base_path, "");
    }

    #[test]
    fn the_request_writer_carries_host_base_path_and_defaults_in_order() {
        let url = BaseUrl::parse("http://127.0.0.1:8080/api").unwrap();
        let writer = url
            .request_writer(Some("t/1"), true, [("X-Key", &b"k"[..])])
            .unwrap();
        let mut buf = crate::buf::WriteBuf::new(256, 0);
        writer.get(&mut buf, "x").unwrap().finish();
        assert_eq!(
            buf.as_slice(),
            b"GET /api/x HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: t/1\r\n\
              Accept-Encoding: gzip\r\nX-Key: k\r\n\r\n"
        );
        assert!(
            url.request_writer(None, false, [("Bad Name", &b""[..])])
                .is_err()
        );
    }

    #[test]
    fn urls_a_client_cannot_use_are_refused() {
        for url in [
            "ws://example.com",
            "http://example.com/?a=1",
            "http://example.com/#x",
            "not a url",
        ] {
            assert!(BaseUrl::parse(url).is_err(), "{url}");
        }
    }
}
