//! Percent-encoding of query keys and values (RFC 3986 §2.1, §2.3), straight into a
//! [`WriteBuf`].
//!
//! Hand-written rather than the `percent-encoding` crate: that crate hands back an iterator
//! of `&str` pieces (one per run or per escaped byte) that we would copy into the buffer
//! anyway, and `fmt::Display` on it goes through a `Formatter`. Here a 256-entry table lookup
//! per byte decides, unescaped runs are copied with one `extend_from_slice` each, and an
//! escape is three bytes from a stack array: about twenty lines, no dependency, nothing
//! between the caller's `&str` and the wire buffer. Not benchmarked against the crate yet.

use core::fmt;

use crate::buf::WriteBuf;

/// Bytes written as they are: RFC 3986 `unreserved` (ALPHA / DIGIT / `-` / `.` / `_` / `~`).
/// Everything else is escaped, including `+` (form decoders read it as a space), `&`, `=`,
/// `?`, `/`, `#`, `%` and every byte of a non-ASCII character.
static UNRESERVED: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~');
        b += 1;
    }
    table
};

/// True for the bytes [`encode_into`] writes unescaped.
#[inline]
pub(crate) fn is_unreserved(b: u8) -> bool {
    UNRESERVED[usize::from(b)]
}

const HEX_UPPER: &[u8; 16] = b"0123456789ABCDEF";

/// Appends `bytes` percent-encoded (uppercase hex digits, RFC 3986 §2.1).
#[inline]
pub(crate) fn encode_into(buf: &mut WriteBuf, bytes: &[u8]) {
    let mut run = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !UNRESERVED[usize::from(b)] {
            buf.extend_from_slice(&bytes[run..i]);
            buf.extend_from_slice(&[
                b'%',
                HEX_UPPER[usize::from(b >> 4)],
                HEX_UPPER[usize::from(b & 0xF)],
            ]);
            run = i + 1;
        }
    }
    buf.extend_from_slice(&bytes[run..]);
}

/// A `fmt::Write` that percent-encodes what a `Display` impl writes, for
/// [`query_display`](super::RequestBuilder::query_display).
pub(crate) struct PercentWriter<'a>(pub(crate) &'a mut WriteBuf);

impl fmt::Write for PercentWriter<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        encode_into(self.0, s.as_bytes());
        Ok(())
    }
}
