//! The compressed loopback stream: a tickwire server feeds a tickwire client the same JSON
//! market data over 127.0.0.1 with permessage-deflate negotiated and without, in the same
//! round, and the client's messages per second are compared.
//!
//! Owns the client side and the `loopback_deflate_*` tables. Unlike `loopback_stream`, which
//! replays pre-encoded frames to compare clients' parsers, the server here encodes every
//! message live through `send_text`: compressing is the sender's cost on a real feed, so the
//! rate measured is the whole pipeline's, the slower of the server compressing and the client
//! inflating. The client compares every message with its original, byte for byte, in both
//! rows alike.

use std::sync::Arc;
use std::sync::mpsc::sync_channel;
use std::time::Instant;

use tickwire_codec::deflate::DeflateConfig;

use super::{connect, servers};
use crate::Ctx;
use crate::harness::Plan;
use crate::report::{Figures, Row, Table};
use crate::ws_deflate;

/// The workloads: id and message size.
pub(super) const WORKLOADS: [(&str, usize); 2] =
    [("loopback_deflate_128", 128), ("loopback_deflate_4k", 4096)];

/// Payload bytes per connection in a full run, at most [`MAX_MESSAGES`] messages; a quick run
/// sends a tenth.
const STREAM_PAYLOAD_FULL: usize = 100 << 20;

/// Messages per connection in a full run, at most (as `loopback_stream` sends).
const MAX_MESSAGES: usize = 200_000;

/// The rows: label, and whether the client offers (and the server accepts) permessage-deflate.
const MODES: [(&str, bool); 2] = [("plain", false), ("permessage-deflate", true)];

/// The table for messages of `len` bytes: both rows once per round, interleaved.
pub(super) fn table(ctx: &Ctx, id: &str, len: usize) -> Table {
    let full_count = (STREAM_PAYLOAD_FULL / len).min(MAX_MESSAGES);
    let count = if ctx.plan.samples >= Plan::FULL.samples {
        full_count
    } else {
        full_count / 10
    };
    let texts: Arc<[String]> = ws_deflate::messages(len)
        .into_iter()
        .map(|m| String::from_utf8(m).expect("the JSON messages are ASCII"))
        .collect();
    let mut rates = [Vec::new(), Vec::new()];
    let mut written = [0u64; 2];
    for round in 1..=ctx.rounds {
        for ((name, deflate), (rates, written)) in
            MODES.into_iter().zip(rates.iter_mut().zip(&mut written))
        {
            ctx.step(&format!("{id}: {name} (round {round}/{})", ctx.rounds));
            let config = deflate.then(DeflateConfig::default);
            let (rate, bytes) = measure(&texts, count, config, ctx.peer_core);
            rates.push(rate);
            *written = bytes;
        }
    }
    let mut table = Table::new(
        id,
        &format!("Loopback stream with permessage-deflate, {len} B JSON, messages per second"),
        MODES[0].0,
        "",
    );
    for ((name, _), rates) in MODES.into_iter().zip(rates) {
        table.rows.push(Row::rate(name, rates));
    }
    let median = |row: usize| match &table.rows[row].figures {
        Figures::Rate(r) => r[r.len() / 2],
        _ => f64::NAN,
    };
    let (plain, deflate) = (median(0), median(1));
    let [plain_wire, deflate_wire] = written.map(|bytes| bytes as f64 / count as f64);
    table.note = format!(
        "One TCP connection over 127.0.0.1 per row and round, TCP_NODELAY on, tickwire at both \
         ends: the server on core {}, the client on core {}; permessage-deflate with \
         DeflateConfig::default() (context takeover, level 1) on both sides, or not offered. \
         Once the client is set up the server sends {count} {len} B JSON messages, cycling \
         through {} distinct ones, each through `send_text` (compressed when negotiated), \
         writing whenever 64 KiB are queued; the client receives each with `recv` and compares \
         it with its original. Timed on the client from the first byte readable to the last \
         message, so the rate is the pipeline's: the slower of the server compressing and the \
         client inflating. Payload: {:.1} MB/s plain, {:.1} MB/s compressed ({:.2}x). On the wire, \
         per message (frames as the server wrote them): {plain_wire:.1} B plain, \
         {deflate_wire:.1} B compressed ({:.0}% of plain). Median of {} round(s), range over \
         rounds.",
        ctx.peer_core,
        ctx.core,
        texts.len(),
        plain * len as f64 / 1e6,
        deflate * len as f64 / 1e6,
        deflate / plain,
        100.0 * deflate_wire / plain_wire,
        ctx.rounds,
    );
    table
}

/// One connection: the server feeds `count` messages, compressed when `deflate` is given.
/// Returns the client's messages per second and the bytes the server wrote.
fn measure(
    texts: &Arc<[String]>,
    count: usize,
    deflate: Option<DeflateConfig>,
    peer_core: usize,
) -> (f64, u64) {
    let (go, ready) = sync_channel(1);
    let server =
        servers::tickwire_feed(peer_core, Arc::clone(texts), count, deflate.clone(), ready);
    let negotiated = deflate.is_some();
    let mut ws = connect::tickwire_deflate(server.addr(), deflate);
    assert_eq!(
        ws.deflate().is_some(),
        negotiated,
        "tickwire: permessage-deflate negotiated other than asked"
    );
    go.send(())
        .expect("tickwire: the feed server ended before the start");
    ws.stream()
        .tcp()
        .peek(&mut [0u8; 1])
        .expect("tickwire: wait for the first byte");
    let started = Instant::now();
    for (i, original) in texts.iter().cycle().take(count).enumerate() {
        match ws.recv().expect("tickwire: receive") {
            tickwire_blocking::Recv::Message(tickwire_blocking::Message::Text(text)) => assert!(
                text == original.as_str(),
                "tickwire: message {i} arrived altered ({} B, deflate {negotiated})",
                text.len()
            ),
            other => panic!("tickwire: message {i}: expected text, got {other:?}"),
        }
    }
    let elapsed = started.elapsed();
    // Hanging up ends the server, which then reports what it wrote.
    drop(ws);
    let written = server.join();
    let rate = count as f64 / elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
    (rate, written)
}
