//! Loopback TCP workloads: one WebSocket connection over 127.0.0.1 per client library, 128 B
//! text messages, against a plain TCP stream carrying the same bytes (the kernel floor).
//!
//! This module owns the loopback tables: `loopback_rtt` (one message out, its echo back, one
//! sample per round trip), `loopback_stream` (one-way throughput of pre-encoded frames into
//! each client), `loopback_deflate_*` (a tickwire feed with permessage-deflate on and off,
//! `deflate.rs`) and `loopback_tls_*` (the round trip and the stream over `wss://`, `tls.rs`). It owns the servers those workloads talk to and the client side of each
//! library. It does not own the timing primitives ([`crate::harness`]), the frame bytes
//! ([`crate::wire`]) nor how results are shown ([`crate::report`]).
//!
//! Fairness rules every workload here keeps:
//! - only the client library differs: every WebSocket client talks to the same tickwire
//!   server, and the raw TCP floor moves the same bytes with no WebSocket code at all (in the
//!   deflate workloads only whether permessage-deflate is negotiated differs; in the TLS
//!   workloads the same server runs behind TLS);
//! - TCP_NODELAY on every socket, one connection per library per round, libraries interleaved
//!   within each round so slow drift of the machine spreads over all of them;
//! - each client uses its fastest public API that a real user would write (the per-library
//!   comments in `round_trip.rs` and `stream.rs` say which and why);
//! - async clients run on a tokio current-thread runtime on the measuring thread, timed inside
//!   one `block_on`, so the runtime's entry cost is not charged per operation.

pub(crate) mod connect;
mod deflate;
pub(crate) mod round_trip;
pub(crate) mod servers;
pub(crate) mod stream;
mod tls;

use crate::Ctx;
use crate::harness::{self, Plan};
use crate::report::{self, Row, Table};
use crate::wire;

/// Progress steps per round: one per library in each of the two peer workloads, both rows of
/// each deflate workload, and one per client in each of the two TLS workloads.
pub const STEPS: u64 = 2 * Library::ALL.len() as u64
    + 2 * deflate::WORKLOADS.len() as u64
    + 2 * tls::Client::ALL.len() as u64;

/// Payload size of every message, in bytes.
const PAYLOAD_LEN: usize = 128;

/// Messages per one-way stream in a full run; a quick run sends a tenth of this.
const STREAM_MESSAGES_FULL: usize = 200_000;

/// Runs the selected loopback workloads and returns their tables (none when neither is
/// selected). Blocks the calling thread, pinned to `ctx.core`, for the whole run; the peer
/// threads are pinned to `ctx.peer_core` and joined before this returns.
///
/// Panics when the loopback setup fails (a port cannot be bound, a handshake is refused) or a
/// library echoes or delivers the wrong bytes: a number taken over a broken connection would be
/// worse than no number.
pub fn run(ctx: &Ctx) -> Vec<Table> {
    harness::pin_to(ctx.core);
    let payload = wire::json_payload(PAYLOAD_LEN);
    let mut tables = Vec::new();
    if ctx.selected("loopback_rtt") {
        tables.push(round_trip_table(ctx, &payload));
    }
    if ctx.selected("loopback_stream") {
        tables.push(stream_table(ctx, &payload));
    }
    for (id, len) in deflate::WORKLOADS {
        if ctx.selected(id) {
            tables.push(deflate::table(ctx, id, len));
        }
    }
    if ctx.selected(tls::RTT_ID) {
        tables.push(tls::round_trip_table(ctx, &payload));
    }
    if ctx.selected(tls::STREAM_ID) {
        tables.push(tls::stream_table(ctx, &payload));
    }
    tables
}

/// A client library under test (plus the raw TCP floor).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Library {
    /// A plain `std::net::TcpStream` moving the same bytes with no WebSocket code.
    RawTcp,
    Tickwire,
    Tungstenite,
    TokioTungstenite,
    Fastwebsockets,
    NexusWeb,
}

impl Library {
    /// Every library, in table order: the floor first, then tickwire, then its peers.
    const ALL: [Self; 6] = [
        Self::RawTcp,
        Self::Tickwire,
        Self::Tungstenite,
        Self::TokioTungstenite,
        Self::Fastwebsockets,
        Self::NexusWeb,
    ];

    /// The row label (also the baseline label for [`Library::RawTcp`]).
    fn name(self) -> &'static str {
        match self {
            Self::RawTcp => "raw TCP",
            Self::Tickwire => "tickwire",
            Self::Tungstenite => "tungstenite",
            Self::TokioTungstenite => "tokio-tungstenite",
            Self::Fastwebsockets => "fastwebsockets",
            Self::NexusWeb => "nexus-web",
        }
    }
}

/// The round-trip table: `ctx.rounds` rounds, each measuring every library once.
fn round_trip_table(ctx: &Ctx, payload: &[u8]) -> Table {
    // One unbatched sample per round trip, the suite's full plan: at the ~6-10 us round trips
    // measured on the reference VM six libraries take ~5 s a round, and even at 80 us they
    // would stay under a minute.
    let plan = ctx.plan;
    let mut rounds: Vec<Vec<_>> = Library::ALL.iter().map(|_| Vec::new()).collect();
    for round in 1..=ctx.rounds {
        for (library, histograms) in Library::ALL.into_iter().zip(&mut rounds) {
            ctx.step(&format!(
                "loopback round trip: {} (round {round}/{})",
                library.name(),
                ctx.rounds
            ));
            histograms.push(round_trip::measure(library, plan, ctx.peer_core, payload));
        }
    }
    let note = format!(
        "One TCP connection over 127.0.0.1 per library and round, TCP_NODELAY on every socket; \
         the client sends one {PAYLOAD_LEN} B text message and waits for its echo, one \
         unbatched sample per round trip ({} warm-up + {} recorded), client on core {}, \
         server on core {}. Every WebSocket client talks to the same tickwire blocking echo \
         server (recv_with_sender, sender.text, flush), so only the client library differs. raw TCP writes the same \
         masked {} B frame on a plain TcpStream to a byte-echo thread and reads the same \
         bytes back: the kernel floor. Async clients run on a tokio current-thread runtime on \
         the measuring thread. Echo content checked before timing; libraries interleaved in \
         each round; median round by p50.",
        plan.warmup,
        plan.samples,
        ctx.core,
        ctx.peer_core,
        wire::frame(true, 0x1, payload, Some(wire::MASK_KEY)).len(),
    );
    let mut table = Table::new(
        "loopback_rtt",
        &format!("Loopback round trip, {PAYLOAD_LEN} B text, one connection"),
        Library::RawTcp.name(),
        &note,
    );
    for (library, histograms) in Library::ALL.into_iter().zip(rounds) {
        table
            .rows
            .push(Row::median_round(library.name(), histograms));
    }
    table
}

/// The one-way streaming table: `ctx.rounds` rounds, each streaming into every library once.
fn stream_table(ctx: &Ctx, payload: &[u8]) -> Table {
    // A quick run (a smaller sampling plan) streams a tenth as many messages.
    let messages = if ctx.plan.samples >= Plan::FULL.samples {
        STREAM_MESSAGES_FULL
    } else {
        STREAM_MESSAGES_FULL / 10
    };
    let bytes = stream::encoded_stream(payload, messages);
    let mut rounds: Vec<Vec<f64>> = Library::ALL.iter().map(|_| Vec::new()).collect();
    for round in 1..=ctx.rounds {
        for i in report::round_order(Library::ALL.len(), round) {
            let library = Library::ALL[i];
            ctx.step(&format!(
                "loopback stream: {} (round {round}/{})",
                library.name(),
                ctx.rounds
            ));
            rounds[i].push(stream::measure(library, &bytes, messages, ctx.peer_core));
        }
    }
    let note = format!(
        "One TCP connection over 127.0.0.1 per library and round, TCP_NODELAY on. After \
         tickwire's server handshake the server thread (core {}) writes {messages} \
         pre-encoded unmasked {PAYLOAD_LEN} B text frames ({} bytes) from one buffer in \
         one write_all; the client (core {}) receives and parses every message with \
         its library's message API and default buffers, checking the count and the last \
         message's length. Timed on the client from the first byte being readable to the \
         last message. raw TCP reads the same byte count into a 1 MiB buffer without \
         parsing: the kernel floor. Median of {} round(s), range over rounds; the order \
         of the libraries rotates each round.{}",
        ctx.peer_core,
        bytes.len(),
        ctx.core,
        ctx.rounds,
        report::paired_rates(
            Library::Tickwire.name(),
            &rounds[Library::Tickwire as usize],
            Library::NexusWeb.name(),
            &rounds[Library::NexusWeb as usize],
        ),
    );
    let mut table = Table::new(
        "loopback_stream",
        &format!("Loopback one-way stream, {PAYLOAD_LEN} B text, messages per second"),
        Library::RawTcp.name(),
        &note,
    );
    for (library, rates) in Library::ALL.into_iter().zip(rounds) {
        table.rows.push(Row::rate(library.name(), rates));
    }
    table
}
