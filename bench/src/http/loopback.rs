//! The loopback workloads: every client against the same minimal keep-alive server
//! (`server.rs`) over 127.0.0.1, one connection, one request in flight. One unbatched rdtsc
//! sample per round trip; requests per second from the wall time of the recorded samples.
//!
//! Owns the driving of each client ([`drive`], used by the timed tables and by the
//! callgrind target alike, so both run the same code) and the two tables. Libraries are
//! interleaved within each round, each on a fresh server and connection, and the median round
//! is reported, as in the WebSocket loopback workloads.

use std::net::SocketAddr;
use std::time::Instant;

use hdrhistogram::Histogram;

use super::Client;
use super::clients::{self, Blocking};
use super::fixtures::{self, ORDER_JSON, PATH, RESPONSE_BODY};
use super::server;
use crate::Ctx;
use crate::harness::{self, Plan};
use crate::report::{self, Row, Table};

/// Requests made before counting in a callgrind run (both the 0 and the N run make them, so
/// the difference holds only the counted requests): connection set-up, first-use
/// allocations and pool warm-up stay out of the figure.
pub(super) const COUNT_WARMUP: u64 = 200;

/// How a client is driven.
#[derive(Debug, Clone, Copy)]
pub(super) enum Mode {
    /// Timed: `plan.warmup` requests, then `plan.samples` requests each timed.
    Timed(Plan),
    /// Counted by callgrind: [`COUNT_WARMUP`] requests, then this many.
    Count(u64),
}

/// What one timed connection measured.
pub(super) struct Sampled {
    /// Ticks per round trip.
    pub(super) histogram: Histogram<u64>,
    /// Recorded requests divided by their wall time.
    pub(super) per_second: f64,
}

/// Connects `client` to the server at `addr` and drives it per `mode`. `Some` in timed mode.
/// Every response is checked ([`fixtures::check`]); the client and its runtime are dropped
/// (closing the connection) before this returns.
pub(super) fn drive(client: Client, addr: SocketAddr, mode: Mode) -> Option<Sampled> {
    match client {
        Client::Raw => blocking(&mut clients::Raw::connect(addr), mode),
        Client::Tickwire => {
            let mut tickwire = super::tickwire::client(addr).unwrap_or_else(|e| panic!("{e}"));
            blocking(&mut tickwire, mode)
        }
        Client::NexusWeb => blocking(&mut clients::NexusWeb::connect(addr), mode),
        Client::Ureq => blocking(&mut clients::Ureq::connect(addr), mode),
        Client::ReqwestBlocking => blocking(&mut clients::ReqwestBlocking::connect(addr), mode),
        Client::Reqwest => clients::current_thread_runtime().block_on(async {
            let mut reqwest = clients::Reqwest::connect(addr);
            asynchronous(mode, async || reqwest.request().await).await
        }),
        Client::Hyper => clients::current_thread_runtime().block_on(async {
            let mut hyper = clients::Hyper::connect(addr).await;
            asynchronous(mode, async || hyper.request().await).await
        }),
    }
}

fn blocking<B: Blocking + ?Sized>(client: &mut B, mode: Mode) -> Option<Sampled> {
    match mode {
        Mode::Timed(plan) => {
            for _ in 0..plan.warmup {
                client.request();
            }
            let mut histogram = harness::new_histogram();
            let wall = Instant::now();
            for _ in 0..plan.samples {
                let start = harness::ticks_start();
                client.request();
                let ticks = harness::ticks_end() - start;
                histogram.saturating_record(ticks.max(1));
            }
            let per_second = plan.samples as f64 / wall.elapsed().as_secs_f64();
            Some(Sampled {
                histogram,
                per_second,
            })
        }
        Mode::Count(iterations) => {
            for _ in 0..COUNT_WARMUP + iterations {
                client.request();
            }
            None
        }
    }
}

/// [`blocking`] for an async client, inside the caller's `block_on` (the runtime's entry
/// cost is not charged per request).
async fn asynchronous(mode: Mode, mut request: impl AsyncFnMut()) -> Option<Sampled> {
    match mode {
        Mode::Timed(plan) => {
            for _ in 0..plan.warmup {
                request().await;
            }
            let mut histogram = harness::new_histogram();
            let wall = Instant::now();
            for _ in 0..plan.samples {
                let start = harness::ticks_start();
                request().await;
                let ticks = harness::ticks_end() - start;
                histogram.saturating_record(ticks.max(1));
            }
            let per_second = plan.samples as f64 / wall.elapsed().as_secs_f64();
            Some(Sampled {
                histogram,
                per_second,
            })
        }
        Mode::Count(iterations) => {
            for _ in 0..COUNT_WARMUP + iterations {
                request().await;
            }
            None
        }
    }
}

/// One timed connection of `client` to a fresh in-process server on `peer_core`. Panics
/// unless the server answered every request of one connection without a rejection.
fn measure(client: Client, plan: Plan, peer_core: usize) -> Sampled {
    let server = server::spawn(peer_core);
    let sampled = drive(client, server.addr(), Mode::Timed(plan)).expect("timed mode samples");
    let served = server.finish();
    let name = client.name();
    assert_eq!(served.rejected, 0, "{name}: the server rejected requests");
    assert_eq!(
        served.connections, 1,
        "{name}: opened {} connections instead of keeping one alive",
        served.connections
    );
    assert_eq!(
        served.requests,
        (plan.warmup + plan.samples) as u64,
        "{name}: the server counted another number of requests"
    );
    sampled
}

/// The round-trip and requests-per-second tables for `clients`, `ctx.rounds` rounds with the
/// clients interleaved, median round (by p50) and median rate.
pub(super) fn tables(ctx: &Ctx, clients: &[Client]) -> [Table; 2] {
    harness::pin_to(ctx.core);
    let plan = ctx.plan;
    let mut latencies: Vec<Vec<Histogram<u64>>> = vec![Vec::new(); clients.len()];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); clients.len()];
    for round in 1..=ctx.rounds {
        for i in report::round_order(clients.len(), round) {
            let client = &clients[i];
            ctx.step(&format!(
                "http loopback: {} (round {round}/{})",
                client.name(),
                ctx.rounds
            ));
            let sampled = measure(*client, plan, ctx.peer_core);
            latencies[i].push(sampled.histogram);
            rates[i].push(sampled.per_second);
        }
    }
    let setup = format!(
        "One keep-alive TCP connection over 127.0.0.1 per client and round (the server asserts \
         a single connection and no rejected request), TCP_NODELAY on; POST {PATH} with the \
         four headers and the {} B JSON body, answered by a std::net + httparse server thread \
         (core {}) that checks method, target and body and writes the fixed {} B response \
         ({} B JSON body, Content-Length) in one write; the client (core {}) checks status \
         and the whole body of every response. {} warm-up + {} recorded requests per \
         connection. Async clients (reqwest, hyper) run on a tokio current-thread runtime \
         on the measuring thread; reqwest (blocking) drives its own runtime thread, which \
         inherits core {}. Clients interleaved in each round, their order rotating by one \
         each round.",
        ORDER_JSON.len(),
        ctx.peer_core,
        fixtures::response().len(),
        RESPONSE_BODY.len(),
        ctx.core,
        plan.warmup,
        plan.samples,
        ctx.core,
    );
    let floor = Client::Raw.name();
    let mut rtt = Table::new(
        "http_rtt",
        "HTTP loopback round trip: POST 106 B JSON, 228 B JSON response, one keep-alive connection",
        floor,
        &format!("{setup} One unbatched sample per request; median round by p50."),
    );
    let mut rate = Table::new(
        "http_rate",
        "HTTP loopback requests per second, one connection, one request in flight",
        floor,
        &format!(
            "The recorded requests of the round-trip workload divided by their wall time \
             (sequential, so this is the inverse of the mean round trip). {setup} Median of \
             {} round(s), range over rounds.{}",
            ctx.rounds,
            paired(clients, &rates, Client::Tickwire, Client::NexusWeb),
        ),
    );
    for ((client, histograms), per_second) in clients.iter().zip(latencies).zip(rates) {
        rtt.rows.push(Row::median_round(client.name(), histograms));
        rate.rows.push(Row::rate(client.name(), per_second));
    }
    rtt.note.push_str(&super::targets_rtt(&rtt));
    [rtt, rate]
}

/// [`report::paired_rates`] of `a` against `b` when both were measured.
fn paired(clients: &[Client], rates: &[Vec<f64>], a: Client, b: Client) -> String {
    let at = |c: Client| clients.iter().position(|&x| x == c).map(|i| &rates[i]);
    match (at(a), at(b)) {
        (Some(ra), Some(rb)) => report::paired_rates(a.name(), ra, b.name(), rb),
        _ => String::new(),
    }
}
