//! permessage-deflate's transform: round trips through the frame reader and writer, the
//! RFC 7692 §7.2.3 examples, limits while inflating, policy, and the standalone
//! inflaters.

use std::io::Write;

use super::*;
use crate::buf::{ReadBuf, WriteBuf};
use crate::ws::{
    CloseCode, Compression, Error, FrameReader, FrameWriter, Limits, MAX_HEADER_LEN, MaskSource,
    Message, OpCode, ReadEvent, Role,
};

/// Negotiated parameters, as the two sides would agree on them.
pub(super) fn params(
    server_no_context_takeover: bool,
    client_no_context_takeover: bool,
    server_bits: u8,
    client_bits: u8,
) -> DeflateParams {
    DeflateParams {
        server_no_context_takeover,
        client_no_context_takeover,
        server_max_window_bits: server_bits,
        client_max_window_bits: client_bits,
    }
}

// --- the transform through the reader and writer ---

struct Pair {
    writer: FrameWriter,
    reader: FrameReader,
    out: WriteBuf,
}

/// A writer in `writer_role` and a reader for the other end, both with permessage-deflate.
fn pair(writer_role: Role, params: &DeflateParams, config: &DeflateConfig, limits: Limits) -> Pair {
    let reader_role = match writer_role {
        Role::Client => Role::Server,
        Role::Server => Role::Client,
    };
    let mut writer = FrameWriter::new(writer_role, MaskSource::seeded(3));
    let (_, encoder) = PerMessageDeflate::new(writer_role, params, config).into_parts();
    writer.set_extension(Box::new(encoder));
    let mut reader = FrameReader::new(reader_role, limits);
    let (decoder, _) = PerMessageDeflate::new(reader_role, params, config).into_parts();
    reader.set_extension(Box::new(decoder));
    Pair {
        writer,
        reader,
        out: WriteBuf::new(64, MAX_HEADER_LEN),
    }
}

/// Everything the reader makes of `bytes`, fed in chunks of `chunk` bytes.
fn read_all(reader: &mut FrameReader, bytes: &[u8], chunk: usize) -> Vec<Result<Vec<u8>, Error>> {
    let mut buf = ReadBuf::with_capacity(64);
    let mut seen = Vec::new();
    for piece in bytes.chunks(chunk.max(1)) {
        reader.feed(&mut buf, piece);
        loop {
            match reader.poll(&mut buf) {
                Ok(ReadEvent::Message(Message::Text(t))) => seen.push(Ok(t.as_bytes().to_vec())),
                Ok(ReadEvent::Message(Message::Binary(b))) => seen.push(Ok(b.to_vec())),
                Ok(ReadEvent::Message(_)) => {}
                Ok(ReadEvent::NeedMore) => break,
                Err(e) => {
                    seen.push(Err(e));
                    return seen;
                }
            }
        }
    }
    seen
}

/// Incompressible bytes (xorshift64).
fn noise(n: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

fn json(n: usize) -> String {
    let mut s = String::from("[");
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!(
            "{{\"s\":\"BTC-USDT\",\"p\":\"{}.{}\",\"q\":\"0.0{}\"}},",
            60_000 + i * 7 % 1000,
            i % 100,
            i % 9
        ));
        i += 1;
    }
    s.truncate(n);
    s
}

#[test]
fn round_trips_in_both_roles_with_and_without_context_takeover() {
    let messages: Vec<String> = (0..40).map(|i| json(64 + i * 97)).collect();
    for role in [Role::Client, Role::Server] {
        for (reset, bits) in [(false, 15), (true, 15), (false, 9), (true, 9), (false, 12)] {
            let p = params(reset, reset, bits, bits);
            let config = DeflateConfig::default();
            let mut pair = pair(role, &p, &config, Limits::client());
            for m in &messages {
                pair.writer.text(&mut pair.out, m);
            }
            let wire = pair.out.as_slice().to_vec();
            let plain: usize = messages.iter().map(String::len).sum();
            assert!(
                wire.len() * 3 < plain,
                "{role:?} reset={reset} bits={bits}: {} wire bytes for {plain}",
                wire.len()
            );
            for chunk in [usize::MAX, 7, 1] {
                let mut reader = pair_reader(role, &p, &config);
                let seen = read_all(&mut reader, &wire, chunk);
                let expected: Vec<_> = messages.iter().map(|m| Ok(m.as_bytes().to_vec())).collect();
                assert_eq!(
                    seen, expected,
                    "{role:?} reset={reset} bits={bits} chunk={chunk}"
                );
            }
        }
    }
}

fn pair_reader(writer_role: Role, params: &DeflateParams, config: &DeflateConfig) -> FrameReader {
    pair(writer_role, params, config, Limits::client()).reader
}

#[test]
fn context_takeover_makes_repeats_cheaper_and_no_takeover_does_not() {
    let message = json(300);
    for (reset, expect_smaller) in [(false, true), (true, false)] {
        let p = params(reset, reset, 15, 15);
        let mut pair = pair(
            Role::Server,
            &p,
            &DeflateConfig::default(),
            Limits::client(),
        );
        pair.writer.text(&mut pair.out, &message);
        let first = pair.out.len();
        pair.writer.text(&mut pair.out, &message);
        let second = pair.out.len() - first;
        assert_eq!(
            second < first / 2,
            expect_smaller,
            "reset={reset}: {first} then {second}"
        );
        let seen = read_all(&mut pair.reader, pair.out.as_slice(), usize::MAX);
        assert_eq!(seen.len(), 2);
    }
}

#[test]
fn rsv1_only_on_the_first_fragment_and_never_on_control_frames() {
    let p = params(false, false, 15, 15);
    let mut pair = pair(
        Role::Server,
        &p,
        &DeflateConfig::default(),
        Limits::client(),
    );
    pair.writer.set_fragment_size(Some(16));
    let message = json(2000);
    pair.writer.text(&mut pair.out, &message);
    pair.writer.ping(&mut pair.out, b"ping").unwrap();
    let wire = pair.out.as_slice().to_vec();
    assert_eq!(wire[0], 0x41, "first fragment: RSV1 + Text, FIN clear");
    let mut at = 0;
    let mut frames = Vec::new();
    while at < wire.len() {
        let len = usize::from(wire[at + 1] & 0x7f);
        frames.push(wire[at]);
        at += 2 + len;
    }
    assert!(frames.len() > 3);
    assert!(
        frames[1..frames.len() - 1].iter().all(|&b0| b0 & 0x70 == 0),
        "{frames:x?}"
    );
    assert_eq!(*frames.last().unwrap(), 0x89, "ping: no RSV bits");
    let seen = read_all(&mut pair.reader, &wire, 5);
    assert_eq!(seen, vec![Ok(message.into_bytes())]);
}

/// RFC 7692 §7.2.3.1-§7.2.3.4: the worked examples, as a client would receive them.
#[test]
fn rfc7692_examples_inflate() {
    let p = params(false, false, 15, 15);
    let cases: &[&[u8]] = &[
        // §7.2.3.1: one compressed frame.
        &[0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00],
        // §7.2.3.1: the same, fragmented.
        &[
            0x41, 0x03, 0xf2, 0x48, 0xcd, 0x80, 0x04, 0xc9, 0xc9, 0x07, 0x00,
        ],
        // §7.2.3.3: a stored (uncompressed) deflate block.
        &[
            0xc1, 0x0b, 0x00, 0x05, 0x00, 0xfa, 0xff, 0x48, 0x65, 0x6c, 0x6c, 0x6f, 0x00,
        ],
        // §7.2.3.4: a final block (BFINAL set); the next message starts a new stream.
        &[0xc1, 0x07, 0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00],
    ];
    for wire in cases {
        let mut reader = pair_reader(Role::Server, &p, &DeflateConfig::default());
        let mut twice = wire.to_vec();
        twice.extend_from_slice(wire);
        let seen = read_all(&mut reader, &twice, 1);
        assert_eq!(
            seen,
            vec![Ok(b"Hello".to_vec()), Ok(b"Hello".to_vec())],
            "{wire:x?}"
        );
    }
    // §7.2.3.2: with context takeover the second "Hello" refers back to the first.
    let mut reader = pair_reader(Role::Server, &p, &DeflateConfig::default());
    let wire = [
        0xc1, 0x07, 0xf2, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0xc1, 0x05, 0xf2, 0x00, 0x11, 0x00,
        0x00,
    ];
    let seen = read_all(&mut reader, &wire, usize::MAX);
    assert_eq!(seen, vec![Ok(b"Hello".to_vec()), Ok(b"Hello".to_vec())]);
}

#[test]
fn inflated_size_limit_is_exact_and_checked_while_inflating() {
    let limit = 10_000;
    let limits = Limits {
        max_message_size: limit,
        ..Limits::client()
    };
    let config = DeflateConfig::default();
    let p = params(false, false, 15, 15);
    for (len, fragment) in [
        (limit, None),
        (limit + 1, None),
        (limit, Some(100)),
        (limit + 1, Some(100)),
    ] {
        let mut pair = pair(Role::Server, &p, &config, limits);
        pair.writer.set_fragment_size(fragment);
        let message = "a".repeat(len);
        pair.writer.text(&mut pair.out, &message);
        assert!(
            pair.out.len() < 200,
            "highly compressible: {} bytes",
            pair.out.len()
        );
        let seen = read_all(&mut pair.reader, pair.out.as_slice(), usize::MAX);
        if len <= limit {
            assert_eq!(seen, vec![Ok(message.into_bytes())]);
        } else {
            assert_eq!(seen, vec![Err(Error::MessageTooLarge { limit })]);
            assert_eq!(
                Error::MessageTooLarge { limit }.close_code(),
                Some(CloseCode::MESSAGE_TOO_BIG)
            );
        }
    }
}

#[test]
fn corrupt_compressed_data_is_1007() {
    let p = params(false, false, 15, 15);
    let mut reader = pair_reader(Role::Server, &p, &DeflateConfig::default());
    // BTYPE 11 (reserved) in the first block header.
    let seen = read_all(&mut reader, &[0xc1, 0x03, 0xff, 0xff, 0xff], usize::MAX);
    let [Err(error)] = seen.as_slice() else {
        panic!("{seen:?}")
    };
    assert_eq!(error.close_code(), Some(CloseCode::INVALID_PAYLOAD));
    // Bytes after a final block within the same message are left unused, as zlib does (RFC
    // 7692 §7.2.3.4's example has one), and the next message starts a new stream.
    let mut reader = pair_reader(Role::Server, &p, &DeflateConfig::default());
    let seen = read_all(
        &mut reader,
        &[
            0xc1, 0x09, 0xf3, 0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00, 0x41, 0x41, 0xc1, 0x07, 0xf2,
            0x48, 0xcd, 0xc9, 0xc9, 0x07, 0x00,
        ],
        usize::MAX,
    );
    assert_eq!(seen, vec![Ok(b"Hello".to_vec()), Ok(b"Hello".to_vec())]);
}

#[test]
fn compressed_text_must_be_utf8_and_fails_on_the_fragment_that_breaks_it() {
    let p = params(false, false, 15, 15);
    let config = DeflateConfig::default();
    let mut pair = pair(Role::Server, &p, &config, Limits::client());
    pair.writer.set_fragment_size(Some(8));
    // A Binary message's bytes, sent with the Text opcode via Always on raw invalid bytes.
    let mut invalid = json(500).into_bytes();
    invalid[250] = 0xff;
    pair.writer
        .message_with(&mut pair.out, OpCode::Binary, &invalid, Compression::Always);
    let mut wire = pair.out.as_slice().to_vec();
    wire[0] = (wire[0] & 0xf0) | 0x1; // relabel as Text
    let seen = read_all(&mut pair.reader, &wire, usize::MAX);
    assert_eq!(seen, vec![Err(Error::InvalidUtf8)]);
    // One frame: validated once, whole, and still refused.
    let mut pair = pair_with(Role::Server, &p, &config);
    pair.writer
        .message_with(&mut pair.out, OpCode::Binary, &invalid, Compression::Always);
    let mut wire = pair.out.as_slice().to_vec();
    assert_eq!(wire[0], 0xc2);
    wire[0] = 0xc1;
    let seen = read_all(&mut pair.reader, &wire, 3);
    assert_eq!(seen, vec![Err(Error::InvalidUtf8)]);
    assert_eq!(
        Error::InvalidUtf8.close_code(),
        Some(CloseCode::INVALID_PAYLOAD)
    );
}

fn pair_with(role: Role, params: &DeflateParams, config: &DeflateConfig) -> Pair {
    pair(role, params, config, Limits::client())
}

#[test]
fn policy_threshold_smaller_only_and_per_message_override() {
    let p = params(false, false, 15, 15);
    let config = DeflateConfig {
        min_size: 100,
        ..DeflateConfig::default()
    };
    let rsv1 = |writer_call: &dyn Fn(&mut Pair)| {
        let mut pair = pair(Role::Server, &p, &config, Limits::client());
        writer_call(&mut pair);
        let wire = pair.out.as_slice().to_vec();
        let seen = read_all(&mut pair.reader, &wire, usize::MAX);
        assert_eq!(seen.len(), 1);
        assert!(seen[0].is_ok());
        wire[0] & 0x40 != 0
    };
    let small = json(99);
    let big = json(400);
    let noise = noise(400, 1);
    assert!(
        !rsv1(&|p| p.writer.text(&mut p.out, &small)),
        "below min_size"
    );
    assert!(rsv1(&|p| p.writer.text(&mut p.out, &big)));
    assert!(
        !rsv1(&|p| p.writer.binary(&mut p.out, &noise)),
        "incompressible"
    );
    assert!(rsv1(&|p| p.writer.message_with(
        &mut p.out,
        OpCode::Text,
        small.as_bytes(),
        Compression::Always
    )));
    assert!(rsv1(&|p| p.writer.message_with(
        &mut p.out,
        OpCode::Binary,
        &noise,
        Compression::Always
    )));
    assert!(!rsv1(&|p| p.writer.message_with(
        &mut p.out,
        OpCode::Text,
        big.as_bytes(),
        Compression::Never
    )));
    assert!(rsv1(&|p| p.writer.message_with(
        &mut p.out,
        OpCode::Text,
        b"",
        Compression::Always
    )));
}

#[test]
fn discarded_output_does_not_desync_context_takeover() {
    // Incompressible messages are compressed, found larger, and sent plain; the compressor
    // must forget them or the next compressed message refers to bytes the peer never saw.
    let p = params(false, false, 15, 15);
    let mut pair = pair(
        Role::Client,
        &p,
        &DeflateConfig::default(),
        Limits::client(),
    );
    let mut expected = Vec::new();
    for i in 0..30u32 {
        let noise = noise(300, u64::from(i) + 1);
        pair.writer.binary(&mut pair.out, &noise);
        expected.push(Ok(noise));
        let text = json(200 + i as usize);
        pair.writer.text(&mut pair.out, &text);
        expected.push(Ok(text.into_bytes()));
    }
    let wire = pair.out.as_slice().to_vec();
    assert_eq!(read_all(&mut pair.reader, &wire, 13), expected);
}

#[test]
fn eight_bit_window_sends_uncompressed() {
    let p = params(false, false, 8, 8);
    for role in [Role::Client, Role::Server] {
        let mut pair = pair(role, &p, &DeflateConfig::default(), Limits::client());
        let message = json(1000);
        pair.writer.message_with(
            &mut pair.out,
            OpCode::Text,
            message.as_bytes(),
            Compression::Always,
        );
        assert_eq!(pair.out.as_slice()[0] & 0x40, 0, "{role:?}: RSV1 clear");
        let wire = pair.out.as_slice().to_vec();
        assert_eq!(
            read_all(&mut pair.reader, &wire, 100),
            vec![Ok(message.into_bytes())]
        );
    }
}

// --- standalone inflaters ---

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

#[test]
fn standalone_inflaters_round_trip_and_enforce_the_limit() {
    let data = json(50_000).into_bytes();
    let gz = gzip(&data);
    let mut raw_encoder =
        flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
    raw_encoder.write_all(&data).unwrap();
    let raw = raw_encoder.finish().unwrap();
    let mut zlib_encoder = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    zlib_encoder.write_all(&data).unwrap();
    let zlib = zlib_encoder.finish().unwrap();

    let mut inflater = PayloadInflater::new();
    for _ in 0..2 {
        // Twice: the reused state is reset between payloads.
        let mut out = Vec::new();
        inflater.gzip(&gz, &mut out, data.len()).unwrap();
        assert_eq!(out, data);
        out.clear();
        inflater.raw(&raw, &mut out, data.len()).unwrap();
        assert_eq!(out, data);
        out.clear();
        inflater.zlib(&zlib, &mut out, data.len()).unwrap();
        assert_eq!(out, data);
    }
    let limit = data.len() - 1;
    let too_large = Err(InflateError::TooLarge { limit });
    let mut out = Vec::new();
    assert_eq!(inflate_gzip(&gz, &mut out, limit), too_large);
    assert!(out.capacity() <= limit + 1, "grew to {}", out.capacity());
    assert_eq!(inflate_raw(&raw, &mut Vec::new(), limit), too_large);
    assert_eq!(inflate_zlib(&zlib, &mut Vec::new(), limit), too_large);
}

#[test]
fn standalone_inflaters_reject_damaged_input() {
    let data = json(5_000).into_bytes();
    let gz = gzip(&data);
    let max = 1 << 20;
    let mut bad_crc = gz.clone();
    let at = bad_crc.len() - 6;
    bad_crc[at] ^= 1;
    assert_eq!(
        inflate_gzip(&bad_crc, &mut Vec::new(), max),
        Err(InflateError::Corrupt)
    );
    assert_eq!(
        inflate_gzip(&gz[..gz.len() - 3], &mut Vec::new(), max),
        Err(InflateError::Truncated)
    );
    assert_eq!(
        inflate_gzip(&gz[..5], &mut Vec::new(), max),
        Err(InflateError::Truncated)
    );
    let mut trailing = gz.clone();
    trailing.push(0);
    assert_eq!(
        inflate_gzip(&trailing, &mut Vec::new(), max),
        Err(InflateError::Corrupt)
    );
    assert_eq!(
        inflate_gzip(b"not gzip at all", &mut Vec::new(), max),
        Err(InflateError::Corrupt)
    );
    assert_eq!(
        inflate_raw(&[0xff, 0xff], &mut Vec::new(), max),
        Err(InflateError::Corrupt)
    );
    assert_eq!(
        inflate_zlib(&[0x78, 0x9c], &mut Vec::new(), max),
        Err(InflateError::Truncated)
    );
}

#[test]
fn encoders_without_context_takeover_share_a_compressor_safely() {
    // Two connections on one thread, interleaved: the shared compressor is reset between
    // messages, so each peer inflates exactly what was sent to it.
    let p = params(true, true, 15, 15);
    let config = DeflateConfig::default();
    let mut a = pair(Role::Server, &p, &config, Limits::client());
    let mut b = pair(Role::Server, &p, &config, Limits::client());
    let mut sent_a = Vec::new();
    let mut sent_b = Vec::new();
    for i in 0..50 {
        let ma = json(100 + i * 13);
        let mb = format!("{}{}", "b".repeat(i), json(300 + i));
        a.writer.text(&mut a.out, &ma);
        b.writer.text(&mut b.out, &mb);
        sent_a.push(Ok(ma.into_bytes()));
        sent_b.push(Ok(mb.into_bytes()));
    }
    assert_eq!(a.out.as_slice()[0], 0xc1, "compressed");
    let wire_a = a.out.as_slice().to_vec();
    let wire_b = b.out.as_slice().to_vec();
    assert_eq!(read_all(&mut a.reader, &wire_a, 64), sent_a);
    assert_eq!(read_all(&mut b.reader, &wire_b, 64), sent_b);
}

#[test]
fn prepared_message_goes_compressed_where_it_fits_and_plain_elsewhere() {
    let config = DeflateConfig::default();
    let update = json(600);
    let prepared = PreparedMessage::text(&update, &config);
    let compressed_len = prepared.compressed().expect("compressible").len();
    assert!(compressed_len < update.len() / 2);
    let small = PreparedMessage::text("tiny", &config);
    assert_eq!(small.compressed(), None, "below min_size");

    // With context takeover: prepared messages interleaved with ordinary ones, which keep
    // compressing against history, must never desynchronise the peer.
    for p in [params(false, false, 15, 15), params(true, true, 15, 15)] {
        let mut pair = pair(Role::Server, &p, &config, Limits::client());
        let mut expected = Vec::new();
        for i in 0..20 {
            let own = json(300 + i);
            pair.writer.text(&mut pair.out, &own);
            expected.push(Ok(own.into_bytes()));
            let before = pair.out.len();
            pair.writer.prepared(&mut pair.out, &prepared);
            let frame = &pair.out.as_slice()[before..];
            assert_eq!(frame[0], 0xc1, "sent compressed");
            assert!(frame.len() < compressed_len + 10);
            expected.push(Ok(update.clone().into_bytes()));
            pair.writer.prepared(&mut pair.out, &small);
            expected.push(Ok(b"tiny".to_vec()));
        }
        let wire = pair.out.as_slice().to_vec();
        assert_eq!(read_all(&mut pair.reader, &wire, 100), expected, "{p:?}");
    }

    // A smaller negotiated window than the prepared one: sent plain.
    let mut narrow = pair(
        Role::Server,
        &params(false, false, 10, 15),
        &config,
        Limits::client(),
    );
    narrow.writer.prepared(&mut narrow.out, &prepared);
    assert_eq!(narrow.out.as_slice()[0], 0x81);
    let wire = narrow.out.as_slice().to_vec();
    assert_eq!(
        read_all(&mut narrow.reader, &wire, 64),
        vec![Ok(update.clone().into_bytes())]
    );

    // No extension at all: plain.
    let mut writer = FrameWriter::new(Role::Server, MaskSource::seeded(1));
    let mut out = WriteBuf::new(64, MAX_HEADER_LEN);
    writer.prepared(&mut out, &prepared);
    assert_eq!(out.as_slice()[0], 0x81);
    assert_eq!(&out.as_slice()[4..], update.as_bytes());
}

#[test]
fn message_into_a_slice_compresses_as_message_does_and_a_short_slice_moves_nothing() {
    let messages: Vec<String> = (0..20).map(|i| json(64 + i * 211)).collect();
    for role in [Role::Client, Role::Server] {
        let p = params(false, false, 15, 15);
        let config = DeflateConfig::default();
        let mut appending = pair(role, &p, &config, Limits::client());
        let mut slicing = pair(role, &p, &config, Limits::client());
        let mut wire = Vec::new();
        for m in &messages {
            appending.writer.text(&mut appending.out, m);
            // A slice too short for the bound is refused before the compressor moves: the
            // retry below must still produce the same bytes as the appending writer.
            let mut short = [0u8; 8];
            assert!(matches!(
                slicing
                    .writer
                    .message_into(&mut short, OpCode::Text, m.as_bytes()),
                Err(Error::OutputTooSmall { .. })
            ));
            let mut dst = vec![0u8; slicing.writer.max_encoded_len(m.len())];
            let n = slicing
                .writer
                .message_into(&mut dst, OpCode::Text, m.as_bytes())
                .expect("the bound is enough");
            wire.extend_from_slice(&dst[..n]);
        }
        assert_eq!(wire, appending.out.as_slice(), "{role:?}");
        let expected: Vec<_> = messages
            .iter()
            .map(|m| Ok(m.clone().into_bytes()))
            .collect();
        assert_eq!(
            read_all(&mut slicing.reader, &wire, 7),
            expected,
            "{role:?}"
        );
    }
}

#[test]
fn a_server_connection_queues_prepared_messages_by_reference_and_the_peer_decodes_them() {
    use crate::ws::{Buffers, Config, Connection};
    let config = DeflateConfig::default();
    let update = json(600);
    let prepared = PreparedMessage::text(&update, &config);
    let compressed = prepared.compressed_frame().expect("compressible").clone();
    let plain = prepared.plain_frame().clone();
    // (negotiated, the frame every prepared message must share)
    let cases = [
        (params(true, true, 15, 15), &compressed),
        (params(false, false, 15, 15), &compressed),
        (params(false, false, 10, 15), &plain),
    ];
    for (p, shared) in cases {
        let mut conn = Connection::new(
            Role::Server,
            Config::server(),
            MaskSource::seeded(1),
            std::time::Instant::now(),
        );
        let (decoder, encoder) = PerMessageDeflate::new(Role::Server, &p, &config).into_parts();
        conn.set_extension(Box::new(decoder), Box::new(encoder));
        let mut bufs = Buffers::new(&Config::server());
        let before = shared.share_count();
        let mut expected = Vec::new();
        for i in 0..5 {
            let own = json(300 + i);
            conn.sender(&mut bufs).text(&own).unwrap();
            conn.sender(&mut bufs).prepared(&prepared).unwrap();
            expected.push(Ok(own.into_bytes()));
            expected.push(Ok(update.clone().into_bytes()));
        }
        assert_eq!(
            shared.share_count(),
            before + 5,
            "queued by reference: {p:?}"
        );
        let mut wire = Vec::new();
        loop {
            let mut slices = [std::io::IoSlice::new(&[]); 16];
            let filled = conn.output_vectored(&bufs, &mut slices);
            if filled == 0 {
                break;
            }
            let n: usize = slices[..filled].iter().map(|s| s.len()).sum();
            for slice in &slices[..filled] {
                wire.extend_from_slice(slice);
            }
            conn.advance_output(&mut bufs, n);
        }
        assert_eq!(shared.share_count(), before, "released once written");
        let mut reader = FrameReader::new(Role::Client, Limits::client());
        let (client_decoder, _) = PerMessageDeflate::new(Role::Client, &p, &config).into_parts();
        reader.set_extension(Box::new(client_decoder));
        assert_eq!(read_all(&mut reader, &wire, 77), expected, "{p:?}");
    }
}
