//! Memory per connection with permessage-deflate: live heap bytes held by the compressor and
//! the decompressor after a stream of messages, with and without context takeover and at
//! several window sizes. Prints the table docs/ARCHITECTURE.md quotes and asserts the bounds
//! it states, so a backend change that doubles the state fails here.
//!
//! The counting global allocator (tickwire-test-support, with heap totals) counts live bytes
//! for this binary only; it has its own `main` so libtest's threads do not allocate meanwhile.

use tickwire_codec::buf::{ReadBuf, WriteBuf};
use tickwire_codec::deflate::{DeflateConfig, DeflateParams, PerMessageDeflate};
use tickwire_codec::ws::{FrameReader, FrameWriter, Limits, MaskSource, ReadEvent, Role};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

fn message(i: usize) -> String {
    format!(
        "{{\"ch\":\"market.btcusdt.depth\",\"ts\":{},\"bids\":[[\"{}.5\",\"0.{}\"]],\"asks\":[[\"{}.0\",\"1.{}\"]]}}",
        1_700_000_000_000u64 + i as u64,
        60_000 + i % 97,
        i % 10,
        60_001 + i % 89,
        i % 7
    )
}

/// Heap bytes held by the compressor (after sending) and by the decompressor (after
/// receiving) once 200 compressed messages went through.
fn state_bytes(no_context_takeover: bool, bits: u8) -> (usize, usize) {
    let params = DeflateParams {
        server_no_context_takeover: no_context_takeover,
        client_no_context_takeover: no_context_takeover,
        server_max_window_bits: bits,
        client_max_window_bits: bits,
    };
    let config = DeflateConfig::default();
    let mut out = WriteBuf::new(64 << 10, 14);
    let mut writer = FrameWriter::new(Role::Server, MaskSource::seeded(1));
    let mut reader = FrameReader::new(Role::Client, Limits::client());
    let mut buf = ReadBuf::with_capacity(64 << 10);
    // Warm the buffers without the extension so only the deflate state is counted.
    let mut scratch_warm = FrameWriter::new(Role::Server, MaskSource::seeded(1));
    for i in 0..200 {
        scratch_warm.text(&mut out, &message(i));
    }
    out.clear();

    let before = ALLOC.live();
    let (_, encoder) = PerMessageDeflate::new(Role::Server, &params, &config).into_parts();
    writer.set_extension(Box::new(encoder));
    for i in 0..200 {
        writer.text(&mut out, &message(i));
    }
    let compressor = ALLOC.live() - before;

    let before = ALLOC.live();
    let (decoder, _) = PerMessageDeflate::new(Role::Client, &params, &config).into_parts();
    reader.set_extension(Box::new(decoder));
    reader.feed(&mut buf, out.as_slice());
    let mut received = 0;
    while let Ok(ReadEvent::Message(_)) = reader.poll(&mut buf) {
        received += 1;
    }
    assert_eq!(received, 200);
    let decompressor = ALLOC.live() - before;
    (compressor, decompressor)
}

fn kib(bytes: usize) -> String {
    format!("{:.1} KiB", bytes as f64 / 1024.0)
}

fn main() {
    println!(
        "| context takeover | window bits | compressor per connection | shared per thread | decompressor per connection |"
    );
    println!("|---|---|---|---|---|");
    for bits in [15, 12, 9] {
        for no_context_takeover in [false, true] {
            // The first connection on this thread allocates any shared compressor; the
            // second shows what each further connection costs.
            let (first, _) = state_bytes(no_context_takeover, bits);
            let (send, receive) = state_bytes(no_context_takeover, bits);
            let shared = first - send;
            println!(
                "| {} | {bits} | {} | {} | {} |",
                if no_context_takeover { "no" } else { "yes" },
                kib(send),
                kib(shared),
                kib(receive)
            );
            // Bounds stated in docs/ARCHITECTURE.md; the writer's scratch buffer and the
            // reader's reassembly buffer (a few KiB for these messages) are included.
            if no_context_takeover {
                assert!(send <= 16 << 10, "no takeover: {send} bytes per connection");
                assert!(shared >= 128 << 10, "the shared compressor was not counted");
            } else {
                assert!(
                    send <= 400 << 10,
                    "compressor at {bits} bits holds {send} bytes"
                );
            }
            assert!(receive <= 64 << 10, "decompressor holds {receive} bytes");
        }
    }
}
