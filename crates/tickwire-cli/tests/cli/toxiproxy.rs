//! toxiproxy (installed by scripts/toxiproxy.sh) between a blocking client and the exchange
//! simulator: the rig the feed drivers are proved on. The helper drives toxiproxy's HTTP API
//! with the project's own HTTP client.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tickwire::blocking::{Error, HttpClient};

use crate::echo::PATIENCE;
use crate::exsim_support::{Seen, Sim, connect, next_data, subscribe, until_end};

/// The toxiproxy server binary, installed once per test run.
fn server_binary() -> &'static str {
    static BINARY: OnceLock<String> = OnceLock::new();
    BINARY.get_or_init(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/toxiproxy.sh");
        let output = Command::new("bash")
            .arg(script)
            .stderr(Stdio::inherit())
            .output()
            .expect("run scripts/toxiproxy.sh");
        assert!(output.status.success(), "scripts/toxiproxy.sh failed");
        String::from_utf8(output.stdout).unwrap().trim().to_owned()
    })
}

/// The name of the toxic [`Toxiproxy::arm_resets`] adds.
pub(crate) const ARMED: &str = "armed_resets";

/// A running toxiproxy server on 127.0.0.1, killed when dropped.
pub(crate) struct Toxiproxy {
    child: Child,
    api: String,
}

/// One toxic: its type, direction (`downstream`: towards the client) and attributes.
pub(crate) struct Toxic<'a> {
    pub(crate) name: &'a str,
    pub(crate) kind: &'a str,
    pub(crate) stream: &'a str,
    pub(crate) attributes: Value,
}

impl Toxic<'_> {
    /// Latency with jitter, in milliseconds.
    pub(crate) fn latency(stream: &str, ms: u64, jitter_ms: u64) -> Toxic<'_> {
        Toxic {
            name: "latency",
            kind: "latency",
            stream,
            attributes: json!({"latency": ms, "jitter": jitter_ms}),
        }
    }

    /// Cut the connection `timeout_ms` after the next data in `stream` (0: at once); a
    /// reset (RST) where [`Toxiproxy::arm_resets`] armed the proxy first, else a FIN.
    pub(crate) fn reset_peer(stream: &str, timeout_ms: u64) -> Toxic<'_> {
        Toxic {
            name: "reset_peer",
            kind: "reset_peer",
            stream,
            attributes: json!({"timeout": timeout_ms}),
        }
    }

    /// Stop all data, and close after `timeout_ms` (0: never, a black hole).
    pub(crate) fn timeout(stream: &str, timeout_ms: u64) -> Toxic<'_> {
        Toxic {
            name: "timeout",
            kind: "timeout",
            stream,
            attributes: json!({"timeout": timeout_ms}),
        }
    }

    /// Cut the data into segments of about `bytes` (± `variation`) with `delay_us` between.
    pub(crate) fn slicer(stream: &str, bytes: u64, variation: u64, delay_us: u64) -> Toxic<'_> {
        Toxic {
            name: "slicer",
            kind: "slicer",
            stream,
            attributes: json!({"average_size": bytes, "size_variation": variation,
                "delay": delay_us}),
        }
    }

    /// Close the connection once `bytes` have passed.
    pub(crate) fn limit_data(stream: &str, bytes: u64) -> Toxic<'_> {
        Toxic {
            name: "limit_data",
            kind: "limit_data",
            stream,
            attributes: json!({"bytes": bytes}),
        }
    }
}

impl Toxiproxy {
    /// Starts the server on a free loopback port and waits (bounded) until its API answers.
    pub(crate) fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = Command::new(server_binary())
            .args(["-host", "127.0.0.1", "-port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start toxiproxy-server");
        let proxy = Self {
            child,
            api: format!("http://127.0.0.1:{port}"),
        };
        let deadline = Instant::now() + PATIENCE;
        while proxy.try_request("GET", "/version", None).is_err() {
            assert!(
                Instant::now() < deadline,
                "toxiproxy did not answer on {port}"
            );
            thread::sleep(Duration::from_millis(20));
        }
        proxy
    }

    fn try_request(
        &self,
        method: &str,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Vec<u8>), String> {
        let mut client = HttpClient::new(&self.api).map_err(|e| e.to_string())?;
        let request = match method {
            "GET" => client.get(path),
            "POST" => client.post(path),
            "DELETE" => client.delete(path),
            _ => return Err(format!("no method {method}")),
        };
        let response = match body {
            Some(body) => request
                .header("content-type", "application/json")
                .send_body(body.to_string()),
            None => request.send(),
        }
        .map_err(|e| e.to_string())?;
        Ok((response.status().as_u16(), response.body().to_vec()))
    }

    /// An API call that must succeed; its JSON answer (Null for an empty one).
    fn request(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let (status, answer) = self.try_request(method, path, body).unwrap();
        assert!(
            (200..300).contains(&status),
            "{method} {path}: {status} {}",
            String::from_utf8_lossy(&answer)
        );
        serde_json::from_slice(&answer).unwrap_or(Value::Null)
    }

    /// A proxy named `name` from a free loopback port to `upstream`; returns its address.
    pub(crate) fn proxy(&self, name: &str, upstream: &str) -> String {
        let body = json!({"name": name, "listen": "127.0.0.1:0", "upstream": upstream,
            "enabled": true});
        let created = self.request("POST", "/proxies", Some(&body));
        created["listen"].as_str().unwrap().to_owned()
    }

    /// Adds a toxic to proxy `proxy` (on every connection, also those already open).
    pub(crate) fn add(&self, proxy: &str, toxic: &Toxic<'_>) {
        let body = json!({"name": toxic.name, "type": toxic.kind, "stream": toxic.stream,
            "toxicity": 1.0, "attributes": toxic.attributes});
        self.request("POST", &format!("/proxies/{proxy}/toxics"), Some(&body));
    }

    /// Makes `reset_peer` reset (RST) the connections opened through `proxy` from now on.
    /// toxiproxy sets SO_LINGER 0 on a connection only when a `reset_peer` toxic is on its
    /// proxy as it opens, and a `reset_peer` there from the start swallows the first data
    /// (the handshake) before it cuts. So this adds one that never acts (toxicity 0,
    /// upstream, named [`ARMED`]): a `reset_peer` added later to an open connection then
    /// resets it; without this, it closes it with a FIN.
    pub(crate) fn arm_resets(&self, proxy: &str) {
        let body = json!({"name": ARMED, "type": "reset_peer", "stream": "upstream",
            "toxicity": 0.0, "attributes": {"timeout": 0}});
        self.request("POST", &format!("/proxies/{proxy}/toxics"), Some(&body));
    }

    /// Removes the toxic named `toxic` from `proxy`.
    pub(crate) fn remove(&self, proxy: &str, toxic: &str) {
        self.request("DELETE", &format!("/proxies/{proxy}/toxics/{toxic}"), None);
    }

    /// The names of the toxics on `proxy`.
    pub(crate) fn toxics(&self, proxy: &str) -> Vec<String> {
        let listed = self.request("GET", &format!("/proxies/{proxy}/toxics"), None);
        listed
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }
}

impl Drop for Toxiproxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_reset_peer_toxic_cuts_the_feed_and_the_client_sees_a_reset() {
    let sim = Sim::start(&["--rate", "200", "--keys", "BTC-USD"]);
    let toxiproxy = Toxiproxy::start();
    let listen = toxiproxy.proxy("feed", &format!("127.0.0.1:{}", sim.port()));
    toxiproxy.arm_resets("feed");
    let mut ws = connect(&format!("ws://{listen}/"));
    let conn = subscribe(&mut ws, &["BTC-USD"]);
    // Through the proxy the feed is whole ...
    let mut last = next_data(&mut ws).1;
    let mut read = 1;
    while read < 20 {
        let (_, seq, _) = next_data(&mut ws);
        assert_eq!(seq, last + 1);
        last = seq;
        read += 1;
    }
    // ... until the cut.
    toxiproxy.add("feed", &Toxic::reset_peer("downstream", 0));
    let end = loop {
        match crate::exsim_support::next(&mut ws) {
            Seen::Data(_, seq, _) => {
                assert_eq!(seq, last + 1);
                last = seq;
            }
            end => break end,
        }
    };
    match end {
        Seen::Failed(Error::Io(e)) => assert_eq!(e.kind(), ErrorKind::ConnectionReset, "{e}"),
        other => panic!("expected a reset, got {other:?}"),
    }
    // The simulator saw its side go too, and everything the client read was recorded.
    sim.wait_counters("the upstream side ends", |c| {
        c["connections"][0]["open"] == false
    });
    assert!(sim.sent_on(conn)["BTC-USD"].contains(&last));
    // Without the toxic, a new connection through the same proxy works.
    toxiproxy.remove("feed", "reset_peer");
    assert_eq!(toxiproxy.toxics("feed"), [ARMED]);
    let mut ws = connect(&format!("ws://{listen}/"));
    subscribe(&mut ws, &["BTC-USD"]);
    next_data(&mut ws);
}

#[test]
fn every_toxic_the_rig_names_is_accepted_by_toxiproxy() {
    let sim = Sim::start(&["--rate", "200", "--keys", "BTC-USD", "--size", "200"]);
    let toxiproxy = Toxiproxy::start();
    let listen = toxiproxy.proxy("feed", &format!("127.0.0.1:{}", sim.port()));
    // Latency with jitter and segments of a few bytes: the feed still arrives in order.
    toxiproxy.add("feed", &Toxic::latency("downstream", 20, 5));
    toxiproxy.add("feed", &Toxic::slicer("downstream", 7, 3, 10));
    let started = Instant::now();
    let mut ws = connect(&format!("ws://{listen}/"));
    subscribe(&mut ws, &["BTC-USD"]);
    assert!(
        started.elapsed() >= Duration::from_millis(15),
        "{:?}",
        started.elapsed()
    );
    let mut last = next_data(&mut ws).1;
    for _ in 0..10 {
        let (_, seq, len) = next_data(&mut ws);
        assert_eq!((seq, len), (last + 1, 200));
        last = seq;
    }
    toxiproxy.remove("feed", "latency");
    toxiproxy.remove("feed", "slicer");
    // limit_data: the proxy closes after so many bytes, with no close frame.
    toxiproxy.add("feed", &Toxic::limit_data("downstream", 4000));
    let mut ws = connect(&format!("ws://{listen}/"));
    subscribe(&mut ws, &["BTC-USD"]);
    assert!(matches!(
        until_end(&mut ws),
        Seen::Failed(Error::UnexpectedEof)
    ));
    toxiproxy.remove("feed", "limit_data");
    // timeout 0: a black hole; nothing arrives, the connection stays open.
    let mut ws = connect(&format!("ws://{listen}/"));
    subscribe(&mut ws, &["BTC-USD"]);
    toxiproxy.add("feed", &Toxic::timeout("downstream", 0));
    // What was in flight drains; then silence.
    let mut drained = 0;
    while crate::exsim_support::next_within(&mut ws, Duration::from_millis(200)).is_some() {
        drained += 1;
        assert!(drained < 1000, "the feed did not stop");
    }
    assert!(crate::exsim_support::next_within(&mut ws, Duration::from_millis(300)).is_none());
    toxiproxy.remove("feed", "timeout");
}
