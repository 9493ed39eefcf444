//! permessage-deflate (RFC 7692) and bounded inflation of compressed payloads.
//!
//! This module owns three things:
//!
//! - negotiation ([`DeflateConfig`], [`DeflateParams`]): the client's offer and its check of
//!   the server's answer, the server's choice among the client's offers, with every parameter
//!   of RFC 7692 §7.1 and strict rejection of duplicate or invalid ones;
//! - the per-message transform ([`PerMessageDeflate`]): the two halves that plug into the
//!   frame reader and writer through the [`Extension`](crate::ws::Extension) seam, with
//!   context takeover or not on either side, window bits honoured, state allocated on first
//!   use, and the inflated size checked while inflating;
//! - compressing [`PreparedMessage`]s: a message compressed once and sent to many connections
//!   (fan-out). The type lives in [`crate::ws`], which sends it; it is re-exported here so
//!   `deflate::PreparedMessage` keeps working;
//! - standalone helpers ([`PayloadInflater`] and [`inflate_gzip`], [`inflate_raw`],
//!   [`inflate_zlib`]) for exchanges
//!   that send compressed payloads inside ordinary binary messages, under the same kind of
//!   limit, and [`Inflater`], the same inflation behind the crate-wide
//!   [`BoundedDecompress`](crate::compress::BoundedDecompress) interface.
//!
//! It does not own the handshake (the `handshake` module, a layer above, calls the
//! negotiation functions and installs the transform) or any I/O.
//!
//! Backend: `flate2` over `zlib-rs`. It is pure Rust (no C toolchain), as fast as zlib-ng on
//! the sizes that matter here, and, unlike `miniz_oxide`, limits the compressor's window to
//! the negotiated `*_max_window_bits`. zlib cannot write raw deflate with an 8-bit window
//! (it silently uses 9), so when the peer limits our window to 8 bits we accept and send
//! every message uncompressed, which RFC 7692 allows (compression is per message).

mod codec;
mod inflate;
mod negotiate;
mod prepared;

#[cfg(test)]
mod negotiate_tests;
#[cfg(test)]
mod tests;

pub use crate::ws::PreparedMessage;
pub use codec::{DeflateDecoder, DeflateEncoder, PerMessageDeflate};
pub use inflate::{
    DeflateFormat, InflateError, Inflater, PayloadInflater, inflate_gzip, inflate_raw, inflate_zlib,
};
pub use negotiate::{DeflateConfig, DeflateParams, NegotiationError};

/// The extension token (RFC 7692 §6).
pub const EXTENSION_NAME: &str = "permessage-deflate";

/// The bytes a sync flush ends with, removed by the sender and appended by the receiver
/// before inflating (RFC 7692 §7.2.1, §7.2.2).
pub(crate) const SYNC_TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// The RSV1 bit, as the extension seam counts RSV bits (`0b0rrr`), that marks a compressed
/// message's first frame (RFC 7692 §6).
pub(crate) const RSV1: u8 = 0b100;
