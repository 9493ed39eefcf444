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

/// Whether every byte of `value` is a field byte ([`is_field_byte`]); true for an empty value.
///
/// The whole multiple of eight bytes goes through the branch-free fold, which LLVM vectorises;
/// the last one to seven bytes are judged together in one `u64` ([`control_bytes`]), a word
/// that overlaps bytes already checked. Why: the fold alone ends with one byte per step for
/// what its 32- and 8-byte loops leave, about 60 of the 95 instructions it took for the bench's
/// 13-byte timestamp value (callgrind, `tokio_http_c1`).
#[inline]
pub(crate) fn is_field_value(value: &[u8]) -> bool {
    let len = value.len();
    if len < 8 {
        return control_bytes(short_word(value)) == 0;
    }
    let whole = len & !7;
    let valid = value[..whole]
        .iter()
        .fold(true, |ok, &b| ok & is_field_byte(b));
    valid & (whole == len || control_bytes(word_at(value, len - 8)) == 0)
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
    copy_short(name_out, name);
    let (separator, rest) = rest.split_at_mut(2);
    separator.copy_from_slice(b": ");
    let (value_out, end) = rest.split_at_mut(value.len());
    copy_short(value_out, value);
    end.copy_from_slice(b"\r\n");
}

/// `src` into `out` (of the same length). From 8 to 32 bytes, two overlapping fixed-size
/// copies, which compile to a pair of loads and stores; otherwise `copy_from_slice`. Why: a
/// `memcpy` call for each name and value of a field line was about 20 instructions apiece.
#[inline(always)]
pub(crate) fn copy_short(out: &mut [u8], src: &[u8]) {
    let len = src.len();
    if (8..=16).contains(&len) {
        out[..8].copy_from_slice(&src[..8]);
        out[len - 8..len].copy_from_slice(&src[len - 8..]);
    } else if (16..=32).contains(&len) {
        out[..16].copy_from_slice(&src[..16]);
        out[len - 16..len].copy_from_slice(&src[len - 16..]);
    } else {
        out[..len].copy_from_slice(src);
    }
}

/// The eight bytes of `bytes` from `at`, as a little-endian word.
#[inline(always)]
fn word_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}

/// A word holding only bytes of `short` (fewer than 8) and every one of them, or eight
/// spaces when it is empty: what [`control_bytes`] needs to judge all of `short` at once.
#[inline(always)]
fn short_word(short: &[u8]) -> u64 {
    let len = short.len();
    if len >= 4 {
        // Two overlapping halves cover 4 to 7 bytes.
        let half = |at: usize| {
            let mut half = [0u8; 4];
            half.copy_from_slice(&short[at..at + 4]);
            u64::from(u32::from_le_bytes(half))
        };
        half(0) | half(len - 4) << 32
    } else if len > 0 {
        // 1 to 3 bytes: the first, middle and last are all of them.
        let (first, middle, last) = (short[0], short[len / 2], short[len - 1]);
        u64::from_le_bytes([first, middle, last, last, last, last, last, last])
    } else {
        u64::from_le_bytes([b' '; 8])
    }
}

/// The high bit of every byte of `word` that [`is_field_byte`] refuses (below 0x20 but HTAB,
/// or DEL); zero when all eight pass. Exact per byte: no sum below carries out of its byte.
#[inline(always)]
fn control_bytes(word: u64) -> u64 {
    const LOW: u64 = 0x7F7F_7F7F_7F7F_7F7F;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    const fn splat(byte: u8) -> u64 {
        u64::from_le_bytes([byte; 8])
    }
    // Bytes 0x80 and above (obs-text) have the high bit of `word` set and pass every test.
    let low = word & LOW;
    // `low + 0x60` reaches 0x80 exactly when `low >= 0x20`.
    let below_space = !((low + splat(0x60)) | word) & HIGH;
    // `low + 1` reaches 0x80 exactly when `low == 0x7F`.
    let del = (low + splat(0x01)) & !word & HIGH;
    // A byte equal to HTAB is zero in `tabs`; `(x & LOW) + LOW` sets the high bit of every
    // non-zero one.
    let tabs = word ^ splat(b'\t');
    let tab = !(((tabs & LOW) + LOW) | tabs) & HIGH;
    (below_space & !tab) | del
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

    /// The byte-by-byte rule `is_field_value` replaced: the oracle of the tests below.
    fn field_value_bytewise(value: &[u8]) -> bool {
        value.iter().all(|&b| is_field_byte(b))
    }

    #[test]
    fn field_value_matches_bytewise_for_every_byte_at_every_position() {
        // Every byte value at every position of every length up to 70 (both sides of the
        // word, half-word and 32-byte block boundaries), in a field of valid bytes, some of
        // them obs-text and HTAB so that neighbours of every kind are seen.
        for len in 1..=70usize {
            let filler: Vec<u8> = (0..len)
                .map(|i| [b'a', b'\t', 0x80, b' ', 0xFF, b'~'][i % 6])
                .collect();
            assert!(is_field_value(&filler), "filler of {len}");
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut value = filler.clone();
                    value[at] = byte;
                    assert_eq!(
                        is_field_value(&value),
                        field_value_bytewise(&value),
                        "byte {byte:#04x} at {at} of {len}"
                    );
                }
            }
        }
    }

    #[test]
    fn field_value_edge_cases() {
        assert!(is_field_value(b""));
        assert!(is_field_value(b" "));
        assert!(is_field_value(b"\t"));
        assert!(is_field_value(b"a\tb \x80\xff"));
        // Obsolete folding is not a value we write: CR and LF are refused wherever they are.
        assert!(!is_field_value(b"a\r\n b"));
        assert!(!is_field_value(b"\r\n\t"));
        assert!(!is_field_value(b"\0"));
        assert!(!is_field_value(b"\x7F"));
        assert!(!is_field_value(
            &[b'x'; 8].iter().chain(b"\n").copied().collect::<Vec<_>>()
        ));
        // Every byte value alone, and every byte value repeated to each length up to 40.
        for byte in 0..=255u8 {
            for len in 1..=40 {
                let value = vec![byte; len];
                assert_eq!(
                    is_field_value(&value),
                    is_field_byte(byte),
                    "{byte:#04x} x {len}"
                );
            }
        }
    }

    #[test]
    fn field_line_is_copied_whole_at_every_length() {
        for name_len in 1..=40 {
            for value_len in 0..=70 {
                let name: Vec<u8> = (0..name_len).map(|i| b'A' + (i % 26) as u8).collect();
                let value: Vec<u8> = (0..value_len).map(|i| b'0' + (i % 10) as u8).collect();
                let mut buf = WriteBuf::new(16, 0);
                buf.extend_from_slice(b"<");
                write_field(&mut buf, &name, &value);
                let mut expected = b"<".to_vec();
                expected.extend_from_slice(&name);
                expected.extend_from_slice(b": ");
                expected.extend_from_slice(&value);
                expected.extend_from_slice(b"\r\n");
                assert_eq!(buf.as_slice(), expected, "{name_len} {value_len}");
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn field_value_matches_bytewise(value in proptest::collection::vec(
            proptest::sample::select(vec![0u8, 9, 10, 13, 0x1F, 0x20, 0x41, 0x7E, 0x7F, 0x80, 0xFF]),
            0..100,
        )) {
            proptest::prop_assert_eq!(is_field_value(&value), field_value_bytewise(&value));
        }

        #[test]
        fn field_value_matches_bytewise_on_any_bytes(
            value in proptest::collection::vec(proptest::num::u8::ANY, 0..100),
        ) {
            proptest::prop_assert_eq!(is_field_value(&value), field_value_bytewise(&value));
        }

        #[test]
        fn any_u64_formats_like_core(n: u64) {
            let (decimal, hex) = (Decimal::new(n), Hex::new(n));
            let (decimal_core, hex_core) = (n.to_string(), format!("{n:x}"));
            proptest::prop_assert_eq!(decimal.as_bytes(), decimal_core.as_bytes());
            proptest::prop_assert_eq!(hex.as_bytes(), hex_core.as_bytes());
        }
    }
}
