//! Inflation with a hard output limit: the loop shared by the permessage-deflate decoder and
//! the standalone helpers for compressed binary payloads (OKX and HTX send raw-deflate and
//! gzip inside binary frames).
//!
//! The limit is enforced while inflating: output grows in steps capped at `max_len + 1`
//! bytes, and the first byte past `max_len` stops inflation with
//! [`InflateError::TooLarge`]. A decompression bomb costs at most `max_len + 1` bytes of
//! output memory and the work to produce them.

use core::fmt;

use flate2::{Decompress, FlushDecompress, Status};

use crate::compress::{BoundedDecompress, DecompressError};

/// Why a compressed payload could not be inflated: the crate-wide [`DecompressError`], under
/// the name this module has always used for it.
pub use crate::compress::DecompressError as InflateError;

/// Reusable inflation state for compressed payloads carried in binary messages: keep one per
/// connection and the inflater's ~40 KiB of state is allocated once, not per message.
#[derive(Default)]
pub struct PayloadInflater {
    raw: Option<Decompress>,
    zlib: Option<Decompress>,
}

impl fmt::Debug for PayloadInflater {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PayloadInflater").finish_non_exhaustive()
    }
}

impl PayloadInflater {
    /// An inflater; its state is allocated on first use.
    pub fn new() -> Self {
        Self::default()
    }

    /// Inflates one gzip member (RFC 1952: header, deflate data, then CRC-32 and size, both
    /// checked) from `input`, appending to `out`, which may hold at most `max_len` bytes in
    /// total afterwards. Bytes after the member are [`InflateError::Corrupt`].
    ///
    /// On error `out` holds whatever was inflated before it (at most `max_len + 1` bytes).
    pub fn gzip(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        max_len: usize,
    ) -> Result<(), InflateError> {
        // The header and trailer are parsed here and the raw body inflated in between: one
        // code path on every flate2 backend.
        let body_at = gzip_header_len(input)?;
        let start = out.len();
        let inflater = reset(&mut self.raw, false);
        if !inflate_into(inflater, &input[body_at..], out, max_len)? {
            return Err(InflateError::Truncated);
        }
        let used = body_at + inflater.total_in() as usize;
        let trailer = input.get(used..used + 8).ok_or(InflateError::Truncated)?;
        let crc = u32::from_le_bytes([trailer[0], trailer[1], trailer[2], trailer[3]]);
        let size = u32::from_le_bytes([trailer[4], trailer[5], trailer[6], trailer[7]]);
        let produced = &out[start..];
        // ISIZE is the length modulo 2^32 (RFC 1952 §2.3.1).
        if crc32(produced) != crc || produced.len() as u32 != size || input.len() != used + 8 {
            return Err(InflateError::Corrupt);
        }
        Ok(())
    }

    /// Inflates a raw deflate stream (RFC 1951, no header) from `input`, appending to `out`,
    /// which may hold at most `max_len` bytes in total afterwards.
    ///
    /// The stream may end with a final block or stop at a block boundary (as
    /// `Z_SYNC_FLUSH` output does); bytes after a final block are [`InflateError::Corrupt`].
    pub fn raw(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        max_len: usize,
    ) -> Result<(), InflateError> {
        let inflater = reset(&mut self.raw, false);
        let ended = inflate_into(inflater, input, out, max_len)?;
        if ended && (inflater.total_in() as usize) < input.len() {
            return Err(InflateError::Corrupt);
        }
        Ok(())
    }

    /// Inflates a zlib stream (RFC 1950: header, deflate data, Adler-32 checked) from
    /// `input`, appending to `out`, which may hold at most `max_len` bytes in total
    /// afterwards. Bytes after the stream are [`InflateError::Corrupt`].
    pub fn zlib(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        max_len: usize,
    ) -> Result<(), InflateError> {
        let inflater = reset(&mut self.zlib, true);
        if !inflate_into(inflater, input, out, max_len)? {
            return Err(InflateError::Truncated);
        }
        if (inflater.total_in() as usize) < input.len() {
            return Err(InflateError::Corrupt);
        }
        Ok(())
    }
}

/// Which deflate container an [`Inflater`] expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeflateFormat {
    /// One gzip member (RFC 1952), as [`PayloadInflater::gzip`].
    Gzip,
    /// Raw deflate (RFC 1951), as [`PayloadInflater::raw`].
    Raw,
    /// A zlib stream (RFC 1950), as [`PayloadInflater::zlib`].
    Zlib,
}

/// A [`PayloadInflater`] fixed to one [`DeflateFormat`]: the deflate family's
/// [`BoundedDecompress`], interchangeable with the LZ4 and Zstd decompressors.
#[derive(Debug)]
pub struct Inflater {
    format: DeflateFormat,
    inflater: PayloadInflater,
}

impl Inflater {
    /// An inflater for `format`; its state is allocated on first use.
    pub fn new(format: DeflateFormat) -> Self {
        Self {
            format,
            inflater: PayloadInflater::new(),
        }
    }

    /// The format it inflates.
    pub fn format(&self) -> DeflateFormat {
        self.format
    }
}

impl BoundedDecompress for Inflater {
    /// Inflates with the [`PayloadInflater`] method of the format, the limit counted from
    /// `out`'s length on entry.
    fn decompress(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
        limit: usize,
    ) -> Result<usize, DecompressError> {
        let start = out.len();
        let max_len = start.saturating_add(limit);
        let result = match self.format {
            DeflateFormat::Gzip => self.inflater.gzip(input, out, max_len),
            DeflateFormat::Raw => self.inflater.raw(input, out, max_len),
            DeflateFormat::Zlib => self.inflater.zlib(input, out, max_len),
        };
        match result {
            Ok(()) => Ok(out.len() - start),
            Err(error) => {
                out.truncate(start);
                // The limit the caller gave, not the total length it was turned into.
                Err(match error {
                    DecompressError::TooLarge { .. } => DecompressError::TooLarge { limit },
                    other => other,
                })
            }
        }
    }
}

/// [`PayloadInflater::gzip`] with a fresh inflater (allocates its state on every call).
pub fn inflate_gzip(input: &[u8], out: &mut Vec<u8>, max_len: usize) -> Result<(), InflateError> {
    PayloadInflater::new().gzip(input, out, max_len)
}

/// [`PayloadInflater::raw`] with a fresh inflater (allocates its state on every call).
pub fn inflate_raw(input: &[u8], out: &mut Vec<u8>, max_len: usize) -> Result<(), InflateError> {
    PayloadInflater::new().raw(input, out, max_len)
}

/// [`PayloadInflater::zlib`] with a fresh inflater (allocates its state on every call).
pub fn inflate_zlib(input: &[u8], out: &mut Vec<u8>, max_len: usize) -> Result<(), InflateError> {
    PayloadInflater::new().zlib(input, out, max_len)
}

/// The inflater in `slot`, created on first use and reset for a new stream otherwise.
fn reset(slot: &mut Option<Decompress>, zlib_header: bool) -> &mut Decompress {
    match slot {
        Some(inflater) => {
            inflater.reset(zlib_header);
            inflater
        }
        None => slot.insert(Decompress::new(zlib_header)),
    }
}

/// Output space below which inflation grows the buffer first (see `inflate_into`).
const MIN_WINDOW: usize = 4 << 10;

/// Feeds all of `input` to `inflater`, appending the output to `out` and never letting it
/// grow past `max_len + 1` bytes. Returns true when the stream ended (a final block, or the
/// zlib trailer), after which the rest of `input` was not consumed.
pub(crate) fn inflate_into(
    inflater: &mut Decompress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    max_len: usize,
) -> Result<bool, InflateError> {
    // One byte of room past the limit is how the excess is seen.
    let bound = max_len.saturating_add(1);
    loop {
        let room = bound.saturating_sub(out.len());
        if room == 0 {
            return Err(InflateError::TooLarge { limit: max_len });
        }
        // zlib-rs inflates in its fast loop only with MIN_WINDOW bytes of output space; a
        // smaller window (a reused buffer of a small message) falls back to the byte-wise loop,
        // measured 1.5x slower per 128 B message (bench `ws --only deflate`).
        if out.capacity() - out.len() < MIN_WINDOW.min(room) {
            // Doubling amortises the copies; the cap keeps a bomb at the limit.
            let step = out
                .capacity()
                .max(input.len() * 2)
                .max(MIN_WINDOW)
                .min(room);
            out.reserve_exact(step);
        }
        let (in_before, out_before) = (inflater.total_in(), inflater.total_out());
        let window = out.capacity() - out.len();
        let (status, window) = if window <= room {
            // The usual case: inflate straight into the spare capacity.
            let status = inflater.decompress_vec(input, out, FlushDecompress::Sync);
            (status, window)
        } else {
            // A reused buffer with more spare capacity than the limit leaves: inflate into an
            // initialised window of exactly `room` bytes, so a bomb stops at the limit here too.
            let len = out.len();
            out.resize(len + room, 0);
            let status = inflater.decompress(input, &mut out[len..], FlushDecompress::Sync);
            let produced = (inflater.total_out() - out_before) as usize;
            out.truncate(len + produced);
            (status, room)
        };
        let status = status.map_err(|_| InflateError::Corrupt)?;
        let consumed = (inflater.total_in() - in_before) as usize;
        let produced = (inflater.total_out() - out_before) as usize;
        input = &input[consumed..];
        if out.len() > max_len {
            return Err(InflateError::TooLarge { limit: max_len });
        }
        if status == Status::StreamEnd {
            return Ok(true);
        }
        let had_room = produced < window;
        if input.is_empty() && had_room {
            // Everything was consumed and the inflater stopped with space left: nothing is
            // pending inside it.
            return Ok(false);
        }
        if consumed == 0 && produced == 0 && had_room {
            // Input left, room left, no progress: the inflater refuses the data.
            return Err(InflateError::Corrupt);
        }
    }
}

/// Length of a gzip member header (RFC 1952 §2.3), checking the magic, method and flags.
fn gzip_header_len(input: &[u8]) -> Result<usize, InflateError> {
    const FTEXT_MASK: u8 = 0x01;
    const FHCRC: u8 = 0x02;
    const FEXTRA: u8 = 0x04;
    const FNAME: u8 = 0x08;
    const FCOMMENT: u8 = 0x10;
    let fixed = input.get(..10).ok_or(InflateError::Truncated)?;
    // ID1 ID2 = 0x1f 0x8b, CM = 8 (deflate), reserved flag bits 5-7 clear.
    if fixed[0] != 0x1f || fixed[1] != 0x8b || fixed[2] != 0x08 || fixed[3] & 0xe0 != 0 {
        return Err(InflateError::Corrupt);
    }
    let flags = fixed[3] & !FTEXT_MASK;
    let mut at = 10;
    if flags & FEXTRA != 0 {
        let len = input.get(at..at + 2).ok_or(InflateError::Truncated)?;
        at += 2 + usize::from(u16::from_le_bytes([len[0], len[1]]));
    }
    for flag in [FNAME, FCOMMENT] {
        if flags & flag != 0 {
            let rest = input.get(at..).ok_or(InflateError::Truncated)?;
            let end = rest
                .iter()
                .position(|&b| b == 0)
                .ok_or(InflateError::Truncated)?;
            at += end + 1;
        }
    }
    if flags & FHCRC != 0 {
        at += 2;
    }
    if at > input.len() {
        return Err(InflateError::Truncated);
    }
    Ok(at)
}

/// CRC-32 (IEEE, reflected, as gzip uses) of `bytes`. Table-driven; gzip payloads from
/// exchanges are small and this is off the WebSocket hot path.
fn crc32(bytes: &[u8]) -> u32 {
    const fn table() -> [u32; 256] {
        let mut table = [0u32; 256];
        let mut i = 0;
        while i < 256 {
            let mut c = i as u32;
            let mut k = 0;
            while k < 8 {
                c = if c & 1 != 0 {
                    0xedb8_8320 ^ (c >> 1)
                } else {
                    c >> 1
                };
                k += 1;
            }
            table[i] = c;
            i += 1;
        }
        table
    }
    const TABLE: [u32; 256] = table();
    let mut crc = !0u32;
    for &b in bytes {
        crc = TABLE[((crc ^ u32::from(b)) & 0xff) as usize] ^ (crc >> 8);
    }
    !crc
}
