//! `tickwire exchange-sim` as a feed client sees it on the wire, driven with the blocking
//! WebSocket client and its control interface.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::time::{Duration, Instant};

use serde_json::json;
use tickwire::blocking::Error;
use tickwire::ws::HandshakeError;

use crate::echo::Pki;
use crate::exsim_support::{
    Seen, Sim, connect, connect_tls, next, next_data, next_text, next_within, subscribe,
    try_connect, until_end,
};

/// Reads `count` data messages; returns the numbers per key and each message's length.
fn read_data(
    ws: &mut crate::exsim_support::Ws,
    count: usize,
) -> (BTreeMap<String, Vec<u64>>, Vec<usize>) {
    let mut seen: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut lengths = Vec::new();
    for _ in 0..count {
        let (key, seq, len) = next_data(ws);
        seen.entry(key).or_default().push(seq);
        lengths.push(len);
    }
    (seen, lengths)
}

fn assert_consecutive(numbers: &[u64]) {
    for pair in numbers.windows(2) {
        assert_eq!(pair[1], pair[0] + 1, "{numbers:?}");
    }
}

#[test]
fn subscribed_keys_arrive_numbered_in_order_as_the_record_says() {
    let sim = Sim::start(&[
        "--rate",
        "200",
        "--size",
        "120",
        "--keys",
        "BTC-USD,ETH-USD,SOL-USD",
    ]);
    let mut ws = connect(&sim.feed_url);
    let conn = subscribe(&mut ws, &["BTC-USD", "ETH-USD"]);
    let (seen, lengths) = read_data(&mut ws, 60);
    assert_eq!(seen.keys().collect::<Vec<_>>(), ["BTC-USD", "ETH-USD"]);
    for numbers in seen.values() {
        assert_consecutive(numbers);
    }
    assert!(lengths.iter().all(|&len| len == 120), "{lengths:?}");
    ws.close(tickwire::ws::CloseCode::NORMAL, "").unwrap();
    assert!(matches!(until_end(&mut ws), Seen::Close(_)));
    // The record of conn holds what the client read, and after it at most what was still
    // in flight when it closed.
    let counters = sim.wait_counters("the connection ends", |c| {
        c["connections"][0]["open"] == false
    });
    assert_eq!(counters["connections"][0]["ended"], "peer ws 1000");
    let sent = sim.sent_on(conn);
    for (key, numbers) in &seen {
        assert_eq!(&sent[key][..numbers.len()], &numbers[..], "{key}");
    }
}

#[test]
fn a_feed_over_wss_uses_the_tls_options() {
    let pki = Pki::new("exsim-wss");
    let (cert, key) = (pki.file("server.pem"), pki.file("server.key"));
    let sim = Sim::start(&["--rate", "200", "--tls-cert", &cert, "--tls-key", &key]);
    assert!(
        sim.feed_url.starts_with("wss://127.0.0.1:"),
        "{}",
        sim.feed_url
    );
    let mut ws = connect_tls(&sim.feed_url, &pki.file("ca.pem"));
    subscribe(&mut ws, &["SOL-USD"]);
    let (seen, _) = read_data(&mut ws, 10);
    assert_consecutive(&seen["SOL-USD"]);
}

#[test]
fn without_a_subscription_by_the_deadline_the_server_closes_with_1008() {
    let sim = Sim::start(&["--subscribe-deadline", "300ms"]);
    let started = Instant::now();
    let mut ws = connect(&sim.feed_url);
    assert!(matches!(next(&mut ws), Seen::Close(Some(1008))));
    assert!(started.elapsed() >= Duration::from_millis(300));
    // An unknown key is answered with an error, and does not count as a subscription.
    let mut ws = connect(&sim.feed_url);
    ws.send_text(r#"{"op":"subscribe","args":["DOGE-USD"]}"#)
        .unwrap();
    let error: serde_json::Value = serde_json::from_str(&next_text(&mut ws)).unwrap();
    assert_eq!(error["event"], "error", "{error}");
    assert!(matches!(next(&mut ws), Seen::Close(Some(1008))));
}

#[test]
fn a_login_is_required_before_anything_else() {
    let sim = Sim::start(&["--login-token", "s3cret", "--rate", "200"]);
    let mut ws = connect(&sim.feed_url);
    ws.send_text(r#"{"op":"subscribe","args":["BTC-USD"]}"#)
        .unwrap();
    let refused: serde_json::Value = serde_json::from_str(&next_text(&mut ws)).unwrap();
    assert_eq!(refused, json!({"event": "login", "conn": 0, "ok": false}));
    assert!(matches!(next(&mut ws), Seen::Close(Some(1008))));

    let mut ws = connect(&sim.feed_url);
    ws.send_text(r#"{"op":"login","token":"s3cret"}"#).unwrap();
    let ok: serde_json::Value = serde_json::from_str(&next_text(&mut ws)).unwrap();
    assert_eq!(ok, json!({"event": "login", "conn": 1, "ok": true}));
    subscribe(&mut ws, &["BTC-USD"]);
    next_data(&mut ws);
    assert_eq!(sim.conn(1)["logged_in"], true);
}

fn assert_reset(seen: &Seen) {
    match seen {
        Seen::Failed(Error::Io(e)) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
        other => panic!("expected a reset, got {other:?}"),
    }
}

#[test]
fn closes_on_command_with_a_close_frame_a_fin_or_a_reset() {
    let sim = Sim::start(&["--rate", "200"]);
    let mut clients: Vec<_> = (0..3)
        .map(|_| {
            let mut ws = connect(&sim.feed_url);
            let conn = subscribe(&mut ws, &["BTC-USD"]);
            next_data(&mut ws);
            (ws, conn)
        })
        .collect();
    sim.control(&format!("/close?conn={}&how=ws&code=4002", clients[0].1));
    sim.control(&format!("/close?conn={}&how=fin", clients[1].1));
    sim.control(&format!("/close?conn={}&how=rst", clients[2].1));
    assert!(matches!(
        until_end(&mut clients[0].0),
        Seen::Close(Some(4002))
    ));
    assert!(matches!(
        until_end(&mut clients[1].0),
        Seen::Failed(Error::UnexpectedEof)
    ));
    assert_reset(&until_end(&mut clients[2].0));
    let counters = sim.wait_counters("three ended", |c| {
        (0..3).all(|i| c["connections"][i]["open"] == false)
    });
    let ended: Vec<_> = (0..3)
        .map(|i| counters["connections"][i]["ended"].clone())
        .collect();
    assert_eq!(ended, [json!("ws 4002"), json!("fin"), json!("rst")]);
    // A command to an ended or unknown connection is refused.
    assert_eq!(sim.control_status("/close?conn=0").0, 400);
    assert_eq!(sim.control_status("/close?conn=99").0, 400);
    assert_eq!(sim.control_status("/close?conn=1&how=slam").0, 400);
}

#[test]
fn connections_are_closed_at_their_age_as_configured() {
    for (how, ok) in [("rst", None), ("ws", Some(1000)), ("fin", None)] {
        let sim = Sim::start(&["--rate", "200", "--max-age", "400ms", "--age-close", how]);
        let opened = Instant::now();
        let mut ws = connect(&sim.feed_url);
        subscribe(&mut ws, &["ETH-USD"]);
        let end = until_end(&mut ws);
        let age = opened.elapsed();
        assert!(age >= Duration::from_millis(400), "{how}: {age:?}");
        assert!(age < Duration::from_secs(3), "{how}: {age:?}");
        match (how, ok, end) {
            ("rst", _, end) => assert_reset(&end),
            ("ws", Some(code), Seen::Close(Some(got))) => assert_eq!(got, code),
            ("fin", _, Seen::Failed(Error::UnexpectedEof)) => {}
            (how, _, end) => panic!("{how}: {end:?}"),
        }
    }
}

#[test]
fn a_stalled_subscription_goes_quiet_while_pings_are_answered() {
    let sim = Sim::start(&["--rate", "200", "--keys", "BTC-USD"]);
    let mut ws = connect(&sim.feed_url);
    let conn = subscribe(&mut ws, &["BTC-USD"]);
    let (_, before, _) = next_data(&mut ws);
    sim.control(&format!("/stall?conn={conn}"));
    sim.wait_counters("stalled", |c| c["connections"][0]["stalled"] == true);
    // Whatever was queued before the stall took effect drains; then only pongs come.
    while let Some(Seen::Data(..)) = next_within(&mut ws, Duration::from_millis(100)) {}
    for round in 0..3 {
        ws.ping(format!("p{round}").as_bytes()).unwrap();
        ws.flush().unwrap();
        assert!(matches!(next(&mut ws), Seen::Pong), "round {round}");
    }
    assert!(next_within(&mut ws, Duration::from_millis(200)).is_none());
    let published_during = sim.control("/counters")["published"]["BTC-USD"]
        .as_u64()
        .unwrap();
    sim.control(&format!("/resume?conn={conn}"));
    let (_, after, _) = next_data(&mut ws);
    // What was published during the stall never came: the client sees a hole.
    assert!(after > published_during, "{after} after {published_during}");
    assert!(after > before + 1);
    assert!(sim.conn(conn)["received_control"].as_u64().unwrap() >= 3);
}

#[test]
fn gaps_skip_numbers_and_replays_repeat_the_last_ones() {
    let sim = Sim::start(&["--rate", "100", "--keys", "BTC-USD,ETH-USD"]);
    let mut ws = connect(&sim.feed_url);
    let conn = subscribe(&mut ws, &["BTC-USD"]);
    next_data(&mut ws);
    // A gap on the feed: five numbers published on no connection.
    let (_, before, _) = next_data(&mut ws);
    sim.control("/gap?key=BTC-USD&size=5");
    let (last, next) = until_jump(&mut ws, before);
    assert_eq!(next, last + 6, "five numbers skipped");
    let skipped = sim.control("/record")["skipped"].clone();
    assert_eq!(
        skipped,
        json!([{"key": "BTC-USD", "from": last + 1, "to": last + 5}])
    );
    // A gap on this connection only: three numbers left out.
    let (_, before, _) = next_data(&mut ws);
    sim.control(&format!("/gap?key=BTC-USD&size=3&conn={conn}"));
    let (last, next) = until_jump(&mut ws, before);
    assert_eq!(next, last + 4, "three numbers left out");
    // A replay of the last four sent: the client sees them again, in one run.
    sim.control(&format!("/replay?conn={conn}&count=4"));
    let (mut newest, mut repeated) = (next, Vec::new());
    for _ in 0..1000 {
        let (_, seq, _) = next_data(&mut ws);
        if seq <= newest {
            repeated.push(seq);
        } else if repeated.is_empty() {
            newest = seq;
        } else {
            break;
        }
    }
    let record = sim.control("/record");
    let sent: Vec<(u64, bool)> = record["sent"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["seq"].as_u64().unwrap(), s["replay"] == true))
        .collect();
    let first_replay = sent.iter().position(|(_, replay)| *replay).unwrap();
    let replayed: Vec<u64> = sent[first_replay..first_replay + 4]
        .iter()
        .map(|&(seq, replay)| {
            assert!(replay);
            seq
        })
        .collect();
    let originals: Vec<u64> = sent[first_replay - 4..first_replay]
        .iter()
        .map(|&(seq, _)| seq)
        .collect();
    assert_eq!(replayed, originals, "the four sent last");
    assert_eq!(repeated, replayed);
    assert_eq!(sent.iter().filter(|(_, replay)| *replay).count(), 4);
}

/// Reads on from `last` (the latest number read) until a message does not follow on:
/// returns the number before that jump and the one jumped to.
fn until_jump(ws: &mut crate::exsim_support::Ws, mut last: u64) -> (u64, u64) {
    for _ in 0..1000 {
        let (_, seq, _) = next_data(ws);
        if seq != last + 1 {
            return (last, seq);
        }
        last = seq;
    }
    panic!("no jump in 1000 messages after {last}");
}

fn handshake_status(result: Result<crate::exsim_support::Ws, Error>) -> u16 {
    match result {
        Err(Error::Handshake(HandshakeError::UnexpectedStatus { status, .. })) => status,
        Err(e) => panic!("expected a refused handshake, got {e}"),
        Ok(_) => panic!("expected a refused handshake, got a connection"),
    }
}

#[test]
fn connects_past_the_budget_are_refused_and_counted() {
    let sim = Sim::start(&["--connect-budget", "3/30s", "--reject-status", "429"]);
    let open: Vec<_> = (0..3).map(|_| connect(&sim.feed_url)).collect();
    assert_eq!(handshake_status(try_connect(&sim.feed_url)), 429);
    assert_eq!(handshake_status(try_connect(&sim.feed_url)), 429);
    // A connection is listed once its thread has taken it over from the handshake.
    let counters = sim.wait_counters("three connections", |c| {
        c["connections"].as_array().unwrap().len() == 3
    });
    assert_eq!(counters["attempts"], 5);
    assert_eq!(counters["refused"], json!({"429": 2}));
    assert_eq!(counters["max_attempts_in_window"], 5);
    drop(open);

    // Refusals on command, as an overloaded exchange answers 503.
    let sim = Sim::start(&[]);
    sim.control("/reject?count=2&status=503");
    assert_eq!(handshake_status(try_connect(&sim.feed_url)), 503);
    assert_eq!(handshake_status(try_connect(&sim.feed_url)), 503);
    connect(&sim.feed_url);
    assert_eq!(sim.control("/counters")["refused"], json!({"503": 2}));
    assert_eq!(sim.control_status("/reject?status=200").0, 400);
}

#[test]
fn the_application_ping_keeps_an_idle_connection_open() {
    let sim = Sim::start(&["--idle-close", "400ms", "--keys", "BTC-USD", "--rate", "50"]);
    let mut ws = connect(&sim.feed_url);
    let conn = subscribe(&mut ws, &["BTC-USD"]);
    // Six pings 150 ms apart: 900 ms, more than twice the idle limit, and still open.
    let mut last_ping = Instant::now();
    for round in 0..6 {
        last_ping = Instant::now();
        ws.send_text("ping").unwrap();
        ws.flush().unwrap();
        assert_eq!(next_text(&mut ws), "pong", "round {round}");
        let wait = Instant::now() + Duration::from_millis(150);
        while Instant::now() < wait {
            match next_within(&mut ws, wait.saturating_duration_since(Instant::now())) {
                Some(Seen::Data(..)) | None => {}
                Some(other) => panic!("round {round}: {other:?}"),
            }
        }
    }
    assert_eq!(sim.conn(conn)["app_pings_answered"], 6);
    // Then silence: closed with 4000 once 400 ms pass without a message from the client.
    assert!(matches!(until_end(&mut ws), Seen::Close(Some(4000))));
    let quiet = last_ping.elapsed();
    assert!(quiet >= Duration::from_millis(400), "{quiet:?}");
    assert!(quiet < Duration::from_secs(2), "{quiet:?}");
}

#[test]
fn server_pings_must_be_answered_within_their_deadline() {
    let sim = Sim::start(&[
        "--server-ping-every",
        "100ms",
        "--server-ping-deadline",
        "300ms",
        "--rate",
        "0",
    ]);
    let mut ws = connect(&sim.feed_url);
    let conn = subscribe(&mut ws, &["BTC-USD"]);
    for round in 0..3 {
        assert_eq!(next_text(&mut ws), "ping", "round {round}");
        ws.send_text("pong").unwrap();
        ws.flush().unwrap();
    }
    sim.wait_counters("three pongs", |c| c["connections"][0]["server_pongs"] == 3);
    // Pings no longer answered: closed with 4001.
    loop {
        match next(&mut ws) {
            Seen::Text(text) => assert_eq!(text, "ping"),
            Seen::Close(code) => {
                assert_eq!(code, Some(4001));
                break;
            }
            other => panic!("{other:?}"),
        }
    }
    assert!(sim.conn(conn)["server_pings_sent"].as_u64().unwrap() >= 4);
}

#[test]
fn every_client_message_is_counted_in_its_window() {
    let sim = Sim::start(&["--rate", "0", "--count-window", "1s"]);
    let mut ws = connect(&sim.feed_url);
    let conn = subscribe(&mut ws, &["BTC-USD"]);
    for _ in 0..9 {
        ws.send_text("ping").unwrap();
    }
    ws.ping(b"").unwrap();
    ws.flush().unwrap();
    for _ in 0..9 {
        assert_eq!(next_text(&mut ws), "pong");
    }
    let counters = sim.wait_counters("the pings counted", |c| {
        c["connections"][0]["received_control"] == 1
    });
    let counted = &counters["connections"][usize::try_from(conn).unwrap()];
    // The subscribe and nine pings, all within a second.
    assert_eq!(counted["received"], 10);
    assert_eq!(counted["max_received_in_window"], 10);
    assert_eq!(sim.control_status("/counters?window_ms=x").0, 400);
    assert_eq!(sim.control_status("/nothing").0, 404);
}

#[test]
fn the_record_can_be_written_as_json_lines() {
    let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("exsim-record-{}.jsonl", std::process::id()));
    let sim = Sim::start(&["--rate", "200", "--record", path.to_str().unwrap()]);
    let mut ws = connect(&sim.feed_url);
    let conn = subscribe(&mut ws, &["ETH-USD"]);
    let (seen, _) = read_data(&mut ws, 20);
    sim.control(&format!("/close?conn={conn}&how=rst"));
    sim.wait_counters("closed", |c| c["connections"][0]["open"] == false);
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let _ = std::fs::remove_file(&path);
    let numbers: Vec<u64> = lines.iter().map(|l| l["seq"].as_u64().unwrap()).collect();
    assert_eq!(&numbers[..20], &seen["ETH-USD"][..]);
    assert!(
        lines
            .iter()
            .all(|l| l["key"] == "ETH-USD" && l["conn"] == conn)
    );
    assert_eq!(sim.sent_on(conn)["ETH-USD"], numbers);
}
