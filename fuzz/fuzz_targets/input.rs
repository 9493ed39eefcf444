//! The fuzz input reader shared by the targets with modules (deflate_inflate, tls_codec);
//! each uses a subset of it.
#![allow(dead_code)]

/// Reads the input front to back; past its end every byte is 0.
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl<'a> Bytes<'a> {
    pub(crate) fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    pub(crate) fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        head
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Up to 15 piece sizes (1..=256 bytes each), their count in the low nibble of the next
    /// byte; empty means whole.
    pub(crate) fn pieces(&mut self) -> Vec<usize> {
        let count = usize::from(self.byte() & 0x0f);
        (0..count).map(|_| usize::from(self.byte()) + 1).collect()
    }
}
