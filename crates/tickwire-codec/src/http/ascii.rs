//! Byte-level helpers for everything that writes HTTP/1.1: the byte classes a written field
//! value and request target may hold, and integers as ASCII, written by hand into stack
//! buffers (decimal for `Content-Length`, hex for chunk sizes). The head writers here use
//! them, and so does the REST request builder layered on top of this module; they live here
//! so that the dependency runs one way, from REST down to HTTP.
//! For the integers, `core::fmt` would not allocate either, but it goes through a `Formatter` and a
//! `dyn Write` call per piece; these are a loop and a copy, on every request.

use crate::buf::WriteBuf;

/// A byte allowed in a field value: HTAB, SP, visible ASCII and obs-text (RFC 9110 §5.5).
#[inline]
pub(crate) fn is_field_byte(b: u8) -> bool {
    // Non-short-circuit operators: no branch, so a loop of these vectorises.
    ((b >= 0x20) & (b != 0x7F)) | (b == b'\t')
}

/// A byte allowed in a request target we write: visible ASCII except `#` (RFC 9112 §3.2,
/// RFC 3986 §3.5: the fragment stays with the client).
#[inline]
pub(crate) fn is_target_byte(b: u8) -> bool {
    // Non-short-circuit operators: no branch, so a loop of these vectorises.
    (0x21..=0x7E).contains(&b) & (b != b'#')
}

/// `name: value CRLF`, unchecked: callers have validated both.
#[inline]
pub(crate) fn write_field(buf: &mut WriteBuf, name: &[u8], value: &[u8]) {
    // One capacity check for the line instead of four.
    let line = buf.append_slot(name.len() + value.len() + 4);
    let (name_out, rest) = line.split_at_mut(name.len());
    name_out.copy_from_slice(name);
    let (separator, rest) = rest.split_at_mut(2);
    separator.copy_from_slice(b": ");
    let (value_out, end) = rest.split_at_mut(value.len());
    value_out.copy_from_slice(value);
    end.copy_from_slice(b"\r\n");
}

/// Two decimal digits per entry, "00" to "99": halves the divisions.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// A `u64` in decimal, without leading zeros ("0" for zero): at most 20 digits.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decimal {
    digits: [u8; 20],
    start: usize,
}

impl Decimal {
    #[inline]
    pub(crate) fn new(mut n: u64) -> Self {
        let mut digits = [0u8; 20];
        let mut start = digits.len();
        while n >= 100 {
            let pair = (n % 100) as usize * 2;
            n /= 100;
            start -= 2;
            digits[start..start + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        }
        if n >= 10 {
            let pair = n as usize * 2;
            start -= 2;
            digits[start..start + 2].copy_from_slice(&PAIRS[pair..pair + 2]);
        } else {
            start -= 1;
            digits[start] = b'0' + n as u8;
        }
        Self { digits, start }
    }

    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

/// A `u64` in lowercase hex, without leading zeros ("0" for zero): at most 16 digits
/// (a chunk size, RFC 9112 §7.1).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hex {
    digits: [u8; 16],
    start: usize,
}

impl Hex {
    #[inline]
    pub(crate) fn new(mut n: u64) -> Self {
        let mut digits = [0u8; 16];
        let mut start = digits.len();
        loop {
            start -= 1;
            digits[start] = HEX_DIGITS[(n & 0xF) as usize];
            n >>= 4;
            if n == 0 {
                break;
            }
        }
        Self { digits, start }
    }

    #[inline]
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.digits[self.start..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_matches_display() {
        for n in [
            0,
            1,
            9,
            10,
            11,
            99,
            100,
            101,
            999,
            1000,
            12_345,
            1 << 32,
            u64::MAX,
        ] {
            assert_eq!(Decimal::new(n).as_bytes(), n.to_string().as_bytes());
        }
    }

    #[test]
    fn hex_matches_lower_hex() {
        for n in [0, 1, 0xF, 0x10, 0xABC, 1 << 32, u64::MAX] {
            assert_eq!(Hex::new(n).as_bytes(), format!("{n:x}").as_bytes());
        }
    }

    proptest::proptest! {
        #[test]
        fn any_u64_formats_like_core(n: u64) {
            let (decimal, hex) = (Decimal::new(n), Hex::new(n));
            let (decimal_core, hex_core) = (n.to_string(), format!("{n:x}"));
            proptest::prop_assert_eq!(decimal.as_bytes(), decimal_core.as_bytes());
            proptest::prop_assert_eq!(hex.as_bytes(), hex_core.as_bytes());
        }
    }
}
