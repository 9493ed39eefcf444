//! The server role: validating an upgrade request, the caller's decision on it, writing the
//! 101 or a refusal, and the server [`Connection`] it opens.
//!
//! Contract: [`ServerHandshake::read_request`] after each read until it returns
//! [`Parsed::Complete`] (a [`Request`] for the caller to decide on) or an error (a bad request:
//! its answer is already in the `WriteBuf`); then [`ServerHandshake::respond`] once with the
//! caller's [`Response`]. The transport writes the `WriteBuf` and, on an upgrade, hands the
//! bytes left in the `ReadBuf` to the connection, never before the 101 is written.

use std::sync::Arc;
use std::time::Instant;

use base64::Engine as _;

use crate::buf::{ReadBuf, WriteBuf};
#[cfg(feature = "deflate")]
use crate::deflate::{DeflateConfig, DeflateParams, PerMessageDeflate};
use crate::http::{HeadWriter, HttpError, Limits, Parsed, RequestReader, StatusCode, Version};
use crate::ws::{Config, Connection, MaskSource, Role};

use super::error::reason_phrase;
use super::{HandshakeError, WEBSOCKET_VERSION, accept_key, exactly_one, list_items, write_header};

/// Limits on the upgrade request head, checked on partial input. `#[non_exhaustive]`: start
/// from [`ServerLimits::default`] and change fields with the `with_*` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerLimits {
    /// Largest request head, request line to blank line (default 8 KiB). Answered with 431.
    pub max_head_size: usize,
    /// Most header fields (default 32). Answered with 431.
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

impl ServerLimits {
    with_methods! {
        const_set with_max_head_size => max_head_size: usize,
        const_set with_max_headers => max_headers: usize,
    }
}

/// How a server answers upgrade requests: shared by every handshake it runs (borrowed by
/// [`ServerHandshake::new`], never copied per connection).
///
/// `#[non_exhaustive]` so that an option can be added without breaking callers: start from
/// [`ServerOptions::default`] and change it with the `with_*` methods.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerOptions {
    /// Limits on the request head.
    pub limits: ServerLimits,
    /// Subprotocols this server speaks. When the caller's [`Response`] selects none, the
    /// first one the client offered (in its order of preference) that is listed here is
    /// selected. Default: empty (none selected unless the caller does).
    pub subprotocols: Vec<String>,
    /// Accept permessage-deflate (RFC 7692) with this configuration: the first valid offer is
    /// answered, invalid offers are declined, and a request whose every permessage-deflate
    /// offer is invalid gets 400. `None` (the default) ignores offers, as RFC 7692 §5 allows.
    #[cfg(feature = "deflate")]
    pub deflate: Option<DeflateConfig>,
    /// Headers added to every 101, after the handshake's own and before the caller's.
    pub headers: Vec<(String, String)>,
    /// The configuration of each connection once open (default [`Config::server`]).
    pub config: Config,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            limits: ServerLimits::default(),
            subprotocols: Vec::new(),
            #[cfg(feature = "deflate")]
            deflate: None,
            headers: Vec::new(),
            config: Config::server(),
        }
    }
}

impl ServerOptions {
    /// Adds a header to [`headers`](Self::headers).
    #[must_use]
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    with_methods! {
        set with_limits => limits: ServerLimits,
        push with_subprotocol => subprotocols: impl Into<String>,
        set with_config => config: Config,
        #[cfg(feature = "deflate")]
        set with_deflate => deflate: Option<DeflateConfig>,
    }
}

/// A validated WebSocket upgrade request (RFC 6455 §4.2.1), for the caller to decide on.
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

/// The caller's decision on a [`Request`]: accept the upgrade, or refuse it with a status.
#[derive(Debug, Clone)]
pub struct Response {
    status: u16,
    subprotocol: Option<String>,
    extensions: Option<String>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Response {
    /// Accepts `request`: a 101. Negotiated permessage-deflate and, unless
    /// [`subprotocol`](Self::subprotocol) picks one, a subprotocol from
    /// [`ServerOptions::subprotocols`] are added by [`ServerHandshake::respond`].
    pub fn accept(request: &Request) -> Self {
        let _ = request;
        Self {
            status: 101,
            subprotocol: None,
            extensions: None,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A refusal with `status` (4xx or 5xx); the body defaults to the reason phrase.
    pub fn reject(status: u16) -> Self {
        Self {
            status,
            subprotocol: None,
            extensions: None,
            headers: Vec::new(),
            body: format!("{}\n", reason_phrase(status)).into_bytes(),
        }
    }

    /// Selects a subprotocol; it must be one the client offered
    /// ([`ServerHandshake::respond`] checks).
    pub fn subprotocol(mut self, protocol: &str) -> Self {
        self.subprotocol = Some(protocol.to_owned());
        self
    }

    /// Extension items the caller negotiated itself, for `Sec-WebSocket-Extensions` (after
    /// permessage-deflate's answer, when there is one). Nothing is installed for them.
    pub fn extensions(mut self, value: &str) -> Self {
        self.extensions = Some(value.to_owned());
        self
    }

    /// Adds a header.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Sets a refusal's body.
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
}

/// What [`ServerHandshake::respond`] wrote.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per handshake, moved once into the transport: a Box would only add an allocation"
)]
pub enum Outcome {
    /// The 101: the connection is open.
    Upgraded(Upgraded),
    /// The caller's refusal with this status.
    Rejected(u16),
}

/// An accepted upgrade: the open connection and what was negotiated.
#[derive(Debug)]
#[non_exhaustive]
pub struct Upgraded {
    /// The connection, server role, with the negotiated extension installed. Bytes that
    /// followed the request head are still in the caller's `ReadBuf`: once the 101 is
    /// written, make it the connection's receive buffer with
    /// [`Buffers::with_read`](crate::ws::Buffers::with_read).
    pub connection: Connection,
    /// The subprotocol the 101 selected.
    pub subprotocol: Option<String>,
    /// The permessage-deflate parameters in force, `None` when not negotiated.
    #[cfg(feature = "deflate")]
    pub deflate: Option<DeflateParams>,
}

/// A server handshake in progress on one connection.
#[derive(Debug)]
pub struct ServerHandshake<'o> {
    options: Options<'o>,
    /// The connections' configuration when the transport shares one `Arc` among them
    /// ([`with_shared_config`](Self::with_shared_config)); otherwise each gets a copy.
    shared_config: Option<Arc<Config>>,
    reader: RequestReader,
    state: State,
}

/// The options a handshake answers with: borrowed, or shared with the transport (a reactor
/// that keeps a handshake across reads cannot lend a borrow).
#[derive(Debug)]
enum Options<'o> {
    Borrowed(&'o ServerOptions),
    Shared(Arc<ServerOptions>),
}

impl core::ops::Deref for Options<'_> {
    type Target = ServerOptions;

    fn deref(&self) -> &ServerOptions {
        match self {
            Self::Borrowed(options) => options,
            Self::Shared(options) => options,
        }
    }
}

#[derive(Debug)]
enum State {
    Reading,
    Deciding(Pending),
    Done,
}

/// What the handshake keeps from a valid request until the caller has decided.
#[derive(Debug)]
struct Pending {
    key: String,
    offered: Vec<String>,
    /// The negotiated parameters and the answer item.
    #[cfg(feature = "deflate")]
    deflate: Option<(DeflateParams, String)>,
}

impl<'o> ServerHandshake<'o> {
    /// A handshake answering with `options`.
    pub fn new(options: &'o ServerOptions) -> Self {
        Self::with_options(Options::Borrowed(options))
    }

    fn with_options(options: Options<'o>) -> Self {
        let limits = Limits {
            max_head_bytes: options.limits.max_head_size,
            max_headers: options.limits.max_headers,
            // An upgrade request has no body (§4.1: the bytes after the head are frames):
            // any announced length is refused.
            max_body_bytes: 0,
            ..Limits::server()
        };
        Self {
            options,
            shared_config: None,
            reader: RequestReader::new(limits),
            state: State::Reading,
        }
    }

    /// A handshake answering with shared `options`: it borrows nothing, so a transport can
    /// keep it between reads (a partial request is then scanned once, not again from its
    /// start on every read).
    pub fn shared(options: Arc<ServerOptions>) -> ServerHandshake<'static> {
        ServerHandshake::with_options(Options::Shared(options))
    }

    /// Opens the connection with `config` shared (a reference count) instead of a copy of
    /// [`ServerOptions::config`] made for it: a server holding many connections keeps one
    /// `Arc` of its options' configuration and passes it to every handshake.
    #[must_use]
    pub fn with_shared_config(mut self, config: Arc<Config>) -> Self {
        self.shared_config = Some(config);
        self
    }

    /// Reads the upgrade request from the front of `buf`, the bytes read so far.
    ///
    /// `Ok(Parsed::NeedMore)`: read more into `buf` and call again (the head limits apply to
    /// the partial head). `Ok(Parsed::Complete(request))`: a valid upgrade request; its head
    /// was consumed from `buf`, and what follows (early frames) is left there. Decide, then
    /// call [`respond`](Self::respond). `Err`: a bad request; its answer (the error's
    /// [`status`](HandshakeError::status), the headers that status requires and a short
    /// body) has been appended to `out` for the transport to write before closing.
    pub fn read_request(
        &mut self,
        buf: &mut ReadBuf,
        out: &mut WriteBuf,
    ) -> Result<Parsed<Request>, HandshakeError> {
        if !matches!(self.state, State::Reading) {
            return Err(HandshakeError::Finished);
        }
        let result = self.check_request(buf);
        if let Err(error) = &result {
            error.write_response(out);
            self.state = State::Done;
        }
        result
    }

    /// Writes the answer the caller decided on into `out`: the 101 (with the negotiated
    /// subprotocol and extensions, [`ServerOptions::headers`] and the response's headers),
    /// or the refusal (`Connection: close`, its headers and body). On an upgrade returns the
    /// open connection, created at `now`.
    ///
    /// A response that cannot be written (a subprotocol the client did not offer, a header
    /// name that is not a token, a value with a control byte, a refusal status that is 1xx
    /// or not three digits) is an error; a 500 is appended to `out` instead. Called before
    /// a request was read, or twice: [`HandshakeError::Finished`].
    pub fn respond(
        &mut self,
        response: Response,
        out: &mut WriteBuf,
        now: Instant,
    ) -> Result<Outcome, HandshakeError> {
        let State::Deciding(pending) = core::mem::replace(&mut self.state, State::Done) else {
            return Err(HandshakeError::Finished);
        };
        let start = out.len();
        let result = if response.status == 101 {
            self.write_upgrade(&pending, &response, out)
                .map(|subprotocol| Outcome::Upgraded(self.open(&pending, subprotocol, now)))
        } else {
            write_refusal(&response, out).map(|()| Outcome::Rejected(response.status))
        };
        if result.is_err() {
            out.truncate(start);
            // The default refusal passes every check: it is written.
            let _ = write_refusal(&Response::reject(500), out);
        }
        result
    }

    fn check_request(&mut self, buf: &mut ReadBuf) -> Result<Parsed<Request>, HandshakeError> {
        let request = match self.reader.read_head(buf) {
            Ok(Parsed::NeedMore) => return Ok(Parsed::NeedMore),
            Ok(Parsed::Complete(request)) => request,
            Err(error) => return Err(request_error(error)),
        };
        let method = request.method_token();
        if method != "GET" {
            return Err(HandshakeError::MethodNotAllowed(method.to_owned()));
        }
        if request.version() != Version::Http11 {
            return Err(HandshakeError::HttpVersionTooOld);
        }
        let fields = request.headers();
        // The reader has checked that an HTTP/1.1 request has exactly one Host.
        let host = match fields.get_str("host") {
            Some(host) if !host.is_empty() => host.to_owned(),
            _ => return Err(HandshakeError::BadHost),
        };
        if !fields.contains_token("upgrade", "websocket") {
            return Err(HandshakeError::MissingUpgrade {
                absent: fields.get("upgrade").is_none(),
            });
        }
        if !fields.contains_token("connection", "upgrade") {
            return Err(HandshakeError::MissingConnectionUpgrade);
        }
        if exactly_one(fields.get_all("sec-websocket-version"))
            != Some(WEBSOCKET_VERSION.as_bytes())
        {
            return Err(HandshakeError::UnsupportedVersion);
        }
        let Some(key) = exactly_one(fields.get_all("sec-websocket-key")) else {
            return Err(HandshakeError::BadKey);
        };
        match base64::engine::general_purpose::STANDARD.decode(key) {
            Ok(nonce) if nonce.len() == 16 => {}
            _ => return Err(HandshakeError::BadKey),
        }
        // Base64 is ASCII: the decode above proved it.
        let key = String::from_utf8_lossy(key).into_owned();
        if request.is_chunked() {
            return Err(HandshakeError::UnexpectedBody);
        }
        let request_view = Request {
            path: request.target().to_owned(),
            host,
            key: key.clone(),
            headers: fields
                .iter()
                .map(|(name, value)| (name.to_owned(), value.to_vec()))
                .collect(),
            subprotocols: fields
                .get_all("sec-websocket-protocol")
                .flat_map(list_items)
                .collect(),
            extensions: fields
                .get_all("sec-websocket-extensions")
                .flat_map(list_items)
                .collect(),
        };
        // The head is done with: what follows it stays in `buf`, unparsed until the 101.
        self.reader.release(buf);
        #[cfg(feature = "deflate")]
        let deflate = match &self.options.deflate {
            Some(config) => config
                .accept(&request_view.extensions)
                .map_err(|error| HandshakeError::BadExtensionOffer(error.to_string()))?,
            None => None,
        };
        self.state = State::Deciding(Pending {
            key,
            offered: request_view.subprotocols.clone(),
            #[cfg(feature = "deflate")]
            deflate,
        });
        Ok(Parsed::Complete(request_view))
    }

    /// Writes the 101 for `response`; returns the subprotocol it selected.
    fn write_upgrade(
        &self,
        pending: &Pending,
        response: &Response,
        out: &mut WriteBuf,
    ) -> Result<Option<String>, HandshakeError> {
        let subprotocol = match &response.subprotocol {
            Some(chosen) if pending.offered.contains(chosen) => Some(chosen.clone()),
            Some(chosen) => return Err(HandshakeError::SubprotocolNotOffered(chosen.clone())),
            None => pending
                .offered
                .iter()
                .find(|offered| self.options.subprotocols.contains(offered))
                .cloned(),
        };
        let mut extensions: Vec<&str> = Vec::new();
        #[cfg(feature = "deflate")]
        if let Some((_, answer)) = &pending.deflate {
            extensions.push(answer);
        }
        if let Some(own) = &response.extensions {
            extensions.push(own);
        }
        let mut head = HeadWriter::response(out, StatusCode::SWITCHING_PROTOCOLS);
        write_header(&mut head, "Upgrade", "websocket")?;
        write_header(&mut head, "Connection", "Upgrade")?;
        write_header(
            &mut head,
            "Sec-WebSocket-Accept",
            &accept_key(pending.key.as_bytes()),
        )?;
        if let Some(protocol) = &subprotocol {
            write_header(&mut head, "Sec-WebSocket-Protocol", protocol)?;
        }
        if !extensions.is_empty() {
            write_header(
                &mut head,
                "Sec-WebSocket-Extensions",
                &extensions.join(", "),
            )?;
        }
        for (name, value) in self.options.headers.iter().chain(&response.headers) {
            write_header(&mut head, name, value)?;
        }
        head.finish();
        Ok(subprotocol)
    }

    /// The connection for an accepted upgrade, opened at `now`, with the negotiated
    /// extension installed.
    fn open(&self, pending: &Pending, subprotocol: Option<String>, now: Instant) -> Upgraded {
        let config = match &self.shared_config {
            Some(config) => Arc::clone(config),
            None => Arc::new(self.options.config.clone()),
        };
        #[cfg_attr(
            not(feature = "deflate"),
            expect(unused_mut, reason = "only permessage-deflate installs an extension")
        )]
        let mut connection = Connection::new(
            Role::Server,
            config,
            // Servers never mask (§5.1): the source is never asked for a key.
            MaskSource::seeded(0),
            now,
        );
        #[cfg(feature = "deflate")]
        if let (Some((params, _)), Some(config)) = (&pending.deflate, &self.options.deflate) {
            let (decoder, encoder) =
                PerMessageDeflate::new(Role::Server, params, config).into_parts();
            connection.set_extension(Box::new(decoder), Box::new(encoder));
        }
        #[cfg(not(feature = "deflate"))]
        let _ = pending;
        Upgraded {
            connection,
            subprotocol,
            #[cfg(feature = "deflate")]
            deflate: pending.deflate.as_ref().map(|(params, _)| *params),
        }
    }
}

/// Writes a refusal: its status, `Connection: close`, its length, its headers, its body.
fn write_refusal(response: &Response, out: &mut WriteBuf) -> Result<(), HandshakeError> {
    let status = response.status;
    if !(200..=999).contains(&status) {
        return Err(HandshakeError::InvalidStatus(status));
    }
    let mut head = HeadWriter::response(out, StatusCode(status));
    write_header(&mut head, "Connection", "close")?;
    head.content_length(response.body.len() as u64);
    for (name, value) in &response.headers {
        write_header(&mut head, name, value)?;
    }
    head.finish();
    out.extend_from_slice(&response.body);
    Ok(())
}

/// The handshake error for a request the HTTP reader refused.
fn request_error(error: HttpError) -> HandshakeError {
    match error {
        HttpError::HeadTooLarge { limit } => HandshakeError::HeadTooLarge(limit),
        HttpError::TooManyHeaders { limit } => HandshakeError::TooManyHeaders(limit),
        HttpError::MissingHost | HttpError::MultipleHost => HandshakeError::BadHost,
        HttpError::BodyTooLarge { .. }
        | HttpError::InvalidContentLength
        | HttpError::ConflictingContentLength
        | HttpError::TransferEncodingWithContentLength
        | HttpError::ChunkedNotLast
        | HttpError::UnsupportedTransferEncoding => HandshakeError::UnexpectedBody,
        HttpError::InvalidHead(why) => HandshakeError::MalformedRequest(why),
        other => HandshakeError::Http(other),
    }
}
