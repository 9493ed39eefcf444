//! `packet::PacketReader` on arbitrary bytes, every codec compiled in. The first byte picks
//! the configuration (limit, required checksum, a dictionary); the next the pieces the
//! stream is fed in; the rest is the stream. Mode bit 7 instead builds the stream from packets
//! the writer encodes (arbitrary payloads and policies) with arbitrary bytes flipped.
//!
//! Oracle: never a panic; every packet's payload is the length its header declares and
//! within the limit; the output buffer never grows past the limit (and the alignment padding); the same packets and
//! the same final error whether the stream is decoded whole from a slice or fed to a
//! `ReadBuf` in pieces; unflipped encoded packets come back as they were written.
#![no_main]

#[path = "input.rs"]
mod input;

use libfuzzer_sys::fuzz_target;
use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::compress::ZstdDictionary;
use tickwire_codec::packet::{
    CompressionPolicy, Header, PacketConfig, PacketError, PacketReader, PacketWriter, ReadEvent,
};

use crate::input::Bytes;

type Outcome = (Vec<(Header, Vec<u8>)>, Option<PacketError>);

fn config(mode: u8) -> PacketConfig {
    let limit = if mode & 1 == 0 { 300 } else { 1 << 20 };
    let mut config = PacketConfig::server()
        .with_max_payload_len(limit)
        .with_checksum(mode & 2 != 0);
    if mode & 4 != 0 {
        let dictionary = ZstdDictionary::new(u32::from(mode & 8), b"\"price\":\"quantity\":", 1);
        config = config.with_dictionary(Some(dictionary));
    }
    config.compression = match (mode >> 4) & 3 {
        0 => CompressionPolicy::none(),
        1 => CompressionPolicy::lz4(),
        2 => CompressionPolicy::zstd(),
        _ => CompressionPolicy::auto().with_auto_zstd_from(100),
    }
    .with_min_size(usize::from(mode >> 6) * 8);
    config
}

fn check(config: &PacketConfig, header: &Header, payload: &[u8], out_capacity: usize) {
    assert_eq!(payload.len(), header.payload_len as usize);
    assert!(payload.len() <= config.max_payload_len);
    // The limit, one byte a decompressor may hold past it, and the up to 63 bytes of padding
    // the reader puts before a payload to start it on a cache line.
    assert!(
        out_capacity <= config.max_payload_len + 64,
        "out grew to {out_capacity}"
    );
}

/// Decodes the whole stream from a slice.
fn whole(config: &PacketConfig, stream: &[u8]) -> Outcome {
    let mut reader = PacketReader::new(config.clone());
    let mut packets = Vec::new();
    let mut at = 0;
    let mut out = Vec::new();
    loop {
        match reader.decode(&stream[at..], &mut out) {
            Ok(ReadEvent::Packet(packet)) => {
                at += packet.wire_size();
                packets.push((packet.header, packet.payload.to_vec()));
            }
            Ok(ReadEvent::NeedMore { needed }) => {
                assert!(
                    needed > stream.len() - at,
                    "needs {needed}, has {}",
                    stream.len() - at
                );
                return (packets, None);
            }
            Err(error) => return (packets, Some(error)),
        }
        let (header, payload) = packets.last().expect("just pushed");
        check(config, header, payload, out.capacity());
    }
}

/// Feeds the stream to a `ReadBuf` in `pieces` (the rest whole), polling after each.
fn in_pieces(config: &PacketConfig, stream: &[u8], pieces: &[usize]) -> Outcome {
    let mut reader = PacketReader::new(config.clone());
    let mut buf = ReadBuf::with_capacity(16);
    let mut out = Vec::new();
    let mut packets = Vec::new();
    let mut rest = stream;
    let mut sizes = pieces.iter().copied();
    while !rest.is_empty() {
        let size = sizes.next().unwrap_or(rest.len()).min(rest.len());
        let spare = reader.spare(&mut buf);
        let n = size.min(spare.len());
        spare[..n].copy_from_slice(&rest[..n]);
        buf.filled(n);
        rest = &rest[n..];
        loop {
            match reader.poll(&mut buf, &mut out) {
                Ok(ReadEvent::Packet(packet)) => {
                    packets.push((packet.header, packet.payload.to_vec()));
                }
                Ok(ReadEvent::NeedMore { .. }) => break,
                Err(error) => return (packets, Some(error)),
            }
        }
    }
    (packets, None)
}

fuzz_target!(|data: &[u8]| {
    let mut input = Bytes(data);
    let mode = input.byte();
    let config = config(mode);
    let pieces = input.pieces();
    let mut encoded = Vec::new();
    let stream: Vec<u8> = if input.byte() & 0x80 == 0 {
        input.0.to_vec()
    } else {
        let mut writer = PacketWriter::new(config.clone());
        let mut out = WriteBuf::new(64, 0);
        let flips = input.pieces();
        while !input.is_empty() {
            let id = u64::from(input.u16());
            let len = usize::from(input.u16() % 1024);
            let payload = input.take(len).repeat(usize::from(input.byte() % 4) + 1);
            if payload.len() <= config.max_payload_len {
                encoded.push((id, payload.clone()));
            }
            let _ = writer.encode(&mut out, id, &payload);
        }
        let mut stream = out.as_slice().to_vec();
        if !flips.is_empty() && !stream.is_empty() {
            let len = stream.len();
            for flip in flips {
                stream[(flip * 7919) % len] ^= 0xa5;
            }
            encoded.clear();
        }
        stream
    };
    let whole = whole(&config, &stream);
    assert_eq!(
        whole,
        in_pieces(&config, &stream, &pieces),
        "split invariance"
    );
    if !encoded.is_empty() || (stream.is_empty() && whole.0.is_empty()) {
        assert_eq!(whole.1, None);
        let decoded: Vec<(u64, Vec<u8>)> = whole
            .0
            .into_iter()
            .map(|(h, p)| (h.request_id, p))
            .collect();
        assert_eq!(decoded, encoded, "round trip");
    }
});
