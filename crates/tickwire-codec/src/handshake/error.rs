//! Handshake failures: which side, what went wrong, and (server side) what to answer.

use core::fmt;

/// A failed opening handshake. Server-side variants (the request was bad) map to an HTTP
/// status ([`status`](Self::status)) and a complete response ([`response`](Self::response));
/// client-side variants (the server's answer was bad, or our own request could not be built)
/// have neither.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandshakeError {
    // --- server side: the request ---
    /// The request head is not valid HTTP/1.1 (RFC 9112 §2-§5). 400.
    MalformedRequest(&'static str),
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
    /// A header value we were asked to write contains CR, LF or NUL (named by its header).
    InvalidHeaderValue(String),
    /// The response head is not valid HTTP/1.1, or is too large.
    MalformedResponse(&'static str),
    /// The server answered with this status instead of 101 (§4.1, "if the status code
    /// received from the server is not 101").
    UnexpectedStatus(u16),
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
            _ => return None,
        })
    }

    /// The complete HTTP response for a bad request (status line, the headers the status
    /// requires, `Connection: close`, a short text body); `None` for client-side errors.
    pub fn response(&self) -> Option<Vec<u8>> {
        let status = self.status()?;
        let extra = match self {
            Self::MethodNotAllowed(_) => "Allow: GET\r\n",
            Self::UnsupportedVersion => "Sec-WebSocket-Version: 13\r\n",
            Self::MissingUpgrade { absent: true } => "Upgrade: websocket\r\n",
            _ => "",
        };
        let body = format!("{self}\n");
        Some(
            format!(
                "HTTP/1.1 {status} {}\r\n{extra}Connection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n\r\n{body}",
                reason_phrase(status),
                body.len()
            )
            .into_bytes(),
        )
    }
}

/// The reason phrase for the statuses this crate writes (RFC 9110 §15).
pub(crate) fn reason_phrase(status: u16) -> &'static str {
    match status {
        101 => "Switching Protocols",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Error",
    }
}

impl fmt::Display for HandshakeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::MalformedRequest(why) => write!(f, "malformed request: {why}"),
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
                write!(f, "header {name} has CR, LF or NUL in its value")
            }
            Self::MalformedResponse(why) => write!(f, "malformed response: {why}"),
            Self::UnexpectedStatus(status) => write!(f, "server answered HTTP {status}, not 101"),
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
        }
    }
}

impl std::error::Error for HandshakeError {}
