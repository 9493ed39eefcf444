//! The fault suite's rig: the exchange simulator, toxiproxy with one proxy per redundant
//! connection, and a feed session (either driver) through them, with its events logged; and
//! the checks every scenario ends with, comparing the log with the simulator's `/record` and
//! `/counters`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

use serde_json::Value;
use tickwire::codec::mux::Backoff;
use tickwire::feed::{
    ConnectBudget, Counters, FeedConfig, FeedError, Limited, ReconnectPolicy, ReconnectReason,
    SendQuota,
};

use crate::echo::PATIENCE;
use crate::exsim_support::Sim;
use crate::feed_faults_support::{
    Command, Driver, Got, Keepalive, RunningFeed, What, sequence, wall_now_ns,
};
use crate::toxiproxy::Toxiproxy;

/// The keys the simulator publishes, 200 messages a second each.
pub(crate) const KEYS: [&str; 2] = ["BTC-USD", "ETH-USD"];
const SUBSCRIBE: &str = r#"{"op":"subscribe","args":["BTC-USD","ETH-USD"]}"#;
/// The data-only stale timer.
pub(crate) const STALE: Duration = Duration::from_millis(300);
/// The back-off's bounds: full jitter between them, doubling per failure in a row.
pub(crate) const BACKOFF: Backoff = Backoff {
    initial: Duration::from_millis(20),
    max: Duration::from_millis(200),
};
/// The connect budget: attempts per window, shared by every slot of the session.
pub(crate) const BUDGET: (usize, Duration) = (3, Duration::from_secs(1));
/// Each connection's send quota: units per window.
pub(crate) const QUOTA: (u32, Duration) = (10, Duration::from_secs(1));
/// From a connect action to the open connection or its failure.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);
/// What a timer may be late by on a loaded 2-core machine, and a handshake through a proxy
/// may take: the bound's allowance, not a speed claim.
pub(crate) const SLACK: Duration = Duration::from_millis(300);
/// The simulator stamps a message when it reads it, the session when it sends: a delay on
/// the way that is longer for an earlier one can bunch them by this much, so the
/// simulator's message windows are this much shorter than the quota's. (Attempts are
/// checked over the budget's whole window: the budget keeps a margin for that skew.)
const MEASURED_LATER_BY: Duration = Duration::from_millis(25);
/// How late the test may see an event after the session made it.
const EVENT_LAG: Duration = Duration::from_millis(5);
/// The default WebSocket keepalive: never due while data flows.
pub(crate) const QUIET_KEEPALIVE: Keepalive = Keepalive {
    ping_every: Duration::from_secs(1),
    pong_within: Duration::from_secs(1),
};

/// Which lost numbers a scenario accepts (each must still be in exactly one gap event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Losses {
    /// No gap event at all.
    None,
    /// Gap events exactly where the simulator skipped numbers (`/gap`).
    Skipped,
    /// The fault loses numbers: whatever was lost is reported.
    Reported,
}

/// A running rig: the simulator, toxiproxy, the proxies (`feed0`, `feed1`, ...; slot `i`
/// connects through `feed{i}`), and the feed with everything it handed out so far.
pub(crate) struct Rig {
    pub(crate) sim: Sim,
    pub(crate) toxiproxy: Toxiproxy,
    pub(crate) proxies: Vec<String>,
    feed: RunningFeed,
    pub(crate) log: Vec<Got>,
    /// The simulator's number of each slot's current connection (from its acknowledgement).
    sim_conns: BTreeMap<u8, u64>,
    /// Slots whose current connection is subscribed.
    live: BTreeSet<u8>,
    /// The redundant set's slots (rotation swaps one for the spare).
    pub(crate) active: Vec<u8>,
    wall_start: u64,
}

impl Rig {
    /// The simulator (with `sim_args` added), `proxies` proxies to it (`before` sets them
    /// up: toxics, or [`Toxiproxy::arm_resets`], which makes every close through the proxy a
    /// reset, the simulator's FIN too), and a feed of `proxies` redundant connections configured by
    /// `config` from the suite's defaults; returns once every connection is subscribed.
    pub(crate) fn start(
        driver: Driver,
        proxies: usize,
        sim_args: &[&str],
        config: fn(FeedConfig) -> FeedConfig,
        keepalive: Keepalive,
        before: fn(&Toxiproxy, &[String]),
    ) -> Self {
        let keys = KEYS.join(",");
        let mut args = vec!["--rate", "200", "--keys", &keys];
        args.extend(sim_args);
        let sim = Sim::start(&args);
        let toxiproxy = Toxiproxy::start();
        let upstream = format!("127.0.0.1:{}", sim.port());
        let names: Vec<String> = (0..proxies).map(|i| format!("feed{i}")).collect();
        let urls: Vec<String> = names
            .iter()
            .map(|name| {
                let listen = toxiproxy.proxy(name, &upstream);
                format!("ws://{listen}/")
            })
            .collect();
        before(&toxiproxy, &names);
        let mut rig = Self {
            sim,
            toxiproxy,
            proxies: names,
            feed: RunningFeed::start(driver, config(suite_config(urls)), keepalive),
            log: Vec::new(),
            sim_conns: BTreeMap::new(),
            live: BTreeSet::new(),
            active: (0..proxies as u8).collect(),
            wall_start: wall_now_ns(),
        };
        rig.wait_live();
        rig
    }

    /// Takes events until `done` holds of one, which it returns; panics, naming `what`, if
    /// none does within `patience`.
    pub(crate) fn until(
        &mut self,
        what: &str,
        patience: Duration,
        mut done: impl FnMut(&Got) -> bool,
    ) -> Got {
        let deadline = Instant::now() + patience;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.feed.events.recv_timeout(left) {
                Ok(got) => {
                    self.note(&got);
                    self.log.push(got.clone());
                    if done(&got) {
                        return got;
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    let tail = &self.log[self.log.len().saturating_sub(4)..];
                    let events = self.log.iter().map(|got| &got.what);
                    let events: Vec<&What> = events
                        .filter(|what| !matches!(what, What::Message { seq: Some(_), .. }))
                        .collect();
                    let events = &events[events.len().saturating_sub(24)..];
                    let counters = self.sim.control("/counters");
                    panic!(
                        "{what}: not within {patience:?}; the last events but data: \
                         {events:#?}; the last of all: {tail:#?}; the simulator's \
                         counters: {counters:#}"
                    )
                }
                Err(RecvTimeoutError::Disconnected) => panic!("{what}: the feed's thread ended"),
            }
        }
    }

    /// Takes events for `span` (a wait for traffic, nothing asserted of its length).
    pub(crate) fn run_for(&mut self, span: Duration) {
        let until = Instant::now() + span;
        let deadline = until + PATIENCE;
        while Instant::now() < until {
            self.until("events keep coming", deadline - Instant::now(), |got| {
                got.at >= until
            });
        }
    }

    /// Waits until every slot of the redundant set is subscribed, then for data after that.
    pub(crate) fn wait_live(&mut self) {
        while !self.active.iter().all(|slot| self.live.contains(slot)) {
            self.until("every connection subscribed", PATIENCE, |got| {
                matches!(got.what, What::Message { seq: None, .. })
            });
        }
        self.until("data after the (re)subscription", PATIENCE, |got| {
            matches!(got.what, What::Message { seq: Some(_), .. })
        });
    }

    /// The simulator's number of `slot`'s current connection.
    pub(crate) fn sim_conn(&self, slot: u8) -> u64 {
        self.sim_conns[&slot]
    }

    pub(crate) fn command(&self, command: Command) {
        self.feed.command(command);
    }

    /// The last event before the one at `index` that `matches`.
    pub(crate) fn last_before(&self, index: usize, matches: impl Fn(&What) -> bool) -> &Got {
        self.log[..index]
            .iter()
            .rev()
            .find(|got| matches(&got.what))
            .expect("an earlier event")
    }

    /// Runs on a little, closes the feed and checks what every scenario promises; returns
    /// the session's figures at the close.
    pub(crate) fn finish(mut self, losses: Losses) -> Counters {
        self.run_for(Duration::from_millis(300));
        self.feed.command(Command::Close);
        let counters = match self.until("the figures", PATIENCE, |got| {
            matches!(got.what, What::Counters(_))
        }) {
            Got {
                what: What::Counters(counters),
                ..
            } => *counters,
            _ => unreachable!(),
        };
        self.until("the end", PATIENCE, |got| {
            matches!(got.what, What::Ended(_))
        });
        let ended: Vec<&What> = self
            .log
            .iter()
            .map(|got| &got.what)
            .filter(|what| matches!(what, What::Ended(_)))
            .collect();
        assert!(
            matches!(ended[..], [What::Ended(FeedError::Closed)]),
            "{ended:?}"
        );
        let record = self.sim.control("/record");
        check_sequences(&self.log, &record, losses);
        check_backoff(&self.log);
        check_stamps(&self.log, self.wall_start);
        check_limits(&self.sim);
        counters
    }

    fn note(&mut self, got: &Got) {
        match &got.what {
            What::Connected { conn } | What::Closed { conn, .. } => {
                self.live.remove(conn);
            }
            What::Message {
                conn,
                seq: None,
                text,
                ..
            } => {
                let ack: Value = serde_json::from_str(text).unwrap_or_default();
                if ack["event"] == "subscribed" {
                    self.sim_conns
                        .insert(*conn, ack["conn"].as_u64().expect("the ack's conn"));
                    self.live.insert(*conn);
                }
            }
            What::Rotated { from, to } => {
                for slot in &mut self.active {
                    if slot == from {
                        *slot = *to;
                    }
                }
            }
            _ => {}
        }
    }
}

/// The suite's session: one slot per endpoint, subscribed to [`KEYS`], sequenced by the
/// simulator's numbers, with the short timers and the limits above.
fn suite_config(endpoints: Vec<String>) -> FeedConfig {
    let connections = endpoints.len();
    let mut config = FeedConfig::new(endpoints[0].clone());
    for endpoint in &endpoints[1..] {
        config = config.with_endpoint(endpoint.clone());
    }
    config
        .with_connections(connections)
        .with_subscription(SUBSCRIBE)
        .with_sequence(|message| sequence(message).map(|(key, seq)| (key.as_bytes(), seq)))
        .with_stale_after(Some(STALE))
        .with_reconnect(
            ReconnectPolicy::new()
                .with_backoff(BACKOFF)
                .with_factor(2.0)
                .with_stable_after(Duration::from_secs(2)),
        )
        .with_connect_budget(Some(Arc::new(ConnectBudget::new(BUDGET.0, BUDGET.1))))
        .with_connect_timeout(CONNECT_TIMEOUT)
        .with_send_quota(Some(SendQuota::per_window(QUOTA.0, QUOTA.1)))
}

/// Per key: every number delivered once and in increasing order; from the first delivered
/// to the last, each number either delivered or in exactly one gap event; nothing delivered
/// that the simulator did not send, and the first number sent delivered first.
fn check_sequences(log: &[Got], record: &Value, losses: Losses) {
    let mut delivered: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let mut gaps: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for got in log {
        match &got.what {
            What::Message {
                seq: Some((key, seq)),
                ..
            } => delivered.entry(key.clone()).or_default().push(*seq),
            What::Gap { key, from, to } => gaps.entry(key.clone()).or_default().push((*from, *to)),
            _ => {}
        }
    }
    let mut sent: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for entry in record["sent"].as_array().unwrap() {
        let key = entry["key"].as_str().unwrap().to_owned();
        sent.entry(key)
            .or_default()
            .insert(entry["seq"].as_u64().unwrap());
    }
    let mut skipped: BTreeMap<String, Vec<(u64, u64)>> = BTreeMap::new();
    for entry in record["skipped"].as_array().unwrap() {
        let range = (
            entry["from"].as_u64().unwrap(),
            entry["to"].as_u64().unwrap(),
        );
        let key = entry["key"].as_str().unwrap().to_owned();
        skipped.entry(key).or_default().push(range);
    }
    match losses {
        Losses::None => assert!(gaps.is_empty(), "gaps where none may be: {gaps:?}"),
        Losses::Skipped => assert_eq!(gaps, skipped, "the gaps are the simulator's skips"),
        Losses::Reported => {}
    }
    for key in KEYS {
        let numbers = delivered
            .get(key)
            .unwrap_or_else(|| panic!("nothing delivered of {key}"));
        for pair in numbers.windows(2) {
            assert!(pair[0] < pair[1], "{key}: {} then {}", pair[0], pair[1]);
        }
        let (first, last) = (numbers[0], numbers[numbers.len() - 1]);
        let mut cover: BTreeMap<u64, u32> = numbers.iter().map(|&n| (n, 1)).collect();
        for &(from, to) in gaps.get(key).into_iter().flatten() {
            assert!(from <= to, "{key}: gap {from}..={to}");
            for n in from..=to {
                *cover.entry(n).or_default() += 1;
            }
        }
        for n in first..=last {
            let times = cover.get(&n).copied().unwrap_or(0);
            assert_eq!(times, 1, "{key} {n}: delivered or in a gap {times} times");
        }
        assert_eq!(cover.len() as u64, last - first + 1, "{key}: gaps outside");
        let sent = &sent[key];
        assert_eq!(sent.first(), Some(&first), "{key}: the first number sent");
        for n in numbers {
            assert!(sent.contains(n), "{key} {n} delivered but never sent");
        }
    }
}

/// Every reconnect waited its drawn delay, a delay within the back-off's bounds; the attempt
/// that followed (open, or failed) came no later than the delay, any connect-budget wait,
/// the connect timeout and [`SLACK`] allow.
fn check_backoff(log: &[Got]) {
    for (index, got) in log.iter().enumerate() {
        let What::Reconnecting { conn, delay, .. } = got.what else {
            continue;
        };
        assert!(
            (BACKOFF.initial..=BACKOFF.max).contains(&delay),
            "slot {conn}: a delay of {delay:?}"
        );
        let mut due = got.at + delay;
        for later in &log[index + 1..] {
            match later.what {
                What::RateLimited {
                    conn: c,
                    limited: Limited::Connect,
                    wait,
                } if c == conn => due = due.max(later.at + wait),
                What::Connected { conn: c } | What::Reconnecting { conn: c, .. } if c == conn => {
                    let waited = later.at - got.at;
                    assert!(
                        waited + EVENT_LAG >= delay,
                        "slot {conn} reconnected after {waited:?}, its delay {delay:?}"
                    );
                    let latest = due + CONNECT_TIMEOUT + SLACK;
                    assert!(
                        later.at <= latest,
                        "slot {conn}: {waited:?} after a delay of {delay:?}"
                    );
                    break;
                }
                What::Ended(_) => break,
                _ => {}
            }
        }
    }
}

/// Every delivered message carries the monotonic and the wall-clock time of its read.
fn check_stamps(log: &[Got], wall_start: u64) {
    let wall_end = wall_now_ns();
    for got in log {
        if let What::Message {
            recv_ns, wall_ns, ..
        } = got.what
        {
            assert!(recv_ns > 0, "{got:?}");
            assert!((wall_start..=wall_end).contains(&wall_ns), "{got:?}");
        }
    }
}

/// The simulator never saw more connect attempts than the budget in any window of the
/// budget's, nor more messages on a connection than its quota in any window (shortened by
/// [`MEASURED_LATER_BY`]).
fn check_limits(sim: &Sim) {
    let budget = sim.control(&format!("/counters?window_ms={}", BUDGET.1.as_millis()));
    let attempts = budget["max_attempts_in_window"].as_u64().unwrap();
    let window = QUOTA.1 - MEASURED_LATER_BY;
    let counters = sim.control(&format!("/counters?window_ms={}", window.as_millis()));
    assert!(
        attempts <= BUDGET.0 as u64,
        "{attempts} attempts: {counters}"
    );
    for conn in counters["connections"].as_array().unwrap() {
        let received = conn["max_received_in_window"].as_u64().unwrap();
        assert!(
            received <= u64::from(QUOTA.0),
            "{received} messages: {conn}"
        );
    }
}

/// The reason a connection was replaced, as its `Closed` event says.
pub(crate) fn closed_reason(got: &Got) -> Option<(u8, ReconnectReason)> {
    match got.what {
        What::Closed { conn, reason } => Some((conn, reason)),
        _ => None,
    }
}
