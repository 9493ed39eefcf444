//! `tickwire exchange-sim --style binance|okx|coinbase`: each exchange's handshake and data
//! shapes on the wire, with the same numbers, counters and record as the plain style.
//! (A sibling of `exsim.rs`, which holds the plain style's rules and faults.)

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::exsim_support::{Seen, Sim, Ws, connect, next, next_within, until_end};

/// Sends a request and flushes it.
fn send(ws: &mut Ws, request: &Value) {
    ws.send_text(&request.to_string()).unwrap();
    ws.flush().unwrap();
}

/// The next text, parsed (`pong` and other non-JSON texts as a JSON string).
fn next_json(ws: &mut Ws) -> Value {
    loop {
        match next(ws) {
            Seen::Text(text) => {
                return serde_json::from_str(&text).unwrap_or(Value::String(text));
            }
            Seen::Pong => {}
            other => panic!("expected a text, got {other:?}"),
        }
    }
}

/// The next text that `data` does not take for a data message.
fn next_answer(ws: &mut Ws, data: fn(&Value) -> Option<(String, u64)>) -> Value {
    loop {
        let value = next_json(ws);
        if data(&value).is_none() {
            return value;
        }
    }
}

/// Reads `count` data messages (as `data` finds their key and number), skipping answers;
/// returns the numbers per key, and checks each key's numbers are consecutive.
fn read_data(
    ws: &mut Ws,
    count: usize,
    data: fn(&Value) -> Option<(String, u64)>,
) -> BTreeMap<String, Vec<u64>> {
    let mut seen: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    while seen.values().map(Vec::len).sum::<usize>() < count {
        if let Some((key, seq)) = data(&next_json(ws)) {
            seen.entry(key).or_default().push(seq);
        }
    }
    for numbers in seen.values() {
        assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1), "{numbers:?}");
    }
    seen
}

/// What the client read on connection `conn` is what the record says was sent.
fn assert_recorded(sim: &Sim, conn: u64, seen: &BTreeMap<String, Vec<u64>>) {
    let sent = sim.sent_on(conn);
    for (key, numbers) in seen {
        let first = sent[key].iter().position(|&n| n == numbers[0]).unwrap();
        assert_eq!(
            &sent[key][first..first + numbers.len()],
            &numbers[..],
            "{key}"
        );
    }
}

fn binance_trade(value: &Value) -> Option<(String, u64)> {
    // Combined streams wrap the event; raw streams do not.
    let event = value.get("data").unwrap_or(value);
    (event["e"] == "trade").then(|| {
        let key = match value["stream"].as_str() {
            Some(stream) => stream.to_owned(),
            None => event["s"].as_str().unwrap().to_owned(),
        };
        (key, event["t"].as_u64().unwrap())
    })
}

#[test]
fn binance_subscribes_by_url_or_by_request_id_and_wraps_combined_streams() {
    let sim = Sim::start(&[
        "--style",
        "binance",
        "--keys",
        "BTC-USDT,ETH-USDT",
        "--rate",
        "200",
    ]);
    let mut ws = connect(&format!("{}stream?streams=btcusdt@trade", sim.feed_url));
    let seen = read_data(&mut ws, 10, binance_trade);
    assert_eq!(seen.keys().collect::<Vec<_>>(), ["btcusdt@trade"]);
    send(
        &mut ws,
        &json!({"method": "SUBSCRIBE", "params": ["ethusdt@trade"], "id": 7}),
    );
    assert_eq!(
        next_answer(&mut ws, binance_trade),
        json!({"result": null, "id": 7})
    );
    send(&mut ws, &json!({"method": "LIST_SUBSCRIPTIONS", "id": 8}));
    assert_eq!(
        next_answer(&mut ws, binance_trade),
        json!({"result": ["btcusdt@trade", "ethusdt@trade"], "id": 8})
    );
    send(
        &mut ws,
        &json!({"method": "SUBSCRIBE", "params": ["dogeusdt@trade"], "id": 9}),
    );
    let error = next_answer(&mut ws, binance_trade);
    assert_eq!(
        (&error["id"], &error["error"]["code"]),
        (&json!(9), &json!(2))
    );
    let seen = read_data(&mut ws, 40, binance_trade);
    assert!(seen.contains_key("ethusdt@trade"), "{seen:?}");
    // The record names the simulator's keys, with the numbers the trades carried.
    let by_key = seen
        .into_iter()
        .map(|(stream, numbers)| {
            (
                stream.replace("usdt@trade", "").to_uppercase() + "-USDT",
                numbers,
            )
        })
        .collect();
    assert_recorded(&sim, 0, &by_key);
    assert_eq!(sim.conn(0)["subscribed"], json!(["BTC-USDT", "ETH-USDT"]));

    // A raw stream (`/ws`) subscribed by request: events unwrapped, symbol in `s`.
    let mut raw = connect(&format!("{}ws", sim.feed_url));
    send(
        &mut raw,
        &json!({"method": "SUBSCRIBE", "params": ["btcusdt@trade"], "id": 1}),
    );
    assert_eq!(
        next_answer(&mut raw, binance_trade),
        json!({"result": null, "id": 1})
    );
    let event = loop {
        let value = next_json(&mut raw);
        if binance_trade(&value).is_some() {
            break value;
        }
    };
    assert_eq!(
        (&event["s"], event.get("stream")),
        (&json!("BTCUSDT"), None)
    );
}

fn okx_trade(value: &Value) -> Option<(String, u64)> {
    let trade = value.pointer("/data/0")?;
    assert_eq!(value["arg"]["instId"], trade["instId"], "{value}");
    Some((
        trade["instId"].as_str()?.to_owned(),
        trade["seqId"].as_u64()?,
    ))
}

#[test]
fn okx_acknowledges_each_argument_and_numbers_trades_by_seq_id() {
    let sim = Sim::start(&[
        "--style",
        "okx",
        "--keys",
        "BTC-USDT,ETH-USDT",
        "--rate",
        "200",
    ]);
    let mut ws = connect(&sim.feed_url);
    let args = json!([{"channel": "trades", "instId": "BTC-USDT"},
        {"channel": "trades", "instId": "ETH-USDT"}]);
    send(&mut ws, &json!({"op": "subscribe", "args": args}));
    for arg in args.as_array().unwrap() {
        assert_eq!(
            next_answer(&mut ws, okx_trade),
            json!({"event": "subscribe", "arg": arg, "connId": "00000000"})
        );
    }
    let seen = read_data(&mut ws, 40, okx_trade);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_recorded(&sim, 0, &seen);
    ws.send_text("ping").unwrap();
    ws.flush().unwrap();
    assert_eq!(next_answer(&mut ws, okx_trade), "pong");
    send(
        &mut ws,
        &json!({"op": "subscribe", "args": [{"channel": "books", "instId": "BTC-USDT"}]}),
    );
    let error = next_answer(&mut ws, okx_trade);
    assert_eq!(
        (&error["event"], &error["code"]),
        (&json!("error"), &json!("60018"))
    );
}

#[test]
fn okx_closes_an_idle_connection_only_once_nothing_is_pushed_either() {
    let sim = Sim::start(&[
        "--style",
        "okx",
        "--keys",
        "BTC-USDT",
        "--rate",
        "100",
        "--idle-close",
        "300ms",
    ]);
    let mut ws = connect(&sim.feed_url);
    send(
        &mut ws,
        &json!({"op": "subscribe", "args": [{"channel": "trades", "instId": "BTC-USDT"}]}),
    );
    // The client sends nothing for three times the idle limit: the trades pushed keep the
    // connection open (OKX closes a connection with nothing pushed for 30 s).
    let until = Instant::now() + Duration::from_millis(900);
    while Instant::now() < until {
        match next_within(&mut ws, Duration::from_millis(50)) {
            Some(Seen::Text(_)) | None => {}
            Some(other) => panic!("{other:?}"),
        }
    }
    // A stall stops the pushes: then the idle limit closes it with 4000.
    sim.control("/stall?conn=0");
    let stalled = Instant::now();
    assert!(matches!(until_end(&mut ws), Seen::Close(Some(4000))));
    assert!(stalled.elapsed() < Duration::from_secs(3));
}

fn coinbase_match(value: &Value) -> Option<(String, u64)> {
    (value["type"] == "match").then(|| {
        (
            value["product_id"].as_str().unwrap().to_owned(),
            value["sequence"].as_u64().unwrap(),
        )
    })
}

#[test]
fn coinbase_answers_with_the_subscription_set_and_numbers_per_product() {
    let sim = Sim::start(&[
        "--style",
        "coinbase",
        "--keys",
        "BTC-USD,ETH-USD",
        "--rate",
        "200",
    ]);
    let mut ws = connect(&sim.feed_url);
    let subscribe = |products: Value| json!({"type": "subscribe", "product_ids": products, "channels": ["matches"]});
    send(&mut ws, &subscribe(json!(["BTC-USD", "ETH-USD"])));
    assert_eq!(
        next_answer(&mut ws, coinbase_match),
        json!({"type": "subscriptions",
            "channels": [{"name": "matches", "product_ids": ["BTC-USD", "ETH-USD"]}]})
    );
    let seen = read_data(&mut ws, 40, coinbase_match);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_recorded(&sim, 0, &seen);
    let time = loop {
        let value = next_json(&mut ws);
        if let Some(time) = value["time"].as_str() {
            break time.to_owned();
        }
    };
    assert!(time.ends_with('Z') && time.len() == 27, "{time}");

    send(
        &mut ws,
        &json!({"type": "unsubscribe", "product_ids": ["ETH-USD"], "channels": ["matches"]}),
    );
    assert_eq!(
        next_answer(&mut ws, coinbase_match),
        json!({"type": "subscriptions",
            "channels": [{"name": "matches", "product_ids": ["BTC-USD"]}]})
    );
    send(&mut ws, &subscribe(json!(["DOGE-USD"])));
    assert_eq!(next_answer(&mut ws, coinbase_match)["type"], "error");
    assert_eq!(sim.conn(0)["subscribed"], json!(["BTC-USD"]));
}
