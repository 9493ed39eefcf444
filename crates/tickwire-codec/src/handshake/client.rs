//! The client role: the upgrade request, the checks on the server's answer, and the client
//! [`Connection`] it opens.
//!
//! Contract: [`ClientHandshake::write_request`] once, then
//! [`ClientHandshake::read_response`] after each read until it returns
//! [`Parsed::Complete`] or an error. Nothing here reads a socket or a clock.

use std::time::Instant;

use base64::Engine as _;

use crate::buf::{ReadBuf, WriteBuf};
#[cfg(feature = "deflate")]
use crate::deflate::{DeflateConfig, DeflateParams, PerMessageDeflate};
use crate::http::{HeadWriter, HttpError, Limits, Method, Parsed, ResponseReader, Version};
use crate::ws::{Config, Connection, MaskSource, Role};

use super::{
    HandshakeError, WEBSOCKET_VERSION, accept_key, exactly_one, extension_name, list_items,
    write_header,
};

/// What the client asks for beyond the mandatory headers, and the connection it will open.
///
/// `#[non_exhaustive]` so that an option can be added without breaking callers: start from
/// [`ClientOptions::default`] and add to it with the `with_*` methods.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// Extra headers (Authorization, Origin, cookies...), written in order after the
    /// handshake's own.
    pub headers: Vec<(String, String)>,
    /// Subprotocols offered, in preference order (`Sec-WebSocket-Protocol`).
    pub subprotocols: Vec<String>,
    /// Extension offers the caller negotiates itself, raw `Sec-WebSocket-Extensions` items
    /// (e.g. `x-custom; a=1`). Written before the permessage-deflate offer. The server may
    /// select them; they are reported in [`Accepted::extensions`], not installed.
    pub extensions: Vec<String>,
    /// Offer permessage-deflate (RFC 7692) with this configuration; when the server accepts,
    /// the connection compresses and inflates with the negotiated parameters. Default: none.
    #[cfg(feature = "deflate")]
    pub deflate: Option<DeflateConfig>,
    /// Largest response head accepted (default 16 KiB).
    pub max_head_size: usize,
    /// Most response header fields accepted (default 64).
    pub max_headers: usize,
    /// The configuration of the connection once open (default [`Config::client`]).
    pub config: Config,
}

impl Default for ClientOptions {
    fn default() -> Self {
        Self {
            headers: Vec::new(),
            subprotocols: Vec::new(),
            extensions: Vec::new(),
            #[cfg(feature = "deflate")]
            deflate: None,
            max_head_size: 16 << 10,
            max_headers: 64,
            config: Config::client(),
        }
    }
}

impl ClientOptions {
    /// Adds a header to [`headers`](Self::headers).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    with_methods! {
        push with_subprotocol => subprotocols: impl Into<String>,
        push with_extension => extensions: impl Into<String>,
        set with_max_head_size => max_head_size: usize,
        set with_max_headers => max_headers: usize,
        set with_config => config: Config,
        #[cfg(feature = "deflate")]
        set with_deflate => deflate: Option<DeflateConfig>,
    }
}

/// What the server agreed to in its 101, and the open connection.
#[derive(Debug)]
#[non_exhaustive]
pub struct Accepted {
    /// The connection, client role, with the negotiated extension installed. Bytes that
    /// followed the 101 are still in the caller's `ReadBuf`: make it the connection's receive
    /// buffer with [`Buffers::with_read`](crate::ws::Buffers::with_read).
    pub connection: Connection,
    /// The selected subprotocol, one of those offered.
    pub subprotocol: Option<String>,
    /// The permessage-deflate parameters in force, `None` when the server declined it.
    #[cfg(feature = "deflate")]
    pub deflate: Option<DeflateParams>,
    /// Every `Sec-WebSocket-Extensions` item of the answer, raw; each one's name was offered.
    pub extensions: Vec<String>,
    /// Every response header, in order.
    pub headers: Vec<(String, Vec<u8>)>,
}

/// Where a `ws://` / `wss://` URL says to connect: what every client transport needs before
/// its socket exists (the handshake itself takes the whole URL).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint<'u> {
    /// `wss://`: TLS first.
    pub secure: bool,
    /// The host to resolve and, over TLS, to name in SNI and check the certificate against:
    /// a DNS name or an IP address (an IPv6 literal without its brackets).
    pub host: &'u str,
    /// The port: the URL's, else 80 (`ws`) or 443 (`wss`).
    pub port: u16,
}

impl<'u> Endpoint<'u> {
    /// The endpoint of `url`; [`HandshakeError::InvalidUrl`] for another scheme or no host.
    pub fn of(url: &'u url::Url) -> Result<Self, HandshakeError> {
        let secure = match url.scheme() {
            "ws" => false,
            "wss" => true,
            other => {
                return Err(HandshakeError::InvalidUrl(format!(
                    "scheme {other}:// is not ws:// or wss://"
                )));
            }
        };
        let host = url
            .host_str()
            .ok_or_else(|| HandshakeError::InvalidUrl("no host".into()))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let port = url
            .port_or_known_default()
            .unwrap_or(if secure { 443 } else { 80 });
        Ok(Self { secure, host, port })
    }
}

/// A client handshake in progress: the request to write and the state to check the answer.
#[derive(Debug)]
pub struct ClientHandshake {
    host: String,
    target: String,
    options: ClientOptions,
    /// `Sec-WebSocket-Key` as sent (base64 of 16 bytes).
    key: String,
    expected_accept: String,
    /// Moves into the connection; `None` once the handshake finished.
    mask: Option<MaskSource>,
    reader: ResponseReader,
}

impl ClientHandshake {
    /// A handshake for `url` (`ws://` or `wss://`). The Host header carries the port only when
    /// it is not the scheme's default; IPv6 literals stay bracketed; the request target is the
    /// path and query (`/` when empty); a fragment is never sent. See
    /// [`for_target`](Self::for_target) for `mask`.
    pub fn new(
        url: &url::Url,
        options: ClientOptions,
        mask: MaskSource,
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
        Self::for_target(&host, &target, options, mask)
    }

    /// A handshake that asks `host` (the Host header value) for `target` (the request
    /// target, `/path?query`). `mask` is the client's masking-key source: it supplies the 16
    /// random bytes of `Sec-WebSocket-Key` (§4.1: a fresh nonce per connection; replace them
    /// with [`with_key`](Self::with_key)) and then masks the connection's frames.
    pub fn for_target(
        host: &str,
        target: &str,
        options: ClientOptions,
        mut mask: MaskSource,
    ) -> Result<Self, HandshakeError> {
        if host.is_empty() {
            return Err(HandshakeError::InvalidUrl("no host".into()));
        }
        let mut key = [0u8; 16];
        for chunk in key.chunks_exact_mut(4) {
            chunk.copy_from_slice(&mask.next_key());
        }
        let limits = Limits {
            max_head_bytes: options.max_head_size,
            max_headers: options.max_headers,
            // The body of a refusal is never waited for; its length must not fail the read.
            max_body_bytes: u64::MAX,
            ..Limits::client()
        };
        let handshake = Self {
            host: host.to_owned(),
            target: target.to_owned(),
            options,
            key: String::new(),
            expected_accept: String::new(),
            mask: Some(mask),
            reader: ResponseReader::new(limits),
        };
        Ok(handshake.with_key(key))
    }

    /// Uses `key` (16 bytes from the caller's random source, or a fixed nonce in a test) as
    /// the `Sec-WebSocket-Key`. Call before [`write_request`](Self::write_request).
    pub fn with_key(mut self, key: [u8; 16]) -> Self {
        self.key = base64::engine::general_purpose::STANDARD.encode(key);
        self.expected_accept = accept_key(self.key.as_bytes());
        self
    }

    /// The `Sec-WebSocket-Key` sent, base64.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Appends the request head to `out`. On error (a header name that is not a token, a
    /// value with a control byte, an invalid target) `out` is left as it was.
    pub fn write_request(&self, out: &mut WriteBuf) -> Result<(), HandshakeError> {
        let start = out.len();
        let result = self.write_head(out);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    /// Reads the server's answer from the front of `buf`, the bytes read so far.
    ///
    /// `Ok(Parsed::NeedMore)`: read more into `buf` and call again (limits apply to the
    /// partial head). `Ok(Parsed::Complete(accepted))`: the 101 was valid; the head was
    /// consumed from `buf`, and what follows it (the first frames) is left there, for the
    /// connection to parse first (see [`Accepted::connection`]). `now` is when the connection opened. An error is final,
    /// as is completion: a later call returns [`HandshakeError::Finished`].
    pub fn read_response(
        &mut self,
        buf: &mut ReadBuf,
        now: Instant,
    ) -> Result<Parsed<Accepted>, HandshakeError> {
        if self.mask.is_none() {
            return Err(HandshakeError::Finished);
        }
        let result = self.check_response(buf, now);
        if result.is_err() {
            self.mask = None;
        }
        result
    }

    fn write_head(&self, out: &mut WriteBuf) -> Result<(), HandshakeError> {
        let mut head = HeadWriter::request(out, Method::Get, &self.target).map_err(|_| {
            HandshakeError::InvalidUrl(format!("invalid request target {:?}", self.target))
        })?;
        write_header(&mut head, "Host", &self.host)?;
        write_header(&mut head, "Upgrade", "websocket")?;
        write_header(&mut head, "Connection", "Upgrade")?;
        write_header(&mut head, "Sec-WebSocket-Key", &self.key)?;
        write_header(&mut head, "Sec-WebSocket-Version", WEBSOCKET_VERSION)?;
        if !self.options.subprotocols.is_empty() {
            write_header(
                &mut head,
                "Sec-WebSocket-Protocol",
                &self.options.subprotocols.join(", "),
            )?;
        }
        let offers = self.offers();
        if !offers.is_empty() {
            write_header(&mut head, "Sec-WebSocket-Extensions", &offers.join(", "))?;
        }
        for (name, value) in &self.options.headers {
            write_header(&mut head, name, value)?;
        }
        head.finish();
        Ok(())
    }

    /// Every extension item offered: the caller's, then permessage-deflate's.
    fn offers(&self) -> Vec<String> {
        #[cfg_attr(
            not(feature = "deflate"),
            expect(unused_mut, reason = "only permessage-deflate adds to the offers")
        )]
        let mut offers = self.options.extensions.clone();
        #[cfg(feature = "deflate")]
        if let Some(deflate) = &self.options.deflate {
            offers.push(deflate.offer());
        }
        offers
    }

    fn check_response(
        &mut self,
        buf: &mut ReadBuf,
        now: Instant,
    ) -> Result<Parsed<Accepted>, HandshakeError> {
        let response = match self.reader.read_head(buf) {
            Ok(Parsed::NeedMore) => return Ok(Parsed::NeedMore),
            Ok(Parsed::Complete(response)) => response,
            Err(error) => return Err(response_error(error)),
        };
        if response.version() != Version::Http11 {
            return Err(HandshakeError::MalformedResponse("not HTTP/1.1"));
        }
        let status = response.status().as_u16();
        let head_len = response.head_len();
        let fields = response.headers();
        if status != 101 {
            let length = fields
                .get_str("content-length")
                .and_then(|value| value.parse::<usize>().ok());
            let after = &buf.data()[head_len..];
            let body = after[..length.unwrap_or(after.len()).min(after.len())].to_vec();
            return Err(HandshakeError::UnexpectedStatus { status, body });
        }
        if !fields.contains_token("upgrade", "websocket") {
            return Err(HandshakeError::ResponseMissingUpgrade);
        }
        if !fields.contains_token("connection", "upgrade") {
            return Err(HandshakeError::ResponseMissingConnection);
        }
        if exactly_one(fields.get_all("sec-websocket-accept"))
            .is_none_or(|accept| accept != self.expected_accept.as_bytes())
        {
            return Err(HandshakeError::BadAccept);
        }
        let mut selected: Vec<String> = fields
            .get_all("sec-websocket-protocol")
            .flat_map(list_items)
            .collect();
        let extensions: Vec<String> = fields
            .get_all("sec-websocket-extensions")
            .flat_map(list_items)
            .collect();
        let headers = fields
            .iter()
            .map(|(name, value)| (name.to_owned(), value.to_vec()))
            .collect();
        if selected.len() > 1 {
            return Err(HandshakeError::UnofferedSubprotocol(selected.join(", ")));
        }
        let subprotocol = selected.pop();
        if let Some(protocol) = &subprotocol
            && !self
                .options
                .subprotocols
                .iter()
                .any(|offered| offered == protocol)
        {
            return Err(HandshakeError::UnofferedSubprotocol(protocol.clone()));
        }
        let offers = self.offers();
        for extension in &extensions {
            let name = extension_name(extension);
            if !offers
                .iter()
                .any(|offered| extension_name(offered).eq_ignore_ascii_case(name))
            {
                return Err(HandshakeError::UnofferedExtension(extension.clone()));
            }
        }
        // The head is done with: what follows it stays in `buf` for the connection.
        self.reader.release(buf);
        let mask = self.mask.take().ok_or(HandshakeError::Finished)?;
        #[cfg_attr(
            not(feature = "deflate"),
            expect(unused_mut, reason = "only permessage-deflate installs an extension")
        )]
        let mut connection = Connection::new(Role::Client, self.options.config.clone(), mask, now);
        #[cfg(feature = "deflate")]
        let deflate = match &self.options.deflate {
            Some(config) => {
                let params = config
                    .confirm(&extensions)
                    .map_err(|error| HandshakeError::BadExtensionResponse(error.to_string()))?;
                if let Some(params) = &params {
                    let (decoder, encoder) =
                        PerMessageDeflate::new(Role::Client, params, config).into_parts();
                    connection.set_extension(Box::new(decoder), Box::new(encoder));
                }
                params
            }
            None => None,
        };
        Ok(Parsed::Complete(Accepted {
            connection,
            subprotocol,
            #[cfg(feature = "deflate")]
            deflate,
            extensions,
            headers,
        }))
    }
}

/// The handshake error for a response the HTTP reader refused.
fn response_error(error: HttpError) -> HandshakeError {
    HandshakeError::MalformedResponse(match error {
        HttpError::HeadTooLarge { .. } => "response head too large",
        HttpError::TooManyHeaders { .. } => "too many response headers",
        HttpError::InvalidHead(why) => why,
        HttpError::UnsupportedVersion => "not HTTP/1.1",
        _ => "not valid HTTP/1.1",
    })
}
