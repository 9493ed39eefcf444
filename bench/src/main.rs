//! `tickwire-bench`: tickwire against its peers, every library measured in one run on the same
//! pre-encoded bytes, reported as ratios.
//!
//! ```text
//! cargo run --release -p tickwire-bench -- ws            # the WebSocket suite, a few minutes
//! cargo run --release -p tickwire-bench -- ws --quick    # a smoke run of the same code paths
//! cargo run --release -p tickwire-bench -- spsc          # SPSC queue and channel
//! cargo run --release -p tickwire-bench -- http          # HTTP/1.1 REST client vs peers
//! cargo run --release -p tickwire-bench -- tokio         # tickwire-tokio vs blocking and async peers
//! cargo run --release -p tickwire-bench -- server        # echo servers (processes) under load
//! cargo run --release -p tickwire-bench -- pubsub        # pub/sub fan-out servers under load
//! cargo run --release -p tickwire-bench -- nats          # NATS-fed nodes against in-process
//! cargo run --release -p tickwire-bench -- feed          # feed session vs bare recv, failover
//! cargo run --release -p tickwire-bench -- connect       # connect plan, black hole, proxies
//! cargo run --release -p tickwire-bench -- rpc           # order entry vs jsonrpsee, a hand loop
//! ```
//!
//! Tables go to stdout and to `target/bench-report/` (report.md, one SVG per latency table,
//! index.html). `--callgrind` adds instruction counts from `valgrind --tool=callgrind`, a
//! figure that does not move with machine noise.

#![expect(
    unreachable_pub,
    reason = "a binary crate: `pub` marks what its modules share; nothing is exported"
)]

mod alloc_count;
mod callgrind;
mod connect;
mod feed;
mod harness;
mod host_copy;
mod http;
mod packet;
mod report;
mod rpc;
mod server_suite;
mod spsc;
mod tokio_suite;
mod wire;
mod ws_deflate;
mod ws_encode;
mod ws_loopback;
mod ws_parse;
mod ws_tls;

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};

use harness::{Clock, Plan};
use report::{Report, Table};

#[derive(Parser)]
#[command(
    name = "tickwire-bench",
    about = "tickwire against its peers, measured in one run"
)]
struct Cli {
    #[command(subcommand)]
    suite: Suite,
}

#[derive(Subcommand)]
enum Suite {
    /// WebSocket: in-memory parse and encode, masking, permessage-deflate, TLS, loopback TCP.
    Ws(Options),
    /// SPSC queue and channel: ping-pong round trip and one-way throughput.
    Spsc(Options),
    /// HTTP/1.1 REST client: in-memory build + parse, loopback round trip and requests/s.
    Http(Options),
    /// tickwire-tokio: WebSocket loopback (round trip, stream; 128 B and 4 KiB; ws and wss)
    /// and async REST (1 and 8 in flight) against tickwire blocking and the async peers.
    Tokio(Options),
    /// Feed session (issue 45): cost per 128 B message over a bare `recv` (blocking and
    /// tokio, user and kernel timestamps), the two-connection merge, and failover from a reset
    /// to the first message on the new connection, against a tokio-tungstenite reconnect loop
    /// and barter-integration's reconnecting socket.
    Feed(Options),
    /// Connect path (issue 46): the plan's cost on a direct TCP connect against std's and
    /// tokio's, a connect past a black-holed first address against tokio-tungstenite and
    /// reqwest, and a WebSocket connect through tinyproxy and microsocks.
    Connect(Options),
    /// Order entry (issue 49): request to response at 1, 8 and 64 in flight against
    /// jsonrpsee's WebSocket client and a hand-written id loop over tokio-tungstenite, and the
    /// session's cost per response.
    Rpc(Options),
    /// The connect suite's black-hole rows, in the namespace the suite made (not for direct
    /// use).
    #[command(hide = true)]
    ConnectBlackHoleTarget,
    /// The feed suite's server as a process of its own (used by `feed --callgrind`, so that
    /// callgrind counts the client alone; not for direct use).
    #[command(hide = true)]
    FeedServer {
        /// Core the server threads are pinned to.
        #[arg(long)]
        core: Option<usize>,
    },
    /// Runs one feed client for callgrind (used by `feed --callgrind`; not for direct use).
    #[command(hide = true)]
    FeedCallgrindTarget {
        /// Row name, as in the tables.
        library: String,
        /// Messages counted (after the warm-up).
        messages: u64,
        /// The `feed-server` port.
        #[arg(long)]
        port: u16,
    },
    /// Packet codec against network-protocol 1.3.0: framing GB/s, LZ4 / Zstd MB/s and ratio,
    /// multiplexed round trip and requests/s at 1, 8 and 64 in flight over loopback TCP.
    Packet(Options),
    /// WebSocket echo servers under load, each a process pinned to `--core`, driven by one
    /// load-generator thread on `--peer-core`: tickwire's CLI, uWebSockets, fastwebsockets and
    /// tokio-tungstenite; messages/s, round trip, CPU, and memory per idle connection.
    Server(ServerOptions),
    /// Pub/sub fan-out servers under load, each a process pinned to `--core`: one topic, N
    /// subscribers held by one generator thread on `--peer-core`, one of them publishing
    /// 100 B messages with a window outstanding: tickwire `serve --pubsub` (plain and with
    /// permessage-deflate) and uWebSockets `--pubsub`; deliveries/s, publish-to-receive
    /// latency, CPU.
    Pubsub(PubsubOptions),
    /// tickwire-nats: publish-to-client latency through NATS against the in-process path, and
    /// deliveries/s with several nodes against one, in the same run. nats-server, the nodes
    /// (tickwire-server processes) and the feed share `--core`, the subscribers' thread is on
    /// `--peer-core`: on a 2-vCPU machine three nodes share the core one node had, so "3 nodes
    /// vs 1" measures what the bus path costs, not scale-out (docs/SCALING.md extrapolates).
    Nats(NatsOptions),
    /// One node of the NATS suite: tickwire-server with a NATS bridge, or publishing itself
    /// with `--local` (not for direct use).
    #[command(hide = true)]
    NatsNode(server_suite::nats::NodeOptions),
    /// The server suite's fastwebsockets echo server (not for direct use).
    #[command(hide = true)]
    FastwebsocketsEchoServer {
        /// Port on 127.0.0.1 (0: any); printed on the first line of stdout.
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Core the server is pinned to.
        #[arg(long)]
        core: Option<usize>,
    },
    /// The server suite's tokio-tungstenite echo server (not for direct use).
    #[command(hide = true)]
    TokioTungsteniteEchoServer {
        /// Port on 127.0.0.1 (0: any); printed on the first line of stdout.
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Core the server is pinned to.
        #[arg(long)]
        core: Option<usize>,
    },
    /// The HTTP suite's loopback server as a process of its own (used by `http --callgrind`,
    /// so that callgrind counts the client alone; not for direct use).
    #[command(hide = true)]
    HttpServer {
        /// Port on 127.0.0.1 (0: any); the port is printed on the first line of stdout.
        #[arg(long, default_value_t = 0)]
        port: u16,
        /// Core the server threads are pinned to.
        #[arg(long)]
        core: Option<usize>,
    },
    /// Runs one HTTP workload for callgrind (used by `http --callgrind`; not for direct use).
    #[command(hide = true)]
    HttpCallgrindTarget {
        /// `memory` or `client`.
        workload: String,
        /// Library or client name.
        library: String,
        /// Requests counted (after the client warm-up).
        iterations: u64,
        /// The `http-server` port (client workloads).
        #[arg(long)]
        port: Option<u16>,
    },
    /// Runs one workload loop for callgrind (used by `--callgrind`; not for direct use).
    #[command(hide = true)]
    CallgrindTarget {
        /// Workload id.
        workload: String,
        /// Library name.
        library: String,
        /// Iterations of the measured operation.
        iterations: u64,
    },
}

#[derive(clap::Args, Clone)]
struct Options {
    /// A smoke run: far fewer samples and one round (for CI and quick looks).
    #[arg(long)]
    quick: bool,
    /// Rounds per workload, interleaved across libraries; the median round is reported.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Core the measuring thread is pinned to.
    #[arg(long, default_value_t = 0)]
    core: usize,
    /// Core of the peer thread in two-thread workloads.
    #[arg(long, default_value_t = 1)]
    peer_core: usize,
    /// Also count instructions per operation with valgrind --tool=callgrind.
    #[arg(long)]
    callgrind: bool,
    /// Skip the loopback TCP workloads.
    #[arg(long)]
    no_loopback: bool,
    /// Only run workloads whose id contains this string.
    #[arg(long)]
    only: Option<String>,
    /// Recorded samples per measurement instead of the plan's (warm-up a tenth of them): many
    /// short rounds pair better on a noisy machine than a few long ones.
    #[arg(long)]
    samples: Option<usize>,
    /// HTTP loopback, tokio and rpc suites: only these clients (comma-separated names as in
    /// the tables); the raw floor (http) and tickwire-tokio with the blocking reference
    /// (tokio) always run.
    #[arg(long)]
    clients: Option<String>,
    /// Where the report goes.
    #[arg(long, default_value = "target/bench-report")]
    out: PathBuf,
    /// Keep the host's large-copy routine even when it has the `rep movsb` placement defect
    /// (see `bench/src/host_copy.rs`) and drop the advice to set the glibc tunable that
    /// replaces it.
    #[arg(long)]
    host_memcpy: bool,
}

/// The server suite's options: the common ones (`--core` is the servers' core, `--peer-core`
/// the load generator's) and its own.
#[derive(clap::Args, Clone)]
struct ServerOptions {
    #[command(flatten)]
    common: Options,
    #[command(flatten)]
    settings: server_suite::Settings,
}

/// The pub/sub suite's options: the common ones (`--core` is the servers' core, `--peer-core`
/// the generator's) and its own.
#[derive(clap::Args, Clone)]
struct PubsubOptions {
    #[command(flatten)]
    common: Options,
    #[command(flatten)]
    settings: server_suite::pubsub::Settings,
}

/// The NATS suite's options: the common ones (`--core` is the nodes' and nats-server's core,
/// `--peer-core` the subscribers') and its own.
#[derive(clap::Args, Clone)]
struct NatsOptions {
    #[command(flatten)]
    common: Options,
    #[command(flatten)]
    settings: server_suite::nats::Settings,
}

/// The settings of a suite whose servers are processes of their own.
#[derive(Clone, Copy)]
enum ProcessSuite<'a> {
    /// The echo server suite.
    Server(&'a server_suite::Settings),
    /// The pub/sub suite.
    Pubsub(&'a server_suite::pubsub::Settings),
    /// The NATS suite.
    Nats(&'a server_suite::nats::Settings),
}

/// What every workload module gets: the sampling plan, the clock and where to report progress.
pub struct Ctx {
    /// Samples per measurement.
    pub plan: Plan,
    /// Rounds per workload.
    pub rounds: usize,
    /// The measuring thread's core.
    pub core: usize,
    /// The peer thread's core (loopback server, SPSC other end).
    pub peer_core: usize,
    /// Progress, one tick per library-round.
    pub progress: ProgressBar,
    only: Option<String>,
    clients: Option<Vec<String>>,
}

impl Ctx {
    /// True when the workload `id` was selected with `--only` (or no filter was given).
    pub fn selected(&self, id: &str) -> bool {
        self.only.as_deref().is_none_or(|only| id.contains(only))
    }

    /// True when the HTTP client `name` was selected with `--clients` (or no filter was
    /// given).
    pub fn client_selected(&self, name: &str) -> bool {
        self.clients
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == name))
    }

    /// Shows what is being measured now.
    pub fn step(&self, what: &str) {
        self.progress.set_message(what.to_owned());
        self.progress.inc(1);
    }
}

fn main() {
    let cli = Cli::parse();
    match cli.suite {
        Suite::Ws(options) => run_suite("ws", &options, None),
        Suite::Spsc(options) => run_suite("spsc", &options, None),
        Suite::Http(options) => run_suite("http", &options, None),
        Suite::Tokio(options) => run_suite("tokio", &options, None),
        Suite::Packet(options) => run_suite("packet", &options, None),
        Suite::Feed(options) => run_suite("feed", &options, None),
        Suite::Connect(options) => run_suite("connect", &options, None),
        Suite::Rpc(options) => run_suite("rpc", &options, None),
        Suite::ConnectBlackHoleTarget => connect::black_hole_target(),
        Suite::FeedServer { core } => {
            if let Err(message) = feed::serve_process(core) {
                eprintln!("feed-server: {message}");
                std::process::exit(2);
            }
        }
        Suite::FeedCallgrindTarget {
            library,
            messages,
            port,
        } => {
            if let Err(message) = feed::callgrind_target(&library, messages, port) {
                eprintln!("feed-callgrind-target: {message}");
                std::process::exit(2);
            }
        }
        Suite::Server(options) => run_suite(
            "server",
            &options.common,
            Some(ProcessSuite::Server(&options.settings)),
        ),
        Suite::Pubsub(options) => run_suite(
            "pubsub",
            &options.common,
            Some(ProcessSuite::Pubsub(&options.settings)),
        ),
        Suite::Nats(options) => run_suite(
            "nats",
            &options.common,
            Some(ProcessSuite::Nats(&options.settings)),
        ),
        Suite::NatsNode(options) => {
            if let Err(message) = server_suite::nats::nats_node(&options) {
                eprintln!("nats-node: {message}");
                std::process::exit(2);
            }
        }
        Suite::FastwebsocketsEchoServer { port, core } => {
            if let Err(message) = server_suite::fastwebsockets_server(port, core) {
                eprintln!("fastwebsockets-echo-server: {message}");
                std::process::exit(2);
            }
        }
        Suite::TokioTungsteniteEchoServer { port, core } => {
            if let Err(message) = server_suite::tokio_tungstenite_server(port, core) {
                eprintln!("tokio-tungstenite-echo-server: {message}");
                std::process::exit(2);
            }
        }
        Suite::HttpServer { port, core } => {
            if let Err(message) = http::serve(port, core) {
                eprintln!("http-server: {message}");
                std::process::exit(2);
            }
        }
        Suite::HttpCallgrindTarget {
            workload,
            library,
            iterations,
            port,
        } => {
            if let Err(message) = http::callgrind_target(&workload, &library, iterations, port) {
                eprintln!("http-callgrind-target: {message}");
                std::process::exit(2);
            }
        }
        Suite::CallgrindTarget {
            workload,
            library,
            iterations,
        } => {
            if let Err(message) = callgrind::run_target(&workload, &library, iterations) {
                eprintln!("callgrind-target: {message}");
                std::process::exit(2);
            }
        }
    }
}

fn run_suite(suite: &str, options: &Options, processes: Option<ProcessSuite<'_>>) {
    // First, before anything allocates or is timed: the host's large-copy check.
    let host_copy = host_copy::check(options.host_memcpy);
    // Counted before pinning: afterwards the affinity mask shows one core.
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let pinned = harness::pin_to(options.core);
    let clock = Clock::calibrate(Duration::from_millis(200));
    let (plan, rounds) = if options.quick {
        (Plan::QUICK, 1)
    } else if suite == "spsc" {
        // The two vCPUs move between near and far physical cores: at least 5 rounds.
        (Plan::FULL, options.rounds.max(5))
    } else {
        (Plan::FULL, options.rounds.max(1))
    };
    let plan = options.samples.map_or(plan, |samples| Plan {
        warmup: (samples / 10).max(1),
        samples: samples.max(1),
    });
    let steps = match suite {
        "ws" => {
            ws_parse::STEPS
                + ws_encode::STEPS
                + ws_deflate::STEPS
                + ws_tls::STEPS
                + ws_loopback::STEPS
        }
        "http" => http::STEPS,
        "tokio" => tokio_suite::STEPS,
        "server" | "pubsub" | "nats" => server_suite::STEPS,
        "packet" => packet::STEPS,
        "feed" => feed::STEPS,
        "connect" => connect::STEPS,
        "rpc" => rpc::STEPS,
        _ => spsc::STEPS,
    } * rounds as u64;
    let progress = ProgressBar::new(steps);
    progress.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
            .expect("valid progress template")
            .progress_chars("=> "),
    );
    let ctx = Ctx {
        plan,
        rounds,
        core: options.core,
        peer_core: options.peer_core,
        progress,
        only: options.only.clone(),
        clients: options
            .clients
            .as_ref()
            .map(|list| list.split(',').map(|n| n.trim().to_owned()).collect()),
    };
    let mut tables: Vec<Table> = Vec::new();
    match suite {
        "ws" => {
            tables.extend(ws_parse::run(&ctx));
            tables.extend(ws_encode::run(&ctx));
            tables.extend(ws_deflate::run(&ctx));
            tables.extend(ws_tls::run(&ctx));
            if !options.no_loopback {
                tables.extend(ws_loopback::run(&ctx));
            }
            if options.callgrind {
                ctx.progress.set_message("callgrind instruction counts");
                tables.extend(callgrind::run(&ctx));
            }
        }
        "http" => tables.extend(http::run(&ctx, options.callgrind, !options.no_loopback)),
        "tokio" => tables.extend(tokio_suite::run(&ctx)),
        "packet" => tables.extend(packet::run(&ctx, options.no_loopback)),
        "feed" => tables.extend(feed::run(&ctx, &clock, options.callgrind)),
        "connect" => tables.extend(connect::run(&ctx, &clock)),
        "rpc" => tables.extend(rpc::run(&ctx, &clock)),
        "server" | "pubsub" | "nats" => match processes {
            Some(ProcessSuite::Server(settings)) => {
                tables.extend(server_suite::run(&ctx, settings, &clock, options.quick));
            }
            Some(ProcessSuite::Pubsub(settings)) => {
                tables.extend(server_suite::pubsub::run(
                    &ctx,
                    settings,
                    &clock,
                    options.quick,
                ));
            }
            Some(ProcessSuite::Nats(settings)) => {
                tables.extend(server_suite::nats::run(
                    &ctx,
                    settings,
                    &clock,
                    options.quick,
                ));
            }
            None => unreachable!("the process suites have their settings"),
        },
        _ => tables.extend(spsc::run(&ctx)),
    }
    ctx.progress.finish_and_clear();
    let mut preamble = preamble(suite, options, (pinned, cores), &clock, plan, rounds);
    preamble.insert(2, host_copy.describe());
    if let Some(processes) = processes {
        // The sampling-plan and pinning lines describe the in-process suites; replace them.
        preamble.truncate(4);
        preamble.push(match processes {
            ProcessSuite::Server(settings) => server_suite::describe(&ctx, settings, options.quick),
            ProcessSuite::Pubsub(settings) => {
                server_suite::pubsub::describe(&ctx, settings, options.quick)
            }
            ProcessSuite::Nats(settings) => {
                server_suite::nats::describe(&ctx, settings, options.quick)
            }
        });
    }
    let report = Report {
        clock,
        preamble,
        tables,
    };
    println!("{}", report.markdown());
    match report.write(&options.out) {
        Ok(()) => println!(
            "report: {}/index.html (markdown: {}/report.md)",
            options.out.display(),
            options.out.display()
        ),
        Err(e) => {
            eprintln!(
                "could not write the report to {}: {e}",
                options.out.display()
            );
            std::process::exit(1);
        }
    }
}

fn preamble(
    suite: &str,
    options: &Options,
    (pinned, cores): (bool, usize),
    clock: &Clock,
    plan: Plan,
    rounds: usize,
) -> Vec<String> {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let args: Vec<String> = std::env::args().skip(1).collect();
    vec![
        format!(
            "suite: {suite}; command: `cargo run --release -p tickwire-bench -- {}`",
            args.join(" ")
        ),
        format!("CPU: {cpu}; {cores} logical cores"),
        format!(
            "unit: TSC ticks (rdtsc, lfence/rdtscp fenced), {:.3} ticks per ns; on this VM a tick is not a core cycle",
            clock.ticks_per_ns
        ),
        format!(
            "measuring thread pinned to core {}: {}; peer thread on core {}",
            options.core,
            if pinned {
                "yes"
            } else {
                "NO (pinning refused)"
            },
            options.peer_core
        ),
        format!(
            "{} warm-up + {} recorded samples, each the mean of a batch of {} operations; {} round(s), median round by p50",
            plan.warmup,
            plan.samples,
            harness::BATCH,
            rounds
        ),
    ]
}
