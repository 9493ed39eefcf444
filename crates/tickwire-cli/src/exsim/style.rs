//! The wire styles of `--style`: how a client of each exchange subscribes, how the exchange
//! answers, and what its data messages look like. A style changes the shape of texts only:
//! the numbers per key, the rules (login, deadlines, pings, age, budget), the faults, the
//! counters and the record are the same in every style, named by the simulator's keys.
//! docs/FEEDS.md "Styles" lists the shapes.

use std::time::{SystemTime, UNIX_EPOCH};

use clap::ValueEnum;
use serde_json::{Value, json};

/// An exchange's message shapes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum Style {
    /// The simulator's own: `{"op":"subscribe","args":[KEY..]}`, `{"key":K,"seq":N,"px":P}`.
    #[default]
    Plain,
    /// Binance spot streams: `<symbol>@trade` streams by `SUBSCRIBE` or in the URL
    /// (`/stream?streams=..` wraps events as combined streams), trades numbered by `t`.
    Binance,
    /// OKX v5 public channels: `trades` by `{"op":"subscribe","args":[{..}]}`, numbered by
    /// `seqId`; `--idle-close` counts what the simulator pushes too.
    Okx,
    /// Coinbase Exchange: the `matches` channel by `{"type":"subscribe",..}`, numbered by
    /// `sequence` per product.
    Coinbase,
}

/// What a client's request asks for, in any style.
pub(crate) enum Request {
    /// Subscribe to (`on`) or unsubscribe from topics named as the style names them
    /// ([`Style::topic`]); `id` is the request's id where the style has one (Binance),
    /// echoed in the answer.
    Subscribe {
        on: bool,
        topics: Vec<String>,
        id: Value,
    },
    /// Binance's `LIST_SUBSCRIPTIONS`.
    List { id: Value },
    /// Anything else.
    Unknown,
}

/// What a connection's opening request set up: Binance subscribes to the streams named in
/// the URL, and wraps the events of a `/stream` connection as combined streams.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Opening {
    /// Data messages are `{"stream":NAME,"data":EVENT}`.
    pub(crate) combined: bool,
    /// Keys the URL subscribed to.
    pub(crate) keys: Vec<usize>,
}

/// Binance's stream type: `<symbol>@trade`.
const BINANCE_STREAM: &str = "@trade";
/// OKX's channel of trades.
const OKX_CHANNEL: &str = "trades";
/// Coinbase's channel of trades (its messages are of type `match`).
const COINBASE_CHANNEL: &str = "matches";

impl Style {
    /// The name a client of this style subscribes to `key` by: the key itself (plain), the
    /// stream (`btcusdt@trade` for BTC-USDT), or `channel:instrument` (OKX, Coinbase).
    pub(crate) fn topic(self, key: &str) -> String {
        match self {
            Self::Plain => key.to_owned(),
            Self::Binance => format!(
                "{}{BINANCE_STREAM}",
                binance_symbol(key).to_ascii_lowercase()
            ),
            Self::Okx => format!("{OKX_CHANNEL}:{key}"),
            Self::Coinbase => format!("{COINBASE_CHANNEL}:{key}"),
        }
    }

    /// The key a topic names.
    pub(crate) fn key_index(self, keys: &[String], topic: &str) -> Option<usize> {
        keys.iter().position(|key| self.topic(key) == topic)
    }

    /// Reads a client's request (parsed from JSON; not JSON: `Value::Null`).
    pub(crate) fn request(self, request: &Value) -> Request {
        let id = request["id"].clone();
        let on = match (self, self.verb(request)) {
            (Self::Binance, "SUBSCRIBE") | (_, "subscribe") => true,
            (Self::Binance, "UNSUBSCRIBE") | (_, "unsubscribe") => false,
            (Self::Binance, "LIST_SUBSCRIPTIONS") => return Request::List { id },
            _ => return Request::Unknown,
        };
        let topics = match self {
            Self::Plain => strings(&request["args"]),
            Self::Binance => strings(&request["params"]),
            Self::Okx => request["args"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|arg| {
                    let channel = arg["channel"].as_str().unwrap_or_default();
                    format!("{channel}:{}", arg["instId"].as_str().unwrap_or_default())
                })
                .collect(),
            Self::Coinbase => coinbase_topics(request),
        };
        Request::Subscribe { on, topics, id }
    }

    /// The field that names the request.
    fn verb(self, request: &Value) -> &str {
        let field = match self {
            Self::Plain | Self::Okx => "op",
            Self::Binance => "method",
            Self::Coinbase => "type",
        };
        request[field].as_str().unwrap_or_default()
    }

    /// The answers to a (un)subscription that took effect: `named` are the keys it named,
    /// `now` every key the connection is subscribed to after it.
    pub(crate) fn acks(
        self,
        conn: u64,
        on: bool,
        named: &[&str],
        now: &[&str],
        id: &Value,
    ) -> Vec<String> {
        let acks = match self {
            Self::Plain => {
                let event = if on { "subscribed" } else { "unsubscribed" };
                vec![json!({"event": event, "conn": conn, "args": named})]
            }
            Self::Binance => vec![json!({"result": null, "id": id})],
            // One event per argument.
            Self::Okx => named
                .iter()
                .map(|key| {
                    json!({"event": if on { "subscribe" } else { "unsubscribe" },
                        "arg": {"channel": OKX_CHANNEL, "instId": key},
                        "connId": okx_conn_id(conn)})
                })
                .collect(),
            // The whole subscription set, after each change.
            Self::Coinbase => vec![json!({"type": "subscriptions",
                "channels": [{"name": COINBASE_CHANNEL, "product_ids": now}]})],
        };
        acks.iter().map(Value::to_string).collect()
    }

    /// The answer to `LIST_SUBSCRIPTIONS`: the streams of the keys subscribed to.
    pub(crate) fn list(self, now: &[&str], id: &Value) -> String {
        let streams: Vec<String> = now.iter().map(|key| self.topic(key)).collect();
        json!({"result": streams, "id": id}).to_string()
    }

    /// The answer to a request the simulator refuses: `problem` says why; `unknown_request`
    /// tells a request it does not know from one naming unknown topics (or none).
    pub(crate) fn error(
        self,
        conn: u64,
        problem: &str,
        unknown_request: bool,
        id: &Value,
    ) -> String {
        match self {
            Self::Plain => json!({"event": "error", "conn": conn, "msg": problem}),
            Self::Binance => json!({"error": {"code": 2, "msg": problem}, "id": id}),
            Self::Okx => {
                // 60012: an invalid request; 60018: no such channel or instrument.
                let code = if unknown_request { "60012" } else { "60018" };
                json!({"event": "error", "code": code, "msg": problem,
                    "connId": okx_conn_id(conn)})
            }
            Self::Coinbase => {
                json!({"type": "error", "message": "Failed to subscribe", "reason": problem})
            }
        }
        .to_string()
    }

    /// What a connection's opening request (its path and query) subscribed to.
    pub(crate) fn opening(self, target: &str, keys: &[String]) -> Opening {
        if self != Self::Binance {
            return Opening::default();
        }
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        let streams = match path.trim_end_matches('/') {
            "/stream" => query
                .split('&')
                .find_map(|pair| pair.strip_prefix("streams="))
                .unwrap_or_default(),
            raw => raw.strip_prefix("/ws/").unwrap_or_default(),
        };
        Opening {
            combined: path.starts_with("/stream"),
            keys: streams
                .replace("%40", "@")
                .split('/')
                .filter_map(|stream| self.key_index(keys, stream))
                .collect(),
        }
    }

    /// Whether `--idle-close` also counts the messages the simulator pushes (OKX closes a
    /// connection when nothing was pushed for 30 s and the client sent nothing either).
    pub(crate) fn idle_counts_pushes(self) -> bool {
        self == Self::Okx
    }

    /// A data message: number `seq` of `key`, padded to `size` bytes with a `pad` field.
    pub(crate) fn data(self, key: &str, seq: u64, size: usize, opening: &Opening) -> String {
        let price = format!("{}.{:02}", 100 + seq % 1000, seq % 100);
        let buy = seq.is_multiple_of(2);
        let side = if buy { "buy" } else { "sell" };
        let (head, tail) = match self {
            Self::Plain => (
                format!(r#"{{"key":"{key}","seq":{seq},"px":{price}"#),
                "}".to_owned(),
            ),
            Self::Binance => {
                let ms = unix_micros() / 1000;
                let event = format!(
                    r#"{{"e":"trade","E":{ms},"s":"{}","t":{seq},"p":"{price}","q":"1.000","T":{ms},"m":{},"M":true"#,
                    binance_symbol(key),
                    buy
                );
                if opening.combined {
                    let stream = self.topic(key);
                    (
                        format!(r#"{{"stream":"{stream}","data":{event}"#),
                        "}}".to_owned(),
                    )
                } else {
                    (event, "}".to_owned())
                }
            }
            Self::Okx => (
                format!(
                    r#"{{"arg":{{"channel":"{OKX_CHANNEL}","instId":"{key}"}},"data":[{{"instId":"{key}","tradeId":"{seq}","px":"{price}","sz":"1","side":"{side}","ts":"{}","count":"1","seqId":{seq}"#,
                    unix_micros() / 1000
                ),
                "}]}".to_owned(),
            ),
            Self::Coinbase => (
                format!(
                    r#"{{"type":"match","trade_id":{seq},"sequence":{seq},"product_id":"{key}","size":"1.0","price":"{price}","side":"{side}","time":"{}""#,
                    iso8601(unix_micros())
                ),
                "}".to_owned(),
            ),
        };
        padded(head, &tail, size)
    }
}

/// The message `head` (open up to its last field) closed with `tail`; with a `pad` field
/// when `size` asks for more: a pad makes it at least 9 bytes longer (`,"pad":""`), so it
/// is exactly `size` from there on, the least above `size` below it.
fn padded(mut text: String, tail: &str, size: usize) -> String {
    if size > text.len() + tail.len() {
        text.push_str(r#","pad":""#);
        let pad = size.saturating_sub(text.len() + 1 + tail.len());
        text.extend(std::iter::repeat_n('x', pad));
        text.push('"');
    }
    text.push_str(tail);
    text
}

/// The strings of a JSON array (others left out).
fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

/// Coinbase's topics: every channel with the products at the root, or with its own
/// (`{"name":..,"product_ids":[..]}`).
fn coinbase_topics(request: &Value) -> Vec<String> {
    let root = strings(&request["product_ids"]);
    let mut topics = Vec::new();
    for channel in request["channels"].as_array().into_iter().flatten() {
        let (name, products) = match channel {
            Value::String(name) => (name.as_str(), root.clone()),
            object => (
                object["name"].as_str().unwrap_or_default(),
                strings(&object["product_ids"]),
            ),
        };
        topics.extend(products.iter().map(|product| format!("{name}:{product}")));
    }
    topics
}

/// Binance's symbol for a key: BTC-USDT is BTCUSDT.
fn binance_symbol(key: &str) -> String {
    key.chars().filter(|&c| c != '-').collect()
}

/// OKX's connection id: 8 hex digits (here, the connection's number).
fn okx_conn_id(conn: u64) -> String {
    format!("{conn:08x}")
}

fn unix_micros() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_micros()).unwrap_or(u64::MAX)
}

/// `2026-12-02T17:06:08.123456Z` (UTC, microseconds), as Coinbase writes times.
fn iso8601(unix_micros: u64) -> String {
    let (secs, micros) = (unix_micros / 1_000_000, unix_micros % 1_000_000);
    let (days, of_day) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60
    )
}

/// The proleptic Gregorian date `days` after 1970-01-01, counted in 400-year eras of
/// 146 097 days that start on March 1st (so that the leap day ends a year).
fn civil_date(days: u64) -> (u64, u64, u64) {
    // 719 468 days from 0000-03-01 to 1970-01-01.
    let shifted = days + 719_468;
    let era = shifted / 146_097;
    let day_of_era = shifted % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    // Months from March: 153 days per 5 months.
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = era * 400 + year_of_era + u64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> Vec<String> {
        vec!["BTC-USDT".to_owned(), "ETH-USDT".to_owned()]
    }

    #[test]
    fn plain_data_messages_are_padded_to_the_size_asked() {
        let plain = |key: &str, seq, size| Style::Plain.data(key, seq, size, &Opening::default());
        assert_eq!(plain("K", 7, 0), r#"{"key":"K","seq":7,"px":107.07}"#);
        // Unpadded, this one is 41 bytes; with an empty pad, 50.
        assert_eq!(plain("BTC-USD", 12345, 41).len(), 41);
        assert_eq!(plain("BTC-USD", 12345, 42).len(), 50);
        for size in [50, 64, 200] {
            let text = plain("BTC-USD", 12345, size);
            assert_eq!(text.len(), size, "{text}");
            let value: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(value["seq"], 12345);
        }
    }

    #[test]
    fn every_style_pads_inside_its_event() {
        let combined = Opening {
            combined: true,
            keys: vec![],
        };
        for (style, seq_at) in [
            (Style::Binance, "/data/t"),
            (Style::Okx, "/data/0/seqId"),
            (Style::Coinbase, "/sequence"),
        ] {
            let text = style.data("BTC-USDT", 42, 300, &combined);
            assert_eq!(text.len(), 300, "{text}");
            let value: Value = serde_json::from_str(&text).unwrap();
            assert_eq!(value.pointer(seq_at), Some(&json!(42)), "{text}");
        }
    }

    #[test]
    fn binance_urls_subscribe_and_pick_the_combined_wrapper() {
        let binance = Style::Binance;
        assert_eq!(
            binance.opening("/stream?streams=btcusdt@trade/ethusdt%40trade", &keys()),
            Opening {
                combined: true,
                keys: vec![0, 1]
            }
        );
        assert_eq!(
            binance.opening("/ws/ethusdt@trade", &keys()),
            Opening {
                combined: false,
                keys: vec![1]
            }
        );
        assert_eq!(binance.opening("/", &keys()), Opening::default());
        assert_eq!(
            binance.opening("/stream", &keys()).keys,
            Vec::<usize>::new()
        );
        assert_eq!(
            Style::Okx.opening("/stream?streams=btcusdt@trade", &keys()),
            Opening::default()
        );
    }

    #[test]
    fn coinbase_products_apply_to_every_channel_unless_a_channel_names_its_own() {
        let request = json!({"type": "subscribe", "product_ids": ["BTC-USD"],
            "channels": ["matches", {"name": "ticker", "product_ids": ["ETH-USD"]}]});
        let Request::Subscribe { on, topics, .. } = Style::Coinbase.request(&request) else {
            panic!("a subscription");
        };
        assert!(on);
        assert_eq!(topics, ["matches:BTC-USD", "ticker:ETH-USD"]);
    }

    #[test]
    fn times_are_utc_dates() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000000Z");
        // 2000-02-29 (a leap day) 12:34:56.000789.
        assert_eq!(iso8601(951_827_696_000_789), "2000-02-29T12:34:56.000789Z");
        assert_eq!(
            iso8601(1_798_761_599_999_999),
            "2026-12-31T23:59:59.999999Z"
        );
    }
}
