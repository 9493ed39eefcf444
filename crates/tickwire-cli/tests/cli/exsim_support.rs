//! A running `tickwire exchange-sim`, its control interface, and a blocking client of its
//! feed: what the simulator's tests and the toxiproxy rig share.

use std::collections::BTreeMap;
use std::process::Child;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tickwire::blocking::{ClientBuilder, Error, HttpClient, Message, Recv, WebSocket};
use tickwire::blocking::{ClientTlsConfig, MaybeTlsStream};

use crate::echo::{PATIENCE, spawn_reading_lines};

/// A running simulator, killed when dropped.
pub(crate) struct Sim {
    child: Child,
    pub(crate) feed_url: String,
    control: String,
}

impl Sim {
    /// Starts `tickwire exchange-sim --port 0 ARGS` and reads its two address lines.
    pub(crate) fn start(args: &[&str]) -> Self {
        let command = ["exchange-sim", "--port", "0"].iter().chain(args);
        let command: Vec<String> = command.map(|a| (*a).to_owned()).collect();
        let (child, rx) = spawn_reading_lines(&command, 2);
        let mut sim = Self {
            child,
            feed_url: String::new(),
            control: String::new(),
        };
        let feed = rx.recv_timeout(PATIENCE).expect("the feed's address");
        let control = rx.recv_timeout(PATIENCE).expect("the control address");
        let (feed, control) = (feed.trim_end(), control.trim_end());
        let feed = feed
            .strip_prefix("tickwire: exchange-sim server listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {feed:?}"));
        sim.feed_url = format!("{feed}/");
        sim.control = control
            .strip_prefix("tickwire: exchange-sim control on ")
            .unwrap_or_else(|| panic!("unexpected second line {control:?}"))
            .to_owned();
        sim
    }

    /// The feed's port.
    pub(crate) fn port(&self) -> u16 {
        let (_, port) = self
            .feed_url
            .trim_end_matches('/')
            .rsplit_once(':')
            .unwrap();
        port.parse().unwrap()
    }

    /// A control request (`/close?conn=0&how=rst`); panics unless it answers 200.
    pub(crate) fn control(&self, target: &str) -> Value {
        let (status, body) = self.control_status(target);
        assert_eq!(status, 200, "{target}: {body}");
        body
    }

    /// A control request's status and JSON body.
    pub(crate) fn control_status(&self, target: &str) -> (u16, Value) {
        let mut client = HttpClient::new(&self.control).unwrap();
        let response = client.post(target).send().unwrap();
        let body = serde_json::from_slice(response.body()).unwrap();
        (response.status().as_u16(), body)
    }

    /// The counters of connection `conn`.
    pub(crate) fn conn(&self, conn: u64) -> Value {
        let counters = self.control("/counters");
        counters["connections"][usize::try_from(conn).unwrap()].clone()
    }

    /// Polls the counters (bounded) until `done` holds of them; returns them.
    pub(crate) fn wait_counters(&self, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let counters = self.control("/counters");
            if done(&counters) {
                return counters;
            }
            assert!(Instant::now() < deadline, "{what}: {counters}");
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// The numbers the record says were sent on `conn`, per key, in order (replays included).
    pub(crate) fn sent_on(&self, conn: u64) -> BTreeMap<String, Vec<u64>> {
        let record = self.control("/record");
        let mut sent: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for entry in record["sent"].as_array().unwrap() {
            if entry["conn"] == json!(conn) {
                let key = entry["key"].as_str().unwrap().to_owned();
                sent.entry(key)
                    .or_default()
                    .push(entry["seq"].as_u64().unwrap());
            }
        }
        sent
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) type Ws = WebSocket<MaybeTlsStream>;

/// What the client saw next.
#[derive(Debug)]
pub(crate) enum Seen {
    /// A data message: key and number.
    Data(String, u64, usize),
    /// Any other text (acknowledgements, errors, `pong`), parsed when it is JSON.
    Text(String),
    Pong,
    Close(Option<u16>),
    Failed(Error),
}

/// A blocking client of the feed (or of anything that forwards to it), reading with a
/// short timeout so the tests' waits are bounded.
pub(crate) fn connect(url: &str) -> Ws {
    try_connect(url).unwrap()
}

/// Like [`connect`], returning the failure.
pub(crate) fn try_connect(url: &str) -> Result<Ws, Error> {
    ClientBuilder::new()
        .read_timeout(Some(Duration::from_millis(50)))
        .connect(url)
}

/// A wss:// client trusting the CA in `ca_pem`.
pub(crate) fn connect_tls(url: &str, ca_pem: &str) -> Ws {
    let tls = ClientTlsConfig::builder()
        .add_root_pem_file(ca_pem)
        .unwrap()
        .build()
        .unwrap();
    ClientBuilder::new()
        .read_timeout(Some(Duration::from_millis(50)))
        .tls(tls)
        .connect(url)
        .unwrap()
}

/// The next thing the client receives within `PATIENCE`.
pub(crate) fn next(ws: &mut Ws) -> Seen {
    next_within(ws, PATIENCE).unwrap_or_else(|| panic!("nothing arrived within {PATIENCE:?}"))
}

/// The next thing the client receives within `patience`, or `None`.
pub(crate) fn next_within(ws: &mut Ws, patience: Duration) -> Option<Seen> {
    let deadline = Instant::now() + patience;
    while Instant::now() < deadline {
        match ws.recv() {
            Ok(Recv::Message(Message::Text(text))) => {
                let value: Value = serde_json::from_str(text).unwrap_or_default();
                return Some(match (value["key"].as_str(), value["seq"].as_u64()) {
                    (Some(key), Some(seq)) => Seen::Data(key.to_owned(), seq, text.len()),
                    _ => Seen::Text(text.to_owned()),
                });
            }
            Ok(Recv::Message(Message::Pong(_))) => return Some(Seen::Pong),
            Ok(Recv::Closed(frame)) => return Some(Seen::Close(frame.map(|f| f.code.0))),
            Ok(_) => {}
            Err(e) => return Some(Seen::Failed(e)),
        }
    }
    None
}

/// The next text that is not a data message.
pub(crate) fn next_text(ws: &mut Ws) -> String {
    loop {
        match next(ws) {
            Seen::Data(..) | Seen::Pong => {}
            Seen::Text(text) => return text,
            other => panic!("expected a text, got {other:?}"),
        }
    }
}

/// The next data message: (key, number, length).
pub(crate) fn next_data(ws: &mut Ws) -> (String, u64, usize) {
    loop {
        match next(ws) {
            Seen::Data(key, seq, len) => return (key, seq, len),
            Seen::Text(_) | Seen::Pong => {}
            other => panic!("expected data, got {other:?}"),
        }
    }
}

/// Subscribes and returns the connection's number from the acknowledgement.
pub(crate) fn subscribe(ws: &mut Ws, keys: &[&str]) -> u64 {
    let request = json!({"op": "subscribe", "args": keys}).to_string();
    ws.send_text(&request).unwrap();
    ws.flush().unwrap();
    let ack: Value = serde_json::from_str(&next_text(ws)).unwrap();
    assert_eq!(ack["event"], "subscribed", "{ack}");
    assert_eq!(ack["args"], json!(keys));
    ack["conn"].as_u64().unwrap()
}

/// Reads until the connection ends; returns how, skipping data and texts.
pub(crate) fn until_end(ws: &mut Ws) -> Seen {
    loop {
        match next(ws) {
            Seen::Data(..) | Seen::Text(_) | Seen::Pong => {}
            end => return end,
        }
    }
}
