//! The server suite (`tickwire-bench server`): WebSocket echo servers under load, side by side
//! in one run. Each server is a process of its own pinned to `--core` (0): tickwire's CLI
//! (`tickwire --runtime R serve`), uWebSockets' echo, and fastwebsockets and tokio-tungstenite
//! on a tokio current-thread runtime (hidden subcommands, `tickwire_loadgen::echo`). One
//! load-generator thread in this process, pinned to `--peer-core` (1), drives them
//! (`tickwire_loadgen::generator`).
//!
//! Tables:
//! - `server_{16,1024}_n{N}_d{depth}`: N connections (1, 100, 1,000, 10,000, 19,000) each
//!   keeping `depth` (1 or 8) binary messages in flight; echoes per second in the measured
//!   window, round-trip p50 and p99 (each the median over rounds), the generator's and the
//!   server's CPU use, and tickwire's rate divided by each row's;
//! - `server_memory`: resident memory per idle connection (VmRSS with N idle connections
//!   minus VmRSS after one connection came and went, divided by N) at 1,000 and 10,000.
//!
//! Every (server, N) session starts a fresh server, opens N connections once and runs the
//! four (payload, depth) points on them in turn; sessions interleave the servers, their order
//! rotating each round. Owns the schedule and the sessions; not the tables (`tables.rs`), nor
//! the processes and the sockets (`tickwire_loadgen`'s `servers`, `generator`, `connection`).

pub mod nats;
pub mod pubsub;
mod tables;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

pub use tickwire_loadgen::echo::{fastwebsockets_server, tokio_tungstenite_server};
use tickwire_loadgen::generator::{Generator, Load, Measured, Probe};
use tickwire_loadgen::servers::{self, Launch, Library, ServerProcess};

use crate::Ctx;
use crate::harness::{self, Clock};
use crate::report::{self, Table};

/// Progress steps are set from the schedule once it is known ([`run`]).
pub const STEPS: u64 = 0;

/// Payload sizes, bytes.
const PAYLOADS: [usize; 2] = [16, 1024];
/// Messages in flight per connection.
const DEPTHS: [usize; 2] = [1, 8];
/// Connections per point in a full run, and with `--quick`.
const CONNECTIONS: [usize; 5] = [1, 100, 1_000, 10_000, 19_000];
const QUICK_CONNECTIONS: [usize; 3] = [1, 100, 1_000];
/// Idle connections in the memory table (a quick run: the first only).
const MEMORY_CONNECTIONS: [usize; 2] = [1_000, 10_000];
/// tickwire's `blocking` runtime runs a thread per connection: load points above this many
/// connections are skipped rather than left to crawl.
const BLOCKING_MAX_CONNECTIONS: usize = 1_000;
/// Time to open every connection of a session.
const CONNECT_BUDGET: Duration = Duration::from_secs(60);
/// How long N connections sit idle before the memory reading.
const IDLE: Duration = Duration::from_secs(1);

/// The options both process suites take (`server` and `pubsub`).
#[derive(clap::Args, Clone, Debug)]
pub struct Processes {
    /// Only these servers (comma-separated row names as in the tables; server: tickwire,
    /// tickwire-busy-poll, tickwire-no-poll, tickwire-unbatched, uws, fastwebsockets, tokio-tungstenite;
    /// pubsub: tickwire,
    /// tickwire-busy-poll, tickwire-no-poll, tickwire-unbatched, uws, tickwire-deflate).
    #[arg(long)]
    servers: Option<String>,
    /// The tickwire CLI binary (default: `tickwire` next to this binary, i.e.
    /// target/release/tickwire from `cargo build --release -p tickwire-cli`).
    #[arg(long)]
    tickwire_bin: Option<PathBuf>,
    /// The uWebSockets echo binary (`bash /work/shared/peers/uws/build.sh` builds it).
    #[arg(long)]
    uws_bin: Option<PathBuf>,
    /// Only these connection counts (comma-separated), instead of the suite's list.
    #[arg(long)]
    connections: Option<String>,
    /// Seconds of warm-up and of measurement per point (default 0.5 and 2; --quick: 0.2 and
    /// 0.5).
    #[arg(long, num_args = 2, value_names = ["WARMUP", "MEASURE"])]
    seconds: Option<Vec<f64>>,
}

impl Processes {
    /// True when the server row `name` was selected with `--servers` (or no filter given).
    fn selected(&self, name: &str) -> bool {
        self.servers
            .as_ref()
            .is_none_or(|list| list.split(',').any(|n| n.trim() == name))
    }

    /// The connection counts: `--connections`, else `full` (or `quick` with `--quick`).
    fn counts(&self, quick: bool, full: &[usize], quick_counts: &[usize]) -> Vec<usize> {
        match &self.connections {
            Some(list) => list
                .split(',')
                .filter_map(|n| n.trim().replace('_', "").parse().ok())
                .collect(),
            None if quick => quick_counts.to_vec(),
            None => full.to_vec(),
        }
    }

    /// Warm-up and measured window per point.
    fn seconds(&self, quick: bool) -> (Duration, Duration) {
        match self.seconds.as_deref() {
            Some(&[warmup, measure]) => (
                Duration::from_secs_f64(warmup.max(0.0)),
                Duration::from_secs_f64(measure.max(0.01)),
            ),
            _ if quick => (Duration::from_millis(200), Duration::from_millis(500)),
            _ => (Duration::from_millis(500), Duration::from_secs(2)),
        }
    }

    /// Where the binaries are; tickwire runs with `--runtime tickwire_runtime`.
    fn launch(&self, ctx: &Ctx, tickwire_runtime: &str) -> Launch {
        let sibling = |name: &str| {
            std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(|dir| dir.join(name)))
                .unwrap_or_else(|| PathBuf::from(name))
        };
        let home = std::env::var_os("HOME").map_or_else(PathBuf::new, PathBuf::from);
        Launch {
            tickwire_bin: self
                .tickwire_bin
                .clone()
                .unwrap_or_else(|| sibling("tickwire")),
            tickwire_runtime: tickwire_runtime.to_owned(),
            uws_bin: self
                .uws_bin
                .clone()
                .unwrap_or_else(|| home.join(".cache/uws-peer/uws-echo")),
            core: ctx.core,
        }
    }
}

/// The server suite's own options.
#[derive(clap::Args, Clone, Debug)]
pub struct Settings {
    #[command(flatten)]
    processes: Processes,
    /// The runtime tickwire's server runs on (`tickwire --runtime R serve`): reactor,
    /// blocking or tokio.
    #[arg(long, default_value = "reactor")]
    tickwire_runtime: String,
    /// The headroom test: the generator busy-waits this many ns after every event it handles.
    /// If a server's rate holds with the generator slowed down, the generator was not the limit.
    #[arg(long, default_value_t = 0)]
    generator_handicap_ns: u64,
    /// The generator writes each connection with its own send(2), as before batching, rather
    /// than a wake-up's writes in one io_uring submission (`loadgen/src/uring.rs`).
    #[arg(long)]
    generator_send_each: bool,
}

/// The preamble line describing the schedule.
pub fn describe(ctx: &Ctx, settings: &Settings, quick: bool) -> String {
    let (warmup, measure, handicap, batched) = timing(settings, quick);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load: Vec<&str> = load.split_whitespace().take(3).collect();
    format!(
        "load average at the end of the run {} (a shared machine: other work skews a point); \
         every server a process pinned to core {} (taskset, or core_affinity inside); the load \
         generator one thread pinned to core {}; {:.1} s warm-up + {:.1} s measured per point; \
         {} round(s), medians over rounds; tickwire runtime `{}`; the generator's writes {}{}",
        load.join(" "),
        ctx.core,
        ctx.peer_core,
        warmup.as_secs_f64(),
        measure.as_secs_f64(),
        ctx.rounds,
        settings.tickwire_runtime,
        if batched {
            "of a wake-up in one io_uring submission (where the kernel allows it)"
        } else {
            "one send(2) per connection per wake-up (--generator-send-each)"
        },
        if handicap.is_zero() {
            String::new()
        } else {
            format!(
                "; HEADROOM TEST: the generator busy-waits {} ns after every event",
                handicap.as_nanos()
            )
        }
    )
}

/// Runs the selected points and the memory table.
pub fn run(ctx: &Ctx, settings: &Settings, clock: &Clock, quick: bool) -> Vec<Table> {
    let launch = settings.processes.launch(ctx, &settings.tickwire_runtime);
    let libraries: Vec<Library> = Library::ALL
        .into_iter()
        .filter(|l| settings.processes.selected(l.name()))
        .collect();
    let counts = settings
        .processes
        .counts(quick, &CONNECTIONS, &QUICK_CONNECTIONS);
    let timing = timing(settings, quick);
    let memory_counts: &[usize] = if quick {
        &MEMORY_CONNECTIONS[..1]
    } else {
        &MEMORY_CONNECTIONS
    };
    let memory = ctx.selected("server_memory");
    let sessions: usize = counts
        .iter()
        .filter(|&&n| !points(ctx, n, timing).is_empty())
        .count()
        * ctx.rounds
        * libraries.len()
        + if memory {
            memory_counts.len() * libraries.len()
        } else {
            0
        };
    ctx.progress.set_length(sessions as u64);
    let mut tables = Vec::new();
    for &count in &counts {
        let points = points(ctx, count, timing);
        if points.is_empty() {
            continue;
        }
        // results[point][library][round]
        let mut results = vec![vec![Vec::new(); libraries.len()]; points.len()];
        for round in 1..=ctx.rounds {
            for i in report::round_order(libraries.len(), round) {
                ctx.step(&format!(
                    "server n={count}: {} (round {round}/{})",
                    libraries[i].name(),
                    ctx.rounds
                ));
                let measured = session(ctx, &launch, libraries[i], count, &points, clock);
                for (p, outcome) in measured.into_iter().enumerate() {
                    results[p][i].push(outcome);
                }
            }
        }
        for (point, results) in points.iter().zip(results) {
            tables.push(tables::point_table(
                ctx, &launch, point, count, &libraries, &results, clock,
            ));
        }
    }
    if memory {
        tables.push(tables::memory_table(
            ctx,
            &launch,
            &libraries,
            memory_counts,
            clock,
        ));
    }
    tables
}

/// One point of a session.
#[derive(Debug, Clone)]
struct Point {
    id: String,
    load: Load,
}

/// The selected points at `count` connections.
fn points(ctx: &Ctx, count: usize, (warmup, measure, handicap, batched): Timing) -> Vec<Point> {
    let mut points = Vec::new();
    for payload_len in PAYLOADS {
        for depth in DEPTHS {
            let id = format!("server_{payload_len}_n{count}_d{depth}");
            if ctx.selected(&id) {
                points.push(Point {
                    id,
                    load: Load {
                        payload_len,
                        depth,
                        warmup,
                        measure,
                        handicap,
                        batched,
                    },
                });
            }
        }
    }
    points
}

/// Warm-up, measured window, the generator's handicap per event, and whether it batches its
/// writes.
type Timing = (Duration, Duration, Duration, bool);

fn timing(settings: &Settings, quick: bool) -> Timing {
    let handicap = Duration::from_nanos(settings.generator_handicap_ns);
    let (warmup, measure) = settings.processes.seconds(quick);
    (warmup, measure, handicap, !settings.generator_send_each)
}

/// Why `library` does not run at `count` connections, if it does not.
fn capped(launch: &Launch, library: Library, count: usize) -> Option<String> {
    if matches!(library, Library::TickwireBusyPoll | Library::TickwireNoPoll)
        && launch.tickwire_runtime != "reactor"
    {
        return Some("skipped: busy polling is an option of the reactor runtime".to_owned());
    }
    if library == Library::TickwireUnbatched && launch.tickwire_runtime != "reactor" {
        return Some("skipped: batched sends are an option of the reactor runtime".to_owned());
    }
    (library == Library::Tickwire
        && launch.tickwire_runtime == "blocking"
        && count > BLOCKING_MAX_CONNECTIONS)
        .then(|| {
            format!(
                "skipped: the blocking runtime runs a thread per connection; load points stop \
                 at {BLOCKING_MAX_CONNECTIONS} connections"
            )
        })
}

/// A fresh server, `count` connections, then every point in turn on them. One outcome per
/// point; after a failed point the rest are not run (their connections' state is unknown).
fn session(
    ctx: &Ctx,
    launch: &Launch,
    library: Library,
    count: usize,
    points: &[Point],
    clock: &Clock,
) -> Vec<Result<Measured, String>> {
    let all = |why: String| points.iter().map(|_| Err(why.clone())).collect();
    if let Some(why) = capped(launch, library, count) {
        return all(why);
    }
    let loads: Vec<Load> = points.iter().map(|p| p.load).collect();
    let ticks_per_ns = clock.ticks_per_ns;
    let session = against_server(ctx, launch, library, &[], move |addr, probe| {
        let mut generator = Generator::connect(addr, count, CONNECT_BUDGET, ticks_per_ns)
            .map_err(|why| format!("skipped: connecting: {why}"))?;
        let mut outcomes = Vec::new();
        for load in loads {
            let outcome = generator.run(load, probe);
            let failed = outcome.is_err();
            outcomes.push(outcome.map_err(|why| format!("FAILED: {why}")));
            if failed {
                break;
            }
        }
        Ok(outcomes)
    });
    let (outcome, exited) = match session {
        Ok(session) => session,
        Err(why) => return all(why),
    };
    let mut outcomes = match outcome {
        Ok(outcomes) => outcomes,
        Err(why) => return all(with_exit(why, exited.as_deref())),
    };
    for outcome in &mut outcomes {
        if let Err(why) = outcome {
            *why = with_exit(std::mem::take(why), exited.as_deref());
            eprintln!("server suite: {} n={count}: {why}", library.name());
        }
    }
    while outcomes.len() < points.len() {
        outcomes.push(Err(
            "not run: an earlier point of the session failed".to_owned()
        ));
    }
    outcomes
}

/// A fresh `library` server (`extra` arguments after its own) and `work` run against it on
/// a thread pinned to the generator's core. Ok with `work`'s outcome and why the server
/// exited, if it did by then; Err ("skipped: ...") when the server could not start.
fn against_server<T: Send + 'static>(
    ctx: &Ctx,
    launch: &Launch,
    library: Library,
    extra: &[&str],
    work: impl FnOnce(SocketAddr, Probe) -> Result<T, String> + Send + 'static,
) -> Result<(Result<T, String>, Option<String>), String> {
    let mut server =
        ServerProcess::start(library, launch, extra).map_err(|why| format!("skipped: {why}"))?;
    let addr = server.addr;
    let probe = Probe {
        server_pid: server.pid(),
        generator_core: ctx.peer_core,
        server_core: ctx.core,
    };
    let core = ctx.peer_core;
    let outcome = thread::Builder::new()
        .name("server-load".to_owned())
        .spawn(move || {
            harness::pin_to(core);
            work(addr, probe)
        })
        .expect("spawn the load generator")
        .join()
        .unwrap_or_else(|_| Err("FAILED: the load generator panicked".to_owned()));
    let exited = server.check_alive().err();
    Ok((outcome, exited))
}

/// `why`, with the server's exit status when it had exited.
fn with_exit(why: String, exited: Option<&str>) -> String {
    match exited {
        Some(exit) => format!("{why} ({exit})"),
        None => why,
    }
}

/// (VmRSS after one connection came and went, VmRSS with `count` idle connections).
fn idle_memory(
    ctx: &Ctx,
    launch: &Launch,
    library: Library,
    count: usize,
    clock: &Clock,
) -> Result<(u64, u64), String> {
    let server = ServerProcess::start(library, launch, &[])?;
    let (addr, pid) = (server.addr, server.pid());
    let (core, ticks_per_ns) = (ctx.peer_core, clock.ticks_per_ns);
    let probe = Probe {
        server_pid: pid,
        generator_core: core,
        server_core: launch.core,
    };
    let once = Load {
        payload_len: 16,
        depth: 1,
        warmup: Duration::ZERO,
        measure: Duration::ZERO,
        handicap: Duration::ZERO,
        batched: false,
    };
    thread::Builder::new()
        .name("server-memory".to_owned())
        .spawn(move || {
            harness::pin_to(core);
            let mut one = Generator::connect(addr, 1, CONNECT_BUDGET, ticks_per_ns)?;
            one.run(once, probe)?;
            drop(one);
            thread::sleep(Duration::from_millis(300));
            let empty = servers::resident_bytes(pid)?;
            let mut all = Generator::connect(addr, count, CONNECT_BUDGET, ticks_per_ns)?;
            all.run(once, probe)?;
            thread::sleep(IDLE);
            let full = servers::resident_bytes(pid)?;
            drop(all);
            Ok((empty, full))
        })
        .expect("spawn the memory generator")
        .join()
        .unwrap_or_else(|_| Err("the generator panicked".to_owned()))
}
