//! `tickwire feed` against `tickwire exchange-sim`, on both runtimes: what a user reading its
//! JSON lines sees through gaps, resets, stalls, refused connects, rotation and redundant
//! connections, and its exit statuses (0 on SIGTERM, 1 or 2 with one stderr line otherwise).

use std::process::Stdio;

use serde_json::json;

use crate::echo::{PATIENCE, tickwire};
use crate::exsim_support::Sim;
use crate::feed_support::{FeedRun, assert_each_number_once, events};
use crate::support::wait_bounded;

/// Every test runs on each.
const RUNTIMES: [&str; 2] = ["blocking", "tokio"];

#[test]
fn messages_arrive_keyed_and_numbered_in_order_per_key() {
    for runtime in RUNTIMES {
        let sim = Sim::start(&["--rate", "200", "--keys", "BTC-USD,ETH-USD,SOL-USD"]);
        let mut feed = FeedRun::start(runtime, &[&sim.feed_url], &[]);
        let connected = feed.until("connected", |line| line["event"] == "connected");
        assert_eq!(
            connected,
            json!({"event":"connected","conn":0,"attempt":1,"url":sim.feed_url})
        );
        feed.until("subscribed", |line| line["event"] == "subscribed");
        feed.messages_per_key(20);
        let lines = feed.terminate();
        let delivered = assert_each_number_once(&lines);
        assert_eq!(delivered.keys().collect::<Vec<_>>(), ["BTC-USD", "ETH-USD"]);
        assert!(events(&lines, "gap").is_empty(), "{runtime}: {lines:?}");
        // The exchange's acknowledgement is a message too, without key or number.
        let ack = lines
            .iter()
            .find(|line| line["event"] == "message" && line.get("seq").is_none())
            .unwrap();
        assert!(
            ack["text"]
                .as_str()
                .unwrap()
                .contains(r#""event":"subscribed""#)
        );
    }
}

#[test]
fn kernel_timestamps_come_with_every_message_on_ws() {
    for runtime in RUNTIMES {
        let sim = Sim::start(&["--rate", "200"]);
        let mut feed = FeedRun::start(runtime, &[&sim.feed_url], &["--timestamps", "kernel"]);
        feed.messages_per_key(5);
        let lines = feed.terminate();
        for line in events(&lines, "message") {
            assert!(line["kernel_ns"].is_u64(), "{runtime}: {line}");
        }
    }
}

#[test]
fn a_gap_on_the_feed_is_one_gap_event() {
    for runtime in RUNTIMES {
        let sim = Sim::start(&["--rate", "200", "--keys", "BTC-USD,ETH-USD"]);
        let mut feed = FeedRun::start(runtime, &[&sim.feed_url], &[]);
        feed.messages_per_key(5);
        sim.control("/gap?key=BTC-USD&size=3");
        let gap = feed.until("the gap", |line| line["event"] == "gap");
        feed.messages_per_key(5);
        let lines = feed.terminate();
        let skipped = &sim.control("/record")["skipped"][0];
        assert_eq!(
            gap,
            json!({"event":"gap","key":"BTC-USD","from":skipped["from"],"to":skipped["to"]})
        );
        assert_eq!(
            skipped["to"].as_u64().unwrap() - skipped["from"].as_u64().unwrap(),
            2
        );
        assert_each_number_once(&lines);
        assert_eq!(events(&lines, "gap").len(), 1, "{runtime}");
    }
}

#[test]
fn a_reset_connection_reconnects_within_the_backoff_bounds() {
    for runtime in RUNTIMES {
        let sim = Sim::start(&["--rate", "200", "--keys", "BTC-USD,ETH-USD"]);
        let args = ["--backoff", "50ms:200ms"];
        let mut feed = FeedRun::start(runtime, &[&sim.feed_url], &args);
        feed.messages_per_key(5);
        sim.control("/close?conn=0&how=rst");
        let reconnecting = feed.until("reconnecting", |line| line["event"] == "reconnecting");
        assert_eq!(
            (&reconnecting["conn"], &reconnecting["reason"]),
            (&json!(0), &json!("reset"))
        );
        let delay = reconnecting["delay_ms"].as_u64().unwrap();
        assert!((50..=200).contains(&delay), "{runtime}: {reconnecting}");
        feed.until("connected again", |line| line["event"] == "connected");
        feed.messages_per_key(5);
        let lines = feed.terminate();
        let closed = events(&lines, "closed");
        assert_eq!(
            closed,
            [&json!({"event":"closed","conn":0,"reason":"reset"})]
        );
        // What the reset cut off is delivered or reported, never lost or repeated.
        assert_each_number_once(&lines);
        assert_eq!(sim.conn(1)["subscribed"], json!(["BTC-USD", "ETH-USD"]));
    }
}

#[test]
fn a_stalled_connection_is_stale_and_replaced() {
    for runtime in RUNTIMES {
        let sim = Sim::start(&["--rate", "200", "--keys", "BTC-USD,ETH-USD"]);
        let args = ["--stale-after", "300ms", "--backoff", "20ms:100ms"];
        let mut feed = FeedRun::start(runtime, &[&sim.feed_url], &args);
        feed.messages_per_key(5);
        sim.control("/stall?conn=0");
        let stale = feed.until("stale", |line| line["event"] == "stale");
        assert_eq!(stale["conn"], 0);
        assert!(
            stale["silent_ms"].as_u64().unwrap() >= 300,
            "{runtime}: {stale}"
        );
        let reconnecting = feed.until("reconnecting", |line| line["event"] == "reconnecting");
        assert_eq!(reconnecting["reason"], "stale", "{runtime}");
        feed.until("connected again", |line| line["event"] == "connected");
        feed.messages_per_key(5);
        let lines = feed.terminate();
        assert_each_number_once(&lines);
        // The pings of the stalled connection were still answered: only data went quiet.
        assert_eq!(sim.conn(0)["stalled"], true);
    }
}

#[test]
fn application_pings_go_both_ways_and_keep_a_quiet_connection_open() {
    for runtime in RUNTIMES {
        // OKX's rules: a quiet feed, closed (4000) when the client sends nothing for a
        // while, and the server's own pings to answer (4001 otherwise).
        let sim = Sim::start(&[
            "--rate",
            "0",
            "--idle-close",
            "600ms",
            "--server-ping-every",
            "250ms",
            "--server-ping-deadline",
            "200ms",
        ]);
        let args = [
            "--app-ping",
            "ping",
            "--app-pong",
            "pong",
            "--app-ping-after",
            "100ms",
        ];
        let mut feed = FeedRun::start(runtime, &[&sim.feed_url], &args);
        feed.until("subscribed", |line| line["event"] == "subscribed");
        let counters = sim.wait_counters("pings answered both ways", |c| {
            let conn = &c["connections"][0];
            conn["app_pings_answered"].as_u64() >= Some(3)
                && conn["server_pongs"].as_u64() >= Some(3)
        });
        assert_eq!(
            counters["connections"][0]["open"], true,
            "{runtime}: {counters}"
        );
        let lines = feed.terminate();
        assert_eq!(
            counters["connections"].as_array().unwrap().len(),
            1,
            "{runtime}"
        );
        assert!(events(&lines, "closed").is_empty(), "{runtime}: {lines:?}");
        // Pings and pongs are the session's: no line shows them.
        for line in events(&lines, "message") {
            assert!(
                !matches!(line["text"].as_str(), Some("ping" | "pong")),
                "{line}"
            );
        }
    }
}

#[test]
fn refused_connects_stay_within_the_connect_budget() {
    for runtime in RUNTIMES {
        let sim = Sim::start(&["--rate", "200", "--keys", "BTC-USD,ETH-USD"]);
        let args = ["--backoff", "10ms:20ms", "--max-connects", "2/1s"];
        let mut feed = FeedRun::start(runtime, &[&sim.feed_url], &args);
        feed.messages_per_key(3);
        sim.control("/reject?count=2&status=429");
        sim.control("/close?conn=0&how=fin");
        let refused = feed.until("a refused attempt", |line| {
            line["event"] == "reconnecting" && line["reason"] == "status"
        });
        assert_eq!(refused["status"], 429, "{runtime}");
        feed.until("the budget's wait", |line| line["event"] == "rate_limited");
        feed.until("connected again", |line| {
            line["event"] == "connected" && line["attempt"].as_u64() > Some(1)
        });
        feed.messages_per_key(3);
        let lines = feed.terminate();
        assert_each_number_once(&lines);
        let rate_limited = events(&lines, "rate_limited");
        assert!(
            rate_limited.iter().all(|l| l["quota"] == "connect"),
            "{rate_limited:?}"
        );
        // The simulator counts every attempt as it accepts it, a few ms after the session
        // started it: never more than 2 in any 1000 ms window, as an exchange counts (the
        // budget keeps a margin past its window for that skew; once, without it, the
        // simulator saw 3).
        let counters = sim.control("/counters?window_ms=1000");
        assert_eq!(counters["attempts"], 4, "{runtime}: {counters}");
        assert!(
            counters["max_attempts_in_window"].as_u64() <= Some(2),
            "{counters}"
        );
    }
}

#[test]
fn rotation_switches_connections_without_a_gap_or_a_duplicate() {
    for runtime in RUNTIMES {
        let sim = Sim::start(&["--rate", "200", "--keys", "BTC-USD,ETH-USD"]);
        let mut feed = FeedRun::start(runtime, &[&sim.feed_url], &["--rotate-after", "300ms"]);
        let rotated = feed.until("rotated", |line| line["event"] == "rotated");
        assert_eq!(
            rotated,
            json!({"event":"rotated","conn":1,"from":0}),
            "{runtime}"
        );
        feed.messages_per_key(5);
        let lines = feed.terminate();
        assert_each_number_once(&lines);
        assert!(events(&lines, "gap").is_empty(), "{runtime}: {lines:?}");
        let counters = sim.wait_counters("the old connection closed", |c| {
            c["connections"][0]["open"] == false
        });
        assert_eq!(
            counters["connections"][0]["ended"], "peer ws 1000",
            "{runtime}"
        );
    }
}

#[test]
fn two_urls_are_merged_without_duplicates_and_fill_each_others_holes() {
    for runtime in RUNTIMES {
        let sim = Sim::start(&["--rate", "200", "--keys", "BTC-USD,ETH-USD"]);
        let urls = [sim.feed_url.as_str(), sim.feed_url.as_str()];
        let mut feed = FeedRun::start(runtime, &urls, &[]);
        feed.until("two connections", |line| {
            line["event"] == "connected" && line["conn"] == 1
        });
        feed.messages_per_key(5);
        sim.wait_counters("both subscribed", |c| {
            c["connections"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["subscribed"] != json!([]))
                .count()
                == 2
        });
        // Numbers left out on one connection only: the other one brings them.
        sim.control("/gap?key=BTC-USD&size=3&conn=0");
        sim.control("/gap?key=ETH-USD&size=2&conn=1");
        feed.messages_per_key(20);
        let lines = feed.terminate();
        let delivered = assert_each_number_once(&lines);
        assert!(events(&lines, "gap").is_empty(), "{runtime}: {lines:?}");
        // Every number sent on either connection (from the first delivered) came once.
        for (key, numbers) in &delivered {
            let sent: Vec<u64> = [0, 1]
                .iter()
                .flat_map(|&conn| sim.sent_on(conn).remove(key).unwrap_or_default())
                .filter(|seq| (numbers[0]..=*numbers.last().unwrap()).contains(seq))
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            assert_eq!(&sent, numbers, "{runtime} {key}");
        }
    }
}

#[test]
fn bad_flags_and_a_terminal_error_exit_non_zero_with_one_stderr_line() {
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let unreachable = format!("ws://127.0.0.1:{closed_port}/");
    let cases: [(&[&str], &str); 5] = [
        (
            &["ws://127.0.0.1:9/", "--backoff", "5s:1s"],
            "MIN is more than MAX",
        ),
        (&["ftp://127.0.0.1/"], "ws:// or wss://"),
        (&["ws://127.0.0.1:9/", "--seq", "seq"], "--seq"),
        (&["ws://127.0.0.1:9/", "--no-such-flag"], "--no-such-flag"),
        (
            &[
                &unreachable,
                "--max-attempts",
                "2",
                "--backoff",
                "10ms:20ms",
            ],
            "2 connection attempts failed",
        ),
    ];
    for runtime in RUNTIMES {
        for (args, cause) in cases {
            let mut command = tickwire();
            command.args(["--runtime", runtime, "feed"]).args(args);
            let child = command
                .stdin(Stdio::null())
                .stderr(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let finished = wait_bounded(child, PATIENCE, "tickwire feed");
            let case = format!("{runtime} {args:?}");
            assert!(!finished.status.success(), "{case}");
            let lines: Vec<&str> = finished.stderr.lines().collect();
            assert_eq!(lines.len(), 1, "{case}: {:?}", finished.stderr);
            assert!(lines[0].starts_with("tickwire: "), "{case}: {}", lines[0]);
            assert!(lines[0].contains(cause), "{case}: {}", lines[0]);
            // The attempts are reported before the end; a usage error prints nothing.
            let stdout = String::from_utf8(finished.stdout).unwrap();
            assert_eq!(
                stdout.is_empty(),
                cause != "2 connection attempts failed",
                "{case}: {stdout}"
            );
        }
    }
}
