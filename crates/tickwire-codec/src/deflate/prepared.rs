//! Compress once, send to many: a data message compressed a single time for a fan-out server,
//! sent as it is on every connection whose negotiated window fits and as plain bytes on the
//! others.

use super::DeflateConfig;
use super::codec::{compress_message, with_shared_compressor};
use crate::ws::OpCode;

/// A data message prepared for many connections. The compressed form is a fresh deflate
/// stream (no reference to earlier messages), which any permessage-deflate peer inflates
/// whatever its context state; connections without the extension get the plain payload.
///
/// Send it with [`Sender::prepared`](crate::ws::Sender::prepared) (or the transports'
/// `send_prepared`). On a connection with context takeover on our side, sending one makes
/// that connection's next message start a fresh stream too, so it costs some ratio there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedMessage {
    opcode: OpCode,
    payload: Vec<u8>,
    compressed: Option<Vec<u8>>,
    window_bits: u8,
}

impl PreparedMessage {
    /// A text message, compressed per `config` (level, `min_size`, `only_if_smaller`, and
    /// `server_max_window_bits` as the window, 15 when unset).
    pub fn text(text: &str, config: &DeflateConfig) -> Self {
        Self::new(OpCode::Text, text.as_bytes(), config)
    }

    /// A binary message, compressed per `config` as for [`text`](Self::text).
    pub fn binary(payload: &[u8], config: &DeflateConfig) -> Self {
        Self::new(OpCode::Binary, payload, config)
    }

    fn new(opcode: OpCode, payload: &[u8], config: &DeflateConfig) -> Self {
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
        Self {
            opcode,
            payload: payload.to_vec(),
            compressed,
            window_bits,
        }
    }

    /// Text or Binary.
    pub fn opcode(&self) -> OpCode {
        self.opcode
    }

    /// The message as the application sees it.
    pub fn payload(&self) -> &[u8] {
        &self.payload
    }

    /// The compressed payload (without the sync tail), or `None` when the policy left the
    /// message plain (below `min_size`, or not smaller).
    pub fn compressed(&self) -> Option<&[u8]> {
        self.compressed.as_deref()
    }

    /// The deflate window the compressed form needs on the receiving side.
    pub fn window_bits(&self) -> u8 {
        self.window_bits
    }
}
