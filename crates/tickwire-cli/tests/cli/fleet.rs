//! `tickwire node` x 3 and `tickwire publish` as separate processes around a real
//! nats-server: every client gets every message of its topics in order; a node is killed
//! and its clients resume on another; nats-server restarts mid-stream. Each number of each
//! topic must reach each client or be reported to it in a gap notice, in order.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use tickwire::blocking::{ClientBuilder, Message, Recv};

use crate::nats_support::NatsServer;
use crate::support::wait_bounded;

const TOPICS: [&str; 3] = ["book", "trades", "status"];

/// A `tickwire node` process and the address it listens on.
struct NodeProcess {
    child: Child,
    addr: SocketAddr,
}

impl NodeProcess {
    fn start(nats: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_tickwire"))
            .args(["node", "--nats", nats, "--port", "0", "--workers", "1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.as_mut().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .strip_prefix("listening on ws://")
            .and_then(|rest| rest.split(',').next())
            .unwrap_or_else(|| panic!("node said {line:?}"))
            .parse()
            .unwrap();
        Self { child, addr }
    }
}

impl Drop for NodeProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One client's view of one topic: the last number accounted for (received or reported).
#[derive(Debug, Default, Clone, Copy)]
struct View {
    last: u64,
    received: u64,
    missed: u64,
}

#[derive(Debug, Default)]
struct ClientReport {
    views: [View; 3],
    moves: u32,
}

fn field(text: &str, name: &str) -> Option<u64> {
    let start = text.find(&format!("\"{name}\":"))? + name.len() + 3;
    let digits: String = text[start..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

fn topic_of(text: &str) -> Option<usize> {
    let kind = match text.find(r#""type":""#) {
        Some(at) => &text[at + 8..],
        None => return None,
    };
    let kind = &kind[..kind.find('"')?];
    match kind {
        "book" => Some(0),
        "trade" => Some(1),
        "status" => Some(2),
        "gap" => {
            let name = &text[text.find(r#""topic":""#)? + 9..];
            TOPICS
                .iter()
                .position(|t| name.starts_with(&format!("{t}\"")))
        }
        _ => None,
    }
}

/// Reads until every topic reaches `finals` (once known), moving to the next node (with the
/// numbers it has) whenever its node goes away.
fn client(
    nodes: Arc<Mutex<Vec<SocketAddr>>>,
    start: usize,
    finals: Arc<Mutex<Option<[u64; 3]>>>,
) -> ClientReport {
    let mut report = ClientReport::default();
    let mut at = start;
    let deadline = Instant::now() + Duration::from_secs(90);
    'connect: loop {
        assert!(Instant::now() < deadline, "client {start}: {report:?}");
        let addr = {
            let nodes = nodes.lock().unwrap();
            nodes[at % nodes.len()]
        };
        // From 0 the first time: the client wants every number from 1, even one published
        // before its node's subscription reached NATS (replayed from the stream).
        let v = &report.views;
        let path = format!(
            "/book,trades,status?resume=book:{},trades:{},status:{}",
            v[0].last, v[1].last, v[2].last
        );
        let Ok(mut ws) = ClientBuilder::new()
            .read_timeout(Some(Duration::from_millis(500)))
            .connect(&format!("ws://{addr}{path}"))
        else {
            at += 1;
            thread::sleep(Duration::from_millis(50));
            continue;
        };
        loop {
            if let Some(finals) = *finals.lock().unwrap()
                && (0..3).all(|i| report.views[i].last >= finals[i])
            {
                return report;
            }
            assert!(Instant::now() < deadline, "client {start}: {report:?}");
            let text = match ws.recv() {
                Ok(Recv::Message(Message::Text(text))) => text.to_owned(),
                Ok(Recv::Timeout) => continue,
                Ok(Recv::Message(_)) => continue,
                Ok(Recv::Closed(_)) | Err(_) => {
                    // The node went away: on to the next one, resuming.
                    report.moves += 1;
                    at += 1;
                    continue 'connect;
                }
                Ok(other) => panic!("client {start}: {other:?}"),
            };
            if text == r#"{"type":"hello"}"# {
                continue;
            }
            let topic = topic_of(&text).unwrap_or_else(|| panic!("unexpected {text}"));
            let view = &mut report.views[topic];
            if text.contains(r#""type":"gap""#) {
                let first = field(&text, "first").unwrap();
                let last = field(&text, "last").unwrap();
                assert_eq!(
                    first,
                    view.last + 1,
                    "client {start}: {text} after {view:?}"
                );
                view.missed += last - first + 1;
                view.last = last;
            } else {
                let seq = field(&text, "seq").unwrap();
                assert_eq!(seq, view.last + 1, "client {start}: {text} after {view:?}");
                view.received += 1;
                view.last = seq;
            }
        }
    }
}

#[test]
fn a_fleet_of_three_nodes_survives_a_node_killed_and_a_nats_restart() {
    let mut nats = NatsServer::start();
    let mut nodes: Vec<NodeProcess> = (0..3).map(|_| NodeProcess::start(&nats.url())).collect();
    let addrs = Arc::new(Mutex::new(nodes.iter().map(|n| n.addr).collect::<Vec<_>>()));
    let finals = Arc::new(Mutex::new(None));
    // Two clients per node, each resuming from 0: each is owed every number.
    let clients: Vec<_> = (0..6)
        .map(|i| {
            let (addrs, finals) = (Arc::clone(&addrs), Arc::clone(&finals));
            thread::spawn(move || client(addrs, i, finals))
        })
        .collect();
    thread::sleep(Duration::from_millis(500));
    let publisher = Command::new(env!("CARGO_BIN_EXE_tickwire"))
        .args(["publish", "--nats", &nats.url(), "--jetstream"])
        .args(["--rate", "2000", "--duration", "6"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    thread::sleep(Duration::from_millis(1500));
    // Node 0 dies; its clients move to the others.
    let dead = nodes.remove(0);
    addrs.lock().unwrap().remove(0);
    drop(dead);
    thread::sleep(Duration::from_millis(1500));
    nats.restart(Duration::from_millis(500));
    let published = wait_bounded(publisher, Duration::from_secs(60), "tickwire publish");
    let stdout = String::from_utf8(published.stdout).unwrap();
    assert!(published.status.success(), "{}", published.stderr);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("published "))
        .unwrap_or_else(|| panic!("{stdout}"));
    // `published book=N trades=N status=N`
    let last = |name: &str| {
        line.split_whitespace()
            .filter_map(|pair| pair.split_once('='))
            .find(|(key, _)| *key == name)
            .and_then(|(_, n)| n.parse::<u64>().ok())
            .unwrap_or_else(|| panic!("{line}"))
    };
    let numbers = [last("book"), last("trades"), last("status")];
    *finals.lock().unwrap() = Some(numbers);
    let reports: Vec<ClientReport> = clients.into_iter().map(|c| c.join().unwrap()).collect();
    let moved = reports.iter().filter(|r| r.moves > 0).count();
    assert!(moved >= 2, "node 0's clients moved: {reports:?}");
    for (i, report) in reports.iter().enumerate() {
        for (topic, view) in report.views.iter().enumerate() {
            assert_eq!(view.last, numbers[topic], "client {i}: {report:?}");
            assert_eq!(view.received + view.missed, numbers[topic], "client {i}");
            assert!(view.received > 0, "client {i}: {report:?}");
        }
    }
    eprintln!("fleet: published {numbers:?}; clients {reports:?}");
}
