//! The RFC 6455 opening handshake (§4), sans-IO, both roles, from the first byte written to a
//! ready [`Connection`](crate::ws::Connection).
//!
//! This module owns every decision of the HTTP/1.1 upgrade: the request a client writes, the
//! checks on the server's answer, the checks on a client's request, the status a bad one gets,
//! subprotocol selection and permessage-deflate negotiation (through `deflate`'s functions),
//! and building the connection with the negotiated extension installed.
//!
//! - Client: [`ClientHandshake`] writes the request into a [`WriteBuf`](crate::buf::WriteBuf)
//!   ([`write_request`](ClientHandshake::write_request)), then reads the answer from the
//!   caller's [`ReadBuf`](crate::buf::ReadBuf)
//!   ([`read_response`](ClientHandshake::read_response)) until it has an [`Accepted`] or a
//!   [`HandshakeError`].
//! - Server: [`ServerHandshake`] reads the request ([`read_request`](ServerHandshake::read_request)),
//!   lends the parsed [`Request`] to the caller, who decides with a [`Response`]; then
//!   [`respond`](ServerHandshake::respond) writes the 101 or the refusal and gives the
//!   [`Upgraded`] connection. A bad request is answered (written into the `WriteBuf`) by
//!   `read_request` itself, with the status of its [`HandshakeError`].
//!
//! Heads are read by [`http::RequestReader`](crate::http::RequestReader) and
//! [`http::ResponseReader`](crate::http::ResponseReader) and written by
//! [`http::HeadWriter`](crate::http::HeadWriter), so one set of rules covers every head
//! tickwire reads or writes. Bytes after a head stay in the caller's `ReadBuf`, unconsumed:
//! they are the first frames, and that `ReadBuf` becomes the connection's receive buffer
//! ([`Buffers::with_read`](crate::ws::Buffers::with_read)), with no copy (a server only after
//! writing its 101).
//!
//! It does not own sockets, timeouts or the clock: time comes in as an `Instant`, bytes come in
//! through the buffers.
//!
//! Layers: `http, ws, deflate <- handshake`; nothing below names this module.

mod client;
mod error;
mod server;

#[cfg(test)]
mod pair_tests;
#[cfg(test)]
mod tests;

use base64::Engine as _;
use sha1::{Digest, Sha1};

pub use crate::http::Parsed;
pub use client::{Accepted, ClientHandshake, ClientOptions, Endpoint};
pub use error::HandshakeError;
pub use server::{
    Outcome, Request, Response, ServerHandshake, ServerLimits, ServerOptions, Upgraded,
};

use crate::http::{HeadWriter, WriteError};

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

/// Splits a comma-separated header list into trimmed, non-empty items (RFC 9110 §5.6.1).
fn list_items(value: &[u8]) -> impl Iterator<Item = String> + '_ {
    value
        .split(|&b| b == b',')
        .map(<[u8]>::trim_ascii)
        .filter(|item| !item.is_empty())
        .map(|item| String::from_utf8_lossy(item).into_owned())
}

/// The only value of a field that must appear once; `None` when absent or repeated.
fn exactly_one<'a>(mut values: impl Iterator<Item = &'a [u8]>) -> Option<&'a [u8]> {
    let first = values.next()?;
    values.next().is_none().then_some(first)
}

/// The extension name of an offer or selection: the part before the first `;`.
fn extension_name(item: &str) -> &str {
    item.split(';').next().unwrap_or("").trim()
}

/// Writes `name: value` through the HTTP writer's checks, naming the header in the error.
fn write_header(head: &mut HeadWriter<'_>, name: &str, value: &str) -> Result<(), HandshakeError> {
    match head.header(name, value.as_bytes()) {
        Ok(_) => Ok(()),
        Err(WriteError::InvalidHeaderName) => {
            Err(HandshakeError::InvalidHeaderName(name.to_owned()))
        }
        Err(_) => Err(HandshakeError::InvalidHeaderValue(name.to_owned())),
    }
}
