//! REST request building: whole HTTP/1.1 requests written straight into a
//! [`WriteBuf`](crate::buf::WriteBuf), without allocating.
//!
//! A [`RequestWriter`] holds what every request to one host shares (the `Host` header, a base
//! path, default headers), validated and serialised once. Each request is a
//! [`RequestBuilder`] whose stage is a type: [`Query`] while query parameters may still be
//! added to the request line, [`WithHeaders`] once a header has been written. It ends with
//! one finishing call that writes the framing (`Content-Length`) and the body, the body
//! possibly serialised in place through a [`BodyWriter`]:
//!
//! ```
//! use tickwire_codec::buf::WriteBuf;
//! use tickwire_codec::rest::RequestWriter;
//!
//! let mut api = RequestWriter::new("api.example.com", "/api/v3")?;
//! api.default_header("Accept", b"application/json")?;
//! let mut buf = WriteBuf::new(4096, 0);
//! let len = api
//!     .get(&mut buf, "ticker")?
//!     .query("symbol", "BTC USD")
//!     .query_display("depth", 20)
//!     .header("X-Key", b"k1")?
//!     .finish();
//! assert_eq!(
//!     buf.as_slice(),
//!     b"GET /api/v3/ticker?symbol=BTC%20USD&depth=20 HTTP/1.1\r\n\
//!       Host: api.example.com\r\nAccept: application/json\r\nX-Key: k1\r\n\r\n"
//! );
//! assert_eq!(len, buf.len());
//! # Ok::<(), tickwire_codec::http::WriteError>(())
//! ```
//!
//! Every byte is validated as [`crate::http`]'s writers do (tokens for names, no control but
//! HTAB in values, no space, control, non-ASCII or `#` in paths; query keys and values are
//! percent-encoded so any string is fine). A failing call removes the whole request from the
//! buffer. This module does not send, read responses, retry or follow redirects: that is the
//! transport's job. With the `deflate` feature it also decodes gzip response bodies
//! ([`GzipBody`]), the one gzip path of every tickwire HTTP client.

mod base_url;
mod builder;
#[cfg(feature = "deflate")]
mod gzip;
mod percent;
mod writer;

#[cfg(test)]
mod tests;

pub use base_url::{BaseUrl, InvalidBaseUrl, Origin};
pub use builder::{BodyWriter, Query, RequestBuilder, WithHeaders};
#[cfg(feature = "deflate")]
pub use gzip::GzipBody;
pub use writer::RequestWriter;
