//! `tickwire rpc URL --request TEXT...`: order entry (`tickwire::rpc`) on the command line,
//! on the blocking `Rpc` or, with `--runtime tokio`, tickwire-tokio's. Each request (a JSON
//! object; the client sets its `id`) is sent once the connection is ready (after `--login`'s
//! response, when given), and one JSON line is printed as it resolves:
//! `{"request":I,"id":N,"outcome":"response"|"timed_out"|"not_sent"|"outcome_unknown"|
//! "rejected","rtt_ns":..,"text":".."}` (I: its position on the command line; `rtt_ns` and
//! `text` with a response), one `{"event":"pushed","text":..}` per message answering no
//! request, `{"event":"late",...}` for an answer after its request resolved, and the feed's
//! connection lines (`connected`, `closed`, `reconnecting`, ...). It exits 0 once every
//! request resolved; with one stderr line and a failure status when the session ended (the
//! login refused, `--max-attempts` failed connects: every request still resolves first).

use std::collections::HashMap;
use std::io::{self, Write};
use std::time::Duration;

use clap::Args;
use tickwire::codec::mux::Backoff;
use tickwire::feed::{FeedConfig, ReconnectPolicy, SendQuota};
use tickwire::rpc::{Event, Login, LoginFailure, Outcome, Request, RpcConfig, Ticket};

use crate::exsim::{parse_budget, parse_duration};
use crate::feed_cmd::{Printer, parse_backoff};
use crate::{ClientArgs, client_builder};

#[derive(Args)]
pub(crate) struct RpcArgs {
    /// The ws:// or wss:// URL of the exchange's WebSocket API.
    #[arg(value_name = "URL")]
    url: String,
    /// A login request (a JSON object, its id set by the client) sent first on each
    /// connection; no request goes out before its response, which must carry no `error`
    /// and, if it has a `status`, a 2xx one.
    #[arg(long, value_name = "TEXT")]
    login: Option<String>,
    /// A request, a JSON object (its id set by the client); repeatable, sent in order.
    #[arg(long = "request", value_name = "TEXT", required = true)]
    requests: Vec<String>,
    /// Each request's deadline, from the start.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "10s")]
    timeout: Duration,
    /// Requests written and not answered, at most.
    #[arg(long, value_name = "N", default_value_t = 64)]
    in_flight: usize,
    /// The member that carries the id (`id`; Kraken `req_id`; Bybit `reqId`).
    #[arg(long, value_name = "NAME", default_value = "id")]
    id_field: String,
    /// Reconnect waits: full jitter between MIN and a ceiling doubling up to MAX.
    #[arg(long, value_name = "MIN:MAX", value_parser = parse_backoff, default_value = "100ms:5s")]
    backoff: Backoff,
    /// End (status 1) after this many failed connects in a row.
    #[arg(long, value_name = "N")]
    max_attempts: Option<u32>,
    /// At most N messages sent in any window of DUR.
    #[arg(long, value_name = "N/DUR", value_parser = parse_budget)]
    max_sends: Option<(usize, Duration)>,
    /// From the connect to the handshake's answer, at most.
    #[arg(long, value_name = "DUR", value_parser = parse_duration, default_value = "10s")]
    connect_timeout: Duration,
    #[command(flatten)]
    client: ClientArgs,
}

/// What the lines need: each ticket's place on the command line, how many are left.
struct Lines {
    place: HashMap<Ticket, usize>,
    left: usize,
    feed: Printer,
    out: io::BufWriter<io::Stdout>,
}

pub(crate) fn run(args: &RpcArgs, tokio: bool) -> Result<(), String> {
    let parsed =
        url::Url::parse(&args.url).map_err(|e| format!("invalid URL {:?}: {e}", args.url))?;
    if !matches!(parsed.scheme(), "ws" | "wss") {
        return Err(format!("{:?}: the URL is ws:// or wss://", args.url));
    }
    let (feed, config) = configs(args)?;
    let mut lines = Lines {
        place: HashMap::new(),
        left: args.requests.len(),
        feed: Printer::new(vec![args.url.clone()], None),
        out: io::BufWriter::new(io::stdout()),
    };
    if tokio {
        let client = client_builder(tickwire::tokio::ClientBuilder::new(), &args.client)?;
        let runtime = crate::tokio_ws::current_thread()?;
        runtime.block_on(async {
            let mut rpc =
                tickwire::tokio::rpc::Rpc::new(feed, config, client).map_err(|e| e.to_string())?;
            for (index, text) in args.requests.iter().enumerate() {
                let submitted = rpc.submit(text, Request::new());
                lines.submitted(index, submitted)?;
            }
            while lines.left > 0 {
                let Some(event) = rpc.next_event().await else {
                    break;
                };
                lines.event(&event)?;
            }
            lines.finish(rpc.ended().map(ToString::to_string))
        })
    } else {
        let client = client_builder(tickwire::blocking::ClientBuilder::new(), &args.client)?;
        let mut rpc =
            tickwire::blocking::rpc::Rpc::new(feed, config, client).map_err(|e| e.to_string())?;
        for (index, text) in args.requests.iter().enumerate() {
            let submitted = rpc.submit(text, Request::new());
            lines.submitted(index, submitted)?;
        }
        while lines.left > 0 {
            let Some(event) = rpc.next_event().map_err(|e| format!("rpc: {e}"))? else {
                break;
            };
            lines.event(&event)?;
        }
        lines.finish(rpc.ended().map(ToString::to_string))
    }
}

/// The feed's and the session's configuration from the flags.
fn configs(args: &RpcArgs) -> Result<(FeedConfig, RpcConfig), String> {
    let reconnect = ReconnectPolicy::new()
        .with_backoff(args.backoff)
        .with_max_attempts(args.max_attempts);
    let mut feed = FeedConfig::new(args.url.clone())
        .with_reconnect(reconnect)
        .with_connect_timeout(args.connect_timeout);
    if let Some((units, window)) = args.max_sends {
        let units = u32::try_from(units).map_err(|_| "--max-sends: too many".to_owned())?;
        feed = feed.with_send_quota(Some(SendQuota::per_window(units, window)));
    }
    let login = args
        .login
        .clone()
        .map(|text| Login::new(move || text.clone(), accept_login).with_timeout(args.timeout));
    let config = RpcConfig::new()
        .with_ids(tickwire::rpc::IdFormat::field(&args.id_field))
        .with_login(login)
        .with_timeout(args.timeout)
        .with_max_in_flight(args.in_flight.max(1))
        .with_max_queued(args.requests.len().max(1_024));
    Ok((feed, config))
}

/// A login's response is accepted when it has no `error` and no failing `status`.
fn accept_login(response: &[u8]) -> Result<(), String> {
    let value: serde_json::Value =
        serde_json::from_slice(response).map_err(|e| format!("not JSON: {e}"))?;
    let status_ok = value["status"]
        .as_u64()
        .is_none_or(|status| (200..300).contains(&status));
    if value["error"].is_null() && status_ok {
        return Ok(());
    }
    Err(String::from_utf8_lossy(response).into_owned())
}

impl Lines {
    /// Notes a submitted request, or prints its refusal.
    fn submitted(
        &mut self,
        index: usize,
        submitted: Result<Ticket, tickwire::rpc::Rejected>,
    ) -> Result<(), String> {
        match submitted {
            Ok(ticket) => {
                self.place.insert(ticket, index);
            }
            Err(rejected) => {
                self.left -= 1;
                let reason = json_string(&rejected.to_string());
                writeln!(
                    self.out,
                    r#"{{"request":{index},"id":null,"outcome":"rejected","reason":{reason}}}"#
                )
                .map_err(stdout)?;
            }
        }
        Ok(())
    }

    fn event(&mut self, event: &Event<'_>) -> Result<(), String> {
        match event {
            Event::Resolved {
                ticket,
                outcome,
                rtt,
            } => {
                let Some(index) = self.place.remove(ticket) else {
                    return Ok(());
                };
                self.left -= 1;
                write!(
                    self.out,
                    r#"{{"request":{index},"id":{},"outcome":"{}""#,
                    ticket.0,
                    outcome.name()
                )
                .map_err(stdout)?;
                if let (Outcome::Response(text), Some(rtt)) = (outcome, rtt) {
                    let text = json_string(&String::from_utf8_lossy(text));
                    write!(self.out, r#","rtt_ns":{},"text":{text}"#, rtt.as_nanos())
                        .map_err(stdout)?;
                }
                writeln!(self.out, "}}").map_err(stdout)?;
            }
            Event::Pushed { payload, .. } => {
                let text = json_string(&String::from_utf8_lossy(payload));
                writeln!(self.out, r#"{{"event":"pushed","text":{text}}}"#).map_err(stdout)?;
            }
            Event::Late {
                ticket, payload, ..
            } => {
                let text = json_string(&String::from_utf8_lossy(payload));
                writeln!(
                    self.out,
                    r#"{{"event":"late","id":{},"text":{text}}}"#,
                    ticket.0
                )
                .map_err(stdout)?;
            }
            Event::Ready { conn } => {
                writeln!(self.out, r#"{{"event":"ready","conn":{}}}"#, conn.0).map_err(stdout)?;
            }
            Event::LoginFailed { conn, failure } => {
                let (reason, text) = match failure {
                    LoginFailure::Rejected(text) => ("rejected", Some(text.as_str())),
                    LoginFailure::TimedOut => ("timed_out", None),
                    _ => ("no_id", None),
                };
                write!(
                    self.out,
                    r#"{{"event":"login_failed","conn":{},"reason":"{reason}""#,
                    conn.0
                )
                .map_err(stdout)?;
                if let Some(text) = text {
                    write!(self.out, r#","text":{}"#, json_string(text)).map_err(stdout)?;
                }
                writeln!(self.out, "}}").map_err(stdout)?;
            }
            Event::Feed(tickwire::feed::Event::Ended(_)) => {}
            Event::Feed(event) => self.feed.event(&mut self.out, event).map_err(stdout)?,
            _ => {}
        }
        self.out.flush().map_err(stdout)
    }

    /// Every request resolved: `Ok`; the session ended first: its reason.
    fn finish(mut self, ended: Option<String>) -> Result<(), String> {
        self.out.flush().map_err(stdout)?;
        match (self.left, ended) {
            (_, Some(why)) => Err(format!("session ended: {why}")),
            (0, None) => Ok(()),
            (left, None) => Err(format!("{left} requests never resolved")),
        }
    }
}

fn json_string(text: &str) -> String {
    serde_json::Value::from(text).to_string()
}

fn stdout(error: io::Error) -> String {
    format!("stdout: {error}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_login_is_accepted_without_an_error_and_with_a_good_status() {
        assert!(accept_login(br#"{"id":1,"status":200,"result":{}}"#).is_ok());
        assert!(accept_login(br#"{"id":1,"result":true}"#).is_ok());
        assert!(accept_login(br#"{"id":1,"status":401,"error":{"code":-1022}}"#).is_err());
        assert!(accept_login(br#"{"id":1,"error":{"code":-32600}}"#).is_err());
        assert!(accept_login(b"pong").is_err());
    }
}
