//! The NATS suite (`tickwire-bench nats`, issue 20): what feeding tickwire-server topics
//! through NATS costs against publishing in the server's own process, measured in one run.
//!
//! A node is a process of its own (`tickwire-bench nats-node`, `tickwire_loadgen::nats::node`):
//! tickwire-server with one worker, every connection subscribed to topic `t`, pinned to
//! `--core` (0) with taskset. It is fed one of two ways:
//! - `in-process`: the node publishes itself through `ServerHandle::publish`, at a fixed
//!   rate, each 100 B message stamped with its send time (`--local`);
//! - `NATS, K nodes`: nats-server (pinned to the same core) and K nodes, each bridging
//!   subject `tw.t` to its topic (tickwire-nats's `Bridge`); this process's feed thread,
//!   pinned to the same core, publishes the same stamped messages through tickwire-nats's
//!   `Publisher` (`tickwire_loadgen::nats::feed`).
//!
//! The subscribers are one thread of this process on `--peer-core` (1) holding every
//! connection, spread evenly over the nodes (`tickwire_loadgen::nats::subscribers`). Send times are
//! CLOCK_MONOTONIC ns (valid across processes), taken when the message is made.
//!
//! Tables (medians over rounds; the rows of a table interleaved, their order rotating each
//! round; a fresh nats-server and fresh nodes per row and round):
//! - `nats_latency_n{S}` (S = 100, 1,000): 100 B at `--latency-deliveries` / S msg/s
//!   (200,000 deliveries/s: 2,000 msg/s to 100 subscribers, 200 to 1,000), publish-to-receive
//!   p50 / p99 / p99.9 after warm-up, in-process against NATS with one node;
//! - `nats_throughput_n{S}` (S = 1,000): 100 B offered at `--throughput-rate` (10,000 msg/s,
//!   about twice what one node delivers to 1,000 subscribers here), deliveries/s, the rate
//!   the feed achieved and everything lost, for in-process, NATS with one node and NATS
//!   with `--nodes` (3).
//!
//! On the project's 2-vCPU machine the three nodes share the one core the single node had
//! (and nats-server and the feed share it too): "3 nodes against 1" measures what the bus
//! path costs per delivery when the work is split, not scale-out. docs/SCALING.md's capacity
//! model extrapolates to nodes with cores of their own.

mod tables;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

pub use tickwire_loadgen::nats::{NodeOptions, nats_node};

use tickwire_loadgen::nats::feed::{self, Feed, NatsServer, Published};
use tickwire_loadgen::nats::subscribers::{Seen, Subscribers, Window};
use tickwire_loadgen::servers::{self, ServerProcess};

use super::CONNECT_BUDGET;
use crate::Ctx;
use crate::harness::{self, Clock};
use crate::report::{self, Table};

/// Subscribers in the latency tables (full and quick runs alike: the points are short).
const LATENCY_SUBSCRIBERS: [usize; 2] = [100, 1_000];

/// The latency tables' load in deliveries per second (the rate is this divided by the
/// subscribers: 2,000 msg/s to 100, 200 msg/s to 1,000): about 4% of the 5 M/s the pub/sub
/// suite measured for one tickwire server, so that latency is the path's and not a queue's.
/// 2,000 msg/s to 1,000 subscribers (2 M/s) put a quick run's in-process p50 at 13 ms.
const LATENCY_DELIVERIES: f64 = 200_000.0;

/// The throughput table's offered rate: 10 M deliveries/s to 1,000 subscribers, about twice
/// what one node delivers here, so every row runs at its own limit.
const THROUGHPUT_RATE: f64 = 10_000.0;

/// After the subscribers are connected, before the feed starts: time for the bridges'
/// NATS subscriptions (made when a topic's first subscriber arrives) to be in place.
const SETTLE: Duration = Duration::from_millis(300);

/// The feed runs this much longer than warm-up + measured window, so that the window ends
/// while messages still flow.
const TAIL: Duration = Duration::from_millis(500);

/// The NATS suite's own options.
#[derive(clap::Args, Clone, Debug)]
pub struct Settings {
    /// The nats-server binary (default: what `bash scripts/nats-server.sh` installs).
    #[arg(long)]
    nats_server_bin: Option<PathBuf>,
    /// Subscriber counts of the latency tables (comma-separated).
    #[arg(long, default_value = "100,1000")]
    subscribers: String,
    /// Deliveries per second in the latency tables: the feed publishes this divided by the
    /// subscribers, messages per second.
    #[arg(long, default_value_t = LATENCY_DELIVERIES)]
    latency_deliveries: f64,
    /// Subscribers in the throughput table.
    #[arg(long, default_value_t = 1_000)]
    throughput_subscribers: usize,
    /// Messages per second offered in the throughput table.
    #[arg(long, default_value_t = THROUGHPUT_RATE)]
    throughput_rate: f64,
    /// Nodes of the throughput table's scale-out row.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Seconds of warm-up and of measurement per point (default 1 and 3; --quick: 0.3 and 1).
    #[arg(long, num_args = 2, value_names = ["WARMUP", "MEASURE"])]
    seconds: Option<Vec<f64>>,
}

impl Settings {
    fn window(&self, quick: bool, ctx: &Ctx) -> Window {
        let (warmup, measure) = match self.seconds.as_deref() {
            Some(&[warmup, measure]) => (warmup.max(0.0), measure.max(0.1)),
            _ if quick => (0.3, 1.0),
            _ => (1.0, 3.0),
        };
        Window {
            warmup: Duration::from_secs_f64(warmup),
            measure: Duration::from_secs_f64(measure),
            cores: (ctx.peer_core, ctx.core),
        }
    }

    fn latency_counts(&self) -> Vec<usize> {
        let counts: Vec<usize> = self
            .subscribers
            .split(',')
            .filter_map(|n| n.trim().replace('_', "").parse().ok())
            .collect();
        if counts.is_empty() {
            LATENCY_SUBSCRIBERS.to_vec()
        } else {
            counts
        }
    }
}

/// How a row's subscribers are fed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Path {
    /// One node publishing itself.
    InProcess,
    /// nats-server, this many bridging nodes, this process's feed.
    Nats(usize),
}

impl Path {
    fn name(self) -> String {
        match self {
            Self::InProcess => "in-process".to_owned(),
            Self::Nats(1) => "NATS, 1 node".to_owned(),
            Self::Nats(nodes) => format!("NATS, {nodes} nodes"),
        }
    }
}

/// One point of a table.
#[derive(Debug, Clone, Copy)]
struct Point {
    subscribers: usize,
    rate: f64,
    window: Window,
}

impl Point {
    /// How long the feed publishes.
    fn feed_time(self) -> Duration {
        self.window.warmup + self.window.measure + TAIL
    }
}

/// What one (path, point, round) measured.
#[derive(Debug, Clone)]
struct Outcome {
    seen: Seen,
    /// The feed's own count (NATS rows); a node publishing itself does not report one.
    published: Option<Published>,
    feed_time: Duration,
}

impl Outcome {
    /// The feed's last message number: its own count when it has one (messages no
    /// subscriber received at all are still messages lost), else the highest received.
    fn last(&self) -> u64 {
        self.published
            .map_or(self.seen.last, |p| p.messages.max(self.seen.last))
    }

    /// Messages the subscribers did not get, over the whole point.
    fn missed(&self) -> u64 {
        self.seen.missed + (self.last() - self.seen.last) * self.seen.subscribers
    }

    /// Messages per second the feed published: its own figure, or (in-process) the highest
    /// number a subscriber received over the feed's time.
    fn publish_rate(&self) -> f64 {
        self.published.map_or_else(
            || self.seen.last as f64 / self.feed_time.as_secs_f64(),
            |p| p.rate,
        )
    }
}

/// The preamble line describing the schedule.
pub fn describe(ctx: &Ctx, settings: &Settings, quick: bool) -> String {
    let window = settings.window(quick, ctx);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!(
        "load average at the end of the run {} (a shared machine: other work skews a point); \
         nats-server, every node and the feed thread pinned to core {} (taskset), the \
         subscriber thread to core {}: on this 2-vCPU machine three nodes share the one core \
         a single node has, so '{} nodes vs 1' measures what the bus path costs, not \
         scale-out (docs/SCALING.md extrapolates); {:.1} s warm-up + {:.1} s measured per \
         point; {} round(s), medians over rounds; latencies are CLOCK_MONOTONIC ns (send \
         and receive may be in different processes), not TSC ticks",
        load.join(" "),
        ctx.core,
        ctx.peer_core,
        settings.nodes,
        window.warmup.as_secs_f64(),
        window.measure.as_secs_f64(),
        ctx.rounds,
    )
}

/// Runs the selected tables. `_clock` is the other process suites' TSC calibration, unused:
/// this suite's times are CLOCK_MONOTONIC ns.
pub fn run(ctx: &Ctx, settings: &Settings, _clock: &Clock, quick: bool) -> Vec<Table> {
    let nats_server = match feed::nats_server_binary(settings.nats_server_bin.as_ref()) {
        Ok(binary) => binary,
        Err(why) => {
            eprintln!("nats suite: {why}");
            return Vec::new();
        }
    };
    let window = settings.window(quick, ctx);
    let mut schedule: Vec<(String, Point, Vec<Path>)> = Vec::new();
    for subscribers in settings.latency_counts() {
        let point = Point {
            subscribers,
            rate: settings.latency_deliveries / subscribers.max(1) as f64,
            window,
        };
        schedule.push((
            format!("nats_latency_n{subscribers}"),
            point,
            vec![Path::InProcess, Path::Nats(1)],
        ));
    }
    let point = Point {
        subscribers: settings.throughput_subscribers,
        rate: settings.throughput_rate,
        window,
    };
    let mut paths = vec![Path::InProcess, Path::Nats(1)];
    if settings.nodes > 1 {
        paths.push(Path::Nats(settings.nodes));
    }
    schedule.push((
        format!("nats_throughput_n{}", settings.throughput_subscribers),
        point,
        paths,
    ));
    schedule.retain(|(id, _, _)| ctx.selected(id));
    let steps: usize = schedule.iter().map(|(_, _, paths)| paths.len()).sum();
    ctx.progress.set_length((steps * ctx.rounds) as u64);
    let mut tables = Vec::new();
    for (id, point, paths) in schedule {
        // results[path][round]
        let mut results = vec![Vec::new(); paths.len()];
        for round in 1..=ctx.rounds {
            for i in report::round_order(paths.len(), round) {
                ctx.step(&format!(
                    "{id}: {} (round {round}/{})",
                    paths[i].name(),
                    ctx.rounds
                ));
                let outcome = session(ctx, &nats_server, paths[i], point);
                if let Err(why) = &outcome {
                    eprintln!("nats suite: {id} {}: {why}", paths[i].name());
                }
                results[i].push(outcome);
            }
        }
        let names: Vec<String> = paths.iter().map(|p| p.name()).collect();
        tables.push(if id.starts_with("nats_latency") {
            tables::latency_table(ctx, &id, point, &names, &results)
        } else {
            tables::throughput_table(ctx, &id, point, &names, &results)
        });
    }
    tables
}

/// Fresh processes for `path`, `point.subscribers` connections to them, one point.
fn session(
    ctx: &Ctx,
    nats_server: &std::path::Path,
    path: Path,
    point: Point,
) -> Result<Outcome, String> {
    let feed_time = point.feed_time();
    let (nats, nodes) = match path {
        Path::InProcess => {
            let local = [
                "--local".to_owned(),
                point.rate.to_string(),
                "--subscribers".to_owned(),
                point.subscribers.to_string(),
                "--seconds".to_owned(),
                feed_time.as_secs_f64().to_string(),
            ];
            (None, vec![start_node(ctx.core, &local)?])
        }
        Path::Nats(count) => {
            let nats = NatsServer::start(nats_server, ctx.core)
                .map_err(|why| format!("skipped: {why}"))?;
            let bridge = ["--nats".to_owned(), nats.url()];
            let nodes = (0..count)
                .map(|_| start_node(ctx.core, &bridge))
                .collect::<Result<Vec<_>, _>>()?;
            (Some(nats), nodes)
        }
    };
    let addrs: Vec<SocketAddr> = nodes.iter().map(|n| n.addr).collect();
    let url = nats.as_ref().map(NatsServer::url);
    let (core, peer_core) = (ctx.core, ctx.peer_core);
    let subscribers = point.subscribers;
    let outcome = thread::Builder::new()
        .name("nats-subscribers".to_owned())
        .spawn(move || -> Result<Outcome, String> {
            harness::pin_to(peer_core);
            let mut connections = Subscribers::connect(&addrs, subscribers, CONNECT_BUDGET)
                .map_err(|why| format!("skipped: connecting: {why}"))?;
            let feed = url.map(|url| {
                thread::sleep(SETTLE);
                Feed::start(url, core, point.rate, feed_time)
            });
            let seen = connections.run(point.window);
            let published = feed.map(Feed::join).transpose();
            let seen = seen.map_err(|why| format!("FAILED: {why}"))?;
            Ok(Outcome {
                seen,
                published: published.map_err(|why| format!("FAILED: {why}"))?,
                feed_time,
            })
        })
        .expect("spawn the subscribers")
        .join()
        .unwrap_or_else(|_| Err("FAILED: the subscriber thread panicked".to_owned()));
    let mut nodes = nodes;
    let exited: Vec<String> = nodes
        .iter_mut()
        .enumerate()
        .filter_map(|(i, node)| {
            node.check_alive()
                .err()
                .map(|e| format!("node {}: {e}", i + 1))
        })
        .collect();
    drop(nats);
    match outcome {
        Err(why) if !exited.is_empty() => Err(format!("{why} ({})", exited.join("; "))),
        outcome => outcome,
    }
}

/// A `nats-node` process of this binary pinned to `core`, with `args` after `--port 0`.
fn start_node(core: usize, args: &[String]) -> Result<ServerProcess, String> {
    let exe = std::env::current_exe().map_err(|e| format!("skipped: current_exe: {e}"))?;
    let mut command = servers::pinned(&exe, &core.to_string())?;
    command.args(["nats-node", "--port", "0"]).args(args);
    ServerProcess::spawn("nats-node", command).map_err(|why| format!("skipped: {why}"))
}
