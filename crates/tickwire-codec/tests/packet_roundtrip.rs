//! Packet round trips: every compression policy compiled in, payloads of many sizes and
//! kinds (text that compresses, random bytes that do not, zeros), decoded whole, byte by
//! byte, at every split point and in random pieces. Whatever the split, the reader returns
//! exactly the payloads and request ids that were written (docs/ARCHITECTURE.md: split invariance).

use proptest::prelude::*;
use tickwire_codec::buf::{ReadBuf, WriteBuf};
#[cfg(feature = "zstd")]
use tickwire_codec::compress::ZstdDictionary;
#[cfg(any(feature = "lz4", feature = "zstd"))]
use tickwire_codec::packet::CompressionPolicy;
use tickwire_codec::packet::{Codec, PacketConfig, PacketReader, PacketWriter, ReadEvent};

type Packets = Vec<(u64, Vec<u8>)>;

/// Every policy this build has, each without and with a checksum.
fn configs() -> Vec<(&'static str, PacketConfig)> {
    let base = PacketConfig::client();
    let policies = vec![
        ("none", base.clone()),
        #[cfg(feature = "lz4")]
        (
            "lz4",
            base.clone().with_compression(CompressionPolicy::lz4()),
        ),
        #[cfg(feature = "zstd")]
        (
            "zstd",
            base.clone().with_compression(CompressionPolicy::zstd()),
        ),
        #[cfg(feature = "zstd")]
        (
            "zstd+dictionary",
            base.clone()
                .with_compression(CompressionPolicy::zstd())
                .with_dictionary(Some(ZstdDictionary::new(7, &text(4096, 99), 3))),
        ),
        #[cfg(all(feature = "lz4", feature = "zstd"))]
        (
            "auto",
            base.clone()
                .with_compression(CompressionPolicy::auto().with_auto_zstd_from(4096)),
        ),
    ];
    let mut all = Vec::new();
    for (name, config) in policies {
        all.push((name, config.clone()));
        all.push((name, config.with_checksum(true)));
    }
    all
}

/// JSON-like market data: repeats enough to compress, varies enough not to be trivial.
fn text(len: usize, seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 80);
    let mut i = seed;
    while out.len() < len {
        out.extend_from_slice(
            format!(
                r#"{{"e":"trade","s":"BTCUSDT","p":"{}.{:02}","q":"0.{:03}","id":{}}},"#,
                64_000 + i % 97,
                i % 100,
                i % 1000,
                1_000_000 + i
            )
            .as_bytes(),
        );
        i = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407)
            >> 11;
    }
    out.truncate(len);
    out
}

fn noise(len: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect()
}

fn payload(kind: u8, len: usize, seed: u64) -> Vec<u8> {
    match kind % 3 {
        0 => text(len, seed),
        1 => noise(len, seed),
        _ => vec![0; len],
    }
}

fn encode(config: &PacketConfig, packets: &Packets) -> Vec<u8> {
    let mut writer = PacketWriter::new(config.clone());
    let mut out = WriteBuf::new(256, 0);
    for (id, payload) in packets {
        let header = writer.encode(&mut out, *id, payload).unwrap();
        assert_eq!(header.payload_len as usize, payload.len());
        if header.codec.is_compressed() {
            assert!(
                header.wire_len < header.payload_len,
                "compressed only when shorter"
            );
        }
    }
    out.as_slice().to_vec()
}

/// Decodes a whole stream from one slice; it must end on a packet boundary.
fn decode_whole(config: &PacketConfig, stream: &[u8]) -> Packets {
    let mut reader = PacketReader::new(config.clone());
    let mut out = Vec::new();
    let mut packets = Vec::new();
    let mut at = 0;
    loop {
        match reader.decode(&stream[at..], &mut out).unwrap() {
            ReadEvent::Packet(packet) => {
                at += packet.wire_size();
                packets.push((packet.request_id(), packet.payload.to_vec()));
            }
            ReadEvent::NeedMore { .. } => {
                assert_eq!(at, stream.len(), "stream ends inside a packet");
                return packets;
            }
        }
    }
}

/// Feeds `stream` to a `ReadBuf` in pieces of the given sizes (cycled), polling after each.
fn decode_fed(config: &PacketConfig, stream: &[u8], sizes: &[usize]) -> Packets {
    let mut reader = PacketReader::new(config.clone());
    let mut buf = ReadBuf::with_capacity(16);
    let mut out = Vec::new();
    let mut packets = Vec::new();
    let mut rest = stream;
    for &size in sizes.iter().cycle() {
        if rest.is_empty() {
            break;
        }
        let size = size.clamp(1, rest.len());
        reader.feed(&mut buf, &rest[..size]);
        rest = &rest[size..];
        while let ReadEvent::Packet(packet) = reader.poll(&mut buf, &mut out).unwrap() {
            packets.push((packet.request_id(), packet.payload.to_vec()));
        }
    }
    reader.release(&mut buf);
    assert!(buf.is_empty(), "bytes left over");
    packets
}

const SIZES: [usize; 22] = [
    0,
    1,
    2,
    15,
    16,
    17,
    255,
    511,
    512,
    513,
    1023,
    1024,
    4095,
    4096,
    4097,
    10_000,
    65_535,
    65_536,
    65_537,
    200_000,
    1 << 20,
    (1 << 20) + 1,
];

#[test]
fn every_size_and_kind_round_trips_whole_and_byte_by_byte() {
    for (name, config) in configs() {
        for kind in 0..3 {
            let packets: Packets = SIZES
                .iter()
                .enumerate()
                .map(|(i, &len)| (i as u64 * 0x1_0000_0001, payload(kind, len, i as u64)))
                .collect();
            let stream = encode(&config, &packets);
            assert_eq!(
                decode_whole(&config, &stream),
                packets,
                "{name} kind {kind}"
            );
            assert_eq!(
                decode_fed(&config, &stream, &[1]),
                packets,
                "{name} kind {kind} bytewise"
            );
            assert_eq!(
                decode_fed(&config, &stream, &[4093, 7, 65_537]),
                packets,
                "{name} kind {kind} uneven"
            );
        }
    }
}

#[test]
fn every_split_point_gives_the_same_packets() {
    for (name, config) in configs() {
        let packets: Packets = [0, 1, 700, 600, 40]
            .iter()
            .enumerate()
            .map(|(i, &len)| (i as u64, payload(i as u8, len, 5 + i as u64)))
            .collect();
        let stream = encode(&config, &packets);
        for split in 0..=stream.len() {
            let sizes = [split, stream.len()];
            assert_eq!(
                decode_fed(&config, &stream, &sizes),
                packets,
                "{name} split {split}"
            );
        }
    }
}

#[test]
fn compressible_payloads_are_compressed_by_every_codec() {
    for (name, config) in configs() {
        let json = text(20_000, 3);
        let stream = encode(&config, &vec![(1, json.clone())]);
        if name == "none" {
            assert_eq!(
                stream.len(),
                json.len() + if config.checksum { 20 } else { 16 }
            );
        } else {
            assert!(
                stream.len() < json.len() / 2,
                "{name}: {} bytes",
                stream.len()
            );
        }
    }
}

#[test]
fn the_writer_picks_the_codec_the_policy_names() {
    let json = text(10_000, 1);
    for (name, config) in configs() {
        let mut out = WriteBuf::new(64, 0);
        let header = PacketWriter::new(config.clone())
            .encode(&mut out, 1, &json)
            .unwrap();
        let expected = match name {
            "lz4" => Codec::Lz4,
            "zstd" | "auto" => Codec::Zstd,
            "zstd+dictionary" => Codec::ZstdDictionary(7),
            _ => Codec::None,
        };
        assert_eq!(header.codec, expected, "{name}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn random_packets_survive_random_splits(
        config in 0..configs().len(),
        packets in prop::collection::vec((any::<u64>(), 0u8..3, 0usize..6000, any::<u64>()), 0..6),
        sizes in prop::collection::vec(1usize..3000, 1..8),
    ) {
        let (name, config) = configs().swap_remove(config);
        let packets: Packets = packets
            .into_iter()
            .map(|(id, kind, len, seed)| (id, payload(kind, len, seed)))
            .collect();
        let stream = encode(&config, &packets);
        prop_assert_eq!(&decode_whole(&config, &stream), &packets, "{}", name);
        prop_assert_eq!(&decode_fed(&config, &stream, &sizes), &packets, "{}", name);
    }
}
