//! Packet bombs: small packets that claim, or inflate to, far more than the reader's limit.
//! Each must be refused with its typed error, and the heap must never grow past the limit
//! (plus a little bookkeeping) while the reader looks at it.
//!
//! The counting global allocator (tickwire-test-support, with heap totals) measures the peak
//! of live heap bytes for this test binary only; the binary has its own `main` so libtest's
//! threads do not allocate meanwhile. (The
//! Zstd library allocates its context with C `malloc`, which this does not count: that is
//! fixed-size state, not output.)

use tickwire_codec::packet::{PacketConfig, PacketError, PacketReader, ReadEvent};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

/// The server default payload limit.
const LIMIT: usize = 1 << 20;
/// What the bombs inflate to.
#[cfg(any(feature = "lz4", feature = "zstd"))]
const BOMB: usize = 64 << 20;
/// Heap growth allowed beyond the limit.
#[cfg(any(feature = "lz4", feature = "zstd"))]
const SLACK: usize = 64 << 10;

/// A packet header: `flags`, wire length, request id 1, then the optional words.
fn header(flags: u8, wire_len: u32, extra: &[u32]) -> Vec<u8> {
    let mut bytes = vec![0x54, 0x57, 0x01, flags];
    bytes.extend_from_slice(&wire_len.to_le_bytes());
    bytes.extend_from_slice(&1u64.to_le_bytes());
    for word in extra {
        bytes.extend_from_slice(&word.to_le_bytes());
    }
    bytes
}

/// Decodes `packet` with a server reader and a fresh output buffer; returns the result and
/// the peak heap growth while decoding.
fn decode(name: &str, packet: &[u8]) -> (Result<(), PacketError>, usize) {
    let mut reader = PacketReader::new(PacketConfig::server());
    let mut out = Vec::new();
    let before = ALLOC.live();
    ALLOC.reset_peak();
    let result = match reader.decode(packet, &mut out) {
        Ok(ReadEvent::Packet(packet)) => panic!("{name}: accepted {} bytes", packet.payload.len()),
        Ok(ReadEvent::NeedMore { needed }) => panic!("{name}: waits for {needed} bytes"),
        Err(error) => Err(error),
    };
    let peak = ALLOC.peak() - before;
    drop(out);
    println!(
        "packet_bomb: {name}: {} wire bytes refused ({result:?}), peak heap growth {peak} bytes",
        packet.len()
    );
    (result, peak)
}

fn claims_four_gib_on_the_wire() {
    let (result, peak) = decode("4 GiB wire length", &header(0x00, u32::MAX, &[]));
    assert_eq!(
        result,
        Err(PacketError::PayloadTooLarge {
            len: u32::MAX,
            limit: LIMIT
        })
    );
    assert!(peak < 1024, "peak {peak}");
}

fn claims_a_large_uncompressed_length() {
    let packet = header(0x01, 8, &[(LIMIT + 1) as u32]);
    let (result, peak) = decode("uncompressed length over the limit", &packet);
    assert_eq!(
        result,
        Err(PacketError::PayloadTooLarge {
            len: (LIMIT + 1) as u32,
            limit: LIMIT
        })
    );
    assert!(peak < 1024, "peak {peak}");
}

/// An LZ4 block of 64 MiB of zeros (about 256 KiB) declaring 1 MiB.
#[cfg(feature = "lz4")]
fn lz4_inflates_past_its_declared_length() {
    use tickwire_codec::compress::Lz4Compressor;
    let zeros = vec![0u8; BOMB];
    let mut block = vec![0u8; Lz4Compressor::max_output_len(BOMB)];
    let len = Lz4Compressor::new()
        .compress_into(&zeros, &mut block)
        .unwrap();
    drop(zeros);
    let mut packet = header(0x01, len as u32, &[LIMIT as u32]);
    packet.extend_from_slice(&block[..len]);
    drop(block);
    let (result, peak) = decode("LZ4 bomb", &packet);
    assert!(
        matches!(result, Err(PacketError::LengthMismatch { declared, .. }) if declared as usize == LIMIT),
        "{result:?}"
    );
    assert!(peak <= LIMIT + SLACK, "peak {peak}");
}

/// Zstd frames of 64 MiB of zeros (a few KiB), declaring 1 MiB in the packet header: one
/// with the real size in the frame header (refused before any output), one streamed
/// without it (refused at the limit).
#[cfg(feature = "zstd")]
fn zstd_inflates_past_its_declared_length() {
    use std::io::Write;
    use tickwire_codec::compress::ZstdCompressor;
    let zeros = vec![0u8; BOMB];
    let mut sized = vec![0u8; ZstdCompressor::max_output_len(BOMB)];
    let len = ZstdCompressor::new()
        .compress_into(&zeros, &mut sized, 19)
        .unwrap();
    sized.truncate(len);
    let mut encoder = zstd::stream::Encoder::new(Vec::new(), 19).unwrap();
    encoder.write_all(&zeros).unwrap();
    let unsized_frame = encoder.finish().unwrap();
    drop(zeros);
    for (name, frame) in [
        ("Zstd bomb, sized", sized),
        ("Zstd bomb, unsized", unsized_frame),
    ] {
        let mut packet = header(0x02, frame.len() as u32, &[LIMIT as u32]);
        packet.extend_from_slice(&frame);
        let (result, peak) = decode(name, &packet);
        assert!(
            matches!(result, Err(PacketError::LengthMismatch { declared, .. }) if declared as usize == LIMIT),
            "{name}: {result:?}"
        );
        assert!(peak <= LIMIT + SLACK, "{name}: peak {peak}");
    }
}

fn main() {
    claims_four_gib_on_the_wire();
    claims_a_large_uncompressed_length();
    #[cfg(feature = "lz4")]
    lz4_inflates_past_its_declared_length();
    #[cfg(feature = "zstd")]
    zstd_inflates_past_its_declared_length();
    println!("packet_bomb: all bombs refused within the limit");
}
