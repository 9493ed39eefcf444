//! The client side: the upgrade request for a URL, and the checks on the server's answer.

use base64::Engine as _;

use super::{HandshakeError, WEBSOCKET_VERSION, accept_key, check_header, has_token, list_items};

/// What the client asks for beyond the mandatory headers.
#[derive(Debug, Clone)]
pub struct ClientRequest {
    /// Extra headers (Authorization, Origin, cookies...), written in order.
    pub headers: Vec<(String, String)>,
    /// Subprotocols offered, in preference order (`Sec-WebSocket-Protocol`).
    pub subprotocols: Vec<String>,
    /// Extension offers, raw `Sec-WebSocket-Extensions` items
    /// (e.g. `permessage-deflate; client_max_window_bits`).
    pub extensions: Vec<String>,
    /// Largest response head accepted (default 16 KiB).
    pub max_head_size: usize,
    /// Most response header fields accepted (default 64).
    pub max_headers: usize,
}

impl Default for ClientRequest {
    fn default() -> Self {
        Self {
            headers: Vec::new(),
            subprotocols: Vec::new(),
            extensions: Vec::new(),
            max_head_size: 16 << 10,
            max_headers: 64,
        }
    }
}

/// What the server agreed to in its 101.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// The selected subprotocol, one of those offered.
    pub subprotocol: Option<String>,
    /// The selected extensions, raw items; each one's name was offered.
    pub extensions: Vec<String>,
    /// Every response header, for the caller.
    pub headers: Vec<(String, Vec<u8>)>,
}

/// A client handshake in progress: the request to send and the state to check the answer.
#[derive(Debug, Clone)]
pub struct ClientHandshake {
    request: Vec<u8>,
    expected_accept: String,
    subprotocols: Vec<String>,
    extension_names: Vec<String>,
    max_head_size: usize,
    max_headers: usize,
}

impl ClientHandshake {
    /// Builds the GET request for `url` (`ws://` or `wss://`). The Host header carries the
    /// port only when it is not the scheme's default; IPv6 literals stay bracketed; the
    /// request target is the path and query (`/` when empty); a fragment is never sent.
    /// `key` is 16 random bytes from the caller (§4.1: a fresh nonce per connection).
    pub fn new(
        url: &url::Url,
        request: &ClientRequest,
        key: [u8; 16],
    ) -> Result<Self, HandshakeError> {
        if !matches!(url.scheme(), "ws" | "wss") {
            return Err(HandshakeError::InvalidUrl(format!(
                "scheme {} is not ws or wss",
                url.scheme()
            )));
        }
        let host = match url.host() {
            Some(url::Host::Ipv6(addr)) => format!("[{addr}]"),
            Some(host) => host.to_string(),
            None => return Err(HandshakeError::InvalidUrl("no host".into())),
        };
        let host = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host,
        };
        let mut target = url.path().to_owned();
        if target.is_empty() {
            target.push('/');
        }
        if let Some(query) = url.query() {
            target.push('?');
            target.push_str(query);
        }
        let key = base64::engine::general_purpose::STANDARD.encode(key);
        let mut head = format!(
            "GET {target} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: {WEBSOCKET_VERSION}\r\n"
        );
        let mut write = |name: &str, value: &str| -> Result<(), HandshakeError> {
            check_header(name, value)?;
            head.push_str(name);
            head.push_str(": ");
            head.push_str(value);
            head.push_str("\r\n");
            Ok(())
        };
        if !request.subprotocols.is_empty() {
            write("Sec-WebSocket-Protocol", &request.subprotocols.join(", "))?;
        }
        if !request.extensions.is_empty() {
            write("Sec-WebSocket-Extensions", &request.extensions.join(", "))?;
        }
        for (name, value) in &request.headers {
            write(name, value)?;
        }
        head.push_str("\r\n");
        Ok(Self {
            request: head.into_bytes(),
            expected_accept: accept_key(key.as_bytes()),
            subprotocols: request.subprotocols.clone(),
            extension_names: request
                .extensions
                .iter()
                .map(|offer| extension_name(offer).to_owned())
                .collect(),
            max_head_size: request.max_head_size,
            max_headers: request.max_headers,
        })
    }

    /// The request bytes to write.
    pub fn request_bytes(&self) -> &[u8] {
        &self.request
    }

    /// Parses the server's response at the start of `buf`: `Ok(None)` while incomplete,
    /// `Ok(Some((accepted, head_len)))` once the head is complete and valid. Bytes after
    /// `head_len` are the first frames.
    pub fn parse_response(&self, buf: &[u8]) -> Result<Option<(Accepted, usize)>, HandshakeError> {
        let mut storage = vec![httparse::EMPTY_HEADER; self.max_headers];
        let mut response = httparse::Response::new(&mut storage);
        let head_len = match response.parse(buf) {
            Ok(httparse::Status::Complete(len)) => len,
            Ok(httparse::Status::Partial) => {
                if buf.len() > self.max_head_size {
                    return Err(HandshakeError::MalformedResponse("response head too large"));
                }
                return Ok(None);
            }
            Err(httparse::Error::TooManyHeaders) => {
                return Err(HandshakeError::MalformedResponse(
                    "too many response headers",
                ));
            }
            Err(_) => return Err(HandshakeError::MalformedResponse("not valid HTTP/1.1")),
        };
        if head_len > self.max_head_size {
            return Err(HandshakeError::MalformedResponse("response head too large"));
        }
        if response.version != Some(1) {
            return Err(HandshakeError::MalformedResponse("not HTTP/1.1"));
        }
        let status = response.code.unwrap_or(0);
        if status != 101 {
            return Err(HandshakeError::UnexpectedStatus(status));
        }
        let header = |name: &'static str| {
            response
                .headers
                .iter()
                .filter(move |h| h.name.eq_ignore_ascii_case(name))
        };
        if !header("upgrade").any(|h| has_token(h.value, "websocket")) {
            return Err(HandshakeError::ResponseMissingUpgrade);
        }
        if !header("connection").any(|h| has_token(h.value, "upgrade")) {
            return Err(HandshakeError::ResponseMissingConnection);
        }
        let accepts: Vec<_> = header("sec-websocket-accept").collect();
        if accepts.len() != 1 || accepts[0].value.trim_ascii() != self.expected_accept.as_bytes() {
            return Err(HandshakeError::BadAccept);
        }
        let mut selected: Vec<String> = header("sec-websocket-protocol")
            .flat_map(|h| list_items(h.value))
            .collect();
        if selected.len() > 1 {
            return Err(HandshakeError::UnofferedSubprotocol(selected.join(", ")));
        }
        let subprotocol = selected.pop();
        if let Some(protocol) = &subprotocol {
            if !self.subprotocols.iter().any(|offered| offered == protocol) {
                return Err(HandshakeError::UnofferedSubprotocol(protocol.clone()));
            }
        }
        let extensions: Vec<String> = header("sec-websocket-extensions")
            .flat_map(|h| list_items(h.value))
            .collect();
        for extension in &extensions {
            let name = extension_name(extension);
            if !self
                .extension_names
                .iter()
                .any(|offered| offered.eq_ignore_ascii_case(name))
            {
                return Err(HandshakeError::UnofferedExtension(extension.clone()));
            }
        }
        let headers = response
            .headers
            .iter()
            .map(|h| (h.name.to_owned(), h.value.to_vec()))
            .collect();
        Ok(Some((
            Accepted {
                subprotocol,
                extensions,
                headers,
            },
            head_len,
        )))
    }
}

/// The extension name of an offer or selection: the part before the first `;`.
fn extension_name(item: &str) -> &str {
    item.split(';').next().unwrap_or("").trim()
}
