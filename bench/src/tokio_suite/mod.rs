//! The tokio suite (`tickwire-bench tokio`, issue 16): tickwire's async transports
//! (`tickwire-tokio`) against tickwire's blocking transport, the reference they must stay within
//! 10% of, and the async peers, in one run.
//!
//! Tables:
//! - `tokio_ws_rtt_{plain,tls}_{128,4096}` (`ws.rs`): WebSocket round trip over loopback, one
//!   text message out and its echo back, percentiles in TSC ticks;
//! - `tokio_ws_stream_{plain,tls}_{128,4096}`: one-way stream of pre-encoded text frames,
//!   messages per second, and the receiving thread's CPU time per message (which, unlike
//!   the rate, does not move with how fast the sender and the loopback deliver);
//! - `tokio_http_c1`, `tokio_http_c8` (`http.rs`): async REST round trip and requests per second
//!   over keep-alive with 1 and with 8 requests in flight.
//!
//! Every table's note gives the allocations per operation each library made on the measuring
//! thread after warm-up ([`crate::alloc_count`]), and the paired-by-round ratios of
//! tickwire-tokio against every other row ([`crate::report::paired_quantile`],
//! [`crate::report::paired_rates`]).
//!
//! Fairness: every WebSocket client talks to the same tickwire blocking server (the
//! `ws_loopback` servers: echo, or a sender of pre-encoded frames; behind tickwire's TLS server
//! for wss), every HTTP client to the HTTP suite's server; the client loops of the blocking
//! reference and of tokio-tungstenite are those of `ws_loopback`. Every async client runs on
//! a tokio current-thread runtime (I/O and time drivers on) built on the measuring thread,
//! which is pinned: the fair default for latency, and what lets the allocation counter see
//! everything the library allocates. Libraries are interleaved in each round, their order
//! rotating by one each round.

mod http;
mod ws;
mod ws_clients;

use crate::Ctx;
use crate::harness;
use crate::report::{self, Table};

/// Progress steps per round.
pub const STEPS: u64 = ws::STEPS + http::STEPS;

/// Runs the selected tables (`--only` matches table ids, `--clients` row names; the blocking
/// reference and tickwire-tokio always run). Blocks the calling thread, pinned to
/// `ctx.core`; servers run on `ctx.peer_core`.
pub fn run(ctx: &Ctx) -> Vec<Table> {
    harness::pin_to(ctx.core);
    let mut tables = ws::tables(ctx);
    tables.extend(http::tables(ctx));
    tables
}

/// The runtime of every async client here: current-thread, on the calling thread, I/O and
/// time drivers on (tickwire-tokio bounds its handshakes with tokio timers; the same runtime
/// for every library keeps the comparison even).
pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("build a tokio current-thread runtime")
}

/// "name 0.00, name 1.00, ..." for the notes: allocations per operation, median over rounds.
fn allocations_sentence(what: &str, rows: &[(&str, Vec<f64>)]) -> String {
    let figures: Vec<String> = rows
        .iter()
        .map(|(name, rounds)| format!("{name} {:.2}", report::median(rounds)))
        .collect();
    format!(
        " Allocations per {what} on the measuring thread after warm-up (median over rounds): {}.",
        figures.join(", ")
    )
}
