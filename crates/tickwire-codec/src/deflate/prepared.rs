//! Compress once, send to many: the constructors of
//! [`PreparedMessage`] (whose home is [`crate::ws`]), which compress a data message a single
//! time for a fan-out server. The frame writer sends it as it is on every connection whose
//! negotiated window fits and as plain bytes on the others.

use super::codec::{compress_message, with_shared_compressor};
use super::{DeflateConfig, RSV1};
use crate::ws::{PreparedMessage, SharedFrame};

impl PreparedMessage {
    /// A text message, compressed per `config` (level, `min_size`, `only_if_smaller`, and
    /// `server_max_window_bits` as the window, 15 when unset).
    pub fn text(text: &str, config: &DeflateConfig) -> Self {
        compress(SharedFrame::text(text), config)
    }

    /// A binary message, compressed per `config` as for [`text`](Self::text).
    pub fn binary(payload: &[u8], config: &DeflateConfig) -> Self {
        compress(SharedFrame::binary(payload), config)
    }

    /// The message of `frame`, compressed per `config` as for [`text`](Self::text); the
    /// plain form is `frame` itself (shared, not copied).
    pub fn from_frame(frame: &SharedFrame, config: &DeflateConfig) -> Self {
        compress(frame.clone(), config)
    }
}

fn compress(plain: SharedFrame, config: &DeflateConfig) -> PreparedMessage {
    let payload = plain.payload();
    // zlib cannot write an 8-bit raw window (module docs): 9 is the smallest used.
    let window_bits = config.server_max_window_bits.unwrap_or(15).clamp(9, 15);
    let mut compressed = None;
    if payload.len() >= config.min_size {
        let mut out = Vec::new();
        let ok = with_shared_compressor((config.level.min(9), window_bits), |compressor| {
            let ok = compress_message(compressor, payload, &mut out);
            compressor.reset();
            ok
        });
        if ok && !(config.only_if_smaller && out.len() >= payload.len()) {
            compressed = Some(out);
        }
    }
    PreparedMessage::from_parts(plain, compressed.as_deref(), RSV1, window_bits)
}
