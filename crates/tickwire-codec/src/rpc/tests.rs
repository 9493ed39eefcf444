//! The RPC session against a scripted exchange with a virtual clock.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use proptest::prelude::*;

use super::*;
use crate::feed::{self, ConnId, Delivery, ReconnectReason, RecvStamp};

const C0: ConnId = ConnId(0);
const C1: ConnId = ConnId(1);

/// A session and what it wrote, per connection, and every event it gave.
struct Rig {
    rpc: RpcSession,
    now: Instant,
    wire: Vec<(ConnId, u64, String, bool)>,
    resolved: HashMap<Ticket, String>,
    events: Vec<String>,
}

impl Rig {
    fn new(config: RpcConfig) -> Self {
        Self {
            rpc: RpcSession::new(config),
            now: Instant::now(),
            wire: Vec::new(),
            resolved: HashMap::new(),
            events: Vec::new(),
        }
    }

    fn submit(&mut self, method: &str) -> Ticket {
        let text = format!(r#"{{"method":"{method}"}}"#);
        self.rpc.submit(&text, Request::new(), self.now).unwrap()
    }

    fn open(&mut self, conn: ConnId) {
        let event = feed::Event::Connected {
            conn,
            attempt: 1,
            endpoint: 0,
        };
        let absorbed = self.rpc.absorb(&event, self.now);
        self.note(absorbed, b"");
    }

    fn close(&mut self, conn: ConnId) {
        let event = feed::Event::Closed {
            conn,
            reason: ReconnectReason::Disconnect(feed::Disconnect::Reset),
        };
        let absorbed = self.rpc.absorb(&event, self.now);
        self.note(absorbed, b"");
    }

    /// Writes what the session lets out now.
    fn pump(&mut self) {
        while let Some(out) = self.rpc.poll_transmit(self.now, |_, _| Ok(())) {
            self.wire
                .push((out.conn, out.ticket.0, out.text.to_owned(), out.login));
        }
        self.drain();
    }

    fn receive(&mut self, conn: ConnId, text: &str) {
        let event = feed::Event::Message(Delivery {
            conn,
            key: None,
            seq: None,
            stamp: RecvStamp::default(),
            payload: text.as_bytes(),
        });
        let absorbed = self.rpc.absorb(&event, self.now);
        self.note(absorbed, text.as_bytes());
    }

    fn advance(&mut self, by: Duration) {
        self.now += by;
        if self.rpc.poll_timeout().is_some_and(|at| at <= self.now) {
            self.rpc.handle_timeout(self.now);
        }
        self.drain();
    }

    fn note(&mut self, absorbed: Option<Absorbed>, payload: &[u8]) {
        if let Some(absorbed) = absorbed {
            self.record(RpcSession::event(absorbed, payload));
        }
        self.drain();
    }

    fn drain(&mut self) {
        while let Some(event) = self.rpc.poll_event() {
            self.record(event);
        }
    }

    fn record(&mut self, event: Event<'_>) {
        let line = match &event {
            Event::Resolved {
                ticket, outcome, ..
            } => {
                let text = match outcome {
                    Outcome::Response(bytes) => {
                        format!("response {}", String::from_utf8_lossy(bytes))
                    }
                    other => format!("{other:?}"),
                };
                let first = self.resolved.insert(*ticket, text.clone());
                assert!(first.is_none(), "{ticket} resolved twice: {text}");
                format!("{} {text}", ticket.0)
            }
            Event::Pushed { payload, .. } => {
                format!("pushed {}", String::from_utf8_lossy(payload))
            }
            Event::Late {
                ticket, payload, ..
            } => format!("late {} {}", ticket.0, String::from_utf8_lossy(payload)),
            Event::Ready { conn } => format!("ready {}", conn.0),
            Event::LoginFailed { conn, failure } => format!("login failed {} {failure:?}", conn.0),
            Event::Feed(_) => return,
        };
        self.events.push(line);
    }

    fn written(&self) -> Vec<u64> {
        self.wire.iter().map(|(_, id, _, _)| *id).collect()
    }
}

fn login(accept_token: &'static str) -> Login {
    Login::new(
        || r#"{"method":"logon"}"#.to_owned(),
        move |response| {
            let text = String::from_utf8_lossy(response);
            if text.contains(accept_token) {
                Ok(())
            } else {
                Err(text.into_owned())
            }
        },
    )
    .with_timeout(Duration::from_secs(2))
}

#[test]
fn no_request_goes_out_before_the_login_is_accepted_on_each_connection() {
    let mut rig = Rig::new(RpcConfig::new().with_login(Some(login("ok"))));
    let a = rig.submit("a");
    rig.pump();
    assert!(rig.wire.is_empty(), "nothing is open");
    rig.open(C0);
    rig.pump();
    assert_eq!(rig.wire.len(), 1);
    let (conn, login_id, text, is_login) = rig.wire[0].clone();
    assert!(is_login && conn == C0);
    assert_eq!(text, format!(r#"{{"id":{login_id},"method":"logon"}}"#));
    let b = rig.submit("b");
    rig.pump();
    assert_eq!(rig.wire.len(), 1, "requests wait for the login's response");
    rig.receive(C0, &format!(r#"{{"id":{login_id},"result":"ok"}}"#));
    rig.pump();
    assert_eq!(
        rig.written()[1..],
        [a.0, b.0],
        "in the order they were made"
    );
    assert_eq!(rig.events, ["ready 0"]);

    // A new connection logs in anew before anything goes out on it.
    rig.close(C0);
    let c = rig.submit("c");
    rig.open(C0);
    rig.pump();
    assert_eq!(rig.wire.len(), 4);
    assert!(rig.wire[3].3, "the login first");
    rig.receive(C0, &format!(r#"{{"id":{},"result":"ok"}}"#, rig.wire[3].1));
    rig.pump();
    assert_eq!(rig.written().last(), Some(&c.0));
    // a and b were written on the connection that failed: their outcome is unknown, and
    // neither went out again.
    assert_eq!(rig.resolved[&a], "OutcomeUnknown");
    assert_eq!(rig.resolved[&b], "OutcomeUnknown");
    assert_eq!(rig.written().iter().filter(|id| **id == a.0).count(), 1);
}

#[test]
fn responses_out_of_order_reach_their_requests_and_the_rest_is_reported() {
    let mut rig = Rig::new(RpcConfig::new());
    rig.open(C0);
    let tickets: Vec<Ticket> = (0..4).map(|i| rig.submit(&format!("m{i}"))).collect();
    rig.pump();
    assert_eq!(
        rig.written(),
        tickets.iter().map(|t| t.0).collect::<Vec<_>>()
    );
    for &i in &[2usize, 0, 3, 1] {
        let id = tickets[i].0;
        rig.receive(C0, &format!(r#"{{"result":{{"id":99}},"id":{id}}}"#));
    }
    for (i, ticket) in tickets.iter().enumerate() {
        assert_eq!(
            rig.resolved[ticket],
            format!(r#"response {{"result":{{"id":99}},"id":{}}}"#, tickets[i].0)
        );
    }
    // A second answer, an event without an id, an id never issued.
    rig.receive(C0, &format!(r#"{{"id":{}}}"#, tickets[0].0));
    rig.receive(C0, r#"{"e":"executionReport","i":5}"#);
    rig.receive(C0, r#"{"id":1000}"#);
    assert_eq!(
        rig.events[5..],
        [
            format!(r#"late {} {{"id":{}}}"#, tickets[0].0, tickets[0].0),
            r#"pushed {"e":"executionReport","i":5}"#.to_owned(),
            r#"pushed {"id":1000}"#.to_owned(),
        ]
    );
    let counters = rig.rpc.counters();
    assert_eq!(
        (counters.responses, counters.late, counters.pushed),
        (4, 1, 2)
    );
    assert_eq!((counters.in_flight, counters.queued), (0, 0));
}

#[test]
fn deadlines_say_whether_the_request_was_written() {
    let mut rig = Rig::new(RpcConfig::new().with_timeout(Duration::from_secs(1)));
    let waiting = rig.submit("never-out");
    rig.advance(Duration::from_millis(500));
    rig.open(C0);
    let short = rig
        .rpc
        .submit(
            r#"{"m":1}"#,
            Request::new().with_timeout(Some(Duration::from_millis(100))),
            rig.now,
        )
        .unwrap();
    // `waiting` goes out now, at 500 ms; `short` after it.
    rig.pump();
    assert_eq!(rig.written(), [waiting.0, short.0]);
    rig.advance(Duration::from_millis(200));
    assert_eq!(rig.resolved[&short], "TimedOut");
    rig.advance(Duration::from_millis(400));
    assert_eq!(rig.resolved[&waiting], "TimedOut");
    // Its response after all: late, reported.
    rig.receive(C0, &format!(r#"{{"id":{}}}"#, waiting.0));
    assert_eq!(
        rig.events.last().unwrap(),
        &format!(r#"late {0} {{"id":{0}}}"#, waiting.0)
    );

    let mut rig = Rig::new(RpcConfig::new().with_timeout(Duration::from_secs(1)));
    let unsent = rig.submit("x");
    rig.advance(Duration::from_secs(1));
    assert_eq!(rig.resolved[&unsent], "NotSent(Deadline)");
    rig.open(C0);
    rig.pump();
    assert!(rig.wire.is_empty(), "an expired request is never written");
}

#[test]
fn the_in_flight_cap_holds_requests_back_until_responses_come() {
    let mut rig = Rig::new(RpcConfig::new().with_max_in_flight(2));
    rig.open(C0);
    let tickets: Vec<Ticket> = (0..5).map(|i| rig.submit(&format!("m{i}"))).collect();
    rig.pump();
    assert_eq!(rig.written(), [tickets[0].0, tickets[1].0]);
    rig.receive(C0, &format!(r#"{{"id":{}}}"#, tickets[1].0));
    rig.pump();
    assert_eq!(rig.written().len(), 3);
    assert_eq!(rig.rpc.counters().in_flight, 2);
}

#[test]
fn the_queue_cap_and_a_closed_session_refuse_at_once() {
    let mut rig = Rig::new(RpcConfig::new().with_max_queued(2));
    rig.submit("a");
    rig.submit("b");
    let refused = rig.rpc.submit(r#"{"m":3}"#, Request::new(), rig.now);
    assert_eq!(refused, Err(Rejected::QueueFull { max_queued: 2 }));
    let refused = rig.rpc.submit("not json", Request::new(), rig.now);
    assert!(refused.is_err());
    let event = feed::Event::Ended(feed::FeedError::Closed);
    let absorbed = rig.rpc.absorb(&event, rig.now);
    rig.note(absorbed, b"");
    assert_eq!(
        rig.resolved
            .values()
            .filter(|o| *o == "NotSent(Ended)")
            .count(),
        2
    );
    let refused = rig.rpc.submit(r#"{"m":4}"#, Request::new(), rig.now);
    assert_eq!(refused, Err(Rejected::Ended));
}

#[test]
fn while_down_fail_refuses_and_releases_what_waited() {
    let config = RpcConfig::new()
        .with_while_down(WhileDown::Fail)
        .with_max_in_flight(1);
    let mut rig = Rig::new(config);
    assert_eq!(
        rig.rpc.submit(r#"{}"#, Request::new(), rig.now),
        Err(Rejected::NotReady)
    );
    rig.open(C0);
    let out = rig.submit("a");
    let held = rig.submit("b");
    rig.pump();
    rig.close(C0);
    assert_eq!(rig.resolved[&out], "OutcomeUnknown");
    assert_eq!(rig.resolved[&held], "NotSent(Disconnected)");
}

#[test]
fn a_refused_login_ends_the_session_and_a_silent_one_replaces_the_connection() {
    let mut rig = Rig::new(RpcConfig::new().with_login(Some(login("ok"))));
    rig.open(C0);
    rig.pump();
    rig.advance(Duration::from_secs(2));
    assert_eq!(rig.events, ["login failed 0 TimedOut"]);
    assert_eq!(rig.rpc.poll_replace(), Some(C0));
    let a = rig.submit("a");
    rig.open(C0);
    rig.pump();
    let login_id = rig.wire[1].1;
    rig.receive(
        C0,
        &format!(r#"{{"id":{login_id},"error":"bad signature"}}"#),
    );
    assert!(matches!(
        rig.rpc.ended(),
        Some(RpcError::LoginRejected { reason, .. }) if reason.contains("bad signature")
    ));
    assert_eq!(rig.resolved[&a], "NotSent(Ended)");
    assert_eq!(
        rig.wire.iter().filter(|w| !w.3).count(),
        0,
        "no request went out"
    );
}

#[test]
fn requests_go_on_the_connection_ready_last_and_follow_it() {
    let mut rig = Rig::new(RpcConfig::new());
    rig.open(C0);
    rig.advance(Duration::from_millis(1));
    rig.open(C1);
    rig.submit("a");
    rig.pump();
    assert_eq!(rig.wire[0].0, C1);
    rig.close(C1);
    rig.submit("b");
    rig.pump();
    assert_eq!(rig.wire[1].0, C0);
}

#[test]
fn a_message_the_driver_could_not_queue_goes_out_first_next_time() {
    let mut rig = Rig::new(RpcConfig::new());
    rig.open(C0);
    let a = rig.submit("a");
    let b = rig.submit("b");
    let out = rig.rpc.poll_transmit(rig.now, |_, _| Ok(())).unwrap();
    assert_eq!(out.ticket, a);
    rig.rpc.unsend(a);
    assert!(
        rig.rpc.poll_transmit(rig.now, |_, _| Ok(())).is_none(),
        "conn 0 is down"
    );
    rig.close(C0);
    rig.open(C0);
    rig.pump();
    assert_eq!(rig.written(), [a.0, b.0]);
    assert!(rig.resolved.is_empty());
}

#[test]
fn a_cancelled_request_never_goes_out() {
    let mut rig = Rig::new(RpcConfig::new());
    let a = rig.submit("a");
    let b = rig.submit("b");
    assert!(rig.rpc.cancel(a));
    assert!(!rig.rpc.cancel(a));
    rig.drain();
    rig.open(C0);
    rig.pump();
    assert_eq!(rig.written(), [b.0]);
    assert!(!rig.rpc.cancel(b), "written: it cannot be called back");
    assert_eq!(rig.resolved[&a], "NotSent(Cancelled)");
}

#[test]
fn a_cancelled_requests_deadline_never_reaches_the_request_that_takes_its_slot() {
    // A small table (64 slots): ids 1 and 65 share a slot.
    let config = RpcConfig::new().with_max_in_flight(1).with_max_queued(1);
    let mut rig = Rig::new(config);
    let cancelled = rig
        .rpc
        .submit(
            r#"{"m":"x"}"#,
            Request::new().with_timeout(Some(Duration::from_secs(1))),
            rig.now,
        )
        .unwrap();
    assert!(rig.rpc.cancel(cancelled));
    rig.open(C0);
    let mut last = cancelled;
    while last.0 & 63 != cancelled.0 & 63 || last == cancelled {
        last = rig.submit("next");
        rig.pump();
        rig.receive(C0, &format!(r#"{{"id":{}}}"#, last.0));
    }
    // The slot's new request, answered: now one more in it, waiting for its answer.
    let waiting = rig.submit("waiting");
    rig.pump();
    rig.advance(Duration::from_secs(2));
    assert!(
        !rig.resolved.contains_key(&waiting),
        "resolved at the cancelled request's deadline: {:?}",
        rig.resolved.get(&waiting)
    );
}

#[test]
fn rate_limits_hold_requests_in_order_or_refuse_them() {
    let mut limits = RateLimits::new();
    let orders = limits.window_with_margin("orders", 2, Duration::from_secs(1), Duration::ZERO);
    let place = limits.kind(&[(orders, 1)]);
    let limits = Arc::new(limits);
    let config = RpcConfig::new()
        .with_limits(Some(Arc::clone(&limits)))
        .with_timeout(Duration::from_secs(10));
    let mut rig = Rig::new(config);
    rig.open(C0);
    let placed = Request::new().with_kind(Some(place));
    let tickets: Vec<Ticket> = (0..3)
        .map(|_| rig.rpc.submit(r#"{"m":"order"}"#, placed, rig.now).unwrap())
        .collect();
    let free = rig.submit("time");
    rig.pump();
    assert_eq!(
        rig.written(),
        [tickets[0].0, tickets[1].0],
        "the third waits, and so does what follows it"
    );
    let wake = rig.rpc.poll_timeout().unwrap();
    assert!(wake > rig.now && wake <= rig.now + Duration::from_millis(1_100));
    rig.advance(wake - rig.now);
    rig.pump();
    assert_eq!(rig.written()[2..], [tickets[2].0, free.0]);

    // The REST client of the same account takes the last unit of the window.
    limits.try_acquire(place, rig.now).unwrap();
    let refuse = RpcConfig::new()
        .with_limits(Some(limits))
        .with_over_limit(OverLimit::Refuse);
    let mut rig2 = Rig::new(refuse);
    rig2.now = rig.now;
    let refused = rig2.rpc.submit(r#"{"m":"order"}"#, placed, rig2.now);
    assert!(
        matches!(refused, Err(Rejected::Limit(LimitExceeded { window, .. })) if window == orders)
    );
}

#[test]
fn used_weight_from_responses_feeds_the_shared_limits() {
    let mut limits = RateLimits::new();
    let weight = limits.window("weight", 100, Duration::from_secs(60));
    let limits = Arc::new(limits);
    let config = RpcConfig::new()
        .with_limits(Some(Arc::clone(&limits)))
        .with_usage(move |message, limits, now| {
            if let Some(used) = field_u64(message, "used") {
                limits.observe(weight, used, now);
            }
        });
    let mut rig = Rig::new(config);
    rig.open(C0);
    let a = rig.submit("a");
    rig.pump();
    rig.receive(C0, &format!(r#"{{"id":{},"used":97}}"#, a.0));
    assert_eq!(limits.used(weight, rig.now), 97);
}

/// What a random run may do.
#[derive(Debug, Clone)]
enum Op {
    Submit(u8),
    Open(u8),
    Close(u8),
    Pump,
    Respond(u16, u8),
    Advance(u16),
    Cancel(u16),
    Unsend,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..200).prop_map(Op::Submit),
        1 => (0u8..2).prop_map(Op::Open),
        1 => (0u8..2).prop_map(Op::Close),
        4 => Just(Op::Pump),
        4 => (0u16..64, 0u8..2).prop_map(|(i, c)| Op::Respond(i, c)),
        2 => (0u16..3_000).prop_map(Op::Advance),
        1 => (0u16..64).prop_map(Op::Cancel),
        1 => Just(Op::Unsend),
    ]
}

proptest! {
    /// Whatever the exchange and the links do: every request resolves exactly once; one the
    /// exchange received (written) never resolves NotSent, one never written never resolves
    /// with a response or unknown; nothing is written twice; nothing goes out before login.
    #[test]
    fn every_request_resolves_once_and_written_ones_are_never_called_unsent(
        ops in proptest::collection::vec(op(), 1..400),
        with_login in any::<bool>(),
    ) {
        // A small table (32 slots): ids come back to a slot every 32, so a slot's state is
        // reused many times in a run.
        let mut config = RpcConfig::new()
            .with_max_in_flight(2)
            .with_max_queued(3)
            .with_timeout(Duration::from_millis(2_000));
        if with_login {
            config = config.with_login(Some(login("ok")));
        }
        let mut rig = Rig::new(config);
        let mut submitted = Vec::new();
        let mut open = [false; 2];
        let mut accepted = [false; 2];
        for op in ops {
            match op {
                Op::Submit(n) => {
                    let text = format!(r#"{{"n":{n}}}"#);
                    if let Ok(ticket) = rig.rpc.submit(&text, Request::new(), rig.now) {
                        submitted.push(ticket);
                    }
                }
                Op::Open(c) if !open[c as usize] => {
                    open[c as usize] = true;
                    accepted[c as usize] = false;
                    rig.open(ConnId(c));
                }
                Op::Close(c) if open[c as usize] => {
                    open[c as usize] = false;
                    rig.close(ConnId(c));
                }
                Op::Pump => {
                    let before = rig.wire.len();
                    rig.pump();
                    for (conn, _, _, login) in &rig.wire[before..] {
                        prop_assert!(open[conn.index()]);
                        prop_assert!(!with_login || *login || accepted[conn.index()]);
                    }
                }
                Op::Respond(i, c) => {
                    // Answer something written on that connection (or anything at all).
                    let written: Vec<_> = rig.wire.iter().filter(|w| w.0 == ConnId(c)).cloned().collect();
                    if open[c as usize] && !written.is_empty() {
                        let (_, id, _, login) = written[i as usize % written.len()].clone();
                        rig.receive(ConnId(c), &format!(r#"{{"id":{id},"r":"ok"}}"#));
                        if login {
                            accepted[c as usize] = true;
                        }
                    }
                }
                Op::Advance(ms) => rig.advance(Duration::from_millis(u64::from(ms))),
                Op::Cancel(i) if !submitted.is_empty() => {
                    rig.rpc.cancel(submitted[i as usize % submitted.len()]);
                    rig.drain();
                }
                Op::Unsend => {
                    if let Some(out) = rig.rpc.poll_transmit(rig.now, |_, _| Ok(())) {
                        let ticket = out.ticket;
                        rig.rpc.unsend(ticket);
                    }
                }
                _ => {}
            }
            if let Some(conn) = rig.rpc.poll_replace() {
                open[conn.index()] = false;
                rig.close(conn);
            }
        }
        // Close everything and let every deadline pass: all must have ended.
        for c in 0..2u8 {
            if open[c as usize] {
                rig.close(ConnId(c));
            }
        }
        rig.advance(Duration::from_secs(10));
        let mut writes = HashSet::new();
        for (_, id, _, login) in &rig.wire {
            if !login {
                prop_assert!(writes.insert(*id), "request {} written twice", id);
            }
        }
        for ticket in &submitted {
            let outcome = rig.resolved.get(ticket);
            prop_assert!(outcome.is_some(), "{} never resolved", ticket);
            let outcome = outcome.unwrap();
            if writes.contains(&ticket.0) {
                prop_assert!(!outcome.starts_with("NotSent"), "{} written, then {}", ticket, outcome);
            } else {
                prop_assert!(outcome.starts_with("NotSent"), "{} never written, then {}", ticket, outcome);
            }
        }
        let counters = rig.rpc.counters();
        prop_assert_eq!((counters.in_flight, counters.queued), (0, 0));
    }
}
