//! The RFC 6455 opening handshake (§4), sans-IO, both sides.
//!
//! This module owns building and checking the HTTP/1.1 upgrade: [`ClientHandshake`] writes the
//! request for a URL and validates the server's 101; [`Request`] parses and validates an
//! upgrade request on the server side and [`Response`] writes the 101 or a rejection. Every
//! failure is a [`HandshakeError`]; on the server side it carries the HTTP status and the full
//! response to send. It does not own sockets or timeouts, and it never treats the bytes after
//! a head as frames: it reports where the head ends.

mod client;
mod error;
mod server;

#[cfg(test)]
mod tests;

use base64::Engine as _;
use sha1::{Digest, Sha1};

pub use client::{Accepted, ClientHandshake, ClientRequest};
pub use error::HandshakeError;
pub use server::{Request, Response, ServerLimits};

/// The GUID appended to the key before hashing (RFC 6455 §1.3, §4.2.2).
const ACCEPT_GUID: &[u8] = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

/// The only protocol version this implementation speaks (RFC 6455 §4.1, §4.4).
pub const WEBSOCKET_VERSION: &str = "13";

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key` (§4.2.2):
/// base64(SHA-1(key ++ "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")).
pub fn accept_key(key: &[u8]) -> String {
    let mut sha = Sha1::new();
    sha.update(key);
    sha.update(ACCEPT_GUID);
    base64::engine::general_purpose::STANDARD.encode(sha.finalize())
}

/// True when `value`, split on commas, contains `token` (case-insensitive): the list syntax of
/// `Connection` and `Upgrade` (RFC 9110 §5.6.1).
fn has_token(value: &[u8], token: &str) -> bool {
    value
        .split(|&b| b == b',')
        .any(|item| item.trim_ascii().eq_ignore_ascii_case(token.as_bytes()))
}

/// Splits a comma-separated header list into trimmed, non-empty items.
fn list_items(value: &[u8]) -> impl Iterator<Item = String> + '_ {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|item| !item.is_empty())
        .map(|item| String::from_utf8_lossy(item).into_owned())
}

/// A header name we may write: an RFC 9110 §5.6.2 token.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A header value we may write: no CR, LF or NUL (they would split or end the head).
fn is_safe_value(value: &str) -> bool {
    !value.bytes().any(|b| matches!(b, b'\r' | b'\n' | 0))
}

/// Checks a header we are about to write (DESIGN rule 5: no CR/LF/NUL in anything we write).
fn check_header(name: &str, value: &str) -> Result<(), HandshakeError> {
    if !is_token(name) {
        return Err(HandshakeError::InvalidHeaderName(name.to_owned()));
    }
    if !is_safe_value(value) {
        return Err(HandshakeError::InvalidHeaderValue(name.to_owned()));
    }
    Ok(())
}
