//! What the NATS tests share: a nats-server of their own on 127.0.0.1 (installed by
//! scripts/nats-server.sh), a TCP proxy that can cut a node off NATS, in-process nodes
//! (tickwire-server with a bridge), their clients and a publisher.
#![allow(dead_code, unreachable_pub)]

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant};

use tickwire_blocking::{ClientBuilder, MaybeTlsStream, Message, Recv, WebSocket};
use tickwire_nats::{Backing, Bridge, BridgeBuilder, BridgeHandle, Kind, Publisher};
use tickwire_server::{
    Conn, Decision, Gap, Handler, Request, Running, ServerBuilder, SlowConsumer, Topic,
};

pub type Ws = WebSocket<MaybeTlsStream>;

/// The nats-server binary, installed once per test process.
pub fn nats_server_binary() -> PathBuf {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY
        .get_or_init(|| {
            let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/nats-server.sh");
            let output = Command::new("bash")
                .arg(script)
                .stderr(Stdio::inherit())
                .output()
                .expect("run scripts/nats-server.sh");
            assert!(output.status.success(), "scripts/nats-server.sh failed");
            let stdout = String::from_utf8(output.stdout).unwrap();
            PathBuf::from(stdout.lines().last().expect("the binary's path").trim())
        })
        .clone()
}

/// A port nothing listens on (bound, then released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A nats-server with JetStream on 127.0.0.1, its store in a directory of its own; killed on
/// drop.
pub struct NatsServer {
    pub port: u16,
    store: PathBuf,
    child: Option<Child>,
}

impl NatsServer {
    pub fn start() -> Self {
        let store = std::env::temp_dir().join(format!(
            "tickwire-nats-test-{}-{}",
            std::process::id(),
            free_port()
        ));
        let mut server = Self {
            port: free_port(),
            store,
            child: None,
        };
        server.spawn();
        server
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    fn spawn(&mut self) {
        let child = Command::new(nats_server_binary())
            .args([
                "-a",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-js",
                "-sd",
            ])
            .arg(&self.store)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nats-server");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "nats-server did not come up");
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the server (abruptly) and starts it again on the same port and store.
    pub fn restart(&mut self, down_for: Duration) {
        self.kill();
        thread::sleep(down_for);
        self.spawn();
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for NatsServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.store);
    }
}

/// A TCP proxy to `target` on 127.0.0.1: [`cut`](Self::cut) closes every connection through
/// it and refuses new ones until [`restore`](Self::restore), like a node's link to NATS going
/// down while NATS itself and every other client stay up.
pub struct Proxy {
    pub port: u16,
    up: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    pub fn start(target: u16) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let up = Arc::new(AtomicBool::new(true));
        let streams = Arc::new(Mutex::new(Vec::new()));
        let (up2, streams2) = (Arc::clone(&up), Arc::clone(&streams));
        thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { return };
                if !up2.load(Ordering::Acquire) {
                    drop(client);
                    continue;
                }
                let Ok(server) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let mut list = streams2.lock().unwrap();
                list.push(client.try_clone().unwrap());
                list.push(server.try_clone().unwrap());
                pump(client.try_clone().unwrap(), server.try_clone().unwrap());
                pump(server, client);
            }
        });
        Self { port, up, streams }
    }

    pub fn url(&self) -> String {
        format!("nats://127.0.0.1:{}", self.port)
    }

    pub fn cut(&self) {
        self.up.store(false, Ordering::Release);
        for stream in self.streams.lock().unwrap().drain(..) {
            let _ = stream.shutdown(Shutdown::Both);
        }
    }

    pub fn restore(&self) {
        self.up.store(true, Ordering::Release);
    }
}

fn pump(mut from: TcpStream, mut to: TcpStream) {
    thread::spawn(move || {
        let mut buf = [0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if to.write_all(&buf[..n]).is_err() {
                        break;
                    }
                }
            }
        }
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// The nodes' handler: `/TOPIC` subscribes, `/TOPIC?after=N` resumes after number N; a gap
/// becomes the text message `gap FIRST LAST DROPPED`, in line with the messages.
struct NodeHandler {
    topics: Vec<Topic>,
    bridge: BridgeHandle,
}

impl Handler for NodeHandler {
    /// The topic and the number to resume after.
    type State = (usize, Option<u64>);

    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<Self::State> {
        let (path, query) = request
            .path()
            .split_once('?')
            .unwrap_or((request.path(), ""));
        let Some(index) = self.topics.iter().position(|t| t.name() == &path[1..]) else {
            return Decision::reject(404);
        };
        let after = query.strip_prefix("after=").and_then(|n| n.parse().ok());
        Decision::accept(request, (index, after))
    }

    fn on_open(&mut self, conn: &mut Conn<'_, Self::State>) {
        let (index, after) = *conn.state();
        match after {
            Some(after) => self.bridge.resume(conn.id(), &self.topics[index], after),
            None => {
                conn.subscribe(&self.topics[index]);
                // Once the subscription is in place (it is when this returns).
                conn.send_text("hello").unwrap();
            }
        }
    }

    fn on_message(
        &mut self,
        _conn: &mut Conn<'_, Self::State>,
        _message: tickwire_blocking::Message<'_>,
    ) {
    }

    fn on_gap(&mut self, conn: &mut Conn<'_, Self::State>, _topic: &Topic, gap: Gap) {
        let notice = format!("gap {} {} {}", gap.first_seq, gap.last_seq, gap.dropped);
        let _ = conn.send_text(&notice);
    }
}

/// One node: a tickwire-server (2 workers) on 127.0.0.1 with a bridge to `nats_url`.
pub struct Node {
    pub addr: SocketAddr,
    pub bridge: Bridge,
    running: Option<Running>,
}

pub const TOPICS: [&str; 2] = ["core", "js"];

impl Node {
    pub fn start(nats_url: &str, configure: impl FnOnce(BridgeBuilder) -> BridgeBuilder) -> Self {
        let bridge = configure(BridgeBuilder::new(nats_url)).start().unwrap();
        let handle = bridge.handle().clone();
        let server = ServerBuilder::new()
            .workers(2)
            .send_budget(16 << 20)
            .bind("127.0.0.1:0")
            .unwrap();
        let addr = server.local_addr();
        let running = server
            .start(move |worker| NodeHandler {
                topics: TOPICS
                    .iter()
                    .map(|name| worker.handle.topic(name, SlowConsumer::DropOldest).unwrap())
                    .collect(),
                bridge: handle.clone(),
            })
            .unwrap();
        bridge.attach(running.handle());
        Self {
            addr,
            bridge,
            running: Some(running),
        }
    }

    /// The last number the node relayed on `topic` (the server topic's).
    pub fn last_seq(&self, topic: &str) -> u64 {
        let running = self.running.as_ref().expect("running");
        let topic = running
            .handle()
            .topic(topic, SlowConsumer::DropOldest)
            .unwrap();
        topic.last_seq()
    }

    /// A subscriber of `topic`, once its subscription is in place.
    pub fn subscribe(&self, topic: &str) -> Ws {
        let mut ws = connect(self.addr, &format!("/{topic}"));
        match ws.recv().unwrap() {
            Recv::Message(Message::Text("hello")) => ws,
            other => panic!("expected hello, got {other:?}"),
        }
    }

    /// A client resuming `topic` after number `after`.
    pub fn resume(&self, topic: &str, after: u64) -> Ws {
        connect(self.addr, &format!("/{topic}?after={after}"))
    }

    /// Stops the node's server (its clients see the connection end) and its bridge.
    pub fn kill(mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown(Duration::from_millis(100)).unwrap();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            let _ = running.shutdown(Duration::from_millis(100));
        }
    }
}

fn connect(addr: SocketAddr, path: &str) -> Ws {
    ClientBuilder::new()
        .read_timeout(Some(Duration::from_secs(15)))
        .connect(&format!("ws://{addr}{path}"))
        .unwrap()
}

/// What a client receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Got {
    Seq(u64),
    Gap {
        first: u64,
        last: u64,
        dropped: u64,
    },
    /// The connection ended (the node went away).
    Gone,
}

pub fn next(ws: &mut Ws) -> Got {
    loop {
        match ws.recv() {
            Ok(Recv::Message(Message::Binary(bytes))) => {
                return Got::Seq(u64::from_be_bytes(bytes.try_into().unwrap()));
            }
            Ok(Recv::Message(Message::Text(text))) => {
                let n: Vec<u64> = text[4..].split(' ').map(|n| n.parse().unwrap()).collect();
                return Got::Gap {
                    first: n[0],
                    last: n[1],
                    dropped: n[2],
                };
            }
            Ok(Recv::Message(Message::Ping(_) | Message::Pong(_))) => {}
            Ok(Recv::Timeout) => panic!("nothing for 15 s"),
            Ok(Recv::Closed(_)) | Err(_) => {
                return Got::Gone;
            }
            Ok(other) => panic!("unexpected {other:?}"),
        }
    }
}

/// Follows one client's view of a topic: numbers must rise, and every number is either
/// received or in a gap notice.
#[derive(Debug, Default)]
pub struct Tally {
    pub last: u64,
    pub received: u64,
    pub missed: u64,
}

impl Tally {
    pub fn after(last: u64) -> Self {
        Self {
            last,
            ..Self::default()
        }
    }

    /// Reads until number `until` is accounted for, or the connection ends; panics on a
    /// number out of order or a hole without a notice.
    pub fn follow(&mut self, ws: &mut Ws, until: u64) -> bool {
        while self.last < until {
            match next(ws) {
                Got::Seq(seq) => {
                    assert_eq!(seq, self.last + 1, "a message out of order or skipped");
                    self.received += 1;
                    self.last = seq;
                }
                Got::Gap {
                    first,
                    last,
                    dropped,
                } => {
                    assert_eq!(first, self.last + 1, "a gap notice out of place");
                    assert_eq!(dropped, last - first + 1);
                    self.missed += dropped;
                    self.last = last;
                }
                Got::Gone => return false,
            }
        }
        true
    }
}

/// A publisher on its own runtime (the tests are synchronous).
pub struct Feed {
    runtime: tokio::runtime::Runtime,
    publisher: Publisher,
}

impl Feed {
    /// Declares topic `core` (core NATS) and `js` (a JetStream stream).
    pub fn connect(url: &str) -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let publisher = runtime.block_on(async {
            let client = tickwire_nats::async_nats::ConnectOptions::new()
                .retry_on_initial_connect()
                .connect(url)
                .await
                .unwrap();
            let mut publisher = Publisher::new(client, "tw");
            publisher
                .topic("core", Backing::Core { first_seq: 1 })
                .await
                .unwrap();
            publisher
                .topic(
                    "js",
                    Backing::jetstream(Duration::from_secs(600), 1_000_000),
                )
                .await
                .unwrap();
            publisher
        });
        Self { runtime, publisher }
    }

    /// Publishes `count` messages on `topic` (payload: the number) and waits until NATS has
    /// them; returns the last number.
    pub fn publish(&mut self, topic: &str, count: u64) -> u64 {
        self.runtime.block_on(async {
            let mut last = 0;
            for _ in 0..count {
                last = self
                    .publisher
                    .publish(topic, 0, Kind::Binary, |seq| {
                        bytes::Bytes::copy_from_slice(&seq.to_be_bytes())
                    })
                    .await
                    .unwrap();
            }
            self.publisher.flush().await.unwrap();
            last
        })
    }

    /// As `publish`, retrying each message until NATS takes it (while it restarts).
    pub fn publish_through_outage(&mut self, topic: &str, count: u64) -> u64 {
        self.runtime.block_on(async {
            let mut last = 0;
            let mut sent = 0;
            while sent < count {
                let result = self
                    .publisher
                    .publish(topic, 0, Kind::Binary, |seq| {
                        bytes::Bytes::copy_from_slice(&seq.to_be_bytes())
                    })
                    .await;
                match result {
                    Ok(seq) => {
                        last = seq;
                        sent += 1;
                    }
                    Err(_) => tokio::time::sleep(Duration::from_millis(20)).await,
                }
            }
            while self.publisher.flush().await.is_err() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            last
        })
    }
}

/// Waits for `done` for up to 10 s.
pub fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(10));
    }
}

/// Publishes one message of each of `topics` until every node has relayed the ones of the
/// round before (so its subscriptions are on the NATS server), then returns the numbers of
/// the last round: every node relays those.
pub fn until_relaying(feed: &mut Feed, nodes: &[&Node], topics: &[&str]) -> Vec<u64> {
    let mut previous = vec![u64::MAX; topics.len()];
    eventually("every node relaying", || {
        let relaying = nodes.iter().all(|node| {
            topics
                .iter()
                .zip(&previous)
                .all(|(topic, &number)| node.last_seq(topic) >= number)
        });
        previous = topics.iter().map(|topic| feed.publish(topic, 1)).collect();
        relaying
    });
    previous
}

/// Reads up to number `start` (skipping older ones) and returns it.
pub fn skip_to(ws: &mut Ws, start: u64) {
    loop {
        match next(ws) {
            Got::Seq(seq) if seq < start => {}
            Got::Seq(seq) => {
                assert_eq!(seq, start);
                return;
            }
            other => panic!("{other:?} before {start}"),
        }
    }
}

pub fn read_all(ws: &mut Ws, first: u64, last: u64) {
    for seq in first..=last {
        assert_eq!(next(ws), Got::Seq(seq));
    }
}

pub type IoResult<T> = io::Result<T>;
