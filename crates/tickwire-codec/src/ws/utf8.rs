//! Incremental UTF-8 validation for text messages that arrive in pieces.
//!
//! Owns [`Utf8Stream`]: bytes are fed in any split, and an error is reported as soon as the
//! bytes seen cannot be the start of valid UTF-8 (Autobahn 6.4.*), not at the end of the
//! message. Whole messages that arrive at once do not come here: the reader validates them
//! with one `simdutf8` call.

/// Validation state carried between pieces: at most three bytes of a sequence that the last
/// piece cut short.
#[derive(Debug, Default, Clone)]
pub(crate) struct Utf8Stream {
    carry: [u8; 4],
    /// At most 3 (a `u8` keeps the per-connection state small).
    carry_len: u8,
}

/// The bytes fed so far cannot be valid UTF-8.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct InvalidUtf8;

impl Utf8Stream {
    /// Validates the next piece.
    pub(crate) fn feed(&mut self, mut input: &[u8]) -> Result<(), InvalidUtf8> {
        if self.carry_len > 0 {
            let carried = usize::from(self.carry_len);
            let width = sequence_width(self.carry[0]);
            let take = (width - carried).min(input.len());
            self.carry[carried..carried + take].copy_from_slice(&input[..take]);
            self.carry_len += take as u8;
            input = &input[take..];
            match core::str::from_utf8(&self.carry[..usize::from(self.carry_len)]) {
                Ok(_) => self.carry_len = 0,
                Err(e) if e.error_len().is_none() => return Ok(()),
                Err(_) => return Err(InvalidUtf8),
            }
        }
        match simdutf8::compat::from_utf8(input) {
            Ok(_) => Ok(()),
            Err(e) if e.error_len().is_none() => {
                let tail = &input[e.valid_up_to()..];
                self.carry[..tail.len()].copy_from_slice(tail);
                self.carry_len = tail.len() as u8;
                Ok(())
            }
            Err(_) => Err(InvalidUtf8),
        }
    }

    /// Checks that the message ended on a character boundary, and resets.
    pub(crate) fn finish(&mut self) -> Result<(), InvalidUtf8> {
        let complete = self.carry_len == 0;
        self.carry_len = 0;
        if complete { Ok(()) } else { Err(InvalidUtf8) }
    }

    /// Forgets any carried bytes.
    pub(crate) fn reset(&mut self) {
        self.carry_len = 0;
    }
}

/// Length of the sequence a lead byte starts; 1 for bytes that cannot lead (the validator
/// then reports them).
fn sequence_width(lead: u8) -> usize {
    match lead {
        0xc2..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf4 => 4,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_everywhere(bytes: &[u8]) -> Vec<Result<(), InvalidUtf8>> {
        (0..=bytes.len())
            .map(|at| {
                let mut stream = Utf8Stream::default();
                stream.feed(&bytes[..at])?;
                stream.feed(&bytes[at..])?;
                stream.finish()
            })
            .collect()
    }

    #[test]
    fn valid_text_at_every_split() {
        let text = "κόσμε a€𝄞 zß".as_bytes();
        assert!(split_everywhere(text).iter().all(Result::is_ok));
    }

    #[test]
    fn byte_by_byte() {
        let text = "€𝄞κόσμε".as_bytes();
        let mut stream = Utf8Stream::default();
        for b in text {
            stream.feed(core::slice::from_ref(b)).unwrap();
        }
        stream.finish().unwrap();
    }

    #[test]
    fn fails_fast_inside_a_sequence() {
        // 0xf4 0x90 can never be valid (above U+10FFFF): reject at the second byte.
        let mut stream = Utf8Stream::default();
        stream.feed(&[b'a', 0xf4]).unwrap();
        assert_eq!(stream.feed(&[0x90]), Err(InvalidUtf8));
        // Overlong and surrogate starts.
        let mut stream = Utf8Stream::default();
        assert_eq!(stream.feed(&[0xc0]), Err(InvalidUtf8));
        let mut stream = Utf8Stream::default();
        stream.feed(&[0xed]).unwrap();
        assert_eq!(stream.feed(&[0xa0]), Err(InvalidUtf8));
    }

    /// What the stream must say after seeing `prefix`: an error exactly when no suffix can
    /// make it valid.
    fn can_continue(prefix: &[u8]) -> bool {
        match core::str::from_utf8(prefix) {
            Ok(_) => true,
            Err(e) => e.error_len().is_none(),
        }
    }

    /// Feeds `bytes` in the pieces `cuts` make, checking after each piece that the stream
    /// fails exactly when the bytes seen cannot start valid UTF-8, and at the end that it
    /// accepts exactly what `str::from_utf8` accepts.
    fn check_pieces(bytes: &[u8], cuts: &[usize]) -> Result<(), String> {
        let mut stream = Utf8Stream::default();
        let mut seen = 0;
        for &end in cuts.iter().chain([&bytes.len()]) {
            let fed = stream.feed(&bytes[seen..end]);
            if fed.is_ok() != can_continue(&bytes[..end]) {
                return Err(format!("{bytes:x?}: piece ending at {end} gave {fed:?}"));
            }
            if fed.is_err() {
                return Ok(());
            }
            seen = end;
        }
        if stream.finish().is_ok() != core::str::from_utf8(bytes).is_ok() {
            return Err(format!("{bytes:x?}: finish disagrees"));
        }
        Ok(())
    }

    proptest::proptest! {
        /// Bytes drawn from lead, continuation and invalid bytes, fed cut once at every
        /// position and one byte at a time.
        #[test]
        fn agrees_with_std_at_every_cut(
            bytes in proptest::collection::vec(
                proptest::sample::select(vec![
                    b'a', 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0,
                    0xe1, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xff,
                ]),
                0..24,
            ),
        ) {
            for cut in 0..=bytes.len() {
                proptest::prop_assert_eq!(check_pieces(&bytes, &[cut]), Ok(()));
            }
            let every: Vec<usize> = (1..bytes.len()).collect();
            proptest::prop_assert_eq!(check_pieces(&bytes, &every), Ok(()));
        }
    }

    #[test]
    fn truncated_sequence_fails_at_finish() {
        let mut stream = Utf8Stream::default();
        stream.feed(&[0xe2, 0x82]).unwrap();
        assert_eq!(stream.finish(), Err(InvalidUtf8));
    }

    #[test]
    fn invalid_anywhere_fails_at_every_split() {
        let mut bytes = "hello €".as_bytes().to_vec();
        bytes.push(0xff);
        bytes.extend_from_slice(b"world");
        assert!(split_everywhere(&bytes).iter().all(Result::is_err));
    }
}
