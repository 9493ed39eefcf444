//! `tickwire demo`: a local market-data fan-out in about a minute. The reactor server
//! (tickwire-server) in this process with three topics, each with its own slow-consumer
//! policy; a synthetic feed publishing book updates and trades; many tickwire clients, a few
//! of them slow on purpose, each checking it got every message in order or was told about
//! the gap; a progress line while it runs; a summary on stdout and an HTML report at the end.
//!
//! Owns the run: starting and stopping the threads and the server, the progress line and the
//! verdict. The parts: `app` (the server's handler), `feed`, `client`, `check` (the sequence
//! checker), `stats` (histograms and the timeline), `report` and `charts` (the summary and
//! the HTML page, its charts drawn by tickwire-charts, the renderer the bench's report uses
//! too). See docs/DEMO.md.

pub(crate) mod app;
mod charts;
mod check;
mod client;
pub(crate) mod feed;
mod report;
mod stats;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use clap::Args;
use tickwire::server::{CloseCode, ServerBuilder, SlowConsumer, Topic};

use client::{ClientReport, Pace};
use stats::{Gatherer, Interval, Second, format_count, format_ns};

/// `tickwire demo`'s options; the defaults run well on a 2-core machine (docs/DEMO.md).
#[derive(Args, Debug, Clone)]
pub(crate) struct DemoArgs {
    /// How long the feed publishes, in seconds.
    #[arg(long, value_name = "SECS", default_value_t = 60.0)]
    pub(crate) duration: f64,
    /// Subscribing clients (each subscribes to every topic).
    #[arg(long, default_value_t = 200)]
    pub(crate) clients: usize,
    /// How many of the clients are slow on purpose (they stall, or read a twentieth of the
    /// feed).
    #[arg(long, default_value_t = 3)]
    pub(crate) slow: usize,
    /// Book updates and trades published per second, over all symbols.
    #[arg(long, default_value_t = 2_000)]
    pub(crate) rate: u32,
    /// Symbols quoted (1 to 16).
    #[arg(long, default_value_t = 8)]
    pub(crate) symbols: usize,
    /// Where to write the HTML report.
    #[arg(long, value_name = "PATH", default_value = "target/demo/report.html")]
    pub(crate) report: PathBuf,
    /// The server's send budget per connection, in bytes: past it the topics' policies act.
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 10)]
    pub(crate) send_budget: usize,
    /// Server worker threads (default: the CPUs this process may run on).
    #[arg(long)]
    pub(crate) workers: Option<usize>,
    /// Threads the clients share (each runs an epoll loop over its clients).
    #[arg(long, default_value_t = 2)]
    pub(crate) client_threads: usize,
}

/// Number of topics.
pub(crate) const TOPICS: usize = 3;

/// The demo's topics, in the order of [`Shared::topic`]'s list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TopicId {
    /// Order-book updates, conflated per symbol for a slow client.
    Book = 0,
    /// Trades, oldest dropped for a slow client.
    Trades = 1,
    /// The feed's counts four times a second; a client too slow for it is closed.
    Status = 2,
}

impl TopicId {
    pub(crate) const ALL: [TopicId; TOPICS] = [Self::Book, Self::Trades, Self::Status];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Book => "book",
            Self::Trades => "trades",
            Self::Status => "status",
        }
    }

    /// Why each topic has the policy it has is in docs/DEMO.md.
    pub(crate) fn policy(self) -> SlowConsumer {
        match self {
            Self::Book => SlowConsumer::Conflate,
            Self::Trades => SlowConsumer::DropOldest,
            Self::Status => SlowConsumer::Close(CloseCode::TRY_AGAIN_LATER),
        }
    }

    /// The topic called `name`.
    pub(crate) fn named(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The topic of a message whose `type` is `kind`.
    pub(crate) fn of_message(kind: &str) -> Option<Self> {
        match kind {
            "book" => Some(Self::Book),
            "trade" => Some(Self::Trades),
            "status" => Some(Self::Status),
            _ => None,
        }
    }
}

/// What the feed, the clients and the run loop share.
pub(crate) struct Shared {
    /// Timestamps in messages are nanoseconds since this.
    epoch: Instant,
    topics: Vec<Topic>,
    /// The last sequence number published per topic.
    pub(crate) published: [AtomicU64; TOPICS],
    /// The feed has published its last message.
    pub(crate) feed_done: AtomicBool,
    /// Stop now (the run failed).
    pub(crate) stop: AtomicBool,
    /// Clients whose first connection is subscribed.
    pub(crate) ready: AtomicUsize,
    /// `--rate`.
    pub(crate) rate: u32,
}

impl Shared {
    pub(crate) fn now_ns(&self) -> u64 {
        self.epoch.elapsed().as_nanos() as u64
    }

    pub(crate) fn topic(&self, id: TopicId) -> &Topic {
        &self.topics[id as usize]
    }

    pub(crate) fn published_now(&self) -> [u64; TOPICS] {
        std::array::from_fn(|t| self.published[t].load(Ordering::Acquire))
    }
}

/// How long the clients may take to connect and subscribe.
const CONNECT_PATIENCE: Duration = Duration::from_secs(30);
/// SO_SNDBUF of the demo server's sockets (Linux doubles it).
const SOCKET_SEND_BUFFER: usize = 64 << 10;

/// How often the progress line is refreshed.
const TICK: Duration = Duration::from_millis(250);

pub(crate) fn run(args: &DemoArgs) -> Result<(), String> {
    validate(args)?;
    // A fan-out server caps the kernel's share too: left to autotuning, a loopback socket's
    // send buffer grows to megabytes and a slow client is seconds behind before the send
    // budget (the server's own queue) is reached.
    let mut builder = ServerBuilder::new()
        .send_budget(args.send_budget)
        .socket_send_buffer(Some(SOCKET_SEND_BUFFER));
    if let Some(workers) = args.workers {
        builder = builder.workers(workers);
    }
    let server = builder
        .bind("127.0.0.1:0")
        .map_err(|e| format!("bind: {e}"))?;
    let addr = server.local_addr();
    let running = server
        .start(|worker| {
            let topics = TopicId::ALL
                .iter()
                .map(|t| worker.handle.topic(t.name(), t.policy()))
                .collect::<Result<Vec<_>, _>>()
                .expect("one policy per topic");
            app::Feeds::new(topics)
        })
        .map_err(|e| format!("start the server: {e}"))?;
    let handle = running.handle().clone();
    let topics = TopicId::ALL
        .iter()
        .map(|t| handle.topic(t.name(), t.policy()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    let shared = Arc::new(Shared {
        epoch: Instant::now(),
        topics,
        published: Default::default(),
        feed_done: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        ready: AtomicUsize::new(0),
        rate: args.rate,
    });
    eprintln!(
        "tickwire demo: server on ws://{addr}; connecting {} clients ({} slow)",
        args.clients, args.slow
    );
    let (intervals, client_threads) = start_clients(args, addr, &shared);
    let outcome = wait_ready(args.clients, &shared, &client_threads).and_then(|()| {
        let started = Instant::now();
        let feed = {
            let shared = Arc::clone(&shared);
            let handle = handle.clone();
            let (rate, symbols) = (args.rate, args.symbols);
            let duration = Duration::from_secs_f64(args.duration);
            thread::Builder::new()
                .name("demo-feed".into())
                .spawn(move || feed::run(&handle, &shared, rate, symbols, duration))
                .map_err(|e| e.to_string())?
        };
        let timeline = progress(args, &shared, intervals, &client_threads);
        let fed = feed.join().map_err(|_| "the feed panicked".to_owned())?;
        let feed_seconds = started.elapsed().as_secs_f64().min(args.duration);
        fed.map_err(|e| format!("publishing: {e}"))?;
        Ok((timeline, feed_seconds))
    });
    shared.stop.store(outcome.is_err(), Ordering::Release);
    shared.feed_done.store(true, Ordering::Release);
    let mut clients = Vec::new();
    for thread in client_threads {
        clients.extend(thread.join().map_err(|_| "a client thread panicked")?);
    }
    let _ = running.shutdown(Duration::from_secs(1));
    let ((timeline, histograms), feed_seconds) = outcome?;
    let summary = report::Summary::new(args, &shared, clients, timeline, histograms, feed_seconds);
    print!("{}", summary.text());
    let _ = std::io::stdout().flush();
    if let Some(dir) = args.report.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(&args.report, summary.html())
        .map_err(|e| format!("{}: {e}", args.report.display()))?;
    println!("report: {}", args.report.display());
    if summary.passed() {
        Ok(())
    } else {
        Err("a check failed (see above)".to_owned())
    }
}

fn validate(args: &DemoArgs) -> Result<(), String> {
    if !(args.duration > 0.0 && args.duration <= 86_400.0) {
        return Err("--duration must be between 0 and 86400 seconds".into());
    }
    if args.clients == 0 || args.slow > args.clients {
        return Err("--clients must be at least 1 and at least --slow".into());
    }
    if args.rate == 0 {
        return Err("--rate must be at least 1".into());
    }
    if args.symbols == 0 || args.symbols > feed::MAX_SYMBOLS {
        return Err(format!("--symbols must be 1 to {}", feed::MAX_SYMBOLS));
    }
    if args.client_threads == 0 {
        return Err("--client-threads must be at least 1".into());
    }
    Ok(())
}

type ClientThread = thread::JoinHandle<Vec<ClientReport>>;

/// Starts the client threads: client `i` is on thread `i % threads`; the first `--slow`
/// clients are slow, alternately stalling and throttled.
fn start_clients(
    args: &DemoArgs,
    server: std::net::SocketAddr,
    shared: &Arc<Shared>,
) -> (Vec<Arc<Mutex<Interval>>>, Vec<ClientThread>) {
    let threads = args.client_threads.min(args.clients);
    let mut paces = vec![Vec::new(); threads];
    for i in 0..args.clients {
        let pace = match i {
            i if i >= args.slow => Pace::Fast,
            i if i % 2 == 0 => Pace::Stalling,
            _ => Pace::Throttled,
        };
        paces[i % threads].push(pace);
    }
    let mut intervals = Vec::new();
    let mut handles = Vec::new();
    for (index, paces) in paces.into_iter().enumerate() {
        let interval = Arc::new(Mutex::new(Interval::new()));
        intervals.push(Arc::clone(&interval));
        let shared = Arc::clone(shared);
        let handle = thread::Builder::new()
            .name(format!("demo-clients-{index}"))
            .spawn(move || client::run_thread(paces, server, &shared, &interval))
            .expect("spawn a client thread");
        handles.push(handle);
    }
    (intervals, handles)
}

/// Waits until every client is subscribed (it has the server's hello).
fn wait_ready(clients: usize, shared: &Shared, threads: &[ClientThread]) -> Result<(), String> {
    let deadline = Instant::now() + CONNECT_PATIENCE;
    while shared.ready.load(Ordering::Acquire) < clients {
        if threads.iter().any(|t| t.is_finished()) || Instant::now() >= deadline {
            return Err(format!(
                "only {} of {clients} clients connected and subscribed",
                shared.ready.load(Ordering::Acquire)
            ));
        }
        thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// A latency for the progress line, or `-` when nothing arrived to measure.
fn latency_or_dash(ns: u64, deliveries: u64) -> String {
    if deliveries == 0 {
        "-".to_owned()
    } else {
        format_ns(ns)
    }
}

/// The fast and slow clients' latency over the whole run.
pub(crate) struct Histograms {
    pub(crate) fast: hdrhistogram::Histogram<u64>,
    pub(crate) slow: hdrhistogram::Histogram<u64>,
    pub(crate) deliveries: u64,
}

/// Refreshes the progress line every quarter second until the client threads are done;
/// returns the per-second timeline and the run's histograms.
fn progress(
    args: &DemoArgs,
    shared: &Shared,
    intervals: Vec<Arc<Mutex<Interval>>>,
    threads: &[ClientThread],
) -> (Vec<Second>, Histograms) {
    let terminal = std::io::stderr().is_terminal();
    let mut gatherer = Gatherer::new(intervals);
    let mut timeline = Vec::new();
    let started = Instant::now();
    let mut dropped_before = 0;
    let mut ticks: u64 = 0;
    loop {
        let done = threads.iter().all(|t| t.is_finished());
        ticks += 1;
        let next = started + TICK * ticks as u32;
        thread::sleep(next.saturating_duration_since(Instant::now()));
        let last = gatherer.tick();
        let stats: Vec<_> = shared.topics.iter().map(Topic::stats).collect();
        let dropped: u64 = stats.iter().map(|s| s.dropped).sum();
        if ticks.is_multiple_of(4) || done {
            timeline.push(Second {
                at: ticks as f64 / 4.0,
                deliveries: last.deliveries,
                p50_ns: last.p50_ns,
                p99_ns: last.p99_ns,
                max_ns: last.max_ns,
                dropped: dropped - dropped_before,
            });
            dropped_before = dropped;
        }
        let line = format!(
            "{:>6.1}s/{}s  {:>9} deliveries/s  p50 {:>7}  p99 {:>7}  conflated {}  drop-oldest {}  closed {}",
            ticks as f64 / 4.0,
            args.duration,
            format_count(last.deliveries_per_s as u64),
            latency_or_dash(last.p50_ns, last.deliveries),
            latency_or_dash(last.p99_ns, last.deliveries),
            format_count(stats[TopicId::Book as usize].dropped),
            format_count(stats[TopicId::Trades as usize].dropped),
            format_count(stats.iter().map(|s| s.closed).sum()),
        );
        let mut err = std::io::stderr().lock();
        if terminal {
            let _ = write!(err, "\r{line}\x1b[K");
        } else if ticks.is_multiple_of(20) || done {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
        if done {
            if terminal {
                let _ = writeln!(err);
            }
            break;
        }
    }
    let histograms = Histograms {
        fast: gatherer.total_fast.clone(),
        slow: gatherer.total_slow.clone(),
        deliveries: gatherer.total_deliveries,
    };
    (timeline, histograms)
}
