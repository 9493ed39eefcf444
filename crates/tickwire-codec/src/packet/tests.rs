//! The wire layout byte by byte, one test per [`PacketError`] variant, and the compression
//! policy's decisions. Round trips over every codec, size and split point are in
//! `tests/packet_roundtrip.rs`.

use super::*;
use crate::buf::{ReadBuf, WriteBuf};

fn encode(config: &PacketConfig, request_id: u64, payload: &[u8]) -> (Header, Vec<u8>) {
    let mut out = WriteBuf::new(64, 0);
    let header = PacketWriter::new(config.clone())
        .encode(&mut out, request_id, payload)
        .unwrap();
    (header, out.as_slice().to_vec())
}

/// Decodes `bytes` with a fresh reader; the error, or the single packet's header and payload.
fn decode(config: &PacketConfig, bytes: &[u8]) -> Result<(Header, Vec<u8>), PacketError> {
    let mut out = Vec::new();
    match PacketReader::new(config.clone()).decode(bytes, &mut out)? {
        ReadEvent::Packet(packet) => Ok((packet.header, packet.payload.to_vec())),
        ReadEvent::NeedMore { needed } => panic!("need {needed} of {} bytes", bytes.len()),
    }
}

/// The error `bytes` gives, checked to come from the first `shown` bytes alone too.
fn error_shown_by(config: &PacketConfig, bytes: &[u8], shown: usize) -> PacketError {
    let error = decode(config, bytes).unwrap_err();
    let mut out = Vec::new();
    let early = PacketReader::new(config.clone()).decode(&bytes[..shown], &mut out);
    assert_eq!(early, Err(error.clone()), "from the first {shown} bytes");
    error
}

#[test]
fn header_layout_is_little_endian_at_fixed_offsets() {
    let config = PacketConfig::client();
    let (header, bytes) = encode(&config, 0x0102_0304_0506_0708, b"hi");
    assert_eq!(
        bytes,
        [
            0x54, 0x57, 0x01, 0x00, 0x02, 0x00, 0x00, 0x00, 0x08, 0x07, 0x06, 0x05, 0x04, 0x03,
            0x02, 0x01, b'h', b'i'
        ]
    );
    assert_eq!(header, Header::new(0x0102_0304_0506_0708, 2));
    assert_eq!(header.header_len(), BASE_HEADER_LEN);
}

#[test]
fn checksum_is_crc32c_of_the_header_before_it_and_the_payload() {
    let config = PacketConfig::client().with_checksum(true);
    let (header, bytes) = encode(&config, 7, b"abc");
    assert_eq!(bytes[3], 0x04, "checksum flag");
    assert_eq!(bytes.len(), 20 + 3);
    let expected = crc32c::crc32c_append(crc32c::crc32c(&bytes[..16]), b"abc");
    assert_eq!(bytes[16..20], expected.to_le_bytes());
    assert_eq!(header.checksum, Some(expected));
    assert_eq!(decode(&config, &bytes).unwrap(), (header, b"abc".to_vec()));
}

#[test]
fn bad_magic_is_refused_at_the_first_wrong_byte() {
    let config = PacketConfig::server();
    assert_eq!(
        error_shown_by(&config, b"GET / HTTP/1.1\r\n\r\n", 1),
        PacketError::BadMagic
    );
    assert_eq!(
        error_shown_by(&config, &[0x54, 0x00, 1, 0], 2),
        PacketError::BadMagic
    );
}

#[test]
fn unknown_version_and_reserved_flags_are_refused() {
    let config = PacketConfig::server();
    let (_, mut bytes) = encode(&config, 1, b"x");
    bytes[2] = 0x02;
    assert_eq!(
        error_shown_by(&config, &bytes, 3),
        PacketError::UnsupportedVersion(2)
    );
    let (_, mut bytes) = encode(&config, 1, b"x");
    bytes[3] = 0x08;
    assert_eq!(
        error_shown_by(&config, &bytes, 4),
        PacketError::ReservedFlags(0x08)
    );
}

#[test]
fn a_length_over_the_limit_is_refused_from_the_first_eight_bytes() {
    let config = PacketConfig::server();
    let mut bytes = vec![0x54, 0x57, 0x01, 0x00];
    bytes.extend_from_slice(&u32::MAX.to_le_bytes());
    let mut out = Vec::new();
    let result = PacketReader::new(config).decode(&bytes, &mut out);
    assert_eq!(
        result,
        Err(PacketError::PayloadTooLarge {
            len: u32::MAX,
            limit: 1 << 20
        })
    );
    assert_eq!(out.capacity(), 0, "nothing allocated for it");
}

#[test]
fn an_uncompressed_length_over_the_limit_is_refused_before_the_payload() {
    let config = PacketConfig::server();
    // Flags: LZ4; 5 wire bytes claiming 2 MiB.
    let mut bytes = vec![0x54, 0x57, 0x01, 0x01, 5, 0, 0, 0];
    bytes.extend_from_slice(&9u64.to_le_bytes());
    bytes.extend_from_slice(&(2u32 << 20).to_le_bytes());
    let error = error_shown_by(&config, &bytes, 20);
    assert_eq!(
        error,
        PacketError::PayloadTooLarge {
            len: 2 << 20,
            limit: 1 << 20
        }
    );
    assert_eq!(error.fault(), Fault::Limit);
}

#[test]
fn a_required_checksum_must_be_there_and_match() {
    let required = PacketConfig::server().with_checksum(true);
    let (_, bytes) = encode(&PacketConfig::server(), 3, b"payload");
    assert_eq!(
        error_shown_by(&required, &bytes, 16),
        PacketError::MissingChecksum
    );
    let (header, mut bytes) = encode(&required, 3, b"payload");
    let last = bytes.len() - 1;
    bytes[last] ^= 0x20;
    let actual = crc32c::crc32c_append(crc32c::crc32c(&bytes[..16]), &bytes[20..]);
    assert_eq!(
        decode(&PacketConfig::server(), &bytes),
        Err(PacketError::ChecksumMismatch {
            expected: header.checksum.unwrap(),
            actual
        }),
        "verified when present even if not required"
    );
}

#[test]
fn the_reader_stays_failed_after_an_error() {
    let mut reader = PacketReader::new(PacketConfig::server());
    let mut out = Vec::new();
    assert_eq!(reader.decode(b"X", &mut out), Err(PacketError::BadMagic));
    let (_, good) = encode(&PacketConfig::server(), 1, b"ok");
    assert_eq!(reader.decode(&good, &mut out), Err(PacketError::Failed));
}

#[test]
fn need_more_says_how_many_bytes_the_next_step_needs() {
    let config = PacketConfig::server().with_checksum(true);
    let (_, bytes) = encode(&config, 1, &[9; 100]);
    let mut reader = PacketReader::new(config);
    let mut out = Vec::new();
    for (given, needed) in [
        (0, 16),
        (3, 16),
        (4, 16),
        (16, 20),
        (19, 20),
        (20, 120),
        (119, 120),
    ] {
        assert_eq!(
            reader.decode(&bytes[..given], &mut out),
            Ok(ReadEvent::NeedMore { needed }),
            "{given} bytes"
        );
    }
}

#[test]
fn spare_makes_room_for_the_packet_in_progress() {
    let config = PacketConfig::server();
    let (_, bytes) = encode(&config, 1, &[5; 50_000]);
    let mut reader = PacketReader::new(config);
    let mut buf = ReadBuf::with_capacity(64);
    let mut out = Vec::new();
    reader.feed(&mut buf, &bytes[..20]);
    assert!(matches!(
        reader.poll(&mut buf, &mut out),
        Ok(ReadEvent::NeedMore { needed: 50_016 })
    ));
    assert!(reader.spare(&mut buf).len() >= 50_016 - 20);
    reader.feed(&mut buf, &bytes[20..]);
    let Ok(ReadEvent::Packet(packet)) = reader.poll(&mut buf, &mut out) else {
        panic!("no packet");
    };
    assert_eq!(packet.payload, &[5; 50_000][..]);
    assert!(
        out.is_empty(),
        "an uncompressed payload is borrowed from the read buffer"
    );
    assert!(matches!(
        reader.poll(&mut buf, &mut out),
        Ok(ReadEvent::NeedMore { needed: 16 })
    ));
    assert!(buf.is_empty(), "the packet was released");
}

#[test]
fn policy_none_and_short_payloads_stay_uncompressed() {
    let json = br#"{"e":"trade","s":"BTCUSDT","p":"64000.10","q":"0.010"}"#.repeat(40);
    let (header, _) = encode(&PacketConfig::client(), 1, &json);
    assert_eq!(header.codec, Codec::None);
    #[cfg(feature = "lz4")]
    {
        let lz4 = PacketConfig::client().with_compression(CompressionPolicy::lz4());
        assert_eq!(
            encode(&lz4, 1, &json[..511]).0.codec,
            Codec::None,
            "under min_size"
        );
        assert_eq!(encode(&lz4, 1, &json[..512]).0.codec, Codec::Lz4);
    }
}

#[test]
fn encode_refuses_a_payload_over_the_limit_and_leaves_the_buffer() {
    let mut writer = PacketWriter::new(PacketConfig::server().with_max_payload_len(10));
    let mut out = WriteBuf::new(64, 0);
    out.extend_from_slice(b"queued");
    assert_eq!(
        writer.encode(&mut out, 1, &[0; 11]),
        Err(EncodeError::PayloadTooLarge { len: 11, limit: 10 })
    );
    assert_eq!(out.as_slice(), b"queued");
}

/// A configuration is shared by the connections of many threads (a dictionary inside it
/// too), and each half can move to the thread that drives it. A compile-time check.
#[test]
fn configuration_is_shared_and_halves_move_between_threads() {
    fn shared<T: Send + Sync>() {}
    fn moved<T: Send>() {}
    shared::<PacketConfig>();
    moved::<PacketReader>();
    moved::<PacketWriter>();
}

#[cfg(not(feature = "lz4"))]
#[test]
fn a_codec_not_compiled_in_is_refused_from_the_header() {
    let mut bytes = vec![0x54, 0x57, 0x01, 0x01, 5, 0, 0, 0];
    bytes.extend_from_slice(&9u64.to_le_bytes());
    bytes.extend_from_slice(&100u32.to_le_bytes());
    let error = error_shown_by(&PacketConfig::server(), &bytes, 20);
    assert_eq!(error, PacketError::UnsupportedCodec(Codec::Lz4));
}

#[cfg(feature = "lz4")]
mod lz4 {
    use super::*;
    use crate::compress::DecompressError;

    fn lz4_packet(payload: &[u8]) -> Vec<u8> {
        let config = PacketConfig::client().with_compression(CompressionPolicy::lz4());
        let (header, bytes) = encode(&config, 5, payload);
        assert_eq!(header.codec, Codec::Lz4);
        bytes
    }

    #[test]
    fn a_declared_length_that_differs_from_the_payload_is_refused() {
        let payload = b"abcdefgh".repeat(100);
        for (declared, actual) in [(799u32, 800), (801, 800)] {
            let mut bytes = lz4_packet(&payload);
            bytes[16..20].copy_from_slice(&declared.to_le_bytes());
            assert_eq!(
                decode(&PacketConfig::client(), &bytes),
                Err(PacketError::LengthMismatch { declared, actual })
            );
        }
    }

    #[test]
    fn a_corrupt_block_is_a_decompress_error() {
        let mut bytes = lz4_packet(&b"abcdefgh".repeat(100));
        // Cut the block short by one byte; the wire length follows.
        bytes.pop();
        let wire_len = (bytes.len() - 20) as u32;
        bytes[4..8].copy_from_slice(&wire_len.to_le_bytes());
        assert!(matches!(
            decode(&PacketConfig::client(), &bytes),
            Err(PacketError::Decompress(
                DecompressError::Truncated | DecompressError::Corrupt
            ))
        ));
    }

    #[test]
    fn decompressed_payloads_start_on_a_cache_line_in_a_reused_buffer() {
        let reader_config = PacketConfig::client();
        let mut reader = PacketReader::new(reader_config);
        let mut out = Vec::new();
        // Longer, shorter, then longer again than what the buffer held: each payload whole,
        // aligned, and the buffer never past the limit and the padding.
        for len in [800, 600, 5_000, 700, 5_000] {
            let payload: Vec<u8> = b"0123456789abcdef"
                .iter()
                .copied()
                .cycle()
                .take(len)
                .collect();
            let bytes = lz4_packet(&payload);
            match reader.decode(&bytes, &mut out) {
                Ok(ReadEvent::Packet(packet)) => {
                    assert_eq!(packet.payload, &payload[..]);
                    assert_eq!(packet.payload.as_ptr() as usize % 64, 0, "{len} bytes");
                }
                other => panic!("{len} bytes: {other:?}"),
            }
        }
        assert!(out.capacity() <= 5_000 + 63 + 1);
    }

    #[test]
    fn incompressible_data_is_probed_and_sent_uncompressed() {
        let config = PacketConfig::client().with_compression(CompressionPolicy::lz4());
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..8192)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let (header, bytes) = encode(&config, 1, &noise);
        assert_eq!(header.codec, Codec::None);
        assert_eq!(bytes.len(), 16 + noise.len());
    }
}

#[cfg(feature = "zstd")]
mod zstd {
    use super::*;
    use crate::compress::ZstdDictionary;

    #[test]
    fn a_dictionary_id_the_reader_does_not_know_is_refused() {
        let dictionary = ZstdDictionary::new(42, &br#"{"e":"trade","s":"BTCUSDT"}"#.repeat(20), 3);
        let config = PacketConfig::client()
            .with_compression(CompressionPolicy::zstd())
            .with_dictionary(Some(dictionary));
        let payload = br#"{"e":"trade","s":"BTCUSDT","p":"1"}"#.repeat(30);
        let (header, bytes) = encode(&config, 2, &payload);
        assert_eq!(header.codec, Codec::ZstdDictionary(42));
        assert_eq!(bytes[3] & 0x03, 0x03);
        assert_eq!(bytes[20..24], 42u32.to_le_bytes());
        assert_eq!(decode(&config, &bytes).unwrap().1, payload);
        let other = ZstdDictionary::new(43, b"other", 3);
        let reader = PacketConfig::client().with_dictionary(Some(other));
        assert_eq!(
            error_shown_by(&reader, &bytes, 24),
            PacketError::UnknownDictionary(42)
        );
        assert_eq!(
            error_shown_by(&PacketConfig::client(), &bytes, 24),
            PacketError::UnknownDictionary(42)
        );
    }

    #[cfg(feature = "lz4")]
    #[test]
    fn auto_uses_lz4_below_the_threshold_and_zstd_from_it() {
        let config = PacketConfig::client().with_compression(CompressionPolicy::auto());
        let json = br#"{"e":"depthUpdate","b":[["64000.10","1.5"]]}"#.repeat(2000);
        assert_eq!(
            encode(&config, 1, &json[..(64 << 10) - 1]).0.codec,
            Codec::Lz4
        );
        assert_eq!(encode(&config, 1, &json[..64 << 10]).0.codec, Codec::Zstd);
    }
}
