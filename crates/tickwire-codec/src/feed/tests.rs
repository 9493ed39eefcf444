//! The session's decisions, each with a virtual clock and a scripted driver.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::mux::Backoff;

pub(super) const MS: Duration = Duration::from_millis(1);

/// An event with its payload copied out, to compare whole sequences.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Seen {
    Message {
        conn: u8,
        seq: Option<u64>,
        text: String,
    },
    Gap {
        key: String,
        from: u64,
        to: u64,
    },
    Other(String),
}

pub(super) struct Driver {
    pub(super) session: FeedSession,
    pub(super) now: Instant,
    pub(super) start: Instant,
    pub(super) seen: Vec<Seen>,
    pub(super) events: Vec<String>,
    pub(super) sent: Vec<(u8, String)>,
    pub(super) closed: Vec<(u8, Option<u16>)>,
    pub(super) connects: Vec<(u8, usize, u32, Duration)>,
    /// Whether the actions run after each input answer connects with `on_open`.
    pub(super) auto_open: bool,
}

impl Driver {
    pub(super) fn new(config: FeedConfig) -> Self {
        let start = Instant::now();
        let session = FeedSession::new(config, 7, start).expect("a valid config");
        Self {
            session,
            now: start,
            start,
            seen: Vec::new(),
            events: Vec::new(),
            sent: Vec::new(),
            closed: Vec::new(),
            connects: Vec::new(),
            auto_open: true,
        }
    }

    pub(super) fn elapsed(&self) -> Duration {
        self.now - self.start
    }

    /// Runs the actions; connects are answered with `on_open` when `open` says so.
    pub(super) fn act(&mut self, mut open: impl FnMut(u8) -> bool) {
        while let Some(action) = self.session.poll_action(self.now) {
            match action {
                Action::Connect {
                    conn,
                    endpoint,
                    attempt,
                } => {
                    self.connects
                        .push((conn.0, endpoint, attempt, self.elapsed()));
                    if open(conn.0) {
                        self.session.on_open(conn, self.now);
                    }
                }
                Action::Send { conn, text } => self.sent.push((conn.0, text)),
                Action::Close { conn, code } => self.closed.push((conn.0, code)),
            }
        }
        self.drain(b"");
    }

    pub(super) fn open_all(&mut self) {
        self.act(|_| true);
    }

    pub(super) fn drain(&mut self, current: &[u8]) {
        while let Some(event) = self.session.poll_event(current) {
            let seen = match &event {
                Event::Message(m) => Seen::Message {
                    conn: m.conn.0,
                    seq: m.seq,
                    text: String::from_utf8(m.payload.to_vec()).unwrap(),
                },
                Event::Gap { key, from, to } => Seen::Gap {
                    key: String::from_utf8(self.session.key_bytes(*key).unwrap().to_vec()).unwrap(),
                    from: *from,
                    to: *to,
                },
                other => Seen::Other(format!("{other:?}")),
            };
            if let Seen::Other(text) = &seen {
                self.events.push(text.clone());
            }
            self.seen.push(seen);
        }
    }

    pub(super) fn message(&mut self, conn: u8, text: &str) -> Disposition {
        let stamp = RecvStamp {
            recv_ns: 11,
            wall_ns: 22,
            kernel_ns: Some(33),
        };
        let disposition = self
            .session
            .on_message(ConnId(conn), text.as_bytes(), stamp, self.now)
            .expect("drained");
        self.drain(text.as_bytes());
        self.act_auto();
        disposition
    }

    pub(super) fn advance(&mut self, by: Duration) {
        self.now += by;
        self.session.handle_timeout(self.now);
        self.drain(b"");
        self.act_auto();
    }

    pub(super) fn act_auto(&mut self) {
        let open = self.auto_open;
        self.act(|_| open);
    }

    /// Jumps to the session's next timer and runs it.
    pub(super) fn next_timer(&mut self) -> Duration {
        let at = self.session.poll_timeout().expect("a timer is armed");
        let by = at.saturating_duration_since(self.now);
        self.advance(by);
        by
    }

    pub(super) fn delivered(&self) -> Vec<(u8, u64)> {
        self.seen
            .iter()
            .filter_map(|seen| match seen {
                Seen::Message { conn, seq, .. } => Some((*conn, seq.unwrap())),
                _ => None,
            })
            .collect()
    }

    pub(super) fn gaps(&self) -> Vec<(u64, u64)> {
        self.seen
            .iter()
            .filter_map(|seen| match seen {
                Seen::Gap { from, to, .. } => Some((*from, *to)),
                _ => None,
            })
            .collect()
    }

    pub(super) fn take_events(&mut self) -> Vec<String> {
        std::mem::take(&mut self.events)
    }
}

pub(super) fn sequence(msg: &[u8]) -> Option<(&[u8], u64)> {
    let text = std::str::from_utf8(msg).ok()?;
    let (key, seq) = text.split_once(' ')?;
    Some((key.as_bytes(), seq.parse().ok()?))
}

pub(super) fn sequenced() -> FeedConfig {
    FeedConfig::new("wss://a").with_sequence(sequence)
}

pub(super) fn policy(initial_ms: u64, max_ms: u64) -> ReconnectPolicy {
    ReconnectPolicy::new().with_backoff(Backoff {
        initial: Duration::from_millis(initial_ms),
        max: Duration::from_millis(max_ms),
    })
}

// --- reconnect -------------------------------------------------------------------------

#[test]
fn reconnect_delays_grow_with_jitter_within_the_bounds_and_carry_their_reason() {
    let config = sequenced().with_reconnect(policy(100, 2_000).with_factor(3.0));
    let mut d = Driver::new(config);
    d.auto_open = false;
    d.act(|_| false);
    let statuses = [429, 503, 502, 429, 500, 503, 429, 503];
    let mut delays = Vec::new();
    for (n, status) in statuses.into_iter().enumerate() {
        d.session
            .on_connect_failed(ConnId(0), Disconnect::HandshakeStatus(status), d.now);
        d.drain(b"");
        let events = d.take_events();
        let reason = format!("Disconnect(HandshakeStatus({status}))");
        assert!(
            events[0].starts_with("Reconnecting") && events[0].contains(&reason),
            "{events:?}"
        );
        let waited = d.next_timer();
        d.act(|_| false);
        let ceiling = (100.0 * 3f64.powi(n as i32)).min(2_000.0);
        assert!(waited >= 100 * MS && waited <= Duration::from_secs_f64(ceiling / 1e3));
        assert_eq!(d.connects.last().unwrap().2, n as u32 + 2, "attempt number");
        delays.push(waited);
    }
    // Full jitter: not one fixed schedule.
    assert!(delays.windows(2).any(|w| w[0] > w[1]), "{delays:?}");
}

#[test]
fn the_same_seed_gives_the_same_delays() {
    let run = || {
        let mut d = Driver::new(sequenced().with_reconnect(policy(10, 10_000)));
        d.auto_open = false;
        d.act(|_| false);
        (0..6)
            .map(|_| {
                d.session
                    .on_connect_failed(ConnId(0), Disconnect::ConnectFailed, d.now);
                let delay = d.next_timer();
                d.act(|_| false);
                delay
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(run(), run());
}

#[test]
fn a_connection_that_stayed_up_resets_the_back_off_and_the_attempt_count() {
    let config = sequenced().with_reconnect(
        policy(100, 60_000)
            .with_factor(10.0)
            .with_stable_after(Duration::from_secs(5)),
    );
    let mut d = Driver::new(config);
    d.auto_open = false;
    d.act(|_| false);
    for _ in 0..3 {
        d.session
            .on_connect_failed(ConnId(0), Disconnect::Reset, d.now);
        d.next_timer();
        d.act(|_| false);
    }
    assert_eq!(d.connects.last().unwrap().2, 4);
    // Attempt 4 opens and stays up 5 s: the next failure starts over at attempt 1.
    d.session.on_open(ConnId(0), d.now);
    d.advance(Duration::from_secs(5));
    d.session
        .on_closed(ConnId(0), Disconnect::Closed(Some(1001)), d.now);
    d.drain(b"");
    assert!(
        d.take_events()
            .iter()
            .any(|e| e.contains("Closed(Some(1001))"))
    );
    d.auto_open = true;
    let waited = d.next_timer();
    assert_eq!(waited, 100 * MS, "the first wait again");
    assert_eq!(d.connects.last().unwrap().2, 1);
    // A connection that dropped early does not reset it: that drop was attempt 1 failing.
    d.advance(Duration::from_secs(1));
    d.session.on_closed(ConnId(0), Disconnect::Eof, d.now);
    d.next_timer();
    assert_eq!(d.connects.last().unwrap().2, 2);
}

#[test]
fn the_attempt_cap_ends_the_session_with_a_typed_error() {
    let config = sequenced().with_reconnect(policy(10, 100).with_max_attempts(Some(3)));
    let mut d = Driver::new(config);
    d.auto_open = false;
    d.act(|_| false);
    for _ in 0..2 {
        d.session
            .on_connect_failed(ConnId(0), Disconnect::HandshakeStatus(503), d.now);
        d.next_timer();
        d.act(|_| false);
    }
    d.session
        .on_connect_failed(ConnId(0), Disconnect::HandshakeStatus(429), d.now);
    d.drain(b"");
    let expected = FeedError::AttemptsExhausted {
        conn: ConnId(0),
        attempts: 3,
        last: ReconnectReason::Disconnect(Disconnect::HandshakeStatus(429)),
    };
    assert_eq!(d.session.ended(), Some(expected));
    assert_eq!(
        d.events.last().unwrap(),
        &format!("{:?}", Event::Ended(expected))
    );
    assert_eq!(d.session.poll_timeout(), None);
    assert_eq!(d.session.poll_action(d.now + Duration::from_secs(60)), None);
    assert_eq!(d.connects.len(), 3);
}

#[test]
fn an_attempt_not_open_in_time_is_dropped_and_retried() {
    let config = sequenced().with_connect_timeout(Duration::from_secs(2));
    let mut d = Driver::new(config);
    d.auto_open = false;
    d.act(|_| false);
    assert_eq!(d.next_timer(), Duration::from_secs(2));
    assert_eq!(d.closed, [(0, None)]);
    assert!(d.take_events()[0].contains("reason: ConnectTimeout"));
    // A late report for the dropped attempt changes nothing.
    d.session.on_open(ConnId(0), d.now);
    assert_eq!(
        d.session.counters(d.now).connections()[0].state,
        ConnState::Waiting
    );
}

#[test]
fn a_shared_connect_budget_is_never_exceeded() {
    let budget = Arc::new(ConnectBudget::new(3, Duration::from_secs(10)));
    let config = || {
        sequenced()
            .with_connect_budget(Some(Arc::clone(&budget)))
            .with_reconnect(policy(1, 1))
    };
    let (mut a, mut b) = (Driver::new(config()), Driver::new(config()));
    b.now = a.now;
    let mut attempts = Vec::new();
    for step in 0..=260u64 {
        for d in [&mut a, &mut b] {
            d.now = d.start + Duration::from_millis(step * 50);
            d.session.handle_timeout(d.now);
            d.act(|_| false);
            if let Some(SlotStateProbe::Connecting) = probe(&d.session, d.now) {
                attempts.push(d.elapsed());
                d.session
                    .on_connect_failed(ConnId(0), Disconnect::HandshakeStatus(429), d.now);
            }
            d.drain(b"");
        }
    }
    attempts.sort();
    assert_eq!(attempts.len(), 6, "13 s of trying: two windows' worth");
    for (i, first) in attempts.iter().enumerate() {
        let in_window = attempts[i..]
            .iter()
            .take_while(|at| **at < *first + Duration::from_secs(10))
            .count();
        assert!(in_window <= 3, "{attempts:?}");
    }
    assert!(
        a.events
            .iter()
            .chain(&b.events)
            .any(|e| e.contains("limited: Connect"))
    );
}

enum SlotStateProbe {
    Connecting,
}

fn probe(session: &FeedSession, now: Instant) -> Option<SlotStateProbe> {
    (session.counters(now).connections()[0].state == ConnState::Connecting)
        .then_some(SlotStateProbe::Connecting)
}

// --- subscriptions -----------------------------------------------------------------------

#[test]
fn login_then_subscriptions_after_every_connect_and_changes_while_live() {
    let config = sequenced()
        .with_login(Some("login".into()))
        .with_subscription("a")
        .with_subscription("b")
        .with_subscribe_with(|topics, out| out.push(format!("sub {}", topics.join(","))))
        .with_unsubscribe_with(|topics, out| out.push(format!("unsub {}", topics.join(","))));
    let mut d = Driver::new(config);
    d.open_all();
    assert_eq!(d.sent, [(0, "login".into()), (0, "sub a,b".into())]);
    assert!(
        d.take_events()
            .iter()
            .any(|e| e == "Subscribed { conn: ConnId(0) }")
    );
    d.session.subscribe("c", d.now);
    assert!(d.session.unsubscribe("a"));
    assert!(!d.session.unsubscribe("zzz"));
    d.act(|_| true);
    assert_eq!(&d.sent[2..], [(0, "sub c".into()), (0, "unsub a".into())]);
    // The next connection subscribes to the set as it is now.
    d.session.on_closed(ConnId(0), Disconnect::Reset, d.now);
    d.sent.clear();
    d.next_timer();
    assert_eq!(d.sent, [(0, "login".into()), (0, "sub b,c".into())]);
    assert_eq!(d.session.subscriptions(), ["b", "c"]);
}

#[test]
fn acknowledgements_are_consumed_and_a_missing_one_replaces_the_connection() {
    let config = sequenced()
        .with_subscription("x")
        .with_subscription("y")
        .with_ack(|m| m.starts_with(b"ack"))
        .with_ack_timeout(Duration::from_secs(3));
    let mut d = Driver::new(config);
    d.open_all();
    assert_eq!(d.message(0, "ack x"), Disposition::Control);
    assert!(!d.take_events().iter().any(|e| e.starts_with("Subscribed")));
    assert_eq!(d.message(0, "ack y"), Disposition::Control);
    assert!(d.take_events().iter().any(|e| e.starts_with("Subscribed")));
    assert!(d.seen.iter().all(|s| !matches!(s, Seen::Message { .. })));
    // Next connection: one acknowledgement never comes.
    d.session.on_closed(ConnId(0), Disconnect::Reset, d.now);
    d.next_timer();
    d.open_all();
    d.take_events();
    d.message(0, "ack x");
    d.advance(Duration::from_secs(3));
    let events = d.take_events();
    assert!(
        events.iter().any(|e| e.contains("reason: AckTimeout")),
        "{events:?}"
    );
    assert_eq!(d.closed, [(0, None)]);
}

// --- liveness --------------------------------------------------------------------------

/// OKX's rule: `ping` after `after_quiet` without a message, `pong` within `deadline`.
fn ping_pong(after_quiet: Duration, deadline: Duration) -> Heartbeat {
    Heartbeat {
        text: "ping".into(),
        after_quiet,
        reply: Arc::new(|m: &[u8]| m == b"pong"),
        deadline,
    }
}

#[test]
fn the_stale_timer_counts_data_only() {
    let heartbeat = ping_pong(Duration::from_secs(1), Duration::from_secs(1));
    let config = sequenced()
        .with_stale_after(Some(Duration::from_secs(5)))
        .with_heartbeat(Some(heartbeat));
    let mut d = Driver::new(config);
    d.open_all();
    d.message(0, "k 1");
    // Heartbeats keep being answered, but no data comes: stale at 5 s after the data.
    for _ in 0..4 {
        d.advance(Duration::from_secs(1));
        d.act(|_| true);
        assert_eq!(d.message(0, "pong"), Disposition::Control);
    }
    assert_eq!(d.sent.iter().filter(|(_, t)| t == "ping").count(), 4);
    assert!(!d.take_events().iter().any(|e| e.starts_with("Stale")));
    d.advance(Duration::from_secs(1));
    let events = d.take_events();
    assert!(
        events[0].starts_with("Stale { conn: ConnId(0), silent_for: 5s"),
        "{events:?}"
    );
    assert!(events.iter().any(|e| e.contains("reason: Stale")));
    assert_eq!(d.closed, [(0, None)]);
}

#[test]
fn a_connection_replaced_on_request_is_dropped_and_reconnected_with_the_reason() {
    let mut d = Driver::new(sequenced());
    assert!(
        !d.session
            .replace(ConnId(0), ReconnectReason::LoginTimeout, d.now)
    );
    d.open_all();
    assert!(
        d.session
            .replace(ConnId(0), ReconnectReason::LoginTimeout, d.now)
    );
    d.act(|_| false);
    d.drain(&[]);
    let events = d.take_events();
    assert!(
        events
            .iter()
            .any(|e| e.contains("Closed") && e.contains("LoginTimeout"))
    );
    assert!(
        events
            .iter()
            .any(|e| e.contains("Reconnecting") && e.contains("LoginTimeout"))
    );
    assert_eq!(d.closed, [(0, None)], "its socket dropped, no close frame");
}

#[test]
fn an_unanswered_heartbeat_replaces_the_connection() {
    let heartbeat = ping_pong(Duration::from_secs(20), Duration::from_secs(5));
    let mut d = Driver::new(sequenced().with_heartbeat(Some(heartbeat)));
    d.open_all();
    // Data keeps the heartbeat quiet.
    for seq in 1..=3 {
        d.advance(Duration::from_secs(10));
        d.message(0, &format!("k {seq}"));
    }
    d.act(|_| true);
    assert!(d.sent.is_empty());
    assert_eq!(d.next_timer(), Duration::from_secs(20));
    d.act(|_| true);
    assert_eq!(d.sent, [(0, "ping".into())]);
    assert_eq!(d.next_timer(), Duration::from_secs(5));
    assert!(
        d.take_events()
            .iter()
            .any(|e| e.contains("reason: HeartbeatTimeout"))
    );
}

#[test]
fn server_pings_are_answered_by_the_rule_and_not_delivered() {
    let config = sequenced().with_answer_ping(|m| {
        let text = std::str::from_utf8(m).ok()?;
        let id = text.strip_prefix("{\"ping\":")?.strip_suffix('}')?;
        Some(format!("{{\"pong\":{id}}}"))
    });
    let mut d = Driver::new(config);
    d.open_all();
    assert_eq!(d.message(0, "{\"ping\":1733}"), Disposition::Control);
    d.act(|_| true);
    assert_eq!(d.sent, [(0, "{\"pong\":1733}".into())]);
    assert_eq!(d.message(0, "k 1"), Disposition::Deliver);
    assert_eq!(d.delivered(), [(0, 1)]);
}

// --- configuration and the end ---------------------------------------------------------------

#[test]
fn bad_configurations_are_refused_with_typed_errors() {
    let now = Instant::now();
    let mut none = FeedConfig::new("wss://a");
    none.endpoints.clear();
    assert_eq!(
        FeedSession::new(none, 0, now).err(),
        Some(ConfigError::NoEndpoints)
    );
    for n in [0, MAX_CONNECTIONS] {
        let config = FeedConfig::new("wss://a").with_connections(n);
        assert_eq!(
            FeedSession::new(config, 0, now).err(),
            Some(ConfigError::Connections(n))
        );
    }
}

#[test]
fn slots_use_the_endpoints_in_turn() {
    let config = sequenced().with_endpoint("wss://b").with_connections(3);
    let mut d = Driver::new(config);
    d.open_all();
    let endpoints: Vec<_> = d.connects.iter().map(|c| (c.0, c.1)).collect();
    assert_eq!(endpoints, [(0, 0), (1, 1), (2, 0)]);
    assert!(
        d.events
            .iter()
            .any(|e| e == "Connected { conn: ConnId(1), attempt: 1, endpoint: 1 }")
    );
}

#[test]
fn close_closes_every_connection_and_delivers_what_was_held() {
    let mut d = Driver::new(sequenced().with_connections(2));
    d.open_all();
    d.message(0, "k 1");
    d.message(0, "k 3");
    d.session.close();
    d.act(|_| true);
    assert_eq!(d.closed, [(0, Some(1000)), (1, Some(1000))]);
    assert_eq!(d.delivered(), [(0, 1), (0, 3)]);
    assert_eq!(d.gaps(), [(2, 2)]);
    assert_eq!(d.events.last().unwrap(), "Ended(Closed)");
    assert_eq!(d.message(0, "k 4"), Disposition::Ignored);
}

#[test]
fn has_event_says_whether_poll_event_has_one_to_give() {
    let mut driver = Driver::new(FeedConfig::new("ws://a").with_subscription("sub"));
    assert!(!driver.session.has_event());
    while driver.session.poll_action(driver.now).is_some() {}
    driver.session.on_open(ConnId(0), driver.now);
    // Connected; Subscribed once the subscription went out (no acknowledgement matcher).
    assert!(driver.session.has_event());
    assert!(driver.session.poll_event(b"").is_some());
    assert!(!driver.session.has_event());
    while driver.session.poll_action(driver.now).is_some() {}
    assert!(driver.session.has_event());
    assert!(driver.session.poll_event(b"").is_some());
    assert!(!driver.session.has_event());
    assert_eq!(driver.session.config().endpoints, ["ws://a"]);
}

/// The data path leaves the actions quiet (a driver need not read the clock for them per
/// message), and every input that may give an action wakes them: nothing is left unsent.
#[test]
fn a_delivered_message_leaves_the_actions_quiet_and_inputs_wake_them() {
    let config = sequenced()
        .with_subscription("a")
        .with_answer_ping(|msg| (msg == b"ping").then(|| "pong".to_owned()));
    let mut d = Driver::new(config);
    d.open_all();
    assert!(
        !d.session.wants_poll(),
        "nothing to do once open and subscribed"
    );
    assert_eq!(d.message(0, "K 1"), Disposition::Deliver);
    assert!(
        !d.session.wants_poll(),
        "a delivered message changes no action"
    );
    // An application ping owes a reply: the actions wake, and the driver's next round
    // (`message` runs it) sends it.
    let sent = d.sent.len();
    assert_eq!(d.message(0, "ping"), Disposition::Control);
    assert_eq!(d.sent[sent..], [(0, "pong".into())]);
    assert!(!d.session.wants_poll());
    // A live subscription and a lost connection wake them too.
    d.session.subscribe("b", d.now);
    assert!(d.session.wants_poll());
    d.act(|_| true);
    assert_eq!(d.sent.last(), Some(&(0, "b".into())));
    d.session.on_closed(ConnId(0), Disconnect::Reset, d.now);
    assert!(d.session.wants_poll());
}
