//! The server side: validating an upgrade request and writing the 101 or a rejection.

use base64::Engine as _;

use super::error::reason_phrase;
use super::{HandshakeError, accept_key, check_header, has_token, list_items};

/// Limits on the upgrade request head, checked on partial input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerLimits {
    /// Largest request head, request line to blank line (default 8 KiB).
    pub max_head_size: usize,
    /// Most header fields (default 32).
    pub max_headers: usize,
}

impl Default for ServerLimits {
    fn default() -> Self {
        Self {
            max_head_size: 8 << 10,
            max_headers: 32,
        }
    }
}

/// A validated WebSocket upgrade request (RFC 6455 §4.2.1).
#[derive(Debug, Clone)]
pub struct Request {
    path: String,
    host: String,
    key: String,
    headers: Vec<(String, Vec<u8>)>,
    subprotocols: Vec<String>,
    extensions: Vec<String>,
}

impl Request {
    /// Parses and validates the request head at the start of `buf`: `Ok(None)` while
    /// incomplete (an error as soon as the head is too large or has too many fields),
    /// `Ok(Some((request, head_len)))` once complete. Bytes after `head_len` are early frames:
    /// the caller keeps them and parses them only after writing the 101.
    pub fn parse(
        buf: &[u8],
        limits: &ServerLimits,
    ) -> Result<Option<(Self, usize)>, HandshakeError> {
        let mut storage = vec![httparse::EMPTY_HEADER; limits.max_headers];
        let mut request = httparse::Request::new(&mut storage);
        let head_len = match request.parse(buf) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => {
                if buf.len() > limits.max_head_size {
                    return Err(HandshakeError::HeadTooLarge(limits.max_head_size));
                }
                return Ok(None);
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(HandshakeError::TooManyHeaders(limits.max_headers));
            }
            Err(httparse::Error::Version) => {
                return Err(HandshakeError::MalformedRequest("bad HTTP version"));
            }
            Err(_) => {
                return Err(HandshakeError::MalformedRequest(
                    "not a valid HTTP/1.1 request head",
                ));
            }
        };
        if head_len > limits.max_head_size {
            return Err(HandshakeError::HeadTooLarge(limits.max_head_size));
        }
        let method = request.method.unwrap_or("");
        if method != "GET" {
            return Err(HandshakeError::MethodNotAllowed(method.to_owned()));
        }
        if request.version != Some(1) {
            return Err(HandshakeError::HttpVersionTooOld);
        }
        let all = |name: &'static str| {
            request
                .headers
                .iter()
                .filter(move |h| h.name.eq_ignore_ascii_case(name))
        };
        let hosts: Vec<_> = all("host").collect();
        if hosts.len() != 1 || hosts[0].value.trim_ascii().is_empty() {
            return Err(HandshakeError::BadHost);
        }
        let host = String::from_utf8(hosts[0].value.trim_ascii().to_vec())
            .map_err(|_| HandshakeError::BadHost)?;
        let upgrades: Vec<_> = all("upgrade").collect();
        if !upgrades.iter().any(|h| has_token(h.value, "websocket")) {
            return Err(HandshakeError::MissingUpgrade {
                absent: upgrades.is_empty(),
            });
        }
        if !all("connection").any(|h| has_token(h.value, "upgrade")) {
            return Err(HandshakeError::MissingConnectionUpgrade);
        }
        let versions: Vec<_> = all("sec-websocket-version").collect();
        if versions.len() != 1 || versions[0].value.trim_ascii() != b"13" {
            return Err(HandshakeError::UnsupportedVersion);
        }
        let keys: Vec<_> = all("sec-websocket-key").collect();
        let key = match keys.as_slice() {
            [one] => one.value.trim_ascii(),
            _ => return Err(HandshakeError::BadKey),
        };
        match base64::engine::general_purpose::STANDARD.decode(key) {
            Ok(nonce) if nonce.len() == 16 => {}
            _ => return Err(HandshakeError::BadKey),
        }
        let key = String::from_utf8(key.to_vec()).map_err(|_| HandshakeError::BadKey)?;
        if all("transfer-encoding").next().is_some()
            || all("content-length").any(|h| h.value.trim_ascii() != b"0")
        {
            return Err(HandshakeError::UnexpectedBody);
        }
        let subprotocols = all("sec-websocket-protocol")
            .flat_map(|h| list_items(h.value))
            .collect();
        let extensions = all("sec-websocket-extensions")
            .flat_map(|h| list_items(h.value))
            .collect();
        let path = request.path.unwrap_or("/").to_owned();
        let headers = request
            .headers
            .iter()
            .map(|h| (h.name.to_owned(), h.value.to_vec()))
            .collect();
        Ok(Some((
            Self {
                path,
                host,
                key,
                headers,
                subprotocols,
                extensions,
            },
            head_len,
        )))
    }

    /// The request target as sent (path and query).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The Host header.
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The Origin header, if sent (browsers always send it).
    pub fn origin(&self) -> Option<&str> {
        self.header("origin")
            .and_then(|v| core::str::from_utf8(v).ok())
    }

    /// The first header with `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&[u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_slice())
    }

    /// Every header, in order.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.headers.iter().map(|(n, v)| (n.as_str(), v.as_slice()))
    }

    /// Subprotocols the client offered, in its order of preference.
    pub fn subprotocols(&self) -> &[String] {
        &self.subprotocols
    }

    /// Extension offers, raw items (e.g. `permessage-deflate; client_max_window_bits`).
    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }

    /// The client's `Sec-WebSocket-Key`.
    pub fn key(&self) -> &str {
        &self.key
    }
}

/// The server's answer: a 101 accepting the upgrade, or a rejection.
#[derive(Debug, Clone)]
pub struct Response {
    status: u16,
    accept: Option<String>,
    offered: Vec<String>,
    subprotocol: Option<String>,
    extensions: Option<String>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    /// A 101 accepting `request`.
    pub fn accept(request: &Request) -> Self {
        Self {
            status: 101,
            accept: Some(accept_key(request.key.as_bytes())),
            offered: request.subprotocols.clone(),
            subprotocol: None,
            extensions: None,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A rejection with `status` (4xx or 5xx); the body defaults to the reason phrase.
    pub fn reject(status: u16) -> Self {
        Self {
            status,
            accept: None,
            offered: Vec::new(),
            subprotocol: None,
            extensions: None,
            headers: Vec::new(),
            body: format!("{}\n", reason_phrase(status)).into_bytes(),
        }
    }

    /// Selects a subprotocol; it must be one the client offered ([`write_to`](Self::write_to)
    /// checks).
    pub fn subprotocol(mut self, protocol: &str) -> Self {
        self.subprotocol = Some(protocol.to_owned());
        self
    }

    /// The `Sec-WebSocket-Extensions` value to send (the negotiated extensions).
    pub fn extensions(mut self, value: &str) -> Self {
        self.extensions = Some(value.to_owned());
        self
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets a rejection's body.
    pub fn body(mut self, body: &[u8]) -> Self {
        self.body = body.to_vec();
        self
    }

    /// The status code.
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The subprotocol this response selects, if any.
    pub fn selected_subprotocol(&self) -> Option<&str> {
        self.subprotocol.as_deref()
    }

    /// Writes the response head (and a rejection's body) into `out`. Fails, writing nothing,
    /// when a header has CR, LF or NUL or an invalid name, or the subprotocol was not offered.
    pub fn write_to(&self, out: &mut Vec<u8>) -> Result<(), HandshakeError> {
        if let Some(protocol) = &self.subprotocol {
            if !self.offered.iter().any(|offered| offered == protocol) {
                return Err(HandshakeError::SubprotocolNotOffered(protocol.clone()));
            }
        }
        let mut head = format!(
            "HTTP/1.1 {} {}\r\n",
            self.status,
            reason_phrase(self.status)
        );
        let mut write = |name: &str, value: &str| -> Result<(), HandshakeError> {
            check_header(name, value)?;
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
            Ok(())
        };
        if let Some(accept) = &self.accept {
            write("Upgrade", "websocket")?;
            write("Connection", "Upgrade")?;
            write("Sec-WebSocket-Accept", accept)?;
            if let Some(protocol) = &self.subprotocol {
                write("Sec-WebSocket-Protocol", protocol)?;
            }
            if let Some(extensions) = &self.extensions {
                write("Sec-WebSocket-Extensions", extensions)?;
            }
        } else {
            write("Connection", "close")?;
            write("Content-Length", &self.body.len().to_string())?;
        }
        for (name, value) in &self.headers {
            write(name, value)?;
        }
        head.push_str("\r\n");
        out.extend_from_slice(head.as_bytes());
        if self.accept.is_none() {
            out.extend_from_slice(&self.body);
        }
        Ok(())
    }
}
