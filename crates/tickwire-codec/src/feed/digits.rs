//! [`leading_u64`]: the decimal number a sequence extractor reads on every message, eight
//! digits a step.

/// The unsigned decimal number at the start of `bytes` and how many digit bytes it took:
/// `b"1234,"` gives `(1234, 4)`. `None` when `bytes` does not start with an ASCII digit or
/// the number does not fit a `u64`. Leading zeros are allowed (`b"007"` is 7).
///
/// A sequence extractor's number, for one: eight digits are checked and combined a word at
/// a time, so a 12-digit trade id costs about as much as a 2-digit one does bytewise.
///
/// ```
/// use tickwire_codec::feed::leading_u64;
///
/// let message = br#"{"seq":100000000017,"px":1.5}"#;
/// assert_eq!(leading_u64(&message[7..]), Some((100_000_000_017, 12)));
/// assert_eq!(leading_u64(b"x1"), None);
/// ```
#[inline]
pub fn leading_u64(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    let mut taken = 0;
    while let Some(word) = bytes.get(taken..taken + 8) {
        let word = u64::from_le_bytes(word.try_into().expect("8 bytes")) ^ ZEROS;
        let run = digit_run(word);
        if run == 0 {
            return (taken > 0).then_some((value, taken));
        }
        // The run's digits moved to the word's top bytes, zeros (leading zeros) below them.
        let digits = eight_digits(word << (8 * (8 - run)));
        value = value.checked_mul(POW10[run])?.checked_add(digits)?;
        taken += run;
        if run < 8 {
            return Some((value, taken));
        }
    }
    // Fewer than eight bytes left: a byte at a time.
    for &byte in &bytes[taken..] {
        let digit = byte.wrapping_sub(b'0');
        if digit > 9 {
            break;
        }
        value = value.checked_mul(10)?.checked_add(u64::from(digit))?;
        taken += 1;
    }
    (taken > 0).then_some((value, taken))
}

const ZEROS: u64 = u64::from_ne_bytes([b'0'; 8]);
const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
const POW10: [u64; 9] = [
    1,
    10,
    100,
    1_000,
    10_000,
    100_000,
    1_000_000,
    10_000_000,
    100_000_000,
];

/// How many of `word`'s bytes, from its first (lowest), are digits: `word` is eight text
/// bytes xored with `'0'`, so a digit is a byte of at most 9.
#[inline]
fn digit_run(word: u64) -> usize {
    // A byte is not a digit when its high bit is set, or when adding 0x76 sets it (a value
    // of 10 or more). A carry out of a byte only reaches bytes above one already marked, and
    // only the lowest mark counts.
    let marks = (word | word.wrapping_add(0x7676_7676_7676_7676)) & HIGH;
    (marks.trailing_zeros() / 8) as usize
}

/// The number eight digit values (0 to 9, the first in the lowest byte) spell.
#[inline]
fn eight_digits(word: u64) -> u64 {
    // Pairs, then fours, then the eight: each step multiplies the higher half by a power
    // of ten and adds the lower, in every lane at once.
    let pairs = (word.wrapping_mul(10 << 8 | 1) >> 8) & 0x00ff_00ff_00ff_00ff;
    let fours = (pairs.wrapping_mul(100 << 16 | 1) >> 16) & 0x0000_ffff_0000_ffff;
    fours.wrapping_mul(10_000 << 32 | 1) >> 32
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The bytewise reference.
    fn reference(bytes: &[u8]) -> Option<(u64, usize)> {
        let taken = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
        let text = std::str::from_utf8(&bytes[..taken]).ok()?;
        Some((text.parse().ok()?, taken))
    }

    #[test]
    fn numbers_of_every_length_with_what_follows() {
        for digits in 1..=20 {
            let text: String = (0..digits)
                .map(|i| char::from(b'1' + (i % 9) as u8))
                .collect();
            for tail in ["", ",", "\"}", ",\"px\":117.17,\"pad\":\"xxxxxxxx\"}"] {
                let input = format!("{text}{tail}");
                assert_eq!(
                    leading_u64(input.as_bytes()),
                    reference(input.as_bytes()),
                    "{input}"
                );
            }
        }
    }

    #[test]
    fn the_edges_of_u64_and_of_digits() {
        assert_eq!(leading_u64(b"18446744073709551615,"), Some((u64::MAX, 20)));
        assert_eq!(leading_u64(b"18446744073709551616,"), None);
        assert_eq!(leading_u64(b"99999999999999999999"), None);
        assert_eq!(leading_u64(b"00000000000000000000000042x"), Some((42, 26)));
        assert_eq!(leading_u64(b""), None);
        assert_eq!(leading_u64(b",1"), None);
        assert_eq!(leading_u64(b"/:09"), None);
        // The bytes on either side of '0' and '9', and bytes with the high bit set.
        assert_eq!(leading_u64(b"12345678/"), Some((12_345_678, 8)));
        assert_eq!(leading_u64(b"1234567:9"), Some((1_234_567, 7)));
        assert_eq!(leading_u64(b"1\xb0\xb9\xff23456"), Some((1, 1)));
        assert_eq!(leading_u64(b"\x800000000"), None);
    }

    proptest! {
        #[test]
        fn any_bytes_read_as_the_bytewise_reference(
            bytes in proptest::collection::vec(
                prop_oneof![3 => b'0'..=b'9', 1 => any::<u8>()], 0..40),
        ) {
            prop_assert_eq!(leading_u64(&bytes), reference(&bytes));
        }
    }
}
