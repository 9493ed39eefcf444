//! Handshake failures: which side, what went wrong, and (server side) what to answer.

use core::fmt;

use crate::buf::WriteBuf;
use crate::http::{HeadWriter, HttpError, StatusCode};

/// A failed opening handshake. Server-side variants (the request was bad) map to an HTTP
/// status ([`status`](Self::status)) and a complete response ([`response`](Self::response));
/// client-side variants (the server's answer was bad, or our own request could not be built)
/// have neither.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandshakeError {
    // --- server side: the request ---
    /// The request head is not valid HTTP/1.1 (RFC 9112 §2-§5): the start line or a field
    /// line does not follow the grammar. 400.
    MalformedRequest(&'static str),
    /// The request head breaks another rule of the HTTP codec's strict request reader
    /// ([`crate::http::RequestReader`]): bare LF or obsolete line folding (RFC 9112 §2.2,
    /// §5.2; 400), a version other than HTTP/1.0 or 1.1 (RFC 9112 §2.3; 505). The status is
    /// the HTTP codec's ([`HttpError::status`]).
    Http(HttpError),
    /// The request head exceeds the configured size before it ends. 431 (RFC 6585 §5).
    HeadTooLarge(usize),
    /// More header fields than configured. 431.
    TooManyHeaders(usize),
    /// Method other than GET (RFC 6455 §4.1 item 2). 405 with `Allow: GET`.
    MethodNotAllowed(String),
    /// HTTP/1.0: the upgrade needs HTTP/1.1 or later (§4.1 item 2). 400.
    HttpVersionTooOld,
    /// No Host header, or more than one (§4.1 item 4; RFC 9112 §3.2). 400.
    BadHost,
    /// No `Upgrade: websocket` (§4.2.1 item 3). 426 with `Upgrade: websocket` when the header
    /// is missing, else 400.
    MissingUpgrade {
        /// The Upgrade header was absent altogether.
        absent: bool,
    },
    /// `Connection` does not contain the `upgrade` token (§4.2.1 item 4). 400.
    MissingConnectionUpgrade,
    /// `Sec-WebSocket-Version` missing or not 13 (§4.2.1 item 6, §4.4). 426 with
    /// `Sec-WebSocket-Version: 13`.
    UnsupportedVersion,
    /// `Sec-WebSocket-Key` missing, repeated, or not base64 of 16 bytes (§4.2.1 item 5). 400.
    BadKey,
    /// A request body (Content-Length other than 0, or Transfer-Encoding) on the upgrade
    /// request: the bytes after the head must be frames only (RFC 9112 §6). 400.
    UnexpectedBody,
    /// An extension offer with invalid parameters (for permessage-deflate: a duplicate,
    /// unknown or out-of-range parameter, RFC 7692 §7.1). 400.
    BadExtensionOffer(String),

    // --- client side: the response, or our own request ---
    /// The URL is not ws:// or wss://, or has no host.
    InvalidUrl(String),
    /// A header name we were asked to write is not an HTTP token.
    InvalidHeaderName(String),
    /// A header value we were asked to write holds CR, LF, NUL or another control byte other
    /// than HTAB (RFC 9110 §5.5), named by its header: the HTTP writers' rule
    /// ([`crate::http::validate_header_value`]) for every head tickwire writes.
    InvalidHeaderValue(String),
    /// The response head is not valid HTTP/1.1, or is too large.
    MalformedResponse(&'static str),
    /// The server answered with this status instead of 101 (§4.1, "if the status code
    /// received from the server is not 101").
    UnexpectedStatus {
        /// The status the server sent.
        status: u16,
        /// The bytes of the response body already received with the head (up to its
        /// Content-Length when it has one): often the server's reason in words. Possibly
        /// empty or partial: the handshake does not wait for more.
        body: Vec<u8>,
    },
    /// The 101 lacks `Upgrade: websocket` (§4.1, client requirement 2).
    ResponseMissingUpgrade,
    /// The 101 lacks `Connection: upgrade` (§4.1, client requirement 3).
    ResponseMissingConnection,
    /// `Sec-WebSocket-Accept` missing or wrong (§4.1, client requirement 4).
    BadAccept,
    /// The server selected a subprotocol we did not offer (§4.1, client requirement 6).
    UnofferedSubprotocol(String),
    /// The server selected an extension we did not offer (§4.1, client requirement 5).
    UnofferedExtension(String),
    /// The server's answer for an extension we offered is invalid or selects what we did not
    /// offer (for permessage-deflate: RFC 7692 §7.1).
    BadExtensionResponse(String),
    /// Our own response could not be written: the subprotocol was not offered by the client.
    SubprotocolNotOffered(String),
    /// Our own refusal could not be written: its status is 1xx (101 is
    /// [`Response::accept`](super::Response::accept)) or not three digits.
    InvalidStatus(u16),
    /// Local misuse: the handshake was driven after it had finished (its connection was
    /// already handed out) or out of order (a response before the request was read).
    Finished,
}

impl HandshakeError {
    /// The HTTP status to answer a bad request with; `None` for client-side errors.
    pub fn status(&self) -> Option<u16> {
        Some(match self {
            Self::MalformedRequest(_)
            | Self::HttpVersionTooOld
            | Self::BadHost
            | Self::MissingConnectionUpgrade
            | Self::BadKey
            | Self::UnexpectedBody
            | Self::BadExtensionOffer(_) => 400,
            Self::MissingUpgrade { absent: false } => 400,
            Self::MissingUpgrade { absent: true } | Self::UnsupportedVersion => 426,
            Self::MethodNotAllowed(_) => 405,
            Self::HeadTooLarge(_) | Self::TooManyHeaders(_) => 431,
            Self::Http(error) => return error.status().map(StatusCode::as_u16),
            _ => return None,
        })
    }

    /// The complete HTTP response for a bad request (status line, the headers the status
    /// requires, `Connection: close`, a short text body); `None` for client-side errors.
    pub fn response(&self) -> Option<Vec<u8>> {
        let mut out = WriteBuf::new(256, 0);
        self.write_response(&mut out)
            .then(|| out.as_slice().to_vec())
    }

    /// Appends [`response`](Self::response) to `out`; false (nothing written) for
    /// client-side errors.
    pub fn write_response(&self, out: &mut WriteBuf) -> bool {
        let Some(status) = self.status() else {
            return false;
        };
        let body = format!("{self}\n");
        write_plain_response(out, status, self.required_header(), body.as_bytes());
        true
    }

    /// The header a status requires besides the framing ones (RFC 9110 §15.5.6, §15.5.22;
    /// RFC 6455 §4.4).
    fn required_header(&self) -> Option<(&'static str, &'static [u8])> {
        match self {
            Self::MethodNotAllowed(_) => Some(("Allow", b"GET")),
            Self::UnsupportedVersion => Some(("Sec-WebSocket-Version", b"13")),
            Self::MissingUpgrade { absent: true } => Some(("Upgrade", b"websocket")),
            _ => None,
        }
    }
}

/// Writes a closing `status` response with a text body (the answer to a bad request). Every
/// name and value here is a constant that passes the writer's checks.
fn write_plain_response(
    out: &mut WriteBuf,
    status: u16,
    extra: Option<(&str, &[u8])>,
    body: &[u8],
) {
    let mut head = HeadWriter::response(out, StatusCode(status));
    if let Some((name, value)) = extra {
        let _ = head.header(name, value);
    }
    let _ = head.header("Connection", b"close");
    let _ = head.header("Content-Type", b"text/plain; charset=utf-8");
    head.content_length(body.len() as u64);
    head.finish();
    out.extend_from_slice(body);
}

/// The reason phrase for a status, as the HTTP writer spells it; `Error` for a code without
/// one (a rejection's default body).
pub(crate) fn reason_phrase(status: u16) -> &'static str {
    match StatusCode(status).canonical_reason() {
        "" => "Error",
        reason => reason,
    }
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MalformedRequest(why) => write!(f, "malformed request: {why}"),
            Self::Http(error) => write!(f, "bad request: {error}"),
            Self::HeadTooLarge(limit) => write!(f, "request head larger than {limit} bytes"),
            Self::TooManyHeaders(limit) => write!(f, "more than {limit} header fields"),
            Self::MethodNotAllowed(method) => write!(f, "method {method} not allowed, use GET"),
            Self::HttpVersionTooOld => f.write_str("WebSocket upgrade needs HTTP/1.1"),
            Self::BadHost => f.write_str("exactly one Host header is required"),
            Self::MissingUpgrade { .. } => f.write_str("missing 'Upgrade: websocket'"),
            Self::MissingConnectionUpgrade => f.write_str("missing 'Connection: upgrade'"),
            Self::UnsupportedVersion => f.write_str("unsupported Sec-WebSocket-Version, only 13"),
            Self::BadKey => f.write_str("Sec-WebSocket-Key must be base64 of 16 bytes, sent once"),
            Self::UnexpectedBody => f.write_str("an upgrade request must not have a body"),
            Self::BadExtensionOffer(why) => write!(f, "bad extension offer: {why}"),
            Self::BadExtensionResponse(why) => write!(f, "bad extension in the response: {why}"),
            Self::InvalidUrl(why) => write!(f, "invalid URL: {why}"),
            Self::InvalidHeaderName(name) => write!(f, "invalid header name {name:?}"),
            Self::InvalidHeaderValue(name) => {
                write!(
                    f,
                    "header {name} has CR, LF, NUL or another control byte in its value"
                )
            }
            Self::MalformedResponse(why) => write!(f, "malformed response: {why}"),
            Self::UnexpectedStatus { status, .. } => {
                write!(f, "server answered HTTP {status}, not 101")
            }
            Self::ResponseMissingUpgrade => f.write_str("101 without 'Upgrade: websocket'"),
            Self::ResponseMissingConnection => f.write_str("101 without 'Connection: upgrade'"),
            Self::BadAccept => f.write_str("Sec-WebSocket-Accept missing or wrong"),
            Self::UnofferedSubprotocol(p) => {
                write!(f, "server selected subprotocol {p:?} that was not offered")
            }
            Self::UnofferedExtension(e) => {
                write!(f, "server selected extension {e:?} that was not offered")
            }
            Self::SubprotocolNotOffered(p) => {
                write!(f, "subprotocol {p:?} was not offered by the client")
            }
            Self::InvalidStatus(status) => write!(f, "{status} is no status to refuse with"),
            Self::Finished => f.write_str("handshake driven after it finished or out of order"),
        }
    }
}

impl std::error::Error for HandshakeError {}
