//! An rpc::RpcSession driven by arbitrary sequences of requests, connections opening and
//! failing, answers (to written requests, to logins, to ids never issued, duplicated, and
//! arbitrary bytes), time passing, cancels, and the driver giving a message back (three bytes
//! an operation), with or without a login and a rate limit. Oracle, checked as it runs and
//! once every connection is closed and every deadline passed: every request accepted resolves
//! exactly once; one written never resolves NotSent, one never written never resolves
//! otherwise; nothing is written twice; nothing but a login goes out on a connection before
//! its login was accepted; the rate limit's window is never exceeded; the queue and the
//! in-flight count stay within their caps. Never a panic.
#![no_main]

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use tickwire_codec::feed::{self, ConnId, Delivery, Disconnect, RecvStamp, ReconnectReason};
use tickwire_codec::rpc::{
    Event, Login, Outcome, RateLimits, Request, RpcConfig, RpcSession, Ticket,
};

const MAX_IN_FLIGHT: usize = 4;
const MAX_QUEUED: usize = 8;

struct Run {
    rpc: RpcSession,
    now: Instant,
    start: Instant,
    open: [bool; 2],
    accepted: [bool; 2],
    login: bool,
    /// (conn, id, login) of everything written, in order.
    wire: Vec<(u8, u64, bool)>,
    written: HashSet<u64>,
    /// Requests accepted, and how each resolved.
    accepted_requests: HashSet<u64>,
    resolved: HashMap<u64, &'static str>,
    /// When each limited request was written (ms from the start).
    charged: Vec<u64>,
    limited: HashSet<u64>,
}

impl Run {
    fn event(&mut self, event: Event<'_>) {
        if let Event::Resolved {
            ticket, outcome, ..
        } = event
        {
            let name = outcome.name();
            assert!(
                self.resolved.insert(ticket.0, name).is_none(),
                "{ticket} resolved twice"
            );
            let written = self.written.contains(&ticket.0);
            match outcome {
                Outcome::NotSent(_) => assert!(!written, "{ticket} written, then NotSent"),
                Outcome::Rejected(_) => panic!("{ticket}: a rejection comes from submit"),
                _ => assert!(written, "{ticket} never written, then {name}"),
            }
        }
    }

    fn drain(&mut self) {
        while let Some(event) = self.rpc.poll_event() {
            self.event(event);
        }
        while let Some(conn) = self.rpc.poll_replace() {
            self.close(conn.0);
        }
    }

    fn absorb(&mut self, event: &feed::Event<'_>, payload: &[u8]) {
        if let Some(absorbed) = self.rpc.absorb(event, self.now) {
            let event = RpcSession::event(absorbed, payload);
            self.event(event);
        }
        self.drain();
    }

    fn open(&mut self, conn: u8) {
        if self.open[conn as usize] {
            return;
        }
        self.open[conn as usize] = true;
        self.accepted[conn as usize] = !self.login;
        let event = feed::Event::Connected {
            conn: ConnId(conn),
            attempt: 1,
            endpoint: 0,
        };
        self.absorb(&event, b"");
    }

    fn close(&mut self, conn: u8) {
        if !self.open[conn as usize] {
            return;
        }
        self.open[conn as usize] = false;
        let event = feed::Event::Closed {
            conn: ConnId(conn),
            reason: ReconnectReason::Disconnect(Disconnect::Reset),
        };
        self.absorb(&event, b"");
    }

    fn pump(&mut self) {
        loop {
            let open = self.open;
            let Some(out) = self.rpc.poll_transmit(self.now, |_, _| Ok(())) else {
                break;
            };
            let (conn, id, login) = (out.conn.0, out.ticket.0, out.login);
            assert!(open[conn as usize], "written on a closed connection");
            assert!(
                login || self.accepted[conn as usize],
                "a request before the login's answer"
            );
            if !login {
                assert!(self.written.insert(id), "request {id} written twice");
                if self.limited.contains(&id) {
                    self.charged.push((self.now - self.start).as_millis() as u64);
                }
            }
            self.wire.push((conn, id, login));
        }
        self.drain();
        let counters = self.rpc.counters();
        assert!(counters.in_flight <= MAX_IN_FLIGHT && counters.queued <= MAX_QUEUED);
    }

    fn receive(&mut self, conn: u8, payload: &[u8]) {
        if !self.open[conn as usize] {
            return;
        }
        // A login's answer is accepted when it says "ok".
        let login_answer = self
            .wire
            .iter()
            .rev()
            .find(|w| w.0 == conn && w.2)
            .is_some_and(|w| payload.starts_with(format!(r#"{{"id":{},"ok""#, w.1).as_bytes()));
        let event = feed::Event::Message(Delivery {
            conn: ConnId(conn),
            key: None,
            seq: None,
            stamp: RecvStamp::default(),
            payload,
        });
        self.absorb(&event, payload);
        if login_answer && self.rpc.ended().is_none() {
            self.accepted[conn as usize] = true;
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, ops)) = data.split_first() else {
        return;
    };
    let login = flags & 1 != 0;
    let mut config = RpcConfig::new()
        .with_max_in_flight(MAX_IN_FLIGHT)
        .with_max_queued(MAX_QUEUED)
        .with_timeout(Duration::from_millis(500));
    if login {
        let accept = |answer: &[u8]| match answer.windows(4).any(|w| w == br#""ok""#) {
            true => Ok(()),
            false => Err("refused".to_owned()),
        };
        config = config.with_login(Some(
            Login::new(|| r#"{"op":"login"}"#.to_owned(), accept)
                .with_timeout(Duration::from_millis(300)),
        ));
    }
    let mut limit = None;
    if flags & 2 != 0 {
        let mut limits = RateLimits::new();
        let window = limits.window_with_margin("w", 3, Duration::from_millis(200), Duration::ZERO);
        let kind = limits.kind(&[(window, 1)]);
        config = config.with_limits(Some(Arc::new(limits)));
        limit = Some(kind);
    }
    let start = Instant::now();
    let mut run = Run {
        rpc: RpcSession::new(config),
        now: start,
        start,
        open: [false; 2],
        accepted: [false; 2],
        login,
        wire: Vec::new(),
        written: HashSet::new(),
        accepted_requests: HashSet::new(),
        resolved: HashMap::new(),
        charged: Vec::new(),
        limited: HashSet::new(),
    };
    for op in ops.chunks_exact(3) {
        let (a, b) = (op[1], op[2]);
        let conn = a & 1;
        match op[0] % 9 {
            0 | 1 => {
                let request = Request::new().with_kind(limit.filter(|_| a & 2 != 0));
                let text = format!(r#"{{"n":{b}}}"#);
                if let Ok(ticket) = run.rpc.submit(&text, request, run.now) {
                    run.accepted_requests.insert(ticket.0);
                    if request.kind.is_some() {
                        run.limited.insert(ticket.0);
                    }
                }
            }
            2 => run.open(conn),
            3 => run.close(conn),
            4 => run.pump(),
            5 => {
                // Answer something written on this connection (a login: "ok" or not).
                let on: Vec<(u64, bool)> = run
                    .wire
                    .iter()
                    .filter(|w| w.0 == conn)
                    .map(|w| (w.1, w.2))
                    .collect();
                if let Some(&(id, is_login)) = on.get(b as usize % on.len().max(1)) {
                    let text = match (is_login, a & 2 != 0) {
                        (true, true) => format!(r#"{{"id":{id},"error":"no"}}"#),
                        (true, false) => format!(r#"{{"id":{id},"ok":1}}"#),
                        _ => format!(r#"{{"id":{id},"r":{b}}}"#),
                    };
                    run.receive(conn, text.as_bytes());
                }
            }
            6 => {
                // Arbitrary bytes, or an id never issued.
                let text = match a & 2 {
                    0 => format!(r#"{{"id":{}}}"#, u64::from(b) << 20),
                    _ => String::from_utf8_lossy(&op[1..]).into_owned(),
                };
                run.receive(conn, text.as_bytes());
            }
            7 => {
                run.now += Duration::from_millis(u64::from(b) * 4);
                if run.rpc.poll_timeout().is_some_and(|at| at <= run.now) {
                    run.rpc.handle_timeout(run.now);
                }
                run.drain();
            }
            _ => {
                if a & 2 == 0 {
                    if let Some(&ticket) = run.accepted_requests.iter().nth(b as usize % 8) {
                        run.rpc.cancel(Ticket(ticket));
                        run.drain();
                    }
                } else if let Some(out) = run.rpc.poll_transmit(run.now, |_, _| Ok(())) {
                    let ticket = out.ticket;
                    run.rpc.unsend(ticket);
                }
            }
        }
    }
    run.close(0);
    run.close(1);
    run.now += Duration::from_secs(5);
    run.rpc.handle_timeout(run.now);
    run.drain();
    for id in &run.accepted_requests {
        assert!(run.resolved.contains_key(id), "request {id} never resolved");
    }
    for (index, &at) in run.charged.iter().enumerate() {
        let inside = run.charged[index..].iter().take_while(|t| **t < at + 200).count();
        assert!(inside <= 3, "{inside} limited requests within 200 ms of {at} ms");
    }
    let counters = run.rpc.counters();
    assert_eq!((counters.in_flight, counters.queued), (0, 0));
});
