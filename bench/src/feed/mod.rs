//! The feed suite (`tickwire-bench feed`, issue 45's "Bench, same run"): what tickwire's feed
//! session costs per 128 B message over a bare `recv` on the same loopback WebSocket, how long
//! a failover takes, and what a second, merged connection costs, against a tokio-tungstenite
//! reconnect loop written as its users write it and the same client under barter-integration's
//! reconnecting socket, in one run.
//!
//! Tables:
//! - `feed_msg_128`: ticks per message (the mean over a batch of 64 `next_event` or `recv`
//!   calls per sample) on a socket the server keeps full, one connection; the notes give
//!   each feed row's p50 over its driver's bare `recv` paired by round, in ns, and the
//!   allocations per message (the suite asserts 0 for every feed row);
//! - `feed_merge_128`: the feed with two connections to the same feed, merged by number,
//!   against one (ticks per delivered message; each is received twice);
//! - `feed_failover`: from the server's reset to the first message on the new connection,
//!   the back-off at its minimum ([`clients::BACKOFF`]), one sample per cut;
//! - `callgrind_feed_msg_128` (with `--callgrind`): instructions per message, the server a
//!   process of its own so that only the client is counted.
//!
//! Every client runs on the measuring thread (pinned to `--core`; tokio rows on a
//! current-thread runtime built there), the server's threads on `--peer-core`. Rows are
//! interleaved in each round, their order rotating by one each round.

mod clients;
mod server;

use std::hint::black_box;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use hdrhistogram::Histogram;

use crate::Ctx;
use crate::alloc_count;
use crate::callgrind;
use crate::harness::{self, BATCH, Clock, Plan};
use crate::report::{self, Figures, Row, Table};
use clients::{Async, Blocking, Client};
use server::{FeedServer, Mode};
use tickwire_blocking::feed::Timestamps;

pub use server::serve_process;

/// Progress steps per round: the per-message rows, the two merged rows, the failover rows.
pub const STEPS: u64 = Client::ALL.len() as u64 + 2 + Client::RECONNECTING.len() as u64;

/// Cuts per failover row and round in a full run (the issue asks for at least 200).
const CUTS: usize = 250;

/// Cuts per failover row in a quick run.
const QUICK_CUTS: usize = 20;

/// Messages every counted run receives before the counted ones (in both callgrind runs).
const CALLGRIND_WARMUP: u64 = 2_000;

/// Messages counted per callgrind run.
const CALLGRIND_MESSAGES: u64 = 20_000;

/// Allocations per message a feed row may show and still allocate nothing per message: one
/// in 10 000 messages (a quick run times 320 000).
const MAX_ONE_OFF_ALLOCATIONS: f64 = 1e-4;

/// What one round measured.
#[derive(Default)]
struct Rounds {
    /// Per client of [`Client::ALL`]: one histogram and one allocation figure per round.
    per_message: Vec<(Vec<Histogram<u64>>, Vec<f64>)>,
    /// The blocking and the tokio feed with two connections.
    merged: Vec<(Vec<Histogram<u64>>, Vec<f64>)>,
    /// Per client of [`Client::RECONNECTING`].
    failover: Vec<Vec<Histogram<u64>>>,
}

/// Runs the suite (`--only` matches table ids); `callgrind` adds the instruction counts.
pub fn run(ctx: &Ctx, clock: &Clock, callgrind: bool) -> Vec<Table> {
    harness::pin_to(ctx.core);
    let runtime = crate::tokio_suite::runtime();
    let quick = ctx.plan.samples < Plan::FULL.samples && ctx.rounds == 1;
    let cuts = if quick { QUICK_CUTS } else { CUTS };
    let mut rounds = Rounds {
        per_message: Client::ALL.iter().map(|_| Default::default()).collect(),
        merged: vec![Default::default(), Default::default()],
        failover: Client::RECONNECTING.iter().map(|_| Vec::new()).collect(),
    };
    let merged_clients = [Client::ALL[1], Client::ALL[4]];
    for round in 1..=ctx.rounds {
        if ctx.selected("feed_msg_128") || ctx.selected("feed_merge_128") {
            let clients = (&Client::ALL[..], 1);
            measure_round(ctx, &runtime, round, clients, &mut rounds.per_message);
        }
        if ctx.selected("feed_merge_128") {
            let clients = (&merged_clients[..], 2);
            measure_round(ctx, &runtime, round, clients, &mut rounds.merged);
        }
        if ctx.selected("feed_failover") {
            for i in report::round_order(Client::RECONNECTING.len(), round) {
                let client = Client::RECONNECTING[i];
                ctx.step(&format!("feed failover / {}", client.name()));
                rounds.failover[i].push(failover(&runtime, ctx.peer_core, client, cuts));
            }
        }
    }
    let messages = ctx.plan.samples as u64 * BATCH;
    let mut tables = Vec::new();
    if !rounds.per_message[0].0.is_empty() && ctx.selected("feed_msg_128") {
        tables.push(per_message_table(&rounds, clock, messages));
    }
    if !rounds.merged[0].0.is_empty() {
        tables.push(merge_table(&rounds, merged_clients, messages));
    }
    if !rounds.failover[0].is_empty() {
        tables.push(failover_table(&rounds, clock, cuts));
    }
    if callgrind && ctx.selected("callgrind_feed_msg_128") {
        ctx.progress.set_message("callgrind instruction counts");
        tables.push(callgrind_table(ctx));
    }
    tables
}

/// One round of [`per_message`] for each of `clients` (over `connections` each), in the
/// round's order, into `out` (one entry per client).
fn measure_round(
    ctx: &Ctx,
    runtime: &tokio::runtime::Runtime,
    round: usize,
    (clients, connections): (&[Client], usize),
    out: &mut [(Vec<Histogram<u64>>, Vec<f64>)],
) {
    for i in report::round_order(clients.len(), round) {
        let client = clients[i];
        ctx.step(&format!(
            "feed, {connections} connection(s) / {}",
            client.name()
        ));
        let (histogram, allocations) =
            per_message(runtime, ctx.plan, ctx.peer_core, client, connections);
        out[i].0.push(histogram);
        out[i].1.push(allocations);
    }
}

/// Receives messages from a fresh [`Mode::Stream`] server with `client` over `connections`
/// connections: `plan.warmup` batches, then `plan.samples` timed batches of [`BATCH`]
/// messages. Returns ticks per message (one sample per batch) and allocations per message
/// on this thread in the timed part; panics if a feed row allocated.
fn per_message(
    runtime: &tokio::runtime::Runtime,
    plan: Plan,
    peer_core: usize,
    client: Client,
    connections: usize,
) -> (Histogram<u64>, f64) {
    let server = FeedServer::start(Mode::Stream, peer_core);
    let url = server.url();
    let mut histogram = harness::new_histogram();
    let warmup = plan.warmup as u64 * BATCH;
    let (allocations, kernel_stamped) = if client.is_async() {
        runtime.block_on(async {
            let mut rx = Async::open(client, &url, connections).await;
            for _ in 0..warmup {
                rx.next().await;
            }
            let counting = alloc_count::start();
            for _ in 0..plan.samples {
                let start = harness::ticks_start();
                for _ in 0..BATCH {
                    black_box(rx.next().await);
                }
                histogram.saturating_record(((harness::ticks_end() - start) / BATCH).max(1));
            }
            let allocations = alloc_count::stop_per_op(counting, plan.samples as u64 * BATCH);
            (allocations, rx.kernel_stamped())
        })
    } else {
        let mut rx = Blocking::open(client, &url, connections);
        for _ in 0..warmup {
            rx.next();
        }
        let counting = alloc_count::start();
        for _ in 0..plan.samples {
            let start = harness::ticks_start();
            for _ in 0..BATCH {
                black_box(rx.next());
            }
            histogram.saturating_record(((harness::ticks_end() - start) / BATCH).max(1));
        }
        let allocations = alloc_count::stop_per_op(counting, plan.samples as u64 * BATCH);
        (allocations, rx.kernel_stamped())
    };
    // A kernel-stamp row that got no kernel time measured the user path: say so loudly.
    assert!(
        !matches!(
            client,
            Client::BlockingFeed(Timestamps::Kernel) | Client::TokioFeed(Timestamps::Kernel)
        ) || kernel_stamped,
        "{}: no delivered message carried kernel_ns",
        client.name()
    );
    // A feed must not allocate per message; a one-off in the whole timed part (a tokio
    // driver's lazily grown state, say) shows in the notes' figure but is not per message.
    assert!(
        !client.is_feed() || allocations < MAX_ONE_OFF_ALLOCATIONS,
        "{} with {connections} connection(s): {allocations} allocations per message (must be 0)",
        client.name()
    );
    (histogram, allocations)
}

/// Failover samples of `client` against a fresh [`Mode::Cut`] server: for each of `cuts`
/// resets, the ticks from the server's reading right before the reset to the client's first
/// message on the next connection.
fn failover(
    runtime: &tokio::runtime::Runtime,
    peer_core: usize,
    client: Client,
    cuts: usize,
) -> Histogram<u64> {
    let server = FeedServer::start(Mode::Cut, peer_core);
    let url = server.url();
    let mut clock = Failover::new(cuts);
    if client.is_async() {
        runtime.block_on(async {
            let mut rx = Async::open(client, &url, 1).await;
            while !clock.done() {
                let ended = rx.next().await;
                clock.message(ended, &server);
            }
        });
    } else {
        let mut rx = Blocking::open(client, &url, 1);
        while !clock.done() {
            let ended = rx.next();
            clock.message(ended, &server);
        }
    }
    clock.histogram
}

/// The failover samples being taken.
struct Failover {
    histogram: Histogram<u64>,
    cuts: usize,
    /// The reading of the last cut not yet followed by a message.
    pending: Option<u64>,
}

impl Failover {
    fn new(cuts: usize) -> Self {
        Self {
            histogram: harness::new_histogram(),
            cuts,
            pending: None,
        }
    }

    fn done(&self) -> bool {
        self.histogram.len() >= self.cuts as u64
    }

    /// A message arrived after `ended` connections ended: each ending is one cut the server
    /// reported (in order); the first message after the last of them closes a sample.
    fn message(&mut self, ended: u32, server: &FeedServer) {
        let arrived = harness::ticks_end();
        for _ in 0..ended {
            self.pending = Some(server.next_cut());
        }
        if let Some(cut) = self.pending.take() {
            self.histogram
                .saturating_record(arrived.saturating_sub(cut).max(1));
        }
    }
}

fn per_message_table(rounds: &Rounds, clock: &Clock, messages: u64) -> Table {
    let mut table = Table::new(
        "feed_msg_128",
        "Feed session: receive one 128 B sequenced message, loopback ws://, socket kept full (ticks per message)",
        Client::ALL[0].name(),
        "The server writes pre-built frames as fast as the socket takes them; each sample is \
         the mean of 64 messages. Feed rows extract the key and number and take the receive \
         timestamps (user: monotonic and wall clock; kernel: also SO_TIMESTAMPING through \
         recvmsg); recv rows do neither.",
    );
    for (client, (histograms, _)) in Client::ALL.iter().zip(&rounds.per_message) {
        table
            .rows
            .push(Row::median_round(client.name(), histograms.clone()));
    }
    for (i, client) in Client::ALL.iter().enumerate() {
        if *client == client.floor() {
            continue;
        }
        let floor = Client::ALL
            .iter()
            .position(|c| *c == client.floor())
            .unwrap_or(0);
        let over = paired_difference_ns(
            &rounds.per_message[i].0,
            &rounds.per_message[floor].0,
            clock,
        );
        table.note.push_str(&format!(
            " {} over {}: {over:+.1} ns per message (p50, paired by round, median).",
            client.name(),
            client.floor().name()
        ));
    }
    let allocations: Vec<(&str, Vec<f64>)> = Client::ALL
        .iter()
        .zip(&rounds.per_message)
        .map(|(client, (_, allocations))| (client.name(), allocations.clone()))
        .collect();
    table
        .note
        .push_str(&allocations_note(&allocations, messages));
    table
}

fn merge_table(rounds: &Rounds, merged: [Client; 2], messages: u64) -> Table {
    let mut table = Table::new(
        "feed_merge_128",
        "Feed session: two connections merged by number against one (ticks per delivered 128 B message)",
        merged[0].name(),
        "Two connections to the same feed carry the same (key, number) pairs; each message is \
         received on both, delivered once (first arrival) and dropped as a duplicate once.",
    );
    let mut allocations = Vec::new();
    for (client, (two, two_allocations)) in merged.iter().zip(&rounds.merged) {
        let one = &rounds.per_message[Client::ALL.iter().position(|c| c == client).unwrap_or(0)];
        let one_name = format!("{}, 1 connection", client.name());
        let two_name = format!("{}, 2 connections merged", client.name());
        table.rows.push(Row::median_round(&one_name, one.0.clone()));
        table.rows.push(Row::median_round(&two_name, two.clone()));
        table.note.push_str(&report::paired_quantile(
            &two_name, two, &one_name, &one.0, 0.5,
        ));
        allocations.push((client.name(), two_allocations.clone()));
    }
    table.baseline = table.rows[0].library.clone();
    table
        .note
        .push_str(&allocations_note(&allocations, messages));
    table
}

fn failover_table(rounds: &Rounds, clock: &Clock, cuts: usize) -> Table {
    let mut table = Table::new(
        "feed_failover",
        "Failover: server reset to the first message on the new connection (ticks)",
        Client::RECONNECTING[0].name(),
        &format!(
            "{cuts} cuts per row and round: the server sends {} messages, waits 2 ms, resets \
             (SO_LINGER 0); each sample runs from its rdtsc reading right before the reset to \
             the client's first message on the next connection. Back-off {} ms for every row \
             (the feed's minimum and ceiling; the loop's sleep).",
            server::BURST,
            clients::BACKOFF.as_millis()
        ),
    );
    for (client, histograms) in Client::RECONNECTING.iter().zip(&rounds.failover) {
        let row = Row::median_round(client.name(), histograms.clone());
        if let Figures::Latency(h) = &row.figures {
            table.note.push_str(&format!(
                " {}: p50 {:.1} us, p99 {:.1} us.",
                client.name(),
                clock.ns(h.value_at_quantile(0.5)) / 1e3,
                clock.ns(h.value_at_quantile(0.99)) / 1e3
            ));
        }
        table.rows.push(row);
    }
    table
}

/// The median over rounds of `a`'s p50 minus `b`'s in the same round, in ns.
fn paired_difference_ns(a: &[Histogram<u64>], b: &[Histogram<u64>], clock: &Clock) -> f64 {
    let differences: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| clock.ns(a.value_at_quantile(0.5)) - clock.ns(b.value_at_quantile(0.5)))
        .collect();
    report::median(&differences)
}

fn allocations_note(rows: &[(&str, Vec<f64>)], messages: u64) -> String {
    let counts: Vec<String> = rows
        .iter()
        .map(|(name, rounds)| {
            let count = (report::median(rounds) * messages as f64).round();
            format!("{name} {count}")
        })
        .collect();
    format!(
        " Allocations on the measuring thread in the {messages} timed messages of the median \
         round: {}.",
        counts.join(", ")
    )
}

/// Instructions per message for every per-message row: the server a `feed-server` process
/// (not counted), the client under callgrind at [`CALLGRIND_MESSAGES`] and at 0 messages
/// after the same warm-up and setup.
fn callgrind_table(ctx: &Ctx) -> Table {
    let mut table = Table::new(
        "callgrind_feed_msg_128",
        "Instructions: receive one 128 B sequenced message, loopback ws://",
        Client::ALL[0].name(),
        &format!(
            "valgrind --tool=callgrind, (Ir at {CALLGRIND_MESSAGES} messages - Ir at 0) / \
             {CALLGRIND_MESSAGES}, after {CALLGRIND_WARMUP} messages in both runs; the server \
             is a process of its own (not counted)."
        ),
    );
    if !callgrind::valgrind_available() {
        table.note = "valgrind is not installed (apt-get install valgrind): no instruction counts."
            .to_owned();
        return table;
    }
    let exe = std::env::current_exe().expect("path of this benchmark binary");
    let mut server = match ServerProcess::start(&exe, ctx.peer_core) {
        Ok(server) => server,
        Err(e) => {
            table.note = format!("the feed-server process did not start: {e}");
            return table;
        }
    };
    let port = server.port.to_string();
    for client in Client::ALL {
        ctx.progress
            .set_message(format!("callgrind feed / {}", client.name()));
        let count = |messages: u64| {
            let messages = messages.to_string();
            callgrind::total_instructions(
                &exe,
                &[
                    "feed-callgrind-target",
                    client.name(),
                    &messages,
                    "--port",
                    &port,
                ],
                &format!("feed-{}-{messages}", client.name()),
            )
        };
        match count(0).and_then(|base| Ok((base, count(CALLGRIND_MESSAGES)?))) {
            Ok((base, loaded)) => table.rows.push(Row {
                library: client.name().to_owned(),
                figures: Figures::Instructions(
                    loaded.saturating_sub(base) as f64 / CALLGRIND_MESSAGES as f64,
                ),
            }),
            Err(e) => eprintln!("callgrind feed / {}: {e}", client.name()),
        }
    }
    server.stop();
    for client in Client::ALL {
        let (Some(row), Some(floor)) = (table.row(client.name()), table.row(client.floor().name()))
        else {
            continue;
        };
        if let (Figures::Instructions(a), Figures::Instructions(b)) = (&row.figures, &floor.figures)
            && client != client.floor()
        {
            let over = a - b;
            table.note.push_str(&format!(
                " {} over {}: {over:+.0} instructions per message.",
                client.name(),
                client.floor().name()
            ));
        }
    }
    table
}

/// The measured process of [`callgrind_table`]: connect `library` to the `feed-server` on
/// `port`, receive [`CALLGRIND_WARMUP`] messages, then `messages` more.
pub fn callgrind_target(library: &str, messages: u64, port: u16) -> Result<(), String> {
    let client = Client::from_name(library).ok_or_else(|| format!("unknown client {library}"))?;
    let url = format!("ws://127.0.0.1:{port}/");
    let total = CALLGRIND_WARMUP + messages;
    if client.is_async() {
        crate::tokio_suite::runtime().block_on(async {
            let mut rx = Async::open(client, &url, 1).await;
            for _ in 0..total {
                black_box(rx.next().await);
            }
        });
    } else {
        let mut rx = Blocking::open(client, &url, 1);
        for _ in 0..total {
            black_box(rx.next());
        }
    }
    Ok(())
}

/// The `feed-server` child of the callgrind counts.
struct ServerProcess {
    child: Child,
    port: u16,
}

impl ServerProcess {
    fn start(exe: &std::path::Path, core: usize) -> Result<Self, String> {
        let mut child = Command::new(exe)
            .args(["feed-server", "--core", &core.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        let stdout = child.stdout.take().ok_or("no stdout")?;
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let port = line
            .trim()
            .parse()
            .map_err(|_| format!("port line {line:?}"))?;
        Ok(Self { child, port })
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        self.stop();
    }
}
