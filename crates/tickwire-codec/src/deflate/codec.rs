//! The per-message transform of permessage-deflate (RFC 7692 §7.2): a decoder for the frame
//! reader and an encoder for the frame writer, each plugged in through the
//! [`Extension`] seam.
//!
//! State is per connection and per direction, allocated on the first compressed message
//! (a connection that never sees one pays nothing), and reset after every message on a side
//! that negotiated no context takeover.
//!
//! One exception saves the most memory: a compressor without context takeover keeps nothing
//! between messages, and each message is compressed in one call, so such encoders share one
//! compressor per thread and configuration (about 370 KiB at 15 window bits, which a
//! fan-out server would otherwise hold per connection). Decoders keep their own inflater
//! (about 51 KiB): a fragmented message spans several calls, interleaved with other
//! connections' on the same thread.

use std::cell::RefCell;

use flate2::{Compress, Decompress, FlushCompress};

use super::inflate::{InflateError, inflate_into};
use super::{DeflateConfig, DeflateParams, RSV1, SYNC_TAIL};
use crate::ws::{CloseCode, Compression, Error, Extension, Role};

/// Both halves of permessage-deflate for one connection, built from the negotiated
/// parameters: install [`decoder`](Self::into_parts) on the frame reader and the encoder on
/// the frame writer (the transports do this through
/// [`Connection::set_extension`](crate::ws::Connection::set_extension)).
#[derive(Debug)]
pub struct PerMessageDeflate {
    decoder: DeflateDecoder,
    encoder: DeflateEncoder,
}

impl PerMessageDeflate {
    /// The transform for an endpoint in `role` with the negotiated `params`; `config` gives
    /// the compression level and policy.
    pub fn new(role: Role, params: &DeflateParams, config: &DeflateConfig) -> Self {
        // Our compressor follows our role's parameters; our decompressor the peer's.
        let (ours_reset, ours_bits, theirs_reset) = match role {
            Role::Server => (
                params.server_no_context_takeover,
                params.server_max_window_bits,
                params.client_no_context_takeover,
            ),
            Role::Client => (
                params.client_no_context_takeover,
                params.client_max_window_bits,
                params.server_no_context_takeover,
            ),
        };
        Self {
            decoder: DeflateDecoder {
                inflater: None,
                reset_after_message: theirs_reset,
                stream_ended: false,
                staged: Vec::new(),
            },
            encoder: DeflateEncoder {
                compressor: None,
                level: config.level.min(9),
                window_bits: ours_bits,
                reset_after_message: ours_reset,
                min_size: config.min_size,
                only_if_smaller: config.only_if_smaller,
            },
        }
    }

    /// The decoder (for the reader) and the encoder (for the writer).
    pub fn into_parts(self) -> (DeflateDecoder, DeflateEncoder) {
        (self.decoder, self.encoder)
    }
}

/// Inflates received compressed messages, checking the inflated size against the message
/// limit while it inflates.
pub struct DeflateDecoder {
    inflater: Option<Decompress>,
    reset_after_message: bool,
    /// The sender ended its deflate stream with a final block inside this message; the next
    /// message starts a new stream.
    stream_ended: bool,
    /// A short final payload with the sync tail appended, inflated in one call.
    staged: Vec<u8>,
}

/// Final payloads up to this size are inflated together with the tail (see `decode`).
const STAGED_MAX: usize = 1 << 10;

/// Compresses outgoing messages per the configured policy.
pub struct DeflateEncoder {
    compressor: Option<Compress>,
    level: u8,
    window_bits: u8,
    reset_after_message: bool,
    min_size: usize,
    only_if_smaller: bool,
}

impl Extension for DeflateDecoder {
    fn reserved_bits(&self) -> u8 {
        RSV1
    }

    fn decode(
        &mut self,
        payload: &[u8],
        fin: bool,
        out: &mut Vec<u8>,
        max_len: usize,
    ) -> Result<(), Error> {
        // The window is always 15 bits: a larger window inflates anything a smaller one
        // produced, and zlib keeps its state reusable across resets only at 15.
        let inflater = self.inflater.get_or_insert_with(|| Decompress::new(false));
        // Once a final block ended the deflate stream, the rest of the message is not inflated:
        // RFC 7692 §7.2.3.4's own example follows its final block with the first octet of an
        // empty stored block (completed by the tail below), and zlib leaves such bytes unused.
        if fin && !self.stream_ended && payload.len() <= STAGED_MAX {
            // One inflate call for payload and tail: copying a short payload costs less than
            // a second call's setup (measured: 128 B messages, bench `ws --only deflate`).
            let mut staged = core::mem::take(&mut self.staged);
            staged.clear();
            staged.extend_from_slice(payload);
            staged.extend_from_slice(&SYNC_TAIL);
            let ended = inflate_into(inflater, &staged, out, max_len);
            self.staged = staged;
            self.stream_ended = ended.map_err(inflate_error)?;
            if self.reset_after_message || self.stream_ended {
                inflater.reset(false);
            }
            self.stream_ended = false;
            return Ok(());
        }
        if !payload.is_empty() && !self.stream_ended {
            self.stream_ended =
                inflate_into(inflater, payload, out, max_len).map_err(inflate_error)?;
        }
        if fin {
            if !self.stream_ended {
                // §7.2.2: the sender removed the sync flush's empty stored block. A final
                // block may also end inside it; the next message then starts a new stream.
                self.stream_ended =
                    inflate_into(inflater, &SYNC_TAIL, out, max_len).map_err(inflate_error)?;
            }
            if self.reset_after_message || self.stream_ended {
                inflater.reset(false);
            }
            self.stream_ended = false;
        }
        Ok(())
    }

    fn encode(&mut self, _: &[u8], _: &mut Vec<u8>, _: Compression) -> Option<u8> {
        None
    }
}

impl Extension for DeflateEncoder {
    fn reserved_bits(&self) -> u8 {
        RSV1
    }

    fn decode(&mut self, _: &[u8], _: bool, _: &mut Vec<u8>, _: usize) -> Result<(), Error> {
        Err(corrupt("the encoder half was installed on a reader"))
    }

    fn accept_prepared(&mut self, window_bits: u8) -> Option<u8> {
        // A prepared message is a fresh deflate stream, which
        // the peer's inflater accepts at any point; it fits if its window is no larger than the
        // one negotiated for our side. Our own compressor never saw its bytes, so with context
        // takeover it starts a fresh stream too (its back-references would otherwise point at
        // the wrong distances in the peer's window).
        if window_bits > self.window_bits {
            return None;
        }
        if let Some(compressor) = self.compressor.as_mut() {
            compressor.reset();
        }
        Some(RSV1)
    }

    fn encode(
        &mut self,
        payload: &[u8],
        out: &mut Vec<u8>,
        compression: Compression,
    ) -> Option<u8> {
        match compression {
            Compression::Never => return None,
            Compression::Auto if payload.len() < self.min_size => return None,
            _ => {}
        }
        if self.window_bits < 9 {
            // zlib cannot write raw deflate with an 8-bit window; uncompressed is always
            // allowed (RFC 7692 §6).
            return None;
        }
        if self.reset_after_message {
            return with_shared_compressor((self.level, self.window_bits), |compressor| {
                self.compress_with(compressor, payload, out, compression)
            });
        }
        let key = (self.level, self.window_bits);
        let mut compressor = self
            .compressor
            .take()
            .unwrap_or_else(|| new_compressor(key));
        let result = self.compress_with(&mut compressor, payload, out, compression);
        self.compressor = Some(compressor);
        result
    }
}

/// Runs `f` with this thread's shared compressor for (level, window bits); it is left reset
/// only if `f` resets it, so callers reset after every message.
pub(crate) fn with_shared_compressor<R>(key: (u8, u8), f: impl FnOnce(&mut Compress) -> R) -> R {
    SHARED_COMPRESSORS.with(|shared| {
        let mut shared = shared.borrow_mut();
        let at = match shared.iter().position(|(k, _)| *k == key) {
            Some(at) => at,
            None => {
                shared.push((key, new_compressor(key)));
                shared.len() - 1
            }
        };
        f(&mut shared[at].1)
    })
}

thread_local! {
    /// Compressors of encoders without context takeover, by (level, window bits): reset
    /// after every message, so any of them serves any connection on this thread.
    static SHARED_COMPRESSORS: RefCell<Vec<((u8, u8), Compress)>> = const { RefCell::new(Vec::new()) };
}

fn new_compressor((level, bits): (u8, u8)) -> Compress {
    Compress::new_with_window_bits(flate2::Compression::new(level.into()), false, bits)
}

impl DeflateEncoder {
    /// Compresses one message with `compressor` per the policy; resets it when the result
    /// is discarded or this side has no context takeover.
    fn compress_with(
        &self,
        compressor: &mut Compress,
        payload: &[u8],
        out: &mut Vec<u8>,
        compression: Compression,
    ) -> Option<u8> {
        if !compress_message(compressor, payload, out) {
            // Cannot happen with a valid state; start a fresh stream and send it plain.
            compressor.reset();
            return None;
        }
        let keep = !(compression == Compression::Auto
            && self.only_if_smaller
            && out.len() >= payload.len());
        if !keep || self.reset_after_message {
            // A discarded result must not stay in the window the peer never saw: a fresh
            // stream references nothing before it, which the peer's inflater accepts.
            compressor.reset();
        }
        keep.then_some(RSV1)
    }
}

/// Compresses one message payload as RFC 7692 §7.2.1 sends it: a sync flush with its
/// trailing `00 00 ff ff` removed, appended to `out`. False on a backend error.
pub(crate) fn compress_message(
    compressor: &mut Compress,
    payload: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    let start = out.len();
    if !compress_sync(compressor, payload, out) {
        return false;
    }
    if out.ends_with(&SYNC_TAIL) {
        out.truncate(out.len() - SYNC_TAIL.len());
    }
    if out.len() == start {
        // A sync flush right after another one, with no input, emits nothing (zlib reports
        // no progress). An empty payload would leave the peer's appended tail as a stored
        // block header with no block: §7.2.3.6 sends an empty message as one 0x00 octet.
        out.push(0x00);
    }
    true
}

/// Compresses all of `payload` with a sync flush, appending to `out`. False on a backend
/// error.
fn compress_sync(compressor: &mut Compress, mut payload: &[u8], out: &mut Vec<u8>) -> bool {
    // Deflate's worst case is a few bytes over the input per 16 KiB block.
    out.reserve(payload.len() + payload.len() / 1024 + 64);
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.capacity().max(64));
        }
        let before = compressor.total_in();
        if compressor
            .compress_vec(payload, out, FlushCompress::Sync)
            .is_err()
        {
            return false;
        }
        payload = &payload[(compressor.total_in() - before) as usize..];
        // The flush is complete once the input is used up and output space is left over.
        if payload.is_empty() && out.len() < out.capacity() {
            return true;
        }
    }
}

fn inflate_error(error: InflateError) -> Error {
    match error {
        InflateError::TooLarge { limit } => Error::MessageTooLarge { limit },
        InflateError::Corrupt => corrupt("invalid deflate data"),
        InflateError::Truncated => corrupt("deflate data ends early"),
    }
}

/// A compressed payload that does not inflate: close 1007, as for any payload inconsistent
/// with its message (RFC 6455 §7.4.1).
fn corrupt(reason: &'static str) -> Error {
    Error::Extension {
        code: CloseCode::INVALID_PAYLOAD,
        reason,
    }
}

impl core::fmt::Debug for DeflateDecoder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DeflateDecoder")
            .field("allocated", &self.inflater.is_some())
            .field("reset_after_message", &self.reset_after_message)
            .finish_non_exhaustive()
    }
}

impl core::fmt::Debug for DeflateEncoder {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DeflateEncoder")
            .field("allocated", &self.compressor.is_some())
            .field("level", &self.level)
            .field("window_bits", &self.window_bits)
            .field("reset_after_message", &self.reset_after_message)
            .finish_non_exhaustive()
    }
}
