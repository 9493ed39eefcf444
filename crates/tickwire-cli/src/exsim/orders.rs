//! The simulator's order gateway: a connection whose opening request's path starts with
//! `/ws-api` speaks an exchange's WebSocket API (Binance's shape) instead of the feed.
//!
//! Each text is a JSON request with an `id` and a `method`; each is logged as it arrives
//! (`GET /orders` on the control port), then answered after `--order-delay` plus up to
//! `--order-jitter` (so answers overtake each other), with what the faults ask: every Nth
//! left unanswered, answered twice, or answered `--order-late-by` late; a fill pushed after
//! each order with `--order-fills`; the used request weight of the last minute in every
//! answer (`rateLimits`). With `--login-token`, `session.logon` with that token must come
//! first: a request before it is answered 401 and logged as such. `/cut-next?how=` closes
//! the connection that receives the next request other than a login, after logging it and
//! before answering: a reconnect between a request and its response.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::{Value, json};
use tickwire::blocking::{Message, Recv, WebSocket};

use super::conn::{self, Command, Tcp};
use super::{CloseHow, Nanos, Sim, max_in_window, nanos, parse_duration};

/// How long a receive waits before due answers are written.
const TICK: Duration = Duration::from_millis(1);

/// The order gateway's behaviour (flags of `exchange-sim`).
#[derive(Args, Clone, Debug)]
pub(crate) struct OrderArgs {
    /// How long an order request waits before it is answered.
    #[arg(long, value_parser = parse_duration, default_value = "1ms")]
    order_delay: Duration,
    /// Up to this much more, drawn per request (answers then overtake each other).
    #[arg(long, value_parser = parse_duration, default_value = "0ms")]
    order_jitter: Duration,
    /// Leave every Nth order request unanswered (0: none).
    #[arg(long, default_value_t = 0)]
    order_drop_every: u64,
    /// Answer every Nth order request twice (0: none).
    #[arg(long, default_value_t = 0)]
    order_duplicate_every: u64,
    /// Answer every Nth order request `--order-late-by` late (0: none).
    #[arg(long, default_value_t = 0)]
    order_late_every: u64,
    /// How late `--order-late-every` answers.
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    order_late_by: Duration,
    /// Push an `executionReport` (a fill) after each order's answer.
    #[arg(long)]
    order_fills: bool,
    /// The request weight allowed per minute, reported in every answer; a request past it
    /// is answered 429.
    #[arg(long, default_value_t = 6_000)]
    weight_limit: u64,
}

/// One request received.
pub(crate) struct Received {
    conn: u64,
    id: Value,
    method: String,
    at: Nanos,
    /// Before the login's answer (with `--login-token`).
    before_login: bool,
}

/// One answer written.
pub(crate) struct Answered {
    conn: u64,
    id: Value,
    at: Nanos,
    status: u16,
}

/// The gateway's log, kept in the simulator's state.
#[derive(Default)]
pub(crate) struct Log {
    received: Vec<Received>,
    answered: Vec<Answered>,
    /// When each counted request arrived, for the weight of the last minute.
    weighed: Vec<Nanos>,
    /// Order requests so far, over every connection (what the faults count).
    orders: u64,
    /// `/cut-next`: how the connection receiving the next request is closed.
    pub(crate) cut_next: Option<CloseHow>,
}

/// Serves one order connection until it ends.
pub(crate) fn run<S: Tcp>(sim: &Arc<Sim>, mut ws: WebSocket<S>, peer: Option<SocketAddr>) {
    let conn = conn::register(sim, peer, &[]);
    ws.set_read_timeout(Some(TICK));
    let mut gateway = Gateway {
        sim,
        conn: conn.id,
        logged_in: sim.args.login_token.is_none(),
        due: BinaryHeap::new(),
        order: 0,
        random: 0x9E37_79B9_7F4A_7C15 ^ conn.id,
    };
    let ending = loop {
        match ws.recv() {
            Ok(Recv::Message(Message::Text(text))) => {
                let text = text.to_owned();
                if let Some(how) = gateway.on_request(&text) {
                    break conn::close(&mut ws, how, 1000);
                }
                continue;
            }
            Ok(Recv::Closed(frame)) => {
                let code = frame.map_or(1005, |f| u16::from(f.code));
                let _ = ws.finish();
                break format!("peer ws {code}");
            }
            Ok(_) => {}
            Err(e) => break format!("peer error: {e}"),
        }
        if let Some(Command::Close { how, code }) = conn.take_command() {
            break conn::close(&mut ws, how, code);
        }
        if let Err(e) = gateway.write_due(&mut ws) {
            break format!("peer error: {e}");
        }
    };
    conn::finish(&conn, ending);
}

/// An answer to write: when, the order it was scheduled in, the request's id (JSON), its
/// status (0: a pushed message), the text.
type Due = (Instant, u64, String, u16, String);

struct Gateway<'a> {
    sim: &'a Sim,
    conn: u64,
    logged_in: bool,
    /// Answers to write, earliest first.
    due: BinaryHeap<Reverse<Due>>,
    order: u64,
    random: u64,
}

impl Gateway<'_> {
    /// Logs a request and schedules its answers; `Some` when the connection is to be cut.
    fn on_request(&mut self, text: &str) -> Option<CloseHow> {
        let request: Value = serde_json::from_str(text).unwrap_or_default();
        let id = request["id"].clone();
        let method = request["method"].as_str().unwrap_or_default().to_owned();
        let at = self.sim.now();
        let args = &self.sim.args;
        let mut state = self.sim.lock();
        let log = &mut state.orders;
        log.received.push(Received {
            conn: self.conn,
            id: id.clone(),
            method: method.clone(),
            at,
            before_login: !self.logged_in,
        });
        if method != "session.logon"
            && let Some(how) = log.cut_next.take()
        {
            return Some(how);
        }
        let now = Instant::now();
        if method == "session.logon" {
            let token = request["params"]["token"].as_str();
            let ok = args.login_token.as_deref().is_none_or(|t| Some(t) == token);
            self.logged_in |= ok;
            let answer = if ok {
                json!({"id": id, "status": 200, "result": {"authorizedSince": at / 1_000_000}})
            } else {
                json!({"id": id, "status": 401,
                    "error": {"code": -1022, "msg": "Signature for this request is not valid."}})
            };
            self.schedule(
                now + args.orders.order_delay,
                &id,
                if ok { 200 } else { 401 },
                answer,
            );
            return None;
        }
        if !self.logged_in {
            let answer = json!({"id": id, "status": 401,
                "error": {"code": -1002, "msg": "You are not authorized to execute this request."}});
            self.schedule(now, &id, 401, answer);
            return None;
        }
        log.weighed.push(at);
        let since = at.saturating_sub(nanos(Duration::from_secs(60)));
        let used = log.weighed.iter().rev().take_while(|t| **t > since).count() as u64;
        log.orders += 1;
        let n = log.orders;
        drop(state);
        let orders = &args.orders;
        let limits = json!([{"rateLimitType": "REQUEST_WEIGHT", "interval": "MINUTE",
            "intervalNum": 1, "limit": orders.weight_limit, "count": used}]);
        if used > orders.weight_limit {
            let answer = json!({"id": id, "status": 429, "rateLimits": limits,
                "error": {"code": -1003, "msg": "Too much request weight used."}});
            self.schedule(now, &id, 429, answer);
            return None;
        }
        if every(orders.order_drop_every, n) {
            return None;
        }
        let mut delay = orders.order_delay + self.jitter(orders.order_jitter);
        if every(orders.order_late_every, n) {
            delay += orders.order_late_by;
        }
        let answer = json!({"id": id, "status": 200, "rateLimits": limits,
            "result": {"orderId": n, "status": "NEW", "method": method}});
        self.schedule(now + delay, &id, 200, answer.clone());
        if every(orders.order_duplicate_every, n) {
            self.schedule(now + delay + Duration::from_millis(1), &id, 200, answer);
        }
        if orders.order_fills {
            let fill = json!({"event": {"e": "executionReport", "i": n, "X": "FILLED"}});
            self.schedule(
                now + delay + Duration::from_micros(10),
                &Value::Null,
                0,
                fill,
            );
        }
        None
    }

    fn schedule(&mut self, at: Instant, id: &Value, status: u16, text: Value) {
        self.order += 1;
        let entry = (at, self.order, id.to_string(), status, text.to_string());
        self.due.push(Reverse(entry));
    }

    /// Writes the answers that are due, and logs them.
    fn write_due<S: Tcp>(&mut self, ws: &mut WebSocket<S>) -> Result<(), tickwire::ws::Error> {
        let now = Instant::now();
        let mut wrote = false;
        while self.due.peek().is_some_and(|Reverse(entry)| entry.0 <= now) {
            let Some(Reverse((_, _, id, status, text))) = self.due.pop() else {
                break;
            };
            ws.send_text(&text)?;
            wrote = true;
            if status != 0 {
                let id = serde_json::from_str(&id).unwrap_or(Value::Null);
                self.sim.lock().orders.answered.push(Answered {
                    conn: self.conn,
                    id,
                    at: self.sim.now(),
                    status,
                });
            }
        }
        if wrote {
            ws.flush()?;
        }
        Ok(())
    }

    /// A draw in `0..=max` (xorshift: the simulator's faults need no quality).
    fn jitter(&mut self, max: Duration) -> Duration {
        if max.is_zero() {
            return Duration::ZERO;
        }
        self.random ^= self.random << 13;
        self.random ^= self.random >> 7;
        self.random ^= self.random << 17;
        Duration::from_nanos(self.random % (nanos(max) + 1))
    }
}

fn every(n: u64, count: u64) -> bool {
    n > 0 && count.is_multiple_of(n)
}

/// `GET /orders`: every request received and every answer written, and the most request
/// weight counted in any minute.
pub(crate) fn report(sim: &Sim) -> Value {
    let state = sim.lock();
    let log = &state.orders;
    let received: Vec<Value> = log
        .received
        .iter()
        .map(|r| {
            json!({"conn": r.conn, "id": r.id, "method": r.method, "at_ns": r.at,
                "before_login": r.before_login})
        })
        .collect();
    let answered: Vec<Value> = log
        .answered
        .iter()
        .map(|a| json!({"conn": a.conn, "id": a.id, "at_ns": a.at, "status": a.status}))
        .collect();
    json!({
        "received": received,
        "answered": answered,
        "max_weight_per_minute": max_in_window(&log.weighed, Duration::from_secs(60)),
        "weight_limit": sim.args.orders.weight_limit,
    })
}
