//! A running `tickwire feed` and what its tests check of its lines: the `feed` tests'
//! helpers.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::echo::{PATIENCE, tickwire};

/// The subscription every run sends.
const SUBSCRIBE: &str = r#"{"op":"subscribe","args":["BTC-USD","ETH-USD"]}"#;

/// A running `tickwire feed`, its stdout lines parsed as they come; killed when dropped.
pub(crate) struct FeedRun {
    child: Child,
    lines: mpsc::Receiver<String>,
    stderr: Option<thread::JoinHandle<String>>,
    /// Every line read so far.
    seen: Vec<Value>,
}

impl FeedRun {
    /// `tickwire --runtime RUNTIME feed URL --subscribe .. --seq /seq --seq-key /key ARGS`.
    pub(crate) fn start(runtime: &str, urls: &[&str], args: &[&str]) -> Self {
        let mut command = tickwire();
        command.args(["--runtime", runtime, "feed"]).args(urls);
        command.args([
            "--subscribe",
            SUBSCRIBE,
            "--seq",
            "/seq",
            "--seq-key",
            "/key",
        ]);
        Self::spawn(command.args(args))
    }

    /// Runs `command` (a `tickwire` command line printing JSON lines), its lines read as
    /// they come: the `rpc` tests' runs too.
    pub(crate) fn spawn(command: &mut Command) -> Self {
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut stderr = child.stderr.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        Self {
            child,
            lines,
            stderr: Some(stderr),
            seen: Vec::new(),
        }
    }

    /// Reads lines until one satisfies `done`; returns it. Every line must be JSON.
    pub(crate) fn until(&mut self, what: &str, mut done: impl FnMut(&Value) -> bool) -> Value {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!("{what}: not within {PATIENCE:?}; lines: {:?}", self.seen)
            });
            let value: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not a JSON line ({e}): {line:?}"));
            self.seen.push(value.clone());
            if done(&value) {
                return value;
            }
        }
    }

    /// Reads until `count` more data messages of each key have arrived.
    pub(crate) fn messages_per_key(&mut self, count: usize) {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        self.until("data messages on both keys", |line| {
            if line["event"] == "message"
                && let Some(key) = line["key"].as_str()
            {
                *counts.entry(key.to_owned()).or_default() += 1;
            }
            counts.len() == 2 && counts.values().all(|&n| n >= count)
        });
    }

    /// Sends SIGTERM; asserts the exit status 0 and a silent stderr, with the lines printed
    /// before it intact (each one JSON).
    pub(crate) fn terminate(mut self) -> Vec<Value> {
        let status = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let deadline = Instant::now() + PATIENCE;
        let exit = loop {
            if let Some(exit) = self.child.try_wait().unwrap() {
                break exit;
            }
            assert!(Instant::now() < deadline, "no exit after SIGTERM");
            thread::sleep(Duration::from_millis(10));
        };
        while let Ok(line) = self.lines.recv_timeout(PATIENCE) {
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
        let stderr = self.stderr.take().unwrap().join().unwrap();
        assert!(exit.success(), "{exit}; stderr: {stderr}");
        assert_eq!(stderr, "");
        std::mem::take(&mut self.seen)
    }
}

impl FeedRun {
    /// Waits (bounded) for a command that ends by itself; returns its lines, whether it
    /// exited 0, and its stderr.
    pub(crate) fn finish(mut self) -> (Vec<Value>, bool, String) {
        let deadline = Instant::now() + PATIENCE;
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            self.seen.push(serde_json::from_str(&line).unwrap());
        }
        let status = self.child.wait().unwrap();
        let stderr = self.stderr.take().unwrap().join().unwrap();
        (std::mem::take(&mut self.seen), status.success(), stderr)
    }
}

impl Drop for FeedRun {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Per key, the numbers delivered and the gaps' ranges cover every number from the first
/// delivered to the last exactly once, in order: nothing twice, nothing missing unreported.
/// Returns the numbers delivered per key.
pub(crate) fn assert_each_number_once(lines: &[Value]) -> BTreeMap<String, Vec<u64>> {
    let mut next: BTreeMap<String, u64> = BTreeMap::new();
    let mut delivered: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for line in lines {
        let Some(key) = line["key"].as_str() else {
            continue;
        };
        let (first, last) = match line["event"].as_str() {
            Some("message") => {
                let seq = line["seq"].as_u64().unwrap();
                let text: Value = serde_json::from_str(line["text"].as_str().unwrap()).unwrap();
                assert_eq!(
                    (text["key"].as_str(), text["seq"].as_u64()),
                    (Some(key), Some(seq))
                );
                assert!(
                    line["recv_ns"].is_u64() && line["wall_ns"].is_u64(),
                    "{line}"
                );
                delivered.entry(key.to_owned()).or_default().push(seq);
                (seq, seq)
            }
            Some("gap") => (line["from"].as_u64().unwrap(), line["to"].as_u64().unwrap()),
            _ => continue,
        };
        if let Some(&expected) = next.get(key) {
            assert_eq!(first, expected, "{key} after {}: {line}", expected - 1);
        }
        next.insert(key.to_owned(), last + 1);
    }
    delivered
}

pub(crate) fn events<'a>(lines: &'a [Value], event: &str) -> Vec<&'a Value> {
    lines.iter().filter(|line| line["event"] == event).collect()
}
