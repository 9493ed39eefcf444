//! rule 6 of docs/ARCHITECTURE.md for the packet codec: after warm-up, encoding into a `WriteBuf` and decoding
//! from a `ReadBuf` allocate nothing, uncompressed and compressed alike, with one documented
//! exception: an LZ4 encode allocates lz4_flex's hash table. (Zstd's C library allocates its
//! contexts with `malloc`, which this Rust allocator does not see; those are per connection,
//! created on first use.) A counting global allocator wraps the system allocator for this
//! test binary only.

use tickwire_codec::buf::{ReadBuf, WriteBuf};
#[cfg(any(feature = "lz4", feature = "zstd"))]
use tickwire_codec::packet::CompressionPolicy;
use tickwire_codec::packet::{Codec, PacketConfig, PacketReader, PacketWriter, ReadEvent};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

const PACKETS: usize = 50;

/// One round: encode `PACKETS` payloads, hand the bytes to the reader's buffer, decode them
/// all. Returns the allocations of the encode and of the decode half, and the codec used.
fn round(
    writer: &mut PacketWriter,
    reader: &mut PacketReader,
    out: &mut WriteBuf,
    buf: &mut ReadBuf,
    payload_out: &mut Vec<u8>,
    payload: &[u8],
) -> (u64, u64, Codec) {
    let region = ALLOC.heap_region();
    let mut codec = Codec::None;
    for id in 0..PACKETS as u64 {
        codec = writer.encode(out, id, payload).unwrap().codec;
    }
    let encode = region.change().allocations;
    let region = ALLOC.heap_region();
    // As a transport reads: into the reader's spare space, a read at a time.
    let mut rest = out.as_slice();
    let mut seen = 0;
    while !rest.is_empty() {
        let spare = reader.spare(buf);
        let n = spare.len().min(rest.len());
        spare[..n].copy_from_slice(&rest[..n]);
        buf.filled(n);
        rest = &rest[n..];
        while let ReadEvent::Packet(packet) = reader.poll(buf, payload_out).unwrap() {
            assert_eq!(packet.payload, payload);
            seen += 1;
        }
    }
    let n = out.len();
    out.consume(n);
    assert_eq!(seen, PACKETS);
    (encode, region.change().allocations, codec)
}

fn steady_state(name: &str, config: PacketConfig, encode_allocations_per_packet: u64) {
    let payload = br#"{"e":"trade","s":"BTCUSDT","p":"64000.10","q":"0.010","m":true},"#.repeat(20);
    let mut writer = PacketWriter::new(config.clone());
    let mut reader = PacketReader::new(config);
    let mut out = WriteBuf::new(1024, 0);
    let mut buf = ReadBuf::with_capacity(1024);
    let mut payload_out = Vec::new();
    let args = (
        &mut writer,
        &mut reader,
        &mut out,
        &mut buf,
        &mut payload_out,
    );
    round(args.0, args.1, args.2, args.3, args.4, &payload);
    let (encode, decode, codec) = round(args.0, args.1, args.2, args.3, args.4, &payload);
    println!(
        "packet_zero_alloc: {name} ({codec:?}): {encode} allocations encoding, {decode} decoding {PACKETS} packets"
    );
    assert_eq!(
        encode,
        encode_allocations_per_packet * PACKETS as u64,
        "{name}: encode"
    );
    assert_eq!(decode, 0, "{name}: decode");
}

fn main() {
    steady_state("uncompressed", PacketConfig::client(), 0);
    steady_state(
        "uncompressed+checksum",
        PacketConfig::client().with_checksum(true),
        0,
    );
    #[cfg(feature = "lz4")]
    steady_state(
        "lz4",
        PacketConfig::client().with_compression(CompressionPolicy::lz4()),
        1,
    );
    #[cfg(feature = "zstd")]
    steady_state(
        "zstd",
        PacketConfig::client().with_compression(CompressionPolicy::zstd()),
        0,
    );
    println!("packet_zero_alloc: ok");
}
