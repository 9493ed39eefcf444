//! The simulator's control interface: HTTP/1.1 on its own port, one request per connection,
//! JSON answers. `GET /counters`, `GET /record`, `GET /orders` (the order gateway's log),
//! and the commands `/close`, `/stall`, `/resume`, `/gap`, `/replay`, `/reject` and
//! `/cut-next` with their arguments in the query string
//! (GET or POST alike, so `curl URL` and a test's one-line request both work).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::conn::{Command, Conn};
use super::{CloseHow, Sim, max_in_window};

/// The largest request head read.
const MAX_HEAD: usize = 16 << 10;

pub(crate) fn serve(sim: &Sim, listener: &TcpListener) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let (status, body) = match read_target(&mut stream) {
            Ok(target) => answer(sim, &target),
            Err(e) => (400, json!({"error": e})),
        };
        let reason = match status {
            200 => "OK",
            400 => "Bad Request",
            _ => "Not Found",
        };
        let body = body.to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n\
             content-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        );
    }
}

/// Reads a request head; returns its target (`/path?query`).
fn read_target(stream: &mut TcpStream) -> Result<String, String> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD {
            return Err("request head too large".to_owned());
        }
        let n = stream.read(&mut chunk).map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("connection closed before the end of the request head".to_owned());
        }
        head.extend_from_slice(&chunk[..n]);
    }
    let head = String::from_utf8_lossy(&head);
    let mut words = head.lines().next().unwrap_or_default().split(' ');
    match (words.next(), words.next()) {
        (Some("GET" | "POST"), Some(target)) => Ok(target.to_owned()),
        _ => Err("expected GET or POST /path".to_owned()),
    }
}

/// The query's `name=value` pairs.
struct Query<'a>(Vec<(&'a str, &'a str)>);

impl<'a> Query<'a> {
    fn get(&self, name: &str) -> Option<&'a str> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }

    fn number<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>, String> {
        self.get(name)
            .map(|v| {
                v.parse()
                    .map_err(|_| format!("{name}={v:?} is not a number"))
            })
            .transpose()
    }

    fn required<T: std::str::FromStr>(&self, name: &str) -> Result<T, String> {
        self.number(name)?
            .ok_or_else(|| format!("{name}= is required"))
    }
}

fn answer(sim: &Sim, target: &str) -> (u16, Value) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = Query(
        query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once('=').unwrap_or((p, "")))
            .collect(),
    );
    let result = match path {
        "/counters" => counters(sim, &query),
        "/record" => Ok(record(sim)),
        "/close" => close(sim, &query),
        "/stall" => to_conn(sim, &query, |_| Ok(Command::Stall(true))),
        "/resume" => to_conn(sim, &query, |_| Ok(Command::Stall(false))),
        "/replay" => to_conn(sim, &query, |q| Ok(Command::Replay(q.required("count")?))),
        "/gap" => gap(sim, &query),
        "/reject" => reject(sim, &query),
        "/orders" => Ok(super::orders::report(sim)),
        "/cut-next" => cut_next(sim, &query),
        _ => return (404, json!({"error": format!("no such command {path:?}")})),
    };
    match result {
        Ok(body) => (200, body),
        Err(e) => (400, json!({"error": e})),
    }
}

/// `/cut-next?how=ws|fin|rst`: the order connection that receives the next request closes
/// before it answers.
fn cut_next(sim: &Sim, query: &Query<'_>) -> Result<Value, String> {
    let how = query
        .get("how")
        .map_or(Ok(CloseHow::Rst), CloseHow::parse)?;
    sim.lock().orders.cut_next = Some(how);
    Ok(json!({"armed": true}))
}

fn counters(sim: &Sim, query: &Query<'_>) -> Result<Value, String> {
    let window = query
        .number::<u64>("window_ms")?
        .map_or(sim.args.count_window, Duration::from_millis);
    if window.is_zero() {
        return Err("window_ms must be more than 0".to_owned());
    }
    let attempt_window = sim.args.connect_budget.map_or(window, |(_, w)| w);
    let state = sim.lock();
    let times: Vec<u64> = state.attempts.iter().map(|a| a.at).collect();
    let mut refused = serde_json::Map::new();
    for status in state.attempts.iter().filter_map(|a| a.refused) {
        let count = refused.entry(status.to_string()).or_insert(json!(0));
        *count = json!(count.as_u64().unwrap_or(0) + 1);
    }
    let published: serde_json::Map<String, Value> = sim
        .args
        .keys
        .iter()
        .zip(&state.seqs)
        .map(|(k, s)| (k.clone(), json!(s)))
        .collect();
    let conns: Vec<Value> = state
        .conns
        .iter()
        .map(|c| conn_counters(sim, c, window))
        .collect();
    Ok(json!({
        "attempts": state.attempts.len(),
        "refused": refused,
        "max_attempts_in_window": max_in_window(&times, attempt_window),
        "attempt_window_ms": attempt_window.as_millis(),
        "window_ms": window.as_millis(),
        "published": published,
        "connections": conns,
    }))
}

fn conn_counters(sim: &Sim, conn: &Conn, window: Duration) -> Value {
    let shared = conn.lock();
    let subscribed: Vec<&str> = sim
        .args
        .keys
        .iter()
        .zip(&shared.subscribed)
        .filter(|(_, on)| **on)
        .map(|(k, _)| k.as_str())
        .collect();
    json!({
        "conn": conn.id,
        "peer": conn.peer.map(|p| p.to_string()),
        "opened_ms": conn.opened / 1_000_000,
        "open": shared.ended.is_none(),
        "ended": shared.ended,
        "logged_in": shared.logged_in,
        "subscribed": subscribed,
        "stalled": shared.stalled,
        "sent": shared.sent,
        "received": shared.received.len(),
        "received_control": shared.received_control,
        "max_received_in_window": max_in_window(&shared.received, window),
        "app_pings_answered": shared.app_pings_answered,
        "server_pings_sent": shared.server_pings_sent,
        "server_pongs": shared.server_pongs,
    })
}

fn record(sim: &Sim) -> Value {
    let state = sim.lock();
    let key = |k: usize| sim.args.keys[k].as_str();
    let sent: Vec<Value> = state
        .sent
        .iter()
        .map(|s| json!({"conn": s.conn, "key": key(s.key), "seq": s.seq, "replay": s.replay}))
        .collect();
    let skipped: Vec<Value> = state
        .skipped
        .iter()
        .map(|s| json!({"key": key(s.key), "from": s.from, "to": s.to}))
        .collect();
    json!({"sent": sent, "skipped": skipped})
}

/// The connection `conn=` names.
fn find_conn(sim: &Sim, query: &Query<'_>) -> Result<Arc<Conn>, String> {
    let id: u64 = query.required("conn")?;
    let state = sim.lock();
    usize::try_from(id)
        .ok()
        .and_then(|i| state.conns.get(i))
        .cloned()
        .ok_or_else(|| format!("no connection {id}"))
}

fn to_conn(
    sim: &Sim,
    query: &Query<'_>,
    command: impl FnOnce(&Query<'_>) -> Result<Command, String>,
) -> Result<Value, String> {
    let conn = find_conn(sim, query)?;
    let command = command(query)?;
    if !conn.command(command) {
        return Err(format!("connection {} has ended", conn.id));
    }
    Ok(json!({"ok": true, "conn": conn.id}))
}

fn close(sim: &Sim, query: &Query<'_>) -> Result<Value, String> {
    to_conn(sim, query, |q| {
        let how = CloseHow::parse(q.get("how").unwrap_or("ws"))?;
        let code = q.number("code")?.unwrap_or(1000);
        Ok(Command::Close { how, code })
    })
}

/// `/gap?key=K&size=N`: the next N numbers of K are published on no connection; with
/// `conn=`, left out on that connection only.
fn gap(sim: &Sim, query: &Query<'_>) -> Result<Value, String> {
    let name = query.get("key").ok_or("key= is required")?;
    let key = sim
        .key_index(name)
        .ok_or_else(|| format!("no key {name:?}"))?;
    let count: u64 = query.required("size")?;
    if query.get("conn").is_some() {
        return to_conn(sim, query, |_| Ok(Command::Gap { key, count }));
    }
    sim.lock().skip[key] += count;
    Ok(json!({"ok": true}))
}

/// `/reject?count=N&status=S`: refuse the next N connect attempts with S (default 503).
fn reject(sim: &Sim, query: &Query<'_>) -> Result<Value, String> {
    let count: usize = query.number("count")?.unwrap_or(1);
    let status: u16 = query.number("status")?.unwrap_or(503);
    if !(400..600).contains(&status) {
        return Err(format!("status={status} is not a 4xx or 5xx"));
    }
    sim.lock()
        .refuse_next
        .extend(std::iter::repeat_n(status, count));
    Ok(json!({"ok": true}))
}
