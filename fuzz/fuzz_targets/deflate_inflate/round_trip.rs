//! Mode 1: plaintext messages through a FrameWriter with the encoder into a FrameReader with
//! the decoder. It owns the round-trip oracle and the check of the writer's frames on the wire
//! (RSV bits, fragment sizes, inflation with the negotiated window); the reader loop comes
//! from `common`.

use flate2::{Decompress, FlushDecompress, Status};
use tickwire_codec::buf::WriteBuf;
use tickwire_codec::deflate::{DeflateConfig, DeflateParams, PerMessageDeflate};
use tickwire_codec::ws::{
    Compression, Error, FrameReader, FrameWriter, Limits, MaskSource, OpCode, Role,
};

use crate::common::{Bytes, Seen, TAIL, read_all};

// --- mode 1: the writer with the encoder into the reader with the decoder ---

pub(crate) fn run(mut input: Bytes<'_>) {
    let flags = input.byte();
    let (writer_role, reader_role) = if flags & 1 == 0 {
        (Role::Server, Role::Client)
    } else {
        (Role::Client, Role::Server)
    };
    let params = DeflateParams {
        server_no_context_takeover: flags & 2 != 0,
        client_no_context_takeover: flags & 4 != 0,
        server_max_window_bits: 8 + input.byte() % 8,
        client_max_window_bits: 8 + input.byte() % 8,
    };
    let config = DeflateConfig::default()
        .with_level(input.byte() % 10)
        .with_min_size(usize::from(input.byte()))
        .with_only_if_smaller(flags & 8 != 0);
    let limit = match (flags & 0x10 != 0, flags & 0x20 != 0) {
        (true, false) => 1 << 20,
        // "No limit".
        (true, true) => usize::MAX,
        _ => usize::from(input.u16()),
    };
    let fragment_size = match input.byte() {
        0 => None,
        n => Some(usize::from(n)),
    };
    let pieces_len = usize::from(input.byte() % 16);
    let pieces = input.take(pieces_len);
    let (writer_bits, writer_resets) = match writer_role {
        Role::Server => (
            params.server_max_window_bits,
            params.server_no_context_takeover,
        ),
        Role::Client => (
            params.client_max_window_bits,
            params.client_no_context_takeover,
        ),
    };

    let mut writer = FrameWriter::new(writer_role, MaskSource::seeded(u64::from(flags)));
    let encoder = PerMessageDeflate::new(writer_role, &params, &config)
        .into_parts()
        .1;
    writer.set_extension(Box::new(encoder));
    writer.set_fragment_size(fragment_size);
    let mut out = WriteBuf::new(256, 16);
    // What was sent, with the compression asked for (None for pings).
    let mut sent: Vec<(Seen, Option<Compression>)> = Vec::new();
    for _ in 0..12 {
        if input.is_empty() {
            break;
        }
        let h = input.byte();
        let text = h & 1 != 0;
        let compression = match (h >> 1) % 3 {
            0 => Compression::Auto,
            1 => Compression::Always,
            _ => Compression::Never,
        };
        let len = usize::from(input.byte());
        let body = input.take(len);
        let repeat = if h & 0x10 != 0 {
            1 + usize::from(input.byte()) * 8
        } else {
            1
        };
        const MAX_PLAIN: usize = 1 << 14;
        if text {
            let mut plain = String::from_utf8_lossy(body).repeat(repeat);
            let mut cut = plain.len().min(MAX_PLAIN);
            while !plain.is_char_boundary(cut) {
                cut -= 1;
            }
            plain.truncate(cut);
            match compression {
                Compression::Auto => writer.text(&mut out, &plain),
                _ => writer.message_with(&mut out, OpCode::Text, plain.as_bytes(), compression),
            }
            sent.push((Seen::Text(plain.into_bytes()), Some(compression)));
        } else {
            let mut plain = body.repeat(repeat);
            plain.truncate(MAX_PLAIN);
            match compression {
                Compression::Auto => writer.binary(&mut out, &plain),
                _ => writer.message_with(&mut out, OpCode::Binary, &plain, compression),
            }
            sent.push((Seen::Binary(plain), Some(compression)));
        }
        if h & 8 != 0 {
            writer.ping(&mut out, &[h]).unwrap();
            sent.push((Seen::Ping(vec![h]), None));
        }
    }
    let wire = out.as_slice().to_vec();
    check_wire(
        &wire,
        writer_role,
        writer_bits,
        writer_resets,
        fragment_size,
        &config,
        &sent,
    );

    let mut expected = Vec::new();
    for (message, _) in &sent {
        match message {
            Seen::Text(bytes) | Seen::Binary(bytes) if bytes.len() > limit => {
                expected.push(Seen::Error(Error::MessageTooLarge { limit }));
                break;
            }
            other => expected.push(other.clone()),
        }
    }
    let limits = Limits::client()
        .with_max_frame_size(1 << 20)
        .with_max_message_size(limit)
        .with_max_fragments(usize::MAX);
    let reader = || {
        let mut reader = FrameReader::new(reader_role, limits);
        let decoder = PerMessageDeflate::new(reader_role, &params, &config)
            .into_parts()
            .0;
        reader.set_extension(Box::new(decoder));
        reader
    };
    let whole = read_all(reader(), &wire, &[], limit);
    assert_eq!(whole, expected, "round trip");
    let split = read_all(reader(), &wire, pieces, limit);
    assert_eq!(split, whole, "whole and in pieces differ");
}

/// Parses the writer's frames and checks them against what was sent: RSV1 only on a
/// compressed message's first frame, per the policy and the window, fragments within the
/// fragment size, and every compressed payload inflating to its plaintext with a window of
/// the negotiated size (RFC 7692 §7.1.2).
fn check_wire(
    mut wire: &[u8],
    role: Role,
    bits: u8,
    resets: bool,
    fragment_size: Option<usize>,
    config: &DeflateConfig,
    sent: &[(Seen, Option<Compression>)],
) {
    let mut inflater = Decompress::new_with_window_bits(false, bits.max(9));
    let mut sent = sent.iter();
    // The data message being assembled: first frame's RSV, payload so far.
    let mut assembling: Option<(u8, Vec<u8>)> = None;
    while !wire.is_empty() {
        let (b0, b1) = (wire[0], wire[1]);
        let (mut len, mut at) = (usize::from(b1 & 0x7f), 2);
        if len == 126 {
            len = usize::from(u16::from_be_bytes([wire[2], wire[3]]));
            at = 4;
        } else if len == 127 {
            len = u64::from_be_bytes(wire[2..10].try_into().unwrap()) as usize;
            at = 10;
        }
        assert_eq!(b1 & 0x80 != 0, role == Role::Client, "masking");
        let mut payload = if b1 & 0x80 != 0 {
            let key: [u8; 4] = wire[at..at + 4].try_into().unwrap();
            at += 4;
            let mut payload = wire[at..at + len].to_vec();
            for (i, b) in payload.iter_mut().enumerate() {
                *b ^= key[i % 4];
            }
            payload
        } else {
            wire[at..at + len].to_vec()
        };
        wire = &wire[at + len..];
        let (fin, rsv, opcode) = (b0 & 0x80 != 0, (b0 >> 4) & 7, b0 & 0x0f);
        if opcode == 0x9 {
            assert_eq!(rsv, 0, "RSV on a ping");
            assert_eq!(sent.next().map(|s| &s.0), Some(&Seen::Ping(payload)));
            continue;
        }
        if let Some(size) = fragment_size {
            assert!(
                len <= size,
                "a frame of {len} bytes past the fragment size {size}"
            );
        }
        match (&mut assembling, opcode) {
            (None, 0x1 | 0x2) => {
                assert!(rsv == 0 || rsv == 0b100, "RSV {rsv:#05b}");
                assembling = Some((rsv, std::mem::take(&mut payload)));
            }
            (Some((_, so_far)), 0x0) => {
                assert_eq!(rsv, 0, "RSV on a continuation frame");
                so_far.extend_from_slice(&payload);
            }
            _ => panic!("unexpected frame {b0:#04x}"),
        }
        if !fin {
            continue;
        }
        let (rsv, payload) = assembling.take().unwrap();
        let Some((Seen::Text(plain) | Seen::Binary(plain), Some(compression))) = sent.next() else {
            panic!("a data message that was not sent");
        };
        let compressed = rsv != 0;
        match compression {
            Compression::Never => assert!(!compressed, "compressed though Never"),
            Compression::Always => assert_eq!(compressed, bits >= 9, "Always, window {bits}"),
            Compression::Auto => {
                if plain.len() < config.min_size || bits < 9 {
                    assert!(!compressed, "compressed below min_size or with window 8");
                }
                if compressed && config.only_if_smaller {
                    assert!(payload.len() < plain.len(), "compressed but not smaller");
                }
            }
        }
        if !compressed {
            assert_eq!(&payload, plain);
            continue;
        }
        let mut data = payload;
        data.extend_from_slice(&TAIL);
        let mut out = Vec::with_capacity(plain.len() + 64);
        let mut input = &data[..];
        while !input.is_empty() {
            let before = inflater.total_in();
            out.reserve(256);
            let status = inflater
                .decompress_vec(input, &mut out, FlushDecompress::Sync)
                .unwrap_or_else(|e| panic!("does not inflate with a {bits}-bit window: {e}"));
            assert_ne!(status, Status::StreamEnd, "the encoder ended the stream");
            input = &input[(inflater.total_in() - before) as usize..];
        }
        assert_eq!(&out, plain, "inflated with a {bits}-bit window");
        if resets {
            inflater.reset(false);
        }
    }
    assert!(assembling.is_none());
    assert_eq!(sent.next(), None, "sent but not on the wire");
}
