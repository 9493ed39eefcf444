//! The pub/sub suite (`tickwire-bench pubsub`): fan-out servers under load, side by side in
//! one run. Each server is a process pinned to `--core` (0), started by
//! `tickwire_loadgen::servers`: tickwire's CLI (`tickwire --runtime reactor serve --pubsub`), the same with
//! `--busy-poll 50` (the `tickwire-busy-poll` row, as in the echo suite), the same with
//! `--busy-poll off` (the `tickwire-no-poll` row; the default polls adaptively), the same with
//! `--no-batched-sends` (the `tickwire-unbatched` row: a send(2) per subscriber rather than
//! one io_uring submission per round), the same with `--deflate` (the `tickwire-deflate` row,
//! whose subscribers negotiate permessage-deflate without context takeover and inflate every
//! message), and uWebSockets' `uws-echo PORT --pubsub`. Every connection subscribes to one topic and every message
//! received is published to all the other connections.
//!
//! One generator thread in this process, pinned to `--peer-core` (1), holds N connections;
//! connection 0 also publishes 100 B binary messages stamped with rdtsc and a sequence
//! number, keeping at most `--window` of them outstanding (a message is done when all N - 1
//! deliveries arrived): a closed loop that runs at the rate the slower of server and
//! generator allows, with the window wide enough that neither waits on it (`tickwire_loadgen::pubsub`).
//!
//! Table `pubsub_n{N}_w{W}` per N (100, 1,000, 10,000, 19,000): deliveries per second,
//! publish-to-receive p50 / p99 / p99.9, the generator's and the server's CPU, and
//! tickwire's rate divided by each row's; medians over rounds, a fresh server per (server, N,
//! round), servers interleaved with their order rotating each round.

use tickwire_loadgen::generator::Measured;
use tickwire_loadgen::pubsub::generator::{Generator, Load};
use tickwire_loadgen::servers::{Launch, Library};

use super::tables::{self, CPU_NOTE, LOAD_COLUMNS};
use super::{CONNECT_BUDGET, Processes, against_server, with_exit};
use crate::Ctx;
use crate::harness::Clock;
use crate::report::{self, Table};

/// Subscribers per point in a full run, and with `--quick`.
const CONNECTIONS: [usize; 4] = [100, 1_000, 10_000, 19_000];
const QUICK_CONNECTIONS: [usize; 2] = [100, 1_000];

/// Messages the publisher keeps outstanding by default. Smoke runs at 1, 8, 32, 128 and 512
/// (docs/benchmarks/pubsub.md): at 1 and 8 the rate is still the window's (it quadruples from
/// 8 to 32 as the servers get several messages per write); from 32 on tickwire's rate levels
/// off, and at 128 uWS's falls apart (seconds of latency, stalls at 10,000), so a wider
/// window would measure a pathology of uWS's backpressure, not its sustained rate.
const DEFAULT_WINDOW: usize = 32;

/// The pub/sub suite's own options.
#[derive(clap::Args, Clone, Debug)]
pub struct Settings {
    #[command(flatten)]
    processes: Processes,
    /// Messages the publisher keeps outstanding (a message is done once every other
    /// subscriber received it).
    #[arg(long, default_value_t = DEFAULT_WINDOW)]
    window: usize,
}

/// A row of the tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Server {
    /// `tickwire --runtime reactor serve --pubsub`.
    Tickwire,
    /// The same with a fixed busy-polling window (`--busy-poll 50`, as the echo suite's
    /// row): for a server that owns its core.
    TickwireBusyPoll,
    /// `--busy-poll off`: the worker always sleeps when idle (the default polls adaptively).
    TickwireNoPoll,
    /// `--no-batched-sends`: a send(2) per subscriber instead of one io_uring submission per
    /// round (what the batching is worth, in the same run).
    TickwireUnbatched,
    /// `uws-echo PORT --pubsub`.
    Uws,
    /// `tickwire --runtime reactor serve --pubsub --deflate`, subscribers inflating.
    TickwireDeflate,
}

impl Server {
    /// Table order: tickwire, the baseline, first.
    const ALL: [Self; 6] = [
        Self::Tickwire,
        Self::TickwireBusyPoll,
        Self::TickwireNoPoll,
        Self::TickwireUnbatched,
        Self::Uws,
        Self::TickwireDeflate,
    ];

    /// The `--servers` name and row label.
    fn name(self) -> &'static str {
        match self {
            Self::Tickwire => "tickwire",
            Self::TickwireBusyPoll => "tickwire-busy-poll",
            Self::TickwireNoPoll => "tickwire-no-poll",
            Self::TickwireUnbatched => "tickwire-unbatched",
            Self::Uws => "uws",
            Self::TickwireDeflate => "tickwire-deflate",
        }
    }

    /// The process, and the arguments after its own.
    fn process(self) -> (Library, &'static [&'static str]) {
        match self {
            Self::Tickwire => (Library::Tickwire, &["--pubsub"]),
            Self::TickwireBusyPoll => (Library::TickwireBusyPoll, &["--pubsub"]),
            Self::TickwireNoPoll => (Library::TickwireNoPoll, &["--pubsub"]),
            Self::TickwireUnbatched => (Library::Tickwire, &["--pubsub", "--no-batched-sends"]),
            Self::Uws => (Library::Uws, &["--pubsub"]),
            Self::TickwireDeflate => (Library::Tickwire, &["--pubsub", "--deflate"]),
        }
    }
}

/// What one (server, N) round measured.
#[derive(Debug, Clone)]
struct Outcome {
    measured: Measured,
    /// The share of deliveries that arrived compressed, over the whole run.
    compressed: f64,
}

/// The preamble line describing the schedule.
pub fn describe(ctx: &Ctx, settings: &Settings, quick: bool) -> String {
    let (warmup, measure) = settings.processes.seconds(quick);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!(
        "load average at the end of the run {} (a shared machine: other work skews a point); \
         every server a process pinned to core {} (taskset); the generator one thread pinned \
         to core {}; the publisher keeps {} message(s) outstanding; {:.1} s warm-up + {:.1} s \
         measured per point; {} round(s), medians over rounds",
        load.join(" "),
        ctx.core,
        ctx.peer_core,
        settings.window,
        warmup.as_secs_f64(),
        measure.as_secs_f64(),
        ctx.rounds,
    )
}

/// Runs the selected points: a table per N.
pub fn run(ctx: &Ctx, settings: &Settings, clock: &Clock, quick: bool) -> Vec<Table> {
    let processes = &settings.processes;
    let launch = processes.launch(ctx, "reactor");
    let servers: Vec<Server> = Server::ALL
        .into_iter()
        .filter(|s| processes.selected(s.name()))
        .collect();
    let (warmup, measure) = processes.seconds(quick);
    let load = Load {
        window: settings.window.max(1),
        warmup,
        measure,
    };
    let counts: Vec<usize> = processes
        .counts(quick, &CONNECTIONS, &QUICK_CONNECTIONS)
        .into_iter()
        .filter(|&n| ctx.selected(&id(n, load.window)))
        .collect();
    ctx.progress
        .set_length((counts.len() * ctx.rounds * servers.len()) as u64);
    let mut tables = Vec::new();
    for &count in &counts {
        // results[server][round]
        let mut results = vec![Vec::new(); servers.len()];
        for round in 1..=ctx.rounds {
            for i in report::round_order(servers.len(), round) {
                ctx.step(&format!(
                    "pubsub n={count}: {} (round {round}/{})",
                    servers[i].name(),
                    ctx.rounds
                ));
                let outcome = session(ctx, &launch, servers[i], count, load, clock);
                if let Err(why) = &outcome {
                    eprintln!("pubsub suite: {} n={count}: {why}", servers[i].name());
                }
                results[i].push(outcome);
            }
        }
        tables.push(table(ctx, count, load, &servers, &results, clock));
    }
    tables
}

fn id(count: usize, window: usize) -> String {
    format!("pubsub_n{count}_w{window}")
}

/// A fresh `server`, `count` connections, one point on them.
fn session(
    ctx: &Ctx,
    launch: &Launch,
    server: Server,
    count: usize,
    load: Load,
    clock: &Clock,
) -> Result<Outcome, String> {
    let (library, args) = server.process();
    let deflate = server == Server::TickwireDeflate;
    let ticks_per_ns = clock.ticks_per_ns;
    let (outcome, exited) = against_server(ctx, launch, library, args, move |addr, probe| {
        let mut generator = Generator::connect(addr, count, deflate, CONNECT_BUDGET, ticks_per_ns)
            .map_err(|why| format!("skipped: connecting: {why}"))?;
        let measured = generator
            .run(load, probe)
            .map_err(|why| format!("FAILED: {why}"))?;
        Ok(Outcome {
            measured,
            compressed: generator.compressed_share(),
        })
    })?;
    outcome.map_err(|why| with_exit(why, exited.as_deref()))
}

/// One N's table: a row per server, medians over its rounds.
fn table(
    ctx: &Ctx,
    count: usize,
    load: Load,
    servers: &[Server],
    results: &[Vec<Result<Outcome, String>>],
    clock: &Clock,
) -> Table {
    let title = format!(
        "Pub/sub fan-out, 100 B binary, {count} subscribers (one publishing), {} outstanding",
        load.window
    );
    let mut columns = vec![
        "deliveries/s (median)",
        "range /s",
        "p50 µs",
        "p99 µs",
        "p99.9 µs",
    ];
    columns.extend(LOAD_COLUMNS);
    let mut table = Table::with_columns(&id(count, load.window), &title, &columns, "");
    let names: Vec<&str> = servers.iter().map(|s| s.name()).collect();
    let measured: Vec<Vec<Result<Measured, String>>> = results
        .iter()
        .map(|rounds| {
            rounds
                .iter()
                .map(|r| r.as_ref().map(|o| o.measured.clone()).map_err(Clone::clone))
                .collect()
        })
        .collect();
    let (rows, notes, paired) =
        tables::measured_rows(&names, &measured, clock, &[0.5, 0.99, 0.999]);
    table.rows = rows;
    let mut note = format!(
        "{count} WebSocket connections over 127.0.0.1, all subscribed to one topic; connection \
         0 also publishes masked 100 B binary messages (rdtsc send time, sequence number, \
         fixed filler), at most {} outstanding ({}): a message is done once all {} other \
         subscribers received it, and each completion lets the next one go. Deliveries/s = \
         messages received by subscribers per second of the measured window; latency = rdtsc \
         after the read that completed a delivery minus the send time it carries, every \
         delivery of the window. Every delivery checked: the next sequence number of its \
         subscriber (no loss, no reorder, none to the publisher), 100 B, the publisher's \
         filler; after the window the point drains and delivered = published x {}. Server on \
         core {}, generator on core {}; {:.1} s warm-up, {:.1} s measured; a fresh server per \
         (server, N, round); {} round(s), servers interleaved, medians over rounds; {CPU_NOTE} \
         tickwire-deflate: `--pubsub --deflate`, subscribers offer permessage-deflate with \
         server_no_context_takeover and client_no_context_takeover and inflate every \
         compressed message (uWS's peer build has no deflate).",
        load.window,
        if load.window == DEFAULT_WINDOW {
            "the default: in smoke runs at 1 to 512 outstanding the rate grew with the window up \
             to 32, then levelled off for tickwire while uWS slowed down to failing the drain; \
             docs/benchmarks/pubsub.md"
        } else {
            "set with --window; the default is 32"
        },
        count - 1,
        count - 1,
        ctx.core,
        ctx.peer_core,
        load.warmup.as_secs_f64(),
        load.measure.as_secs_f64(),
        ctx.rounds,
    );
    if let Some(i) = servers.iter().position(|&s| s == Server::TickwireDeflate) {
        let shares: Vec<f64> = results[i]
            .iter()
            .filter_map(|r| r.as_ref().ok().map(|o| o.compressed))
            .collect();
        match tables::median(shares) {
            Some(0.0) => note.push_str(
                " tickwire-deflate: NO delivery arrived compressed (RSV1 clear on every frame, \
                 though the upgrade negotiated permessage-deflate): the server published \
                 uncompressed, so this row measures negotiation overhead, not compression.",
            ),
            Some(share) => note.push_str(&format!(
                " tickwire-deflate: {:.0}% of deliveries arrived compressed.",
                share * 100.0
            )),
            None => {}
        }
    }
    note.push_str(&paired);
    for line in notes {
        note.push_str(&format!(" {line}."));
    }
    table.note = note;
    table
}
