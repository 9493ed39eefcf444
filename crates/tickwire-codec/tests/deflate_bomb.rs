//! A decompression bomb: 10 MB of zeros compressed to a few KB, sent as one permessage-deflate
//! message to a server with a 1 MiB message limit. The connection must fail with close 1009
//! on the wire, and the heap must never hold much more than the limit while it inflates.
//!
//! The counting global allocator (tickwire-test-support, with heap totals) measures the peak
//! of live heap bytes for this test binary only; the binary has its own `main` so libtest's
//! threads do not allocate meanwhile.

use std::io::Write;
use std::time::Instant;

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::deflate::{DeflateConfig, DeflateParams, PerMessageDeflate};
use tickwire_codec::ws::{
    Buffers, CloseCode, Config, Connection, Error, Event, FrameWriter, MaskSource, OpCode, Role,
};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

const BOMB: usize = 10_000_000;
const LIMIT: usize = 1 << 20;

/// The bomb as a client sends it: one masked Binary frame with RSV1, raw deflate with the
/// sync-flush tail removed (RFC 7692 §7.2.1).
fn bomb_frame() -> Vec<u8> {
    let mut encoder = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    encoder.write_all(&vec![0u8; BOMB]).unwrap();
    encoder.flush().unwrap();
    let mut compressed = encoder.get_ref().clone();
    assert!(compressed.ends_with(&[0, 0, 0xff, 0xff]));
    compressed.truncate(compressed.len() - 4);
    assert!(compressed.len() < 16 << 10, "{} bytes", compressed.len());
    let mut writer = FrameWriter::new(Role::Client, MaskSource::seeded(5));
    let mut out = WriteBuf::new(compressed.len() + 16, 14);
    writer.frame(&mut out, OpCode::Binary, true, 0b100, &compressed);
    out.as_slice().to_vec()
}

fn main() {
    let frame = bomb_frame();
    let params = DeflateParams {
        server_no_context_takeover: false,
        client_no_context_takeover: false,
        server_max_window_bits: 15,
        client_max_window_bits: 15,
    };
    let mut config = Config::server();
    config.limits.max_message_size = LIMIT;
    let now = Instant::now();
    let mut bufs = Buffers::new(&config);
    let mut conn = Connection::new(Role::Server, config, MaskSource::seeded(0), now);
    let (decoder, encoder) =
        PerMessageDeflate::new(Role::Server, &params, &DeflateConfig::default()).into_parts();
    conn.set_extension(Box::new(decoder), Box::new(encoder));
    conn.feed(&mut bufs, &frame, now);

    let before = ALLOC.live();
    ALLOC.reset_peak();
    let result = conn
        .poll(&mut bufs)
        .map(|event| matches!(event, Event::NeedMore));
    let peak = ALLOC.peak() - before;

    assert_eq!(result, Err(Error::MessageTooLarge { limit: LIMIT }));
    // The inflated bytes are capped at limit + 1; the inflater's own state is ~40 KiB.
    let bound = LIMIT + (128 << 10);
    assert!(
        peak <= bound,
        "peak heap growth {peak} bytes while inflating a {BOMB}-byte bomb (bound {bound})"
    );
    // The close on the wire carries 1009 (RFC 6455 §7.4.1).
    let close = [0x88, 0x02, 0x03, 0xf1];
    assert!(conn.wants_write(&bufs));
    assert_eq!(conn.output(&bufs), close, "close frame queued");
    assert_eq!(CloseCode::MESSAGE_TOO_BIG.0, 1009);
    println!(
        "deflate_bomb: {} compressed bytes for {BOMB} zeros refused with 1009; peak heap growth {peak} bytes (limit {LIMIT})",
        frame.len()
    );
}
