//! permessage-deflate (RFC 7692) cost per message, in memory: compressing (tickwire: compress
//! and frame through its writer) and decompressing (tickwire: read, parse, inflate and
//! validate through its reader) 128 B and 4 KiB JSON market data, against raw flate2 doing
//! only the deflate work on the same bytes.
//!
//! This module owns the four `deflate_*` tables, the messages they use and the checks that
//! make a broken deflate fail the run: every tickwire frame must be compressed, the floor's
//! output must be byte-identical to tickwire's payload, and every variant must inflate every
//! message back to the original. How each side is built and driven is in `codecs.rs`.
//!
//! No peer is measured: nexus-web 0.8, tungstenite and tokio-tungstenite 0.30 and
//! fastwebsockets 0.10 do not implement permessage-deflate (tungstenite and fastwebsockets
//! reject RSV1 frames; nexus-web documents it as not implemented), and no other crate among
//! this suite's dependencies does.

mod codecs;

use std::hint::black_box;

use hdrhistogram::Histogram;

pub use codecs::{Compressor, Decompressor, Variant};

use crate::Ctx;
use crate::harness;
use crate::report::{Figures, Row, Table};
use crate::wire;

/// Progress steps per round: four tables of four variants.
pub const STEPS: u64 = 4 * Variant::ALL.len() as u64;

/// Message sizes measured, with the tag their workload ids end in.
pub const SIZES: [(usize, &str); 2] = [(128, "128"), (4096, "4k")];

/// Bytes of distinct messages per size: a message's next occurrence is 256 KiB later, far
/// outside the 32 KiB window, so cycling them never compresses an exact repeat.
const RING_BYTES: usize = 256 << 10;

/// The distinct messages of one size, cycled by every workload of that size.
pub fn messages(len: usize) -> Vec<Vec<u8>> {
    wire::market_messages(len, (RING_BYTES / len).max(16))
}

/// Runs the selected deflate workloads and returns their tables.
///
/// Panics when a check fails: a tickwire frame that is not compressed, a floor that does not
/// produce tickwire's bytes, or a message that does not inflate to its original.
pub fn run(ctx: &Ctx) -> Vec<Table> {
    let mut tables = Vec::new();
    for (len, tag) in SIZES {
        let compress_id = format!("deflate_compress_{tag}");
        let decompress_id = format!("deflate_decompress_{tag}");
        let compress = ctx.selected(&compress_id);
        let decompress = ctx.selected(&decompress_id);
        if !compress && !decompress {
            continue;
        }
        let messages = messages(len);
        let streams = Streams::checked(&messages);
        if compress {
            let rows = measure(ctx, &compress_id, |variant| {
                let mut compressor = Compressor::primed(variant, &messages);
                harness::sample_each(ctx.plan, || {
                    black_box(compressor.compress());
                })
            });
            let what = "compress + frame (tickwire: `FrameWriter::message` with the extension, \
                        server role, output emptied after each; flate2: one `compress_vec` with \
                        `FlushCompress::Sync` into a reused buffer)";
            tables.push(table(
                &compress_id,
                &format!("permessage-deflate compress: {len} B JSON"),
                rows,
                &note(ctx, what, &messages, &streams),
            ));
        }
        if decompress {
            let rows = measure(ctx, &decompress_id, |variant| {
                let (prime, steady) = &streams.passes[variant as usize];
                let (mut decompressor, _) = Decompressor::new(variant, prime, steady.clone());
                harness::sample_each(ctx.plan, || {
                    black_box(decompressor.decompress());
                })
            });
            let what = "read + parse + inflate + UTF-8 check (tickwire: the frame copied into \
                        `FrameReader::spare`, then `advance` and `message`, client role, one \
                        frame per read; \
                        flate2: one `decompress_vec` of the payload with its sync-flush tail \
                        into a reused buffer)";
            tables.push(table(
                &decompress_id,
                &format!("permessage-deflate decompress: {len} B JSON"),
                rows,
                &note(ctx, what, &messages, &streams),
            ));
        }
    }
    tables
}

/// Every variant once per round, interleaved; the median round of each.
fn measure(ctx: &Ctx, id: &str, mut one: impl FnMut(Variant) -> Histogram<u64>) -> Vec<Row> {
    let mut rounds: Vec<Vec<_>> = Variant::ALL.iter().map(|_| Vec::new()).collect();
    for _ in 0..ctx.rounds {
        for (variant, histograms) in Variant::ALL.into_iter().zip(&mut rounds) {
            ctx.step(&format!("{id} / {}", variant.name()));
            histograms.push(one(variant));
        }
    }
    Variant::ALL
        .into_iter()
        .zip(rounds)
        .map(|(variant, histograms)| Row::median_round(variant.name(), histograms))
        .collect()
}

/// The table, its note ending with tickwire's p50 over the floor's in each context mode.
fn table(id: &str, title: &str, rows: Vec<Row>, note: &str) -> Table {
    let floor = Variant::Flate2.name();
    let mut table = Table::new(id, title, floor, note);
    table.rows = rows;
    let p50 = |variant: Variant| match table.row(variant.name()).map(|r| &r.figures) {
        Some(Figures::Latency(h)) => h.value_at_quantile(0.5) as f64,
        _ => f64::NAN,
    };
    let ratios = format!(
        " tickwire / flate2 at p50: {:.2}x with context takeover, {:.2}x without.",
        p50(Variant::Tickwire) / p50(Variant::Flate2),
        p50(Variant::TickwireNoContext) / p50(Variant::Flate2NoContext),
    );
    table.note.push_str(&ratios);
    table
}

fn note(ctx: &Ctx, what: &str, messages: &[Vec<u8>], streams: &Streams) -> String {
    let len = messages[0].len();
    let [with, without] = streams.compressed;
    format!(
        "Ticks per message, one unbatched sample each ({} warm-up + {} recorded): {what}. \
         {} distinct {len} B JSON messages ({}), cycled, after one priming pass: the steady \
         state of a feed. DeflateConfig::default() (level {}, 15-bit windows) for tickwire, \
         the same level and window for flate2 (zlib-rs), whose output is checked \
         byte-identical to tickwire's payload; every message is checked to inflate back to \
         its original. no_context_takeover: both sides reset after every message. \
         Compressed payload, mean: {with:.1} B with context takeover ({:.2}x smaller), \
         {without:.1} B without ({:.2}x). No peer row: nexus-web, tungstenite, \
         tokio-tungstenite and fastwebsockets do not implement permessage-deflate, nor does \
         any other crate this suite depends on, so flate2 alone is the floor.",
        ctx.plan.warmup,
        ctx.plan.samples,
        messages.len(),
        if len < 256 {
            "trades"
        } else {
            "order book depth updates"
        },
        tickwire_codec::deflate::DeflateConfig::default().level,
        len as f64 / with,
        len as f64 / without,
    )
}

/// One pass of a compressor over the messages: each message's output, in order.
pub type Pass = Vec<Vec<u8>>;

/// Every variant's recorded stream (two passes over the messages), checked once per size.
pub struct Streams {
    /// (first pass, second pass) per variant, in [`Variant::ALL`] order: frames for tickwire,
    /// deflate data with the sync-flush tail for flate2.
    pub passes: Vec<(Pass, Pass)>,
    /// Mean compressed payload of the second pass: with and without context takeover.
    compressed: [f64; 2],
}

impl Streams {
    /// Records every variant's stream and checks it; panics on the first discrepancy.
    pub fn checked(messages: &[Vec<u8>]) -> Self {
        let passes: Vec<_> = Variant::ALL
            .into_iter()
            .map(|variant| record(variant, messages))
            .collect();
        let compressed = [
            (Variant::Tickwire, Variant::Flate2),
            (Variant::TickwireNoContext, Variant::Flate2NoContext),
        ]
        .map(|(tickwire, floor)| {
            let (frames, raw) = (&passes[tickwire as usize], &passes[floor as usize]);
            let frames = frames.0.iter().chain(&frames.1);
            for (i, (frame, raw)) in frames.zip(raw.0.iter().chain(&raw.1)).enumerate() {
                let payload = compressed_payload(frame).unwrap_or_else(|| {
                    panic!("{}: message {i} is not compressed", tickwire.name())
                });
                assert!(
                    raw.strip_suffix(&codecs::SYNC_TAIL) == Some(payload),
                    "{}: message {i} differs from flate2's compression of it",
                    tickwire.name()
                );
            }
            let steady = &passes[tickwire as usize].1;
            let total: usize = steady
                .iter()
                .filter_map(|f| compressed_payload(f))
                .map(<[u8]>::len)
                .sum();
            total as f64 / steady.len() as f64
        });
        for variant in Variant::ALL {
            let (prime, steady) = &passes[variant as usize];
            let (mut decompressor, primed) = Decompressor::new(variant, prime, steady.clone());
            // The priming pass, then the second pass twice: the cycle the timed loop runs.
            let replayed = (0..2 * messages.len()).map(|_| decompressor.next_message().to_vec());
            for (i, message) in primed.into_iter().chain(replayed).enumerate() {
                assert!(
                    message == messages[i % messages.len()],
                    "{}: message {i} does not inflate to its original",
                    variant.name()
                );
            }
        }
        Self { passes, compressed }
    }
}

/// Two passes of `variant`'s compressor over `messages`, from a fresh state.
pub fn record(variant: Variant, messages: &[Vec<u8>]) -> (Pass, Pass) {
    let mut compressor = Compressor::fresh(variant, messages);
    let mut pass = || -> Pass {
        messages
            .iter()
            .map(|_| compressor.compress_to_vec())
            .collect()
    };
    let first = pass();
    (first, pass())
}

/// The payload of an unmasked, unfragmented, compressed text frame (FIN, RSV1, opcode 1),
/// or `None` for any other frame.
fn compressed_payload(frame: &[u8]) -> Option<&[u8]> {
    let (&b0, &b1) = (frame.first()?, frame.get(1)?);
    let header = match b1 {
        0..=125 => 2,
        126 => 4,
        127 => 10,
        _ => return None,
    };
    (b0 == 0xc1).then(|| frame.get(header..)).flatten()
}
