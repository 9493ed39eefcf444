//! `tickwire rpc` against the simulator's order gateway, directly and through toxiproxy, on
//! both runtimes: every request resolves exactly once, with the outcome the simulator's log
//! proves right (a request it received is never `not_sent`, one it never received is never
//! a response), nothing goes out before the login's answer, and nothing is sent twice.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::echo::tickwire;
use crate::exsim_support::Sim;
use crate::feed_support::FeedRun;
use crate::toxiproxy::{Toxic, Toxiproxy};

const TOKEN: &str = "s3cret";
const LOGIN: &str = r#"{"method":"session.logon","params":{"token":"s3cret"}}"#;

/// `tickwire --runtime RUNTIME rpc URL --login .. --request ..(count) ARGS`, its lines read
/// as they come.
fn start(runtime: &str, url: &str, count: usize, args: &[&str]) -> FeedRun {
    let mut command = tickwire();
    command.args(["--runtime", runtime, "rpc", url, "--login", LOGIN]);
    for n in 0..count {
        command.args([
            "--request",
            &format!(r#"{{"method":"order.place","params":{{"n":{n}}}}}"#),
        ]);
    }
    FeedRun::spawn(command.args(args))
}

/// The outcome of each request, by its place on the command line, checked against the
/// simulator's log: each resolved once; `response` only for a request the simulator answered
/// (its text carrying the request's id); `not_sent` only for one it never received; no
/// request received twice, none before the login's answer on its connection. Returns the
/// count of each outcome.
fn check(lines: &[Value], count: usize, log: &Value) -> BTreeMap<String, usize> {
    let mut outcomes: BTreeMap<usize, (String, u64)> = BTreeMap::new();
    for line in lines.iter().filter(|l| l.get("request").is_some()) {
        let place = line["request"].as_u64().unwrap() as usize;
        let id = line["id"].as_u64().unwrap();
        let outcome = line["outcome"].as_str().unwrap().to_owned();
        if outcome == "response" {
            let text: Value = serde_json::from_str(line["text"].as_str().unwrap()).unwrap();
            assert_eq!(text["id"].as_u64(), Some(id), "{line}");
        }
        let first = outcomes.insert(place, (outcome, id));
        assert!(first.is_none(), "request {place} resolved twice: {lines:?}");
    }
    assert_eq!(outcomes.len(), count, "every request resolved: {lines:?}");
    let received = log["received"].as_array().unwrap();
    let mut orders = BTreeSet::new();
    for request in received {
        if request["method"] == "order.place" {
            assert_eq!(request["before_login"], false, "{request}");
            let id = request["id"].as_u64().unwrap();
            assert!(
                orders.insert(id),
                "request {id} received twice: {received:?}"
            );
        }
    }
    let answered: BTreeSet<u64> = log["answered"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["status"] == 200)
        .filter_map(|a| a["id"].as_u64())
        .collect();
    let mut counts = BTreeMap::new();
    for (place, (outcome, id)) in &outcomes {
        match outcome.as_str() {
            "response" => assert!(answered.contains(id), "{place}: a response never sent"),
            "not_sent" => assert!(!orders.contains(id), "{place}: not_sent, but received"),
            "timed_out" | "outcome_unknown" => {}
            other => panic!("{place}: outcome {other}"),
        }
        *counts.entry(outcome.clone()).or_insert(0) += 1;
    }
    counts
}

fn gateway_faults(runtime: &str) {
    let sim = Sim::start(&[
        "--rate",
        "0",
        "--login-token",
        TOKEN,
        "--order-jitter",
        "20ms",
        "--order-drop-every",
        "7",
        "--order-duplicate-every",
        "5",
        "--order-late-every",
        "11",
        "--order-late-by",
        "3s",
        "--order-fills",
    ]);
    // The first order received is cut (RST) before its answer: a reconnect between a
    // request and its response.
    sim.control("/cut-next?how=rst");
    let url = format!("{}ws-api/v3", sim.feed_url);
    let run = start(runtime, &url, 40, &["--timeout", "2s", "--in-flight", "8"]);
    let (lines, ok, stderr) = run.finish();
    assert!(ok, "{stderr}");
    let counts = check(&lines, 40, &sim.control("/orders"));
    // The cut request, and what was in flight with it, may have reached the gateway.
    assert!(
        counts.get("outcome_unknown").copied().unwrap_or(0) >= 1,
        "{counts:?}"
    );
    // Every 7th order after the cut is never answered; every 11th comes too late.
    assert!(
        counts.get("timed_out").copied().unwrap_or(0) >= 3,
        "{counts:?}"
    );
    assert!(counts["response"] >= 25, "{counts:?}");
    let pushed = lines.iter().filter(|l| l["event"] == "pushed").count();
    assert!(
        pushed >= counts["response"],
        "a fill after every answer: {pushed}"
    );
    let logins = lines.iter().filter(|l| l["event"] == "ready").count();
    assert_eq!(logins, 2, "logged in again after the cut: {lines:?}");
}

#[test]
fn rpc_gateway_faults_resolve_every_request_once_blocking() {
    gateway_faults("blocking");
}

#[test]
fn rpc_gateway_faults_resolve_every_request_once_tokio() {
    gateway_faults("tokio");
}

/// Through toxiproxy: latency on every answer, then a reset while requests are in flight,
/// then a black hole: written requests end `outcome_unknown` or `timed_out`, waiting ones go
/// out on the next connection, and nothing is lost or sent twice.
fn through_toxiproxy(runtime: &str) {
    let sim = Sim::start(&[
        "--rate",
        "0",
        "--login-token",
        TOKEN,
        "--order-delay",
        "150ms",
    ]);
    let toxiproxy = Toxiproxy::start();
    let upstream = format!("127.0.0.1:{}", sim.port());
    let listen = toxiproxy.proxy("rpc", &upstream);
    toxiproxy.arm_resets("rpc");
    toxiproxy.add("rpc", &Toxic::latency("downstream", 20, 5));
    let url = format!("ws://{listen}/ws-api/v3");
    let args = [
        "--timeout",
        "4s",
        "--in-flight",
        "4",
        "--backoff",
        "50ms:200ms",
    ];
    let mut run = start(runtime, &url, 24, &args);
    run.until("ready", |l| l["event"] == "ready");
    run.until("a response", |l| l["outcome"] == "response");
    // Four in flight, each answered 150 ms after it arrived: a reset now cuts some.
    toxiproxy.add("rpc", &Toxic::reset_peer("downstream", 0));
    run.until("closed", |l| l["event"] == "closed");
    toxiproxy.remove("rpc", "reset_peer");
    run.until("ready again", |l| l["event"] == "ready");
    let started = Instant::now();
    // Black-holed: what is written now never gets an answer within its deadline.
    toxiproxy.add("rpc", &Toxic::timeout("downstream", 0));
    run.until("a timeout", |l| l["outcome"] == "timed_out");
    assert!(started.elapsed() < Duration::from_secs(4) + Duration::from_secs(2));
    toxiproxy.remove("rpc", "timeout");
    let (lines, _, stderr) = run.finish();
    let counts = check(&lines, 24, &sim.control("/orders"));
    assert!(
        counts.get("outcome_unknown").copied().unwrap_or(0) >= 1,
        "{counts:?} {stderr}"
    );
    assert!(counts["timed_out"] >= 1, "{counts:?}");
    for line in lines.iter().filter(|l| l["outcome"] == "response") {
        assert!(line["rtt_ns"].as_u64().unwrap() >= 150_000_000, "{line}");
    }
}

#[test]
fn rpc_through_toxiproxy_reset_and_black_hole_blocking() {
    through_toxiproxy("blocking");
}

#[test]
fn rpc_through_toxiproxy_reset_and_black_hole_tokio() {
    through_toxiproxy("tokio");
}
