//! `tickwire exchange-sim`: an exchange-like WebSocket feed to prove feed clients against.
//!
//! One generator thread publishes sequenced messages on several keys (a counter per key,
//! shared by every connection, as an exchange numbers a product's messages); a thread per
//! connection (on `tickwire::blocking`, ws:// or wss://) holds the exchange's rules for that
//! connection (login, subscription deadline, application ping/pong, idle and age closes) and
//! sends it the messages of the keys it subscribed to; a control thread answers HTTP
//! requests on a second port with counters and the record of what was sent, and takes the
//! faults a test triggers mid-run (closes with FIN or RST, stalls, gaps, replays, rejected
//! connects). docs/FEEDS.md "The exchange simulator" describes the flags and commands.

mod conn;
mod control;
mod orders;
mod style;

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::{IpAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use clap::{Args, ValueEnum};
use tickwire::blocking::{Response, ServerBuilder, ServerTlsConfig};

use crate::print_listening;
use style::Style;

#[derive(Args, Clone)]
pub(crate) struct ExsimArgs {
    /// Address to listen on (the feed and the control port).
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// The feed's port (0 picks a free one; the chosen port is printed).
    #[arg(long, default_value_t = 9002)]
    port: u16,
    /// The control interface's HTTP port (0, the default, picks a free one; printed).
    #[arg(long, default_value_t = 0)]
    control_port: u16,
    /// The keys (products) published, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "BTC-USD,ETH-USD,SOL-USD")]
    keys: Vec<String>,
    /// Messages per second on each key (0: none).
    #[arg(long, default_value_t = 100)]
    rate: u32,
    /// The exchange whose message shapes the feed speaks (subscribe, acknowledgements, data).
    #[arg(long, value_enum, default_value_t = Style::Plain)]
    style: Style,
    /// Pad every data message with a `pad` field to at least this many bytes.
    #[arg(long, default_value_t = 0)]
    size: usize,
    /// Require `{"op":"login","token":TOKEN}` as the first message.
    #[arg(long, value_name = "TOKEN")]
    login_token: Option<String>,
    /// Close (1008) a connection that has not subscribed this long after it opened.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    subscribe_deadline: Duration,
    /// Do not acknowledge subscriptions (by default `{"event":"subscribed",...}` answers).
    #[arg(long)]
    no_ack: bool,
    /// Close every connection at this age (Binance closes stream connections at 24 h).
    #[arg(long, value_parser = parse_duration)]
    max_age: Option<Duration>,
    /// How `--max-age` closes: a close frame (1000), a FIN without one, or a reset.
    #[arg(long, value_enum, default_value_t = CloseHow::Ws)]
    age_close: CloseHow,
    /// Connect attempts allowed per source IP, `N/DUR` (sliding window); more are refused.
    #[arg(long, value_parser = parse_budget, value_name = "N/DUR")]
    connect_budget: Option<(usize, Duration)>,
    /// The status refusing an attempt over `--connect-budget` (429, or a 5xx).
    #[arg(long, default_value_t = 429, value_parser = clap::value_parser!(u16).range(400..600))]
    reject_status: u16,
    /// The client's application ping text, answered with `--app-pong`.
    #[arg(long, default_value = "ping")]
    app_ping: String,
    /// The answer to `--app-ping`, and the answer expected to the server's own pings.
    #[arg(long, default_value = "pong")]
    app_pong: String,
    /// Close (4000) a connection whose client sent no message for this long (OKX: 30 s).
    #[arg(long, value_parser = parse_duration)]
    idle_close: Option<Duration>,
    /// Send the client `--app-ping` text this often, expecting `--app-pong` back.
    #[arg(long, value_parser = parse_duration)]
    server_ping_every: Option<Duration>,
    /// Close (4001) a connection that did not answer a server ping within this.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    server_ping_deadline: Duration,
    /// The window of the counters' `max_received_in_window` (control: `?window_ms=`).
    #[arg(long, value_parser = parse_duration, default_value = "1s")]
    count_window: Duration,
    /// Also write the record of every data message sent as JSON lines to this file.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Serve wss://: the certificate chain (PEM, leaf first). Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<String>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<String>,
    /// The order gateway (connections to `/ws-api...`).
    #[command(flatten)]
    orders: orders::OrderArgs,
}

/// How the simulator ends a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum CloseHow {
    /// A WebSocket close frame, then the close handshake.
    Ws,
    /// TCP FIN with no close frame.
    Fin,
    /// TCP RST (SO_LINGER 0), no close frame.
    Rst,
}

impl CloseHow {
    fn parse(text: &str) -> Result<Self, String> {
        <Self as ValueEnum>::from_str(text, true)
            .map_err(|_| format!("how={text:?}: ws, fin or rst"))
    }
}

/// `500ms`, `5s`, `2m`, `1h`, or a bare number of seconds.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: u64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 500ms, 5s, 2m or 1h"))?;
    let unit_ms = match unit {
        "ms" => 1,
        "" | "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        _ => return Err(format!("{text:?}: the unit is ms, s, m or h")),
    };
    number
        .checked_mul(unit_ms)
        .map(Duration::from_millis)
        .ok_or_else(|| format!("{text:?} is too long"))
}

/// `N/DUR`: at most N in any window of DUR (`exchange-sim --connect-budget`, `feed
/// --max-connects`, `feed --max-sends`).
pub(crate) fn parse_budget(text: &str) -> Result<(usize, Duration), String> {
    let (count, window) = text
        .split_once('/')
        .ok_or_else(|| format!("{text:?} is not N/DUR (such as 5/1s)"))?;
    let count = count
        .parse()
        .map_err(|_| format!("{count:?} is not a count"))?;
    let window = parse_duration(window)?;
    if window.is_zero() {
        return Err("the window must be longer than 0".to_owned());
    }
    Ok((count, window))
}

/// Nanoseconds since the simulator started: the clock of every recorded time.
type Nanos = u64;

/// One connect attempt (a TCP connection accepted on the feed port).
struct Attempt {
    at: Nanos,
    ip: IpAddr,
    /// The status it was refused with, if it was.
    refused: Option<u16>,
}

/// One data message sent (queued on the connection's socket).
pub(crate) struct Sent {
    conn: u64,
    key: usize,
    seq: u64,
    replay: bool,
}

/// Numbers published on no connection: a gap the simulator made (`/gap` without `conn`).
struct Skipped {
    key: usize,
    from: u64,
    to: u64,
}

/// What the threads share.
pub(crate) struct Sim {
    args: ExsimArgs,
    start: Instant,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    attempts: Vec<Attempt>,
    /// Statuses the next connect attempts are refused with (`/reject`).
    refuse_next: VecDeque<u16>,
    conns: Vec<Arc<conn::Conn>>,
    /// The last number published on each key.
    seqs: Vec<u64>,
    /// Numbers to skip on each key at its next message (`/gap` without `conn`).
    skip: Vec<u64>,
    skipped: Vec<Skipped>,
    sent: Vec<Sent>,
    record_file: Option<BufWriter<File>>,
    /// The order gateway's requests and answers.
    orders: orders::Log,
}

impl Sim {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A thread that panicked holding the lock left counters only: keep serving them.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> Nanos {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn key_index(&self, key: &str) -> Option<usize> {
        self.args.keys.iter().position(|k| k == key)
    }

    /// Records data messages a connection sent.
    pub(crate) fn record_sent(&self, sent: impl IntoIterator<Item = Sent>) {
        let mut state = self.lock();
        for s in sent {
            if let Some(file) = &mut state.record_file {
                let _ = writeln!(
                    file,
                    "{}",
                    serde_json::json!({"conn": s.conn, "key": self.args.keys[s.key],
                        "seq": s.seq, "replay": s.replay})
                );
            }
            state.sent.push(s);
        }
        if let Some(file) = &mut state.record_file {
            let _ = file.flush();
        }
    }
}

pub(crate) fn run(args: &ExsimArgs) -> Result<(), String> {
    if args.keys.is_empty() || args.keys.iter().any(String::is_empty) {
        return Err("--keys needs at least one non-empty key".to_owned());
    }
    let tls = crate::server_tls_files(args.tls_cert.as_deref(), args.tls_key.as_deref(), None)?;
    let listener =
        TcpListener::bind((args.bind.as_str(), args.port)).map_err(|e| format!("bind: {e}"))?;
    let control = TcpListener::bind((args.bind.as_str(), args.control_port))
        .map_err(|e| format!("bind the control port: {e}"))?;
    let record_file = match &args.record {
        Some(path) => Some(BufWriter::new(
            File::create(path).map_err(|e| format!("{}: {e}", path.display()))?,
        )),
        None => None,
    };
    let sim = Arc::new(Sim {
        args: args.clone(),
        start: Instant::now(),
        state: Mutex::new(State {
            seqs: vec![0; args.keys.len()],
            skip: vec![0; args.keys.len()],
            record_file,
            ..State::default()
        }),
    });
    print_listening(
        "exchange-sim",
        tls.is_some(),
        listener.local_addr().map_err(|e| e.to_string())?,
    );
    println!(
        "tickwire: exchange-sim control on http://{}",
        control.local_addr().map_err(|e| e.to_string())?
    );
    let _ = std::io::stdout().flush();
    {
        let sim = Arc::clone(&sim);
        std::thread::spawn(move || control::serve(&sim, &control));
    }
    if args.rate > 0 {
        let sim = Arc::clone(&sim);
        std::thread::spawn(move || publish(&sim));
    }
    let builder = ServerBuilder::new().handshake_timeout(Duration::from_secs(5));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let refused = admit(&sim, &stream);
        let sim = Arc::clone(&sim);
        let builder = builder.clone();
        let tls = tls.clone();
        std::thread::spawn(move || handshake(&sim, &builder, tls.as_ref(), stream, refused));
    }
    Ok(())
}

/// Counts a connect attempt and decides whether it is refused (and with which status).
fn admit(sim: &Sim, stream: &TcpStream) -> Option<u16> {
    let ip = stream
        .peer_addr()
        .map_or(IpAddr::from([0, 0, 0, 0]), |a| a.ip());
    let at = sim.now();
    let mut state = sim.lock();
    let refused = state.refuse_next.pop_front().or_else(|| {
        let (budget, window) = sim.args.connect_budget?;
        let since = at.saturating_sub(nanos(window));
        let recent = state
            .attempts
            .iter()
            .rev()
            .take_while(|a| a.at > since)
            .filter(|a| a.ip == ip)
            .count();
        (recent >= budget).then_some(sim.args.reject_status)
    });
    state.attempts.push(Attempt { at, ip, refused });
    refused
}

fn handshake(
    sim: &Arc<Sim>,
    builder: &ServerBuilder,
    tls: Option<&ServerTlsConfig>,
    stream: TcpStream,
    refused: Option<u16>,
) {
    // The request's target, for the styles that subscribe by URL (Binance).
    let target = std::cell::RefCell::new(String::new());
    let decide = |request: &tickwire::blocking::Request| match refused {
        Some(status) => Response::reject(status).header("Retry-After", "1"),
        None => {
            request.path().clone_into(&mut target.borrow_mut());
            Response::accept(request)
        }
    };
    let opening = || sim.args.style.opening(&target.borrow(), &sim.args.keys);
    let gateway = || target.borrow().starts_with("/ws-api");
    // A refused or failed handshake is counted as an attempt already; nothing more to do.
    let peer = stream.peer_addr().ok();
    match tls {
        Some(tls) => {
            if let Ok(ws) = builder.accept_tls_with(stream, tls, decide) {
                match gateway() {
                    true => orders::run(sim, ws, peer),
                    false => conn::run(sim, ws, peer, opening()),
                }
            }
        }
        None => {
            if let Ok(ws) = builder.accept_with(stream, decide) {
                match gateway() {
                    true => orders::run(sim, ws, peer),
                    false => conn::run(sim, ws, peer, opening()),
                }
            }
        }
    }
}

/// The generator: every `1 / rate` seconds, the next number on every key, to every
/// connection subscribed to it.
fn publish(sim: &Sim) {
    let interval = Duration::from_secs(1) / sim.args.rate;
    let mut next = Instant::now();
    loop {
        next += interval;
        // Pacing, not synchronisation: the feed's rate is a number of messages per second.
        std::thread::sleep(next.saturating_duration_since(Instant::now()));
        let mut state = sim.lock();
        for key in 0..sim.args.keys.len() {
            let skip = std::mem::take(&mut state.skip[key]);
            if skip > 0 {
                let from = state.seqs[key] + 1;
                state.skipped.push(Skipped {
                    key,
                    from,
                    to: from + skip - 1,
                });
                state.seqs[key] += skip;
            }
            state.seqs[key] += 1;
            let seq = state.seqs[key];
            for conn in &state.conns {
                conn.offer(key, seq);
            }
        }
    }
}

fn nanos(duration: Duration) -> Nanos {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// The most of `times` (sorted) that fall in any window of `window`.
fn max_in_window(times: &[Nanos], window: Duration) -> usize {
    let window = nanos(window);
    let mut first = 0;
    let mut most = 0;
    for (last, &at) in times.iter().enumerate() {
        while at - times[first] >= window {
            first += 1;
        }
        most = most.max(last + 1 - first);
    }
    most
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_and_budgets_parse_or_name_the_mistake() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("5 s").unwrap_err().contains("unit"));
        assert!(parse_duration("ms").is_err());
        assert_eq!(parse_budget("5/1s"), Ok((5, Duration::from_secs(1))));
        assert!(parse_budget("5").is_err());
        assert!(parse_budget("5/0s").is_err());
    }

    #[test]
    fn the_window_count_is_sliding() {
        let ms = |n: u64| n * 1_000_000;
        let times = [ms(0), ms(900), ms(1000), ms(1100), ms(1800), ms(3000)];
        assert_eq!(max_in_window(&times, Duration::from_secs(1)), 4);
        assert_eq!(max_in_window(&times, Duration::from_millis(100)), 1);
        assert_eq!(max_in_window(&[], Duration::from_secs(1)), 0);
    }
}
