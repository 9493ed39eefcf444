//! TLS cost per message, in memory: a 128 B WebSocket text message received through TLS 1.3
//! (AES-128-GCM, ring) against the same frame received without TLS, both ending in the same
//! tickwire `Connection` parse.
//!
//! This module owns the `tls_decrypt_parse_128` table, its callgrind target, and the
//! certificates and TLS configurations every TLS workload uses (`pki.rs`, shared with the
//! `loopback_tls_*` workloads in [`crate::ws_loopback`]). How each receive path is built and
//! driven is in `codecs.rs`.
//!
//! The operation timed, per message: the connection's poll finds no complete frame, one
//! record's ciphertext goes in (`TlsCodec::read_tls`, which decrypts it), its plaintext is
//! copied into the connection's spare buffer (`read_plaintext`), and the poll parses the
//! frame and validates the text. The plaintext row copies the frame itself into the spare
//! buffer, as a `ws://` socket read does; the floor row does tickwire's steps with a bare
//! rustls `ClientConnection` (`read_tls`, `process_new_packets`, `reader().read`), so the gap
//! between it and tickwire is the cost of tickwire's codec around rustls. No WebSocket peer is
//! measured here: none exposes a sans-IO TLS path that feeds its parser.

mod codecs;
pub mod pki;

use std::hint::black_box;

use hdrhistogram::Histogram;

pub use codecs::Variant;

use crate::Ctx;
use crate::harness::{self, Plan};
use crate::report::{Figures, Row, Table};
use codecs::{PAYLOAD_LEN, Receiver};

/// Progress steps per round: one per receive path.
pub const STEPS: u64 = Variant::ALL.len() as u64;

/// The workload id.
pub const ID: &str = "tls_decrypt_parse_128";

/// Messages per timed sample: the server encrypts this many records before each sample
/// (outside the timed region), and the sample is the mean over them.
const MESSAGES_PER_SAMPLE: usize = 64;

/// Records the callgrind target encrypts before its loop, in the zero-iteration run too, so
/// the subtraction leaves only the receive operations. At least the iterations counted.
pub const CALLGRIND_RECORDS: usize = 20_000;

/// What the callgrind table of this workload adds to its note.
pub const CALLGRIND_NOTE: &str = " ring chooses its AES-GCM code by CPUID, and valgrind does not \
    emulate VAES or VPCLMULQDQ: under callgrind ring runs its AES-NI + PCLMULQDQ path, while \
    the timed runs use its VAES/AVX2 path where the CPU has one. The server encrypts \
    20 000 records before the loop in both runs, so only receiving is counted.";

/// Runs the TLS workload if selected and returns its table.
///
/// Panics when a path does not deliver the original text (checked before timing) or a
/// handshake negotiates another cipher suite.
pub fn run(ctx: &Ctx) -> Vec<Table> {
    if !ctx.selected(ID) {
        return Vec::new();
    }
    let expected = String::from_utf8(crate::wire::json_payload(PAYLOAD_LEN))
        .expect("the JSON payload is ASCII");
    let mut rounds: Vec<Vec<Histogram<u64>>> = Variant::ALL.iter().map(|_| Vec::new()).collect();
    for _ in 0..ctx.rounds {
        for (variant, histograms) in Variant::ALL.into_iter().zip(&mut rounds) {
            ctx.step(&format!("{ID} / {}", variant.name()));
            histograms.push(measure(variant, ctx.plan, &expected));
        }
    }
    let rows: Vec<Row> = Variant::ALL
        .into_iter()
        .zip(rounds)
        .map(|(variant, histograms)| Row::median_round(variant.name(), histograms))
        .collect();
    vec![table(ctx, rows)]
}

/// One connection of `variant`, checked then timed.
fn measure(variant: Variant, plan: Plan, expected: &str) -> Histogram<u64> {
    let mut receiver = Receiver::new(variant);
    receiver.load(MESSAGES_PER_SAMPLE);
    for i in 0..MESSAGES_PER_SAMPLE {
        assert!(
            receiver.receive(|text| text == expected),
            "{}: message {i} differs from what was sent",
            variant.name()
        );
    }
    harness::sample_per_op(
        plan,
        MESSAGES_PER_SAMPLE as u64,
        &mut receiver,
        |receiver| receiver.load(MESSAGES_PER_SAMPLE),
        |receiver| {
            for _ in 0..MESSAGES_PER_SAMPLE {
                black_box(receiver.next());
            }
        },
    )
}

fn table(ctx: &Ctx, rows: Vec<Row>) -> Table {
    let mut table = Table::new(
        ID,
        "TLS 1.3 receive: decrypt and parse 128 B text, one record per frame (client role)",
        Variant::Plaintext.name(),
        "",
    );
    table.rows = rows;
    let p50 = |variant: Variant| match table.row(variant.name()).map(|r| &r.figures) {
        Some(Figures::Latency(h)) => h.value_at_quantile(0.5) as i64,
        _ => 0,
    };
    let plain = p50(Variant::Plaintext);
    let tickwire = p50(Variant::Tickwire);
    let floor = p50(Variant::Rustls);
    let frame = codecs::frame().len();
    table.note = format!(
        "Ticks per message, each sample the mean of {MESSAGES_PER_SAMPLE} messages ({} warm-up \
         + {} recorded). TLS 1.3, {} (the server offers no other suite), ring; an in-memory \
         handshake between a server TlsCodec and the client, then the server encrypts \
         {MESSAGES_PER_SAMPLE} frames of {PAYLOAD_LEN} B text per sample, one record each, \
         outside the timed region. Timed per message: tickwire's Connection::poll needs bytes, \
         one record goes in (tickwire: TlsCodec::read_tls, then read_plaintext into \
         Connection::spare; bare rustls: read_tls, process_new_packets, reader().read into \
         the same spare buffer; no TLS: the {frame} B frame copied into it), then poll parses \
         the frame and validates the text; one {} B record per frame. The connection's clock \
         is passed in once (sans-IO), the same for every row. Every row checks the text before \
         timing. The no-TLS row is the Connection-level counterpart of \
         parse_text_128_one_per_read, which drives the FrameReader directly. TLS overhead at \
         p50: {} ticks through tickwire's codec, {} through bare rustls; tickwire's codec over \
         bare rustls: {} ticks.",
        ctx.plan.warmup,
        ctx.plan.samples,
        pki::CIPHER_SUITE,
        codecs::record_len(frame),
        tickwire - plain,
        floor - plain,
        tickwire - floor,
    );
    table
}

/// The callgrind target: the receiver set up as the timed run sets it up, the server's
/// [`CALLGRIND_RECORDS`] records queued in both runs, then `iterations` messages received.
pub fn callgrind_target(library: &str, iterations: u64) -> Result<(), String> {
    let variant =
        Variant::from_name(library).ok_or_else(|| format!("unknown TLS path {library}"))?;
    if iterations > CALLGRIND_RECORDS as u64 {
        return Err(format!(
            "at most {CALLGRIND_RECORDS} iterations (records are encrypted up front)"
        ));
    }
    let mut receiver = Receiver::new(variant);
    receiver.load(CALLGRIND_RECORDS);
    for _ in 0..iterations {
        black_box(receiver.next());
    }
    Ok(())
}
