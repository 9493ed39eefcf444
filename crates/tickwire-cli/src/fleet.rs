//! `tickwire node` and `tickwire publish`: the demo's market-data fan-out as a fleet. Nodes
//! (tickwire-server with a NATS bridge, tickwire-nats) serve the WebSocket clients;
//! `publish` sends the demo's synthetic feed to NATS. docs/SCALING.md says how to run it.
//!
//! A client asks for topics by path, as in the demo (`/book,trades,status`), and may resume
//! after a reconnect with `?resume=book:1042,trades:311` (the last number it has per topic).
//! It gets `{"type":"hello"}` once its plain subscriptions are in place, every message of its
//! topics, and a gap notice (the demo's) for numbers it will not get.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Args;
use tickwire::nats::async_nats;
use tickwire::nats::{Backing, BridgeBuilder, BridgeHandle, Kind, Publisher};
use tickwire::server::{
    CloseCode, Conn, Decision, Gap, Handler, Message, Request, ServerBuilder, SlowConsumer, Topic,
};

use crate::demo::app::send_gap_notice;
use crate::demo::feed::{EventKind, MAX_SYMBOLS, Market};

/// The fleet's topics and what each does with a slow client (as in the demo, whose
/// docs/DEMO.md says why).
const TOPICS: [(&str, SlowConsumer); 3] = [
    ("book", SlowConsumer::Conflate),
    ("trades", SlowConsumer::DropOldest),
    ("status", SlowConsumer::Close(CloseCode::TRY_AGAIN_LATER)),
];

#[derive(Args)]
pub(crate) struct NodeArgs {
    /// NATS server URL(s), comma separated.
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    nats: String,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Port to listen on (0 picks a free one; the chosen port is printed).
    #[arg(long, default_value_t = 9001)]
    port: u16,
    /// Worker threads (default: one per CPU).
    #[arg(long)]
    workers: Option<usize>,
    /// Bytes of topic messages that may wait for one client before its topic's policy acts.
    #[arg(long, default_value_t = 256 << 10)]
    send_budget: usize,
    /// Recent messages per topic kept to replay to resuming clients.
    #[arg(long, default_value_t = 8_192)]
    history: usize,
    /// Subject prefix on NATS.
    #[arg(long, default_value = "tw")]
    prefix: String,
}

/// One worker's handler.
struct Node {
    topics: Vec<Topic>,
    bridge: BridgeHandle,
    notice: String,
}

/// What a client asked for: (topic index, the number to resume after, if resuming).
type Wanted = Vec<(usize, Option<u64>)>;

impl Node {
    /// `/book,trades?resume=book:1042`: the topics, each with the number it resumes after.
    fn parse(&self, target: &str) -> Option<Wanted> {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let mut resume: HashMap<&str, u64> = HashMap::new();
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let list = pair.strip_prefix("resume=")?;
            for item in list.split(',') {
                let (name, after) = item.split_once(':')?;
                resume.insert(name, after.parse().ok()?);
            }
        }
        let mut wanted = Vec::new();
        for name in path.trim_start_matches('/').split(',') {
            let index = self.topics.iter().position(|t| t.name() == name)?;
            wanted.push((index, resume.remove(name)));
        }
        // A resume for a topic not asked for is a malformed request.
        resume.is_empty().then_some(wanted)
    }
}

impl Handler for Node {
    type State = Wanted;

    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<Wanted> {
        match self.parse(request.path()) {
            Some(wanted) => Decision::accept(request, wanted),
            None => Decision::reject(404),
        }
    }

    fn on_open(&mut self, conn: &mut Conn<'_, Wanted>) {
        for (index, after) in conn.state().clone() {
            let topic = &self.topics[index];
            match after {
                Some(after) => self.bridge.resume(conn.id(), topic, after),
                None => conn.subscribe(topic),
            }
        }
        // The plain subscriptions are in place when this returns: the client gets every
        // message relayed after the hello.
        let _ = conn.send_text(r#"{"type":"hello"}"#);
    }

    fn on_message(&mut self, _conn: &mut Conn<'_, Wanted>, _message: Message<'_>) {}

    fn on_gap(&mut self, conn: &mut Conn<'_, Wanted>, topic: &Topic, gap: Gap) {
        send_gap_notice(&mut self.notice, conn, topic, gap);
    }
}

/// Runs a node until SIGTERM or SIGINT, then closes every client with 1001 (going away),
/// so that each reconnects to another node and resumes there.
pub(crate) fn node(args: &NodeArgs) -> Result<(), String> {
    let bridge = BridgeBuilder::new(&args.nats)
        .prefix(&args.prefix)
        .history(args.history)
        .name(&format!("tickwire-node-{}", std::process::id()))
        .start()
        .map_err(|e| format!("bridge: {e}"))?;
    let relay = bridge.handle().clone();
    let mut builder = ServerBuilder::new().send_budget(args.send_budget);
    if let Some(workers) = args.workers {
        builder = builder.workers(workers);
    }
    let server = builder
        .bind(format!("{}:{}", args.bind, args.port))
        .map_err(|e| format!("bind {}:{}: {e}", args.bind, args.port))?;
    let addr = server.local_addr();
    let running = server
        .start(move |worker| Node {
            topics: TOPICS
                .iter()
                .map(|&(name, policy)| worker.handle.topic(name, policy).expect("one policy"))
                .collect(),
            bridge: relay.clone(),
            notice: String::with_capacity(128),
        })
        .map_err(|e| format!("start: {e}"))?;
    bridge.attach(running.handle());
    println!("listening on ws://{addr}, fed by {}", args.nats);
    let handle = running.handle().clone();
    let signals = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    signals.block_on(crate::signals::shutdown());
    handle.shutdown(Duration::from_secs(2));
    running.join().map_err(|e| e.to_string())?;
    let stats = bridge.handle().stats();
    println!(
        "node stopped: relayed {} (filled {}), {} gaps ({} missed), {} resumes",
        stats.relayed, stats.filled, stats.gaps, stats.missed, stats.resumes
    );
    bridge.shutdown();
    Ok(())
}

#[derive(Args)]
pub(crate) struct PublishArgs {
    /// NATS server URL(s), comma separated.
    #[arg(long, default_value = "nats://127.0.0.1:4222")]
    nats: String,
    /// Book updates and trades per second (plus four status messages a second).
    #[arg(long, default_value_t = 2_000)]
    rate: u32,
    /// Symbols quoted (at most 16).
    #[arg(long, default_value_t = 8)]
    symbols: usize,
    /// Seconds to publish for.
    #[arg(long, default_value_t = 60.0)]
    duration: f64,
    /// Back every topic with a JetStream stream (nodes then fill gaps and clients resume
    /// from it): the topics' numbers are the streams'.
    #[arg(long)]
    jetstream: bool,
    /// How long the streams keep a message (seconds).
    #[arg(long, default_value_t = 3_600)]
    max_age: u64,
    /// Subject prefix on NATS.
    #[arg(long, default_value = "tw")]
    prefix: String,
}

/// How often the feed publishes what is due (as the demo's feed).
const BURST_EVERY: Duration = Duration::from_millis(2);
/// How often the status topic is published.
const STATUS_EVERY: Duration = Duration::from_millis(250);

/// Publishes the demo's feed to NATS for `--duration`, then prints the last number of each
/// topic (`published book=N trades=N status=N`).
pub(crate) fn publish(args: &PublishArgs) -> Result<(), String> {
    if args.symbols == 0 || args.symbols > MAX_SYMBOLS {
        return Err(format!("--symbols must be 1 to {MAX_SYMBOLS}"));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(publish_feed(args))
}

async fn publish_feed(args: &PublishArgs) -> Result<(), String> {
    let client = async_nats::ConnectOptions::new()
        .name("tickwire-publish")
        .connect(args.nats.as_str())
        .await
        .map_err(|e| format!("nats {}: {e}", args.nats))?;
    let mut publisher = Publisher::new(client, &args.prefix);
    let backing = if args.jetstream {
        Backing::jetstream(Duration::from_secs(args.max_age), 10_000_000)
    } else {
        Backing::Core { first_seq: 1 }
    };
    for (name, _) in TOPICS {
        publisher
            .topic(name, backing.clone())
            .await
            .map_err(|e| format!("topic {name}: {e}"))?;
    }
    let mut market = Market::new(args.symbols);
    let mut text = String::with_capacity(512);
    let start = Instant::now();
    let duration = Duration::from_secs_f64(args.duration.max(0.0));
    let mut sent: u64 = 0;
    let mut next_status = start;
    let mut ticker = tokio::time::interval(BURST_EVERY);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let now = Instant::now();
        let elapsed = now - start;
        let done = elapsed >= duration;
        if now >= next_status || done {
            next_status += STATUS_EVERY;
            let book = publisher.last_seq("book").unwrap_or(0);
            let trades = publisher.last_seq("trades").unwrap_or(0);
            publish_text(&mut publisher, "status", 0, &mut text, |text, seq, ts| {
                let _ = write!(
                    text,
                    r#"{{"type":"status","seq":{seq},"ts":{ts},"book":{book},"trades":{trades}}}"#
                );
            })
            .await?;
        }
        if done {
            break;
        }
        let due = (elapsed.as_secs_f64() * f64::from(args.rate)) as u64;
        while sent < due {
            let event = market.next_event();
            let topic = match event.kind {
                EventKind::Book { .. } => "book",
                EventKind::Trade { .. } => "trades",
            };
            publish_text(
                &mut publisher,
                topic,
                event.symbol as u64,
                &mut text,
                |text, seq, ts| event.write_json(text, seq, ts),
            )
            .await?;
            sent += 1;
        }
    }
    // Everything stored (or marked lost): retried while NATS is away, for up to 30 s.
    let mut tries = 0;
    while let Err(error) = publisher.flush().await {
        tries += 1;
        if tries == 300 {
            return Err(format!("flush: {error}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let last = |name| publisher.last_seq(name).unwrap_or(0);
    println!(
        "published book={} trades={} status={}",
        last("book"),
        last("trades"),
        last("status")
    );
    Ok(())
}

/// Publishes one text message made by `write` (given the message's number and the time,
/// nanoseconds since the Unix epoch, so that a client on any host can tell its age). While
/// NATS is away the message is retried every 100 ms (a JetStream topic's number is read
/// again from its stream), so that the feed goes on after a NATS restart.
async fn publish_text(
    publisher: &mut Publisher,
    topic: &str,
    key: u64,
    text: &mut String,
    write: impl Fn(&mut String, u64, u64),
) -> Result<u64, String> {
    let mut told = false;
    loop {
        let result = publisher
            .publish(topic, key, Kind::Text, |seq| {
                text.clear();
                let ts = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as u64);
                write(text, seq, ts);
                bytes::Bytes::copy_from_slice(text.as_bytes())
            })
            .await;
        match result {
            Ok(seq) => return Ok(seq),
            Err(error) => {
                if !told {
                    eprintln!("tickwire publish: {topic}: {error}; retrying");
                    told = true;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node() -> Node {
        let bridge = BridgeBuilder::new("nats://127.0.0.1:1").start().unwrap();
        let handle = bridge.handle().clone();
        // The handle outlives the bridge's thread: requests to it are dropped.
        drop(bridge);
        let server = ServerBuilder::new().workers(1).bind("127.0.0.1:0").unwrap();
        let running = server.start(|_| Quiet).unwrap();
        let topics = TOPICS
            .iter()
            .map(|&(name, policy)| running.handle().topic(name, policy).unwrap())
            .collect();
        running.shutdown(Duration::from_millis(10)).unwrap();
        Node {
            topics,
            bridge: handle,
            notice: String::new(),
        }
    }

    struct Quiet;

    impl Handler for Quiet {
        type State = ();
        fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<()> {
            Decision::accept(request, ())
        }
        fn on_message(&mut self, _conn: &mut Conn<'_, ()>, _message: Message<'_>) {}
    }

    #[test]
    fn a_path_names_topics_and_the_query_where_each_resumes() {
        let node = node();
        assert_eq!(
            node.parse("/book,trades,status"),
            Some(vec![(0, None), (1, None), (2, None)])
        );
        assert_eq!(
            node.parse("/trades,book?resume=book:1042,trades:7"),
            Some(vec![(1, Some(7)), (0, Some(1042))])
        );
        for bad in [
            "/nope",
            "/book?resume=trades:1",
            "/book?resume=book:x",
            "/book?resume=book",
            "/book?other=1",
            "/book,",
        ] {
            assert_eq!(node.parse(bad), None, "{bad}");
        }
    }
}
