//! The pub/sub suite's bytes: the stamped payload every published message carries (send
//! time and sequence number), the publisher's masked frame, a subscriber's reader of the
//! server's frames (split anywhere across reads), and permessage-deflate for the
//! `tickwire-deflate` row: the offer, the check of the server's answer, and inflating a
//! message sent without context takeover.
//!
//! Owns no socket and no clock: the generator (`generator.rs`) passes bytes and times in.
//! The NATS suite (`../nats/`) reuses the stamp and the frame reader, its send times being
//! CLOCK_MONOTONIC ns rather than rdtsc.

use std::sync::LazyLock;

use tickwire_codec::deflate::{DeflateConfig, PayloadInflater};

/// Bytes of payload per published message (the 100 B).
pub const PAYLOAD_LEN: usize = 100;

/// Bytes of a publisher frame: a 2-byte header (7-bit length), the mask key, the payload.
pub const FRAME_LEN: usize = 2 + 4 + PAYLOAD_LEN;

/// FIN set, opcode 0x2 (binary), RFC 6455 section 5.2.
const FIN_BINARY: u8 = 0x82;

/// RSV1: the message is compressed (RFC 7692 section 6).
const RSV1: u8 = 0x40;

/// The publisher's fixed masking key (RFC 6455 section 5.3).
const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// The server frames this reader accepts are at most this long (a 100 B payload, deflated or
/// stored, is far below it): a longer length is a wrong frame, not a reason to buffer.
const MAX_SERVER_PAYLOAD: usize = 1024;

/// RFC 7692 section 7.2.2: the tail a sender strips from each compressed message and the
/// receiver appends before inflating.
const DEFLATE_TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// What a published message carries besides filler: when it was sent and its place in the
/// publisher's sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// When the publisher wrote it: rdtsc in the pub/sub suite, CLOCK_MONOTONIC ns in the
    /// NATS suite.
    pub sent_at: u64,
    /// 0, 1, 2, ... in publish order.
    pub sequence: u64,
}

impl Stamp {
    /// The 100 B payload: the send time and the sequence number (little-endian u64s), then
    /// the JSON-like filler every message shares (so that deflate has something to do).
    pub fn payload(self) -> [u8; PAYLOAD_LEN] {
        let mut payload = *filler();
        payload[..8].copy_from_slice(&self.sent_at.to_le_bytes());
        payload[8..16].copy_from_slice(&self.sequence.to_le_bytes());
        payload
    }

    /// The stamp of a received payload. Err when it is not 100 B or its filler is not the
    /// publisher's (a message mangled on the way).
    pub fn read(payload: &[u8]) -> Result<Self, String> {
        if payload.len() != PAYLOAD_LEN {
            return Err(format!(
                "a {} B message (expected {PAYLOAD_LEN} B)",
                payload.len()
            ));
        }
        if payload[16..] != filler()[16..] {
            return Err("a message whose filler differs from the one published".to_owned());
        }
        let word = |at: usize| u64::from_le_bytes(payload[at..at + 8].try_into().expect("8 B"));
        Ok(Self {
            sent_at: word(0),
            sequence: word(8),
        })
    }

    /// Appends the publisher's masked binary frame carrying this stamp to `out`.
    pub fn encode_frame(self, out: &mut Vec<u8>) {
        // RFC 6455 section 5.2: 100 < 126 fits the 7-bit length; 0x80 is MASK.
        out.extend_from_slice(&[FIN_BINARY, 0x80 | PAYLOAD_LEN as u8]);
        out.extend_from_slice(&MASK);
        let payload = self.payload();
        out.extend(
            payload
                .iter()
                .enumerate()
                .map(|(i, byte)| byte ^ MASK[i % 4]),
        );
    }
}

/// The filler of every payload (its first 16 bytes are overwritten by the stamp), built once:
/// every publish copies it and every delivery compares against it.
fn filler() -> &'static [u8; PAYLOAD_LEN] {
    static FILLER: LazyLock<[u8; PAYLOAD_LEN]> = LazyLock::new(|| {
        crate::payload::json_payload(PAYLOAD_LEN)
            .try_into()
            .expect("json_payload returns the length asked for")
    });
    &FILLER
}

/// The permessage-deflate offer of the `tickwire-deflate` row: no context takeover either
/// way, so every message the server sends inflates on its own.
pub fn deflate_config() -> DeflateConfig {
    DeflateConfig::default()
        .with_server_no_context_takeover(true)
        .with_client_no_context_takeover(true)
}

/// Ok when the complete response head `head` accepted our deflate offer without server
/// context takeover; Err (with what it said) otherwise.
pub fn check_deflate_answer(head: &[u8]) -> Result<(), String> {
    let head = String::from_utf8_lossy(head);
    let items: Vec<&str> = head
        .lines()
        .filter_map(|line| line.split_once(':'))
        .filter(|(name, _)| name.trim().eq_ignore_ascii_case("sec-websocket-extensions"))
        .flat_map(|(_, value)| value.split(','))
        .map(str::trim)
        .collect();
    match deflate_config().confirm(&items) {
        Ok(Some(params)) if params.server_no_context_takeover => Ok(()),
        Ok(Some(_)) => Err("the server kept its compression context".to_owned()),
        Ok(None) => Err("the server did not accept permessage-deflate".to_owned()),
        Err(e) => Err(format!("the server's permessage-deflate answer: {e}")),
    }
}

/// Turns a received frame's payload into the message: inflated when RSV1 says it was
/// compressed. One instance serves every subscriber: without context takeover no message
/// depends on the one before, so the inflater is reset for each.
#[derive(Default)]
pub struct Decoder {
    inflater: PayloadInflater,
    compressed: Vec<u8>,
    inflated: Vec<u8>,
    /// Messages that came compressed (the server may send a message stored when deflate
    /// would not shrink it).
    pub inflated_count: u64,
}

impl Decoder {
    /// The stamp of one frame's payload (`rsv1`: compressed). Err for a payload that does
    /// not inflate or is not a published message.
    pub fn stamp(&mut self, rsv1: bool, payload: &[u8]) -> Result<Stamp, String> {
        if !rsv1 {
            return Stamp::read(payload);
        }
        self.compressed.clear();
        self.compressed.extend_from_slice(payload);
        self.compressed.extend_from_slice(&DEFLATE_TAIL);
        self.inflated.clear();
        self.inflater
            .raw(&self.compressed, &mut self.inflated, PAYLOAD_LEN)
            .map_err(|e| format!("inflating a message: {e}"))?;
        self.inflated_count += 1;
        Stamp::read(&self.inflated)
    }
}

/// A subscriber's position in the server's frame stream: the start of a frame that a read
/// cut short, kept until the rest arrives (empty almost always).
#[derive(Default)]
pub struct FrameReader {
    partial: Vec<u8>,
}

impl FrameReader {
    /// Consumes `bytes`, calling `frame(rsv1, payload)` for every complete frame. Err for a
    /// frame that is not an unmasked FIN binary frame of at most 1 KiB, with RSV1 only when
    /// `deflate` was negotiated, or when `frame` fails.
    pub fn consume(
        &mut self,
        mut bytes: &[u8],
        deflate: bool,
        mut frame: impl FnMut(bool, &[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        if !self.partial.is_empty() {
            // Complete the cut frame first: its header a byte at a time, then its payload.
            loop {
                if let Some(total) = frame_len(&self.partial, deflate)? {
                    let take = (total - self.partial.len()).min(bytes.len());
                    self.partial.extend_from_slice(&bytes[..take]);
                    bytes = &bytes[take..];
                    if self.partial.len() < total {
                        return Ok(());
                    }
                    let (rsv1, payload) = split_frame(&self.partial);
                    frame(rsv1, payload)?;
                    self.partial.clear();
                    break;
                }
                let Some((&byte, rest)) = bytes.split_first() else {
                    return Ok(());
                };
                self.partial.push(byte);
                bytes = rest;
            }
        }
        while !bytes.is_empty() {
            match frame_len(bytes, deflate)? {
                Some(total) if total <= bytes.len() => {
                    let (rsv1, payload) = split_frame(&bytes[..total]);
                    frame(rsv1, payload)?;
                    bytes = &bytes[total..];
                }
                _ => {
                    self.partial.extend_from_slice(bytes);
                    return Ok(());
                }
            }
        }
        Ok(())
    }
}

/// The length of the frame `bytes` starts with (header and payload), None while its header
/// is incomplete. Err for a frame this suite never expects from the server.
fn frame_len(bytes: &[u8], deflate: bool) -> Result<Option<usize>, String> {
    let [first, second, ..] = *bytes else {
        return Ok(None);
    };
    let allowed = first == FIN_BINARY || (deflate && first == FIN_BINARY | RSV1);
    if !allowed || second & 0x80 != 0 {
        return Err(format!(
            "unexpected frame from the server: first bytes {first:#04x} {second:#04x} (expected \
             an unmasked FIN binary frame{})",
            if deflate { ", RSV1 allowed" } else { "" }
        ));
    }
    // RFC 6455 section 5.2: 7-bit length, or 126 + 16-bit, or 127 + 64-bit.
    let (header, len) = match second & 0x7f {
        126 => match bytes.get(2..4) {
            Some(len) => (4, usize::from(u16::from_be_bytes([len[0], len[1]]))),
            None => return Ok(None),
        },
        127 => return Err("a server frame with a 64-bit length".to_owned()),
        len => (2, usize::from(len)),
    };
    if len > MAX_SERVER_PAYLOAD {
        return Err(format!("a {len} B server frame"));
    }
    Ok(Some(header + len))
}

/// (RSV1, payload) of one complete frame that [`frame_len`] accepted.
fn split_frame(frame: &[u8]) -> (bool, &[u8]) {
    let header = if frame[1] & 0x7f == 126 { 4 } else { 2 };
    (frame[0] & RSV1 != 0, &frame[header..])
}

#[cfg(test)]
mod tests {
    use flate2::{Compress, Compression, FlushCompress};

    use super::{
        DEFLATE_TAIL, Decoder, FRAME_LEN, FrameReader, MASK, PAYLOAD_LEN, Stamp,
        check_deflate_answer,
    };

    fn stamp(sequence: u64) -> Stamp {
        Stamp {
            sent_at: 0x1122_3344_5566_7788 + sequence,
            sequence,
        }
    }

    /// An unmasked server frame: `first` byte, 7-bit length.
    fn server_frame(first: u8, payload: &[u8]) -> Vec<u8> {
        let mut frame = vec![first, payload.len() as u8];
        frame.extend_from_slice(payload);
        frame
    }

    #[test]
    fn a_stamp_survives_its_payload() {
        let payload = stamp(7).payload();
        assert_eq!(payload.len(), PAYLOAD_LEN);
        assert_eq!(Stamp::read(&payload), Ok(stamp(7)));
    }

    #[test]
    fn a_payload_of_the_wrong_size_or_filler_is_refused() {
        let payload = stamp(7).payload();
        assert!(Stamp::read(&payload[..99]).is_err());
        let mut mangled = payload;
        mangled[50] ^= 1;
        assert!(Stamp::read(&mangled).is_err());
    }

    #[test]
    fn the_publisher_frame_is_masked_binary_and_unmasks_to_the_stamp() {
        let mut frame = Vec::new();
        stamp(3).encode_frame(&mut frame);
        assert_eq!(frame.len(), FRAME_LEN);
        assert_eq!(frame[..2], [0x82, 0x80 | 100]);
        assert_eq!(frame[2..6], MASK);
        let payload: Vec<u8> = frame[6..]
            .iter()
            .enumerate()
            .map(|(i, b)| b ^ MASK[i % 4])
            .collect();
        assert_eq!(Stamp::read(&payload), Ok(stamp(3)));
    }

    #[test]
    fn frames_split_anywhere_are_read_once_in_order() {
        let stream: Vec<u8> = (0..3)
            .flat_map(|s| server_frame(0x82, &stamp(s).payload()))
            .collect();
        for chunk in 1..=stream.len() {
            let mut reader = FrameReader::default();
            let mut seen = Vec::new();
            for piece in stream.chunks(chunk) {
                reader
                    .consume(piece, false, |rsv1, payload| {
                        assert!(!rsv1);
                        seen.push(Stamp::read(payload)?.sequence);
                        Ok(())
                    })
                    .expect("valid frames");
            }
            assert_eq!(seen, [0, 1, 2], "chunks of {chunk}");
        }
    }

    #[test]
    fn masked_text_or_unnegotiated_compressed_frames_fail() {
        let payload = stamp(0).payload();
        let ok = |_: bool, _: &[u8]| Ok(());
        let mut masked = server_frame(0x82, &payload);
        masked[1] |= 0x80;
        assert!(FrameReader::default().consume(&masked, false, ok).is_err());
        let text = server_frame(0x81, &payload);
        assert!(FrameReader::default().consume(&text, false, ok).is_err());
        let compressed = server_frame(0xc2, &payload);
        assert!(
            FrameReader::default()
                .consume(&compressed, false, ok)
                .is_err()
        );
        assert!(
            FrameReader::default()
                .consume(&compressed, true, ok)
                .is_ok()
        );
    }

    #[test]
    fn a_message_deflated_without_context_inflates_to_its_stamp() {
        let mut decoder = Decoder::default();
        for sequence in 0..3 {
            // What a server without context takeover sends: a fresh raw deflate stream,
            // sync-flushed, its 00 00 ff ff tail stripped (RFC 7692 section 7.2.1).
            let mut compress = Compress::new(Compression::fast(), false);
            let mut out = Vec::with_capacity(256);
            compress
                .compress_vec(&stamp(sequence).payload(), &mut out, FlushCompress::Sync)
                .expect("deflate");
            assert!(out.ends_with(&DEFLATE_TAIL));
            out.truncate(out.len() - 4);
            assert!(out.len() < PAYLOAD_LEN, "the filler compresses");
            assert_eq!(decoder.stamp(true, &out), Ok(stamp(sequence)));
        }
        assert_eq!(decoder.inflated_count, 3);
        assert_eq!(decoder.stamp(false, &stamp(9).payload()), Ok(stamp(9)));
        assert!(decoder.stamp(true, &[0xff; 10]).is_err());
    }

    #[test]
    fn only_an_answer_without_server_context_takeover_passes() {
        let head = |extensions: &str| {
            format!("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n{extensions}\r\n")
        };
        let both = "Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; \
                    client_no_context_takeover\r\n";
        assert_eq!(check_deflate_answer(head(both).as_bytes()), Ok(()));
        let keeps = "Sec-WebSocket-Extensions: permessage-deflate; client_no_context_takeover\r\n";
        assert!(check_deflate_answer(head(keeps).as_bytes()).is_err());
        assert!(check_deflate_answer(head("").as_bytes()).is_err());
    }
}
