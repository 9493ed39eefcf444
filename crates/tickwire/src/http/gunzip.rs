//! gzip response bodies (RFC 9110 §8.4.1.3), inflated into a buffer the client reuses.
//!
//! With the `deflate` feature off there is no inflater: the client never sends
//! `Accept-Encoding: gzip`, no [`Gunzip`] value can exist, and a body the server gzipped
//! anyway is handed over as sent, its `Content-Encoding` header left for the caller to see.

#[cfg(feature = "deflate")]
use flate2::{Decompress, FlushDecompress, Status};

use crate::Error;

/// A reused gzip inflater and its output buffer, bounded by the body size limit.
#[cfg(feature = "deflate")]
#[derive(Debug)]
pub(crate) struct Gunzip {
    inflater: Decompress,
    out: Vec<u8>,
    limit: u64,
}

#[cfg(feature = "deflate")]
impl Gunzip {
    pub(crate) fn new(limit: u64) -> Self {
        Self {
            inflater: Decompress::new_gzip(15),
            out: Vec::new(),
            limit,
        }
    }

    /// Inflates one gzip member into the reused buffer. A body that inflates past the limit,
    /// is not gzip, or ends early is [`Error::Decompress`].
    pub(crate) fn decode(&mut self, input: &[u8]) -> Result<&[u8], Error> {
        self.inflater.reset(true);
        self.out.clear();
        let limit = usize::try_from(self.limit).unwrap_or(usize::MAX);
        let past_limit =
            || Error::Decompress(format!("gzip body inflates past the {limit}-byte limit"));
        loop {
            // The buffer may hold one byte past the limit, so that a body of exactly the
            // limit can finish while one byte more is caught. `reserve` may round the
            // capacity up past that (amortised growth), hence the length check as well.
            if self.out.len() > limit {
                return Err(past_limit());
            }
            if self.out.len() == self.out.capacity() {
                let room = limit.saturating_add(1) - self.out.len();
                self.out
                    .reserve_exact(self.out.capacity().max(4096).min(room));
            }
            let (before_in, before_out) = (self.inflater.total_in(), self.inflater.total_out());
            let consumed = usize::try_from(before_in).unwrap_or(usize::MAX);
            let rest = input.get(consumed..).unwrap_or_default();
            let status = self
                .inflater
                .decompress_vec(rest, &mut self.out, FlushDecompress::None)
                .map_err(|e| Error::Decompress(format!("gzip body: {e}")))?;
            if status == Status::StreamEnd {
                return if self.out.len() > limit {
                    Err(past_limit())
                } else {
                    Ok(&self.out)
                };
            }
            let progressed =
                self.inflater.total_in() != before_in || self.inflater.total_out() != before_out;
            if !progressed && self.out.len() < self.out.capacity() {
                return Err(Error::Decompress("gzip body ends early".into()));
            }
        }
    }
}

/// Without the `deflate` feature: no inflater, and no value of this type.
#[cfg(not(feature = "deflate"))]
#[derive(Debug)]
pub(crate) enum Gunzip {}

#[cfg(not(feature = "deflate"))]
impl Gunzip {
    /// Unreachable: there is no value to call it on.
    pub(crate) fn decode(&mut self, _input: &[u8]) -> Result<&[u8], Error> {
        match *self {}
    }
}
