//! Models of a `feed::FeedSession` driven from outside, as a driver would, with a virtual
//! clock, and the oracle the session must satisfy.
//!
//! - [`merge`]: N connections, each sending the numbers of a few keys in increasing order
//!   with its own random misses and repeats, interleaved at random, all staying up. After
//!   everything was sent and the session closed: per key, every number from the lowest any
//!   connection sent to the highest delivered was delivered exactly once, in increasing
//!   order, or lies in exactly one gap; a number lies in a gap only if no connection sent it.
//! - [`run_ops`]: arbitrary operation sequences (two bytes an operation) over the whole
//!   session: connects that open or fail (with handshake statuses), closes and resets,
//!   messages with arbitrary keys and numbers, acknowledgements, heartbeat replies, server
//!   pings, time passing, subscriptions changed, rotations, sends against the quota, the end.
//!   Oracle: never a panic; per key numbers delivered at most once and in increasing order,
//!   never one inside a gap, gaps disjoint; back-off delays within their bounds; the connect
//!   budget and the send quota never exceeded; the hold within its bound; nothing happens
//!   after the end.
//!
//! Shared by tests/feed_merge.rs (proptest) and the fuzz target fuzz/fuzz_targets/feed_session.rs.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickwire_codec::feed::{
    Action, ConnId, ConnectBudget, Disconnect, Event, FeedConfig, FeedSession, Heartbeat,
    ReconnectPolicy, RecvStamp, SendError, SendQuota,
};
use tickwire_codec::mux::Backoff;

/// Messages are `KEY NUMBER`; anything else is unsequenced.
pub(crate) fn sequence(msg: &[u8]) -> Option<(&[u8], u64)> {
    let space = msg.iter().position(|b| *b == b' ')?;
    let number = std::str::from_utf8(&msg[space + 1..]).ok()?.parse().ok()?;
    Some((&msg[..space], number))
}

/// What the user saw, per key.
#[derive(Default, Debug)]
pub(crate) struct Ledger {
    delivered: BTreeMap<Vec<u8>, Vec<u64>>,
    gaps: BTreeMap<Vec<u8>, Vec<(u64, u64)>>,
}

impl Ledger {
    /// Takes every queued event; `current` is the payload last given to `on_message`.
    fn drain(&mut self, session: &mut FeedSession, current: &[u8]) -> Vec<String> {
        let mut others = Vec::new();
        let mut pending = Vec::new();
        while let Some(event) = session.poll_event(current) {
            match event {
                Event::Message(m) => {
                    if let (Some(_), Some((key, seq))) = (m.key, sequence(m.payload)) {
                        assert_eq!(m.seq, Some(seq), "the number is the message's");
                        pending.push((key.to_vec(), Some(seq), None));
                    }
                }
                Event::Gap { key, from, to } => {
                    assert!(from <= to, "an empty gap {from}..={to}");
                    pending.push((key.0.to_le_bytes().to_vec(), None, Some((from, to))));
                }
                other => others.push(format!("{other:?}")),
            }
        }
        for (key, seq, gap) in pending {
            match (seq, gap) {
                (Some(seq), _) => self.deliver(key, seq),
                (None, Some((from, to))) => {
                    // Gap keys arrive as ids: resolve them to bytes.
                    let id = u32::from_le_bytes(key.try_into().unwrap());
                    let bytes = session
                        .key_bytes(tickwire_codec::feed::KeyId(id))
                        .expect("a gap names an interned key")
                        .to_vec();
                    self.gap(bytes, from, to);
                }
                _ => unreachable!(),
            }
        }
        others
    }

    fn deliver(&mut self, key: Vec<u8>, seq: u64) {
        let gaps = self.gaps.get(&key).map_or(&[][..], |g| &g[..]);
        assert!(
            !gaps.iter().any(|(from, to)| (*from..=*to).contains(&seq)),
            "{seq} delivered inside a gap"
        );
        let delivered = self.delivered.entry(key).or_default();
        if let Some(last) = delivered.last() {
            assert!(seq > *last, "{seq} delivered after {last}");
        }
        delivered.push(seq);
    }

    fn gap(&mut self, key: Vec<u8>, from: u64, to: u64) {
        let last = self.delivered.get(&key).and_then(|d| d.last().copied());
        assert!(
            last.is_some_and(|last| from == last + 1),
            "gap {from}..={to} does not follow the last delivered {last:?}"
        );
        let gaps = self.gaps.entry(key).or_default();
        if let Some((_, previous_to)) = gaps.last() {
            assert!(from > *previous_to, "gaps overlap");
        }
        gaps.push((from, to));
    }
}

/// One connection's planned stream in [`merge`]: `(key, number)` in send order.
pub(crate) type Stream = Vec<(u8, u64)>;

/// Runs the merge scenario: `streams[c]` is what connection `c` sends, `order` picks which
/// connection sends next (index modulo the connections that still have something).
pub(crate) fn merge(streams: &[Stream], order: &[u8]) {
    let config = FeedConfig::new("wss://feed")
        .with_connections(streams.len())
        .with_sequence(sequence)
        .with_max_held(4096)
        .with_max_held_bytes(1 << 20);
    let now = Instant::now();
    let mut session = FeedSession::new(config, 1, now).expect("config");
    while let Some(action) = session.poll_action(now) {
        if let Action::Connect { conn, .. } = action {
            session.on_open(conn, now);
        }
    }
    let mut ledger = Ledger::default();
    ledger.drain(&mut session, b"");
    let mut positions = vec![0; streams.len()];
    let mut order = order.iter().copied().cycle();
    loop {
        let open: Vec<usize> = (0..streams.len())
            .filter(|c| positions[*c] < streams[*c].len())
            .collect();
        if open.is_empty() {
            break;
        }
        let c = open[usize::from(order.next().unwrap_or(0)) % open.len()];
        let (key, seq) = streams[c][positions[c]];
        positions[c] += 1;
        let text = format!("{} {seq}", char::from(b'a' + key));
        session
            .on_message(ConnId(c as u8), text.as_bytes(), RecvStamp::default(), now)
            .expect("drained");
        ledger.drain(&mut session, text.as_bytes());
    }
    session.close();
    ledger.drain(&mut session, b"");
    check_merge(streams, &ledger);
}

fn check_merge(streams: &[Stream], ledger: &Ledger) {
    let mut sent: BTreeMap<Vec<u8>, BTreeSet<u64>> = BTreeMap::new();
    for (key, seq) in streams.iter().flatten() {
        sent.entry(vec![b'a' + key]).or_default().insert(*seq);
    }
    for (key, numbers) in &sent {
        let delivered = ledger.delivered.get(key).cloned().unwrap_or_default();
        let gaps = ledger.gaps.get(key).cloned().unwrap_or_default();
        let lowest = *numbers.first().unwrap();
        let highest = *numbers.last().unwrap();
        assert_eq!(
            delivered.first(),
            Some(&lowest),
            "the lowest number sent comes first"
        );
        assert_eq!(
            delivered.last(),
            Some(&highest),
            "the highest number sent comes last"
        );
        let in_gaps: Vec<u64> = gaps.iter().flat_map(|(from, to)| *from..=*to).collect();
        for x in lowest..=highest {
            let times = delivered.iter().filter(|d| **d == x).count();
            let gapped = in_gaps.iter().filter(|g| **g == x).count();
            assert_eq!(
                times + gapped,
                1,
                "{x}: delivered {times}, in {gapped} gaps"
            );
            assert_eq!(
                times == 1,
                numbers.contains(&x),
                "{x}: delivered iff some connection sent it"
            );
        }
    }
}

/// Send quota of the operation model: 4 per second, checked against a sliding window.
const QUOTA: u32 = 4;
/// Connect budget of the operation model: 8 per 10 s.
const BUDGET: usize = 8;
const BUDGET_WINDOW: Duration = Duration::from_secs(10);
const MAX_HELD: usize = 8;

/// Runs arbitrary operations (see the module docs) and checks the oracle after each.
/// Returns how often each kind of event happened (`Message` for deliveries), for a test that
/// the encoding reaches them all.
pub(crate) fn run_ops(ops: &[u8]) -> BTreeMap<String, usize> {
    let connections = 1 + usize::from(ops.first().copied().unwrap_or(0) % 3);
    let mut model = OpsModel::new(connections, ops.len() as u64);
    model.step();
    for pair in ops.chunks(2) {
        model.apply(pair[0], pair.get(1).copied().unwrap_or(0));
        model.step();
    }
    let mut reached = model.reached;
    let delivered = model.ledger.delivered.values().map(Vec::len).sum();
    reached.insert("Message".into(), delivered);
    reached
}

struct OpsModel {
    session: FeedSession,
    now: Instant,
    backoff: Backoff,
    ledger: Ledger,
    connects: Vec<Instant>,
    /// Per slot, the sends of its current connection.
    sends: Vec<Vec<Instant>>,
    ended: bool,
    reached: BTreeMap<String, usize>,
}

impl OpsModel {
    fn new(connections: usize, seed: u64) -> Self {
        let backoff = Backoff {
            initial: Duration::from_millis(50),
            max: Duration::from_secs(2),
        };
        let config = FeedConfig::new("wss://a")
            .with_endpoint("wss://b")
            .with_connections(connections)
            .with_sequence(sequence)
            .with_subscription("s1")
            .with_login(Some("login".into()))
            .with_ack(|m| m == b"ack")
            .with_ack_timeout(Duration::from_secs(2))
            .with_stale_after(Some(Duration::from_secs(3)))
            .with_heartbeat(Some(Heartbeat {
                text: "ping".into(),
                after_quiet: Duration::from_secs(1),
                reply: Arc::new(|m: &[u8]| m == b"pong"),
                deadline: Duration::from_millis(500),
            }))
            .with_answer_ping(|m| (m == b"sping").then(|| "spong".to_string()))
            .with_reconnect(
                ReconnectPolicy::new()
                    .with_backoff(backoff)
                    .with_factor(3.0)
                    .with_stable_after(Duration::from_secs(2))
                    .with_max_attempts(Some(12)),
            )
            .with_connect_budget(Some(Arc::new(ConnectBudget::new(BUDGET, BUDGET_WINDOW))))
            .with_send_quota(Some(SendQuota::per_window(QUOTA, Duration::from_secs(1))))
            .with_max_keys(3)
            .with_max_held(MAX_HELD)
            .with_max_held_bytes(64)
            .with_merge_wait(Duration::from_millis(30))
            .with_resync_on_gap(true)
            .with_rotate_after(Some(Duration::from_secs(5)));
        let now = Instant::now();
        Self {
            session: FeedSession::new(config, seed, now).expect("config"),
            now,
            backoff,
            ledger: Ledger::default(),
            connects: Vec::new(),
            sends: vec![Vec::new(); 8],
            ended: false,
            reached: BTreeMap::new(),
        }
    }

    fn apply(&mut self, op: u8, arg: u8) {
        let (now, conn) = (self.now, ConnId(arg % 4));
        let session = &mut self.session;
        match op % 16 {
            0 | 1 => session.on_open(conn, now),
            2 => {
                let status = if arg & 0x80 == 0 { 429 } else { 503 };
                session.on_connect_failed(conn, Disconnect::HandshakeStatus(status), now);
            }
            3 => {
                let why = [
                    Disconnect::Reset,
                    Disconnect::Eof,
                    Disconnect::Closed(Some(1006)),
                ];
                session.on_closed(conn, why[usize::from(arg >> 6) % 3], now);
            }
            4..=8 => {
                let text = format!("{} {}", char::from(b'a' + (arg >> 6)), (arg >> 2) & 0xf);
                self.message(conn, text.as_bytes());
            }
            9 => self.message(
                conn,
                [&b"ack"[..], b"pong", b"sping", b"hello"][usize::from(arg >> 6)],
            ),
            10 | 11 => {
                self.now += Duration::from_millis(u64::from(arg) * 8);
                self.session.handle_timeout(self.now);
            }
            12 => {
                if let Some(at) = session.poll_timeout() {
                    self.now = now.max(at);
                    self.session.handle_timeout(self.now);
                }
            }
            13 => match arg >> 6 {
                0 => session.subscribe(format!("t{}", arg & 7), now),
                1 => {
                    session.unsubscribe(&format!("t{}", arg & 7));
                }
                2 => {
                    session.rotate(conn, now);
                }
                _ => session.on_control_sent(conn, now),
            },
            14 => {
                let weight = u32::from(arg >> 6) + 1;
                match session.try_send(conn, weight, now) {
                    Ok(()) => {
                        let sends = &mut self.sends[conn.index()];
                        sends.extend(std::iter::repeat_n(now, weight as usize));
                    }
                    Err(SendError::RateLimited { retry_after }) => {
                        assert!(retry_after > Duration::ZERO);
                        assert!(retry_after <= Duration::from_secs(1));
                    }
                    Err(_) => {}
                }
            }
            _ => {
                if arg == 0xff {
                    session.close();
                }
            }
        }
    }

    fn message(&mut self, conn: ConnId, payload: &[u8]) {
        let stamp = RecvStamp::default();
        self.session
            .on_message(conn, payload, stamp, self.now)
            .expect("drained after every message");
        for event in self.ledger.drain(&mut self.session, payload) {
            self.check(&event);
        }
    }

    fn check(&mut self, event: &str) {
        check_event(event, &self.backoff, &mut self.ended);
        let kind = event.split([' ', '(']).next().unwrap_or_default();
        *self.reached.entry(kind.to_string()).or_default() += 1;
    }

    /// Runs the actions, drains the events, checks the quotas and the hold.
    fn step(&mut self) {
        let now = self.now;
        while let Some(action) = self.session.poll_action(now) {
            assert!(!self.ended, "an action after the end: {action:?}");
            match action {
                Action::Connect { conn, .. } => {
                    self.connects.push(now);
                    let in_window = self
                        .connects
                        .iter()
                        .filter(|at| now < **at + BUDGET_WINDOW)
                        .count();
                    assert!(in_window <= BUDGET, "{in_window} connects in one window");
                    self.sends[conn.index()].clear();
                }
                Action::Send { conn, .. } => self.sends[conn.index()].push(now),
                _ => {}
            }
        }
        for event in self.ledger.drain(&mut self.session, b"") {
            self.check(&event);
        }
        assert!(self.session.counters(now).held <= MAX_HELD);
        for sends in &self.sends {
            for (i, at) in sends.iter().enumerate() {
                let in_window = sends[i..]
                    .iter()
                    .take_while(|t| **t <= *at + Duration::from_secs(1))
                    .count();
                assert!(in_window as u32 <= QUOTA, "{in_window} sends in one second");
            }
        }
    }
}

fn check_event(event: &str, backoff: &Backoff, ended: &mut bool) {
    assert!(!*ended, "an event after the end: {event}");
    if event.starts_with("Ended") {
        *ended = true;
    }
    if let Some(rest) = event.strip_prefix("Reconnecting") {
        let delay = rest
            .rsplit("delay: ")
            .next()
            .unwrap()
            .trim_end_matches(" }");
        let ok =
            parse_debug_duration(delay).is_some_and(|d| d >= backoff.initial && d <= backoff.max);
        assert!(ok, "a delay outside the back-off: {event}");
    }
}

/// Parses `Duration`'s `Debug` output (`50ms`, `1.2s`, `731.5µs`).
fn parse_debug_duration(text: &str) -> Option<Duration> {
    let (number, unit) = text.split_at(text.find(|c: char| c.is_alphabetic() || c == 'µ')?);
    let value: f64 = number.parse().ok()?;
    let scale = match unit {
        "s" => 1.0,
        "ms" => 1e-3,
        "µs" => 1e-6,
        "ns" => 1e-9,
        _ => return None,
    };
    Some(Duration::from_secs_f64(value * scale))
}
