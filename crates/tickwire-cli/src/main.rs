//! The `tickwire` command: a WebSocket echo server and client, and a one-shot HTTP client, for
//! trying the library and for driving conformance and interop runs. `--runtime tokio` runs
//! every command through the tickwire-tokio transports instead of the blocking ones, with the
//! same behaviour and output (`tokio_ws` and the tokio half of `http_cmd`); `--runtime
//! reactor` runs `serve` on tickwire-server's epoll reactor (`reactor`). `demo` runs a local
//! market-data fan-out on the reactor and writes a report (`demo`).
#![forbid(unsafe_code)]

mod demo;
mod exsim;
mod feed_cmd;
mod fleet;
mod http_cmd;
mod net_args;
mod packet_cmd;
mod reactor;
mod rpc_cmd;
mod signals;
mod tokio_ws;

use std::io::{BufRead, Write};
use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use tickwire::blocking::{
    ClientBuilder, ClientTlsConfig, CloseCode, Error, Limits, Message, Recv, Sender, ServerBuilder,
    ServerTlsConfig, Transport, WebSocket,
};
use tickwire::ws::{ClientBuilder as ClientBuilderOf, ServerBuilder as ServerBuilderOf};

pub(crate) use net_args::{MaxTime, NetArgs, over, parse_seconds, with_net};

#[derive(Parser)]
#[command(
    name = "tickwire",
    version,
    about = "Low-latency WebSocket and HTTP toolkit"
)]
struct Cli {
    /// The transports: `blocking` (std::net, a thread per connection), `tokio` (the async
    /// transports of tickwire-tokio) or `reactor` (`serve` only: tickwire-server, an epoll
    /// reactor with one worker per CPU).
    #[arg(long, global = true, value_enum, default_value_t = Runtime::Blocking)]
    runtime: Runtime,
    #[command(subcommand)]
    command: Command,
}

/// Which transports a command runs on.
#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Runtime {
    /// tickwire's blocking transports.
    Blocking,
    /// tickwire-tokio's async transports (serve: multi-thread runtime; connect and http:
    /// current-thread).
    Tokio,
    /// tickwire-server's epoll reactor (serve only).
    Reactor,
}

#[derive(Subcommand)]
enum Command {
    /// Run a WebSocket echo server: every text or binary message is sent back with its opcode.
    Serve(ServeArgs),
    /// Connect to a WebSocket server: send stdin lines as text and print what arrives, or echo.
    Connect(ConnectArgs),
    /// Send one HTTP request and print the response body (with -i, its head first).
    Http(http_cmd::HttpArgs),
    /// A one-minute local market-data fan-out: the reactor server, a synthetic feed, many
    /// clients (a few slow), a live progress line, a summary and an HTML report.
    Demo(demo::DemoArgs),
    /// Binary packet links: `packet serve` (an echo server) and `packet send HOST:PORT`, on
    /// the blocking transports or (`--runtime tokio`) tickwire-tokio's.
    Packet(packet_cmd::PacketArgs),
    /// A fan-out node of a fleet: the reactor server fed by NATS (topics book, trades,
    /// status by path; `?resume=book:N` resumes after number N). Runs until SIGTERM, then
    /// closes its clients with 1001 so they move to another node.
    Node(fleet::NodeArgs),
    /// Publish the demo's synthetic market-data feed to NATS, for a fleet of nodes.
    Publish(fleet::PublishArgs),
    /// An exchange-like WebSocket feed for testing feed clients: sequenced messages on
    /// several keys, login and subscription rules, application pings, forced closes, and
    /// faults (FIN, RST, stalls, gaps, replays, refused connects) on command from an HTTP
    /// control port, which also returns counters and the record of what was sent.
    ExchangeSim(exsim::ExsimArgs),
    /// Keep an exchange feed: reconnects with back-off, resubscribes, stale and heartbeat
    /// timers, sequence gaps, several URLs merged by sequence; one JSON line per message and
    /// event on stdout. Exits 0 on SIGTERM or SIGINT.
    Feed(Box<feed_cmd::FeedArgs>),
    /// Order entry over a WebSocket API: requests matched to responses by id, after an
    /// optional login, with deadlines and a cap in flight; one JSON line per request as it
    /// resolves (response, timed_out, not_sent, outcome_unknown, rejected) and per pushed
    /// message. Exits 0 once every request resolved.
    Rpc(Box<rpc_cmd::RpcArgs>),
}

#[derive(Args)]
struct LimitArgs {
    /// Largest message accepted, in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    max_message_size: usize,
    /// Largest frame accepted, in bytes.
    #[arg(long, default_value_t = 64 << 20)]
    max_frame_size: usize,
    /// Most frames in one fragmented message.
    #[arg(long, default_value_t = 1 << 20)]
    max_fragments: usize,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits::server()
            .with_max_frame_size(self.max_frame_size)
            .with_max_message_size(self.max_message_size)
            .with_max_fragments(self.max_fragments)
    }
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Port to listen on (0 picks a free one; the chosen port is printed).
    #[arg(long, default_value_t = 9001)]
    port: u16,
    /// Limits (the echo server is a test peer: generous by default so Autobahn 9.* fits).
    #[command(flatten)]
    limits: LimitArgs,
    /// Accept permessage-deflate (RFC 7692) when a client offers it.
    #[cfg(feature = "deflate")]
    #[arg(long)]
    deflate: bool,
    /// Serve wss://: the certificate chain (PEM, leaf first). Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<String>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<String>,
    /// Require a client certificate issued by a CA in this PEM file (mutual TLS).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_client_ca: Option<String>,
    /// `--runtime reactor`: worker threads (default: the CPUs this process may run on).
    #[arg(long)]
    workers: Option<usize>,
    /// `--runtime reactor`: after a wake-up's work, poll again without sleeping (busy
    /// polling: lower latency, core time spent polling). `adaptive` (the default) sizes the
    /// window from the gaps between events, up to 200 µs; `adaptive:MAX` up to MAX
    /// microseconds; `off` always sleeps; a number polls that many microseconds every time.
    #[arg(long, value_name = "MODE", value_parser = parse_busy_poll)]
    busy_poll: Option<tickwire::server::BusyPoll>,
    /// `--runtime reactor`: instead of echoing, every connection subscribes to one topic and
    /// every message received is published to all the other connections (as `uws-echo PORT
    /// --pubsub`).
    #[arg(long)]
    pubsub: bool,
    /// `--runtime reactor`: write each connection with its own send(2) rather than a
    /// wake-up's replies (and, with --pubsub, a round's subscribers) in one io_uring
    /// submission (the default where the kernel allows it); the bytes on the wire are the
    /// same, this is for measuring the difference.
    #[arg(long)]
    no_batched_sends: bool,
}

#[derive(Args)]
struct ConnectArgs {
    /// ws:// or wss:// URL to connect to.
    url: String,
    /// Send every received data message back unchanged until the peer closes.
    #[arg(long)]
    echo: bool,
    #[command(flatten)]
    liveness: LivenessArgs,
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    net: NetArgs,
    /// The longest the whole command may take (connect, handshake and session): seconds as
    /// curl takes them (2, 0.5) or a duration (500ms). At it the connection is closed (1000)
    /// and the command fails, naming the time.
    #[arg(short = 'm', long, value_name = "SECONDS", value_parser = parse_seconds)]
    max_time: Option<Duration>,
}

/// How `connect` notices a peer or a link that went silent: keepalive pings and an idle
/// timeout. Either ends the command with a non-zero status and the cause on stderr, after a
/// close with 1001 (going away).
#[derive(Args)]
struct LivenessArgs {
    /// Keepalive pings: one after INTERVAL without traffic; the connection fails when its
    /// pong does not come within PONG (10s when not given). `off` sends none. Default 20s:10s.
    #[arg(long, value_name = "INTERVAL[:PONG]|off", value_parser = parse_keepalive)]
    keepalive: Option<Keepalive>,
    /// Fail the connection when nothing at all arrives for DUR (500ms, 5s, 2m, ...).
    #[arg(long, value_name = "DUR", value_parser = exsim::parse_duration)]
    idle_timeout: Option<Duration>,
}

/// `--keepalive`: off, or a ping interval and its pong deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keepalive {
    Off,
    Every { interval: Duration, pong: Duration },
}

/// `off`, `INTERVAL` or `INTERVAL:PONG`, each a duration above zero.
fn parse_keepalive(text: &str) -> Result<Keepalive, String> {
    if text == "off" {
        return Ok(Keepalive::Off);
    }
    let (interval, pong) = match text.split_once(':') {
        Some((interval, pong)) => (
            exsim::parse_duration(interval)?,
            exsim::parse_duration(pong)?,
        ),
        None => (
            exsim::parse_duration(text)?,
            tickwire::blocking::ClientOptions::PONG_TIMEOUT,
        ),
    };
    if interval.is_zero() || pong.is_zero() {
        return Err(format!(
            "{text:?}: the interval and the pong deadline are above zero (or `off`)"
        ));
    }
    Ok(Keepalive::Every { interval, pong })
}

/// A WebSocket client's options, shared by `connect` and `feed`: headers, subprotocols,
/// limits, permessage-deflate and TLS.
#[derive(Args)]
struct ClientArgs {
    /// Extra request header, `Name: value` (repeatable).
    #[arg(long = "header", value_name = "NAME: VALUE")]
    headers: Vec<String>,
    /// Subprotocol to offer (repeatable).
    #[arg(long = "subprotocol")]
    subprotocols: Vec<String>,
    #[command(flatten)]
    limits: LimitArgs,
    /// Offer permessage-deflate (RFC 7692).
    #[cfg(feature = "deflate")]
    #[arg(long)]
    deflate: bool,
    /// wss://: also trust the CA certificates in this PEM file.
    #[arg(long, value_name = "FILE")]
    ca: Option<String>,
    /// wss://: present this client certificate chain (PEM; mutual TLS). Needs --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<String>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<String>,
    /// wss://: accept any server certificate (no chain, name or expiry check). Test servers only.
    #[arg(long)]
    insecure: bool,
}

/// `--busy-poll`: `off`, `adaptive`, `adaptive:MAX_US` or a fixed window in microseconds.
fn parse_busy_poll(text: &str) -> Result<tickwire::server::BusyPoll, String> {
    use std::time::Duration;
    use tickwire::server::BusyPoll;
    let micros = |n: &str| {
        n.parse::<u64>()
            .map(Duration::from_micros)
            .map_err(|_| format!("`{n}` is not a number of microseconds"))
    };
    match text {
        "off" => Ok(BusyPoll::Off),
        "adaptive" => Ok(BusyPoll::default()),
        _ => match text.strip_prefix("adaptive:") {
            Some(max) => Ok(BusyPoll::Adaptive { max: micros(max)? }),
            None => micros(text)
                .map(BusyPoll::Fixed)
                .map_err(|e| format!("{e}; expected off, adaptive, adaptive:MAX or a number")),
        },
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => return usage_error(&error),
    };
    let result = match (cli.runtime, cli.command) {
        (Runtime::Blocking | Runtime::Tokio, Command::Serve(args))
            if args.workers.is_some()
                || args.busy_poll.is_some()
                || args.pubsub
                || args.no_batched_sends =>
        {
            Err(
                "--workers, --busy-poll, --pubsub and --no-batched-sends are options of \
                 --runtime reactor"
                    .to_owned(),
            )
        }
        (Runtime::Reactor, Command::Packet(_)) => Err(
            "--runtime reactor runs `serve` only; `packet` runs on blocking or tokio".to_owned(),
        ),
        (runtime, Command::Packet(args)) => packet_cmd::run(&args, runtime == Runtime::Tokio),
        (Runtime::Blocking, Command::Serve(args)) => serve(&args),
        (Runtime::Blocking, Command::Connect(args)) => connect(&args),
        (Runtime::Blocking, Command::Http(args)) => http_cmd::run(&args),
        (Runtime::Tokio, Command::Serve(args)) => tokio_ws::serve(&args),
        (Runtime::Tokio, Command::Connect(args)) => tokio_ws::connect(&args),
        (Runtime::Tokio, Command::Http(args)) => http_cmd::run_tokio(&args),
        (Runtime::Blocking, Command::Feed(args)) => feed_cmd::run(&args, false),
        (Runtime::Tokio, Command::Feed(args)) => feed_cmd::run(&args, true),
        (Runtime::Blocking, Command::Rpc(args)) => rpc_cmd::run(&args, false),
        (Runtime::Tokio, Command::Rpc(args)) => rpc_cmd::run(&args, true),
        (Runtime::Reactor, Command::Serve(args)) => reactor::serve(&args),
        // The demo always runs the reactor server and its own client loop.
        (_, Command::Demo(args)) => demo::run(&args),
        // A node is the reactor server; the publisher, a NATS client.
        (_, Command::Node(args)) => fleet::node(&args),
        (_, Command::Publish(args)) => fleet::publish(&args),
        // The simulator is a test peer on the blocking transports, whatever the runtime.
        (_, Command::ExchangeSim(args)) => exsim::run(&args),
        (
            Runtime::Reactor,
            Command::Connect(_) | Command::Http(_) | Command::Feed(_) | Command::Rpc(_),
        ) => Err(
            "--runtime reactor runs `serve` only; `connect`, `http`, `feed` and `rpc` \
             run on blocking or tokio"
                .to_owned(),
        ),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tickwire: {message}");
            ExitCode::FAILURE
        }
    }
}

/// A command line clap refuses: one stderr line, as every other failure (`--help` and
/// `--version` print as clap prints them). The line is clap's message up to its usage,
/// joined; the status is clap's, 2.
fn usage_error(error: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        error.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        error.exit();
    }
    let text = error.render().to_string();
    let message: Vec<&str> = text
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect();
    let message = message.join(" ");
    eprintln!(
        "tickwire: {} (see --help)",
        message.strip_prefix("error: ").unwrap_or(&message)
    );
    ExitCode::from(2)
}

fn serve(args: &ServeArgs) -> Result<(), String> {
    let listener =
        TcpListener::bind((args.bind.as_str(), args.port)).map_err(|e| format!("bind: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let tls = server_tls(args)?;
    print_listening("echo", tls.is_some(), local);
    let builder = server_builder(ServerBuilder::new(), args);
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let builder = builder.clone();
        let tls = tls.clone();
        std::thread::spawn(move || {
            let result = match &tls {
                Some(tls) => builder
                    .accept_tls(stream, tls)
                    .and_then(|mut ws| echo_connection(&mut ws)),
                None => builder
                    .accept(stream)
                    .and_then(|mut ws| echo_connection(&mut ws)),
            };
            if let Err(e) = result {
                eprintln!("tickwire: connection ended: {e}");
            }
        });
    }
    Ok(())
}

/// `serve`'s first line, which scripts wait for (the port is the chosen one with `--port 0`).
/// The first stdout line of `serve` (scripts and the bench read the port from its end).
pub(crate) fn print_listening(kind: &str, tls: bool, local: std::net::SocketAddr) {
    let scheme = if tls { "wss" } else { "ws" };
    println!("tickwire: {kind} server listening on {scheme}://{local}");
    let _ = std::io::stdout().flush();
}

fn server_tls(args: &ServeArgs) -> Result<Option<ServerTlsConfig>, String> {
    server_tls_files(
        args.tls_cert.as_deref(),
        args.tls_key.as_deref(),
        args.tls_client_ca.as_deref(),
    )
}

/// The server's TLS configuration from `--tls-cert`, `--tls-key` and `--tls-client-ca`:
/// `None` without a certificate.
pub(crate) fn server_tls_files(
    cert: Option<&str>,
    key: Option<&str>,
    client_ca: Option<&str>,
) -> Result<Option<ServerTlsConfig>, String> {
    let (Some(cert), Some(key)) = (cert, key) else {
        return Ok(None);
    };
    let mut builder = ServerTlsConfig::builder_from_files(cert, key).map_err(|e| e.to_string())?;
    if let Some(ca) = client_ca {
        let pem = std::fs::read(ca).map_err(|e| format!("{ca}: {e}"))?;
        builder = builder
            .client_auth_required(&pem)
            .map_err(|e| e.to_string())?;
    }
    builder.build().map(Some).map_err(|e| e.to_string())
}

fn client_tls(args: &ClientArgs) -> Result<Option<ClientTlsConfig>, String> {
    if args.ca.is_none() && args.cert.is_none() && !args.insecure {
        return Ok(None);
    }
    let mut builder = ClientTlsConfig::builder();
    if let Some(ca) = &args.ca {
        builder = builder.add_root_pem_file(ca).map_err(|e| e.to_string())?;
    }
    if let (Some(cert), Some(key)) = (&args.cert, &args.key) {
        builder = builder
            .client_identity_pem_files(cert, key)
            .map_err(|e| e.to_string())?;
    }
    if args.insecure {
        builder = builder.dangerous().disable_certificate_verification();
    }
    builder.build().map(Some).map_err(|e| e.to_string())
}

/// `serve`'s options on a `ServerBuilder` of either runtime.
pub(crate) fn server_builder<T>(
    builder: ServerBuilderOf<T>,
    args: &ServeArgs,
) -> ServerBuilderOf<T> {
    let builder = builder.limits(args.limits.limits());
    #[cfg(feature = "deflate")]
    let builder = if args.deflate {
        builder.deflate(tickwire::blocking::DeflateConfig::default())
    } else {
        builder
    };
    builder
}

/// A WebSocket client's options (`connect`, `feed`) on a `ClientBuilder` of either runtime;
/// the usage error of a malformed `--header` or TLS file.
pub(crate) fn client_builder<T>(
    mut builder: ClientBuilderOf<T>,
    args: &ClientArgs,
) -> Result<ClientBuilderOf<T>, String> {
    builder = builder.limits(args.limits.limits());
    #[cfg(feature = "deflate")]
    if args.deflate {
        builder = builder.deflate(tickwire::blocking::DeflateConfig::default());
    }
    for header in &args.headers {
        let (name, value) = header
            .split_once(':')
            .ok_or_else(|| format!("--header {header:?} is not 'Name: value'"))?;
        builder = builder.header(name.trim(), value.trim());
    }
    for protocol in &args.subprotocols {
        builder = builder.subprotocol(protocol.clone());
    }
    if let Some(tls) = client_tls(args)? {
        builder = builder.tls(tls);
    }
    Ok(builder)
}

/// `--keepalive` and `--idle-timeout` on a WebSocket client builder of either runtime.
pub(crate) fn with_liveness<T>(
    builder: ClientBuilderOf<T>,
    args: &LivenessArgs,
) -> ClientBuilderOf<T> {
    let builder = match args.keepalive {
        Some(Keepalive::Off) => builder.no_keepalive(),
        Some(Keepalive::Every { interval, pong }) => builder.keepalive(interval, pong),
        None => builder,
    };
    builder.idle_timeout(args.idle_timeout)
}

/// Echoes until the peer's close, then ends the connection with [`WebSocket::finish`], also
/// after a failure: the close frame owed goes out and the socket is drained before it closes.
fn echo_connection<S: Transport>(ws: &mut WebSocket<S>) -> Result<(), Error> {
    let echoed = echo_messages(ws);
    let finished = ws.finish();
    echoed.and(finished)
}

fn echo_messages<S: Transport>(ws: &mut WebSocket<S>) -> Result<(), Error> {
    while let (Recv::Message(message), mut sender) = ws.recv_with_sender()? {
        match message {
            Message::Text(text) => sender.text(text)?,
            Message::Binary(data) => sender.binary(data)?,
            Message::Close(_) | Message::Ping(_) | Message::Pong(_) => {}
        }
        // No flush here: the next recv writes queued echoes before it blocks, so a burst of
        // messages is answered with one write.
    }
    Ok(())
}

fn connect(args: &ConnectArgs) -> Result<(), String> {
    let builder = with_liveness(
        client_builder(ClientBuilder::new(), &args.client)?,
        &args.liveness,
    );
    let builder = with_net(builder, &args.net, args.max_time)?;
    let max = MaxTime::start(args.max_time);
    let connected = |builder: ClientBuilder| {
        let ws = builder.connect(&args.url).map_err(|e| e.to_string())?;
        // The TCP connect and the handshake are each bounded by the time; together they
        // may have used it up.
        match max.map(|max| (max.left(), max)) {
            Some((None, max)) => Err(max.error()),
            _ => Ok(ws),
        }
    };
    if args.echo {
        let mut ws = connected(builder)?;
        let outcome = echo_until_close(&mut ws, max);
        return finish(&mut ws, outcome);
    }
    let mut ws = connected(builder.read_timeout(Some(Duration::from_millis(20))))?;
    let outcome = print_until_close(&mut ws, max);
    finish(&mut ws, outcome)
}

/// Ends the connection after `outcome` (also after a failure, so the close frame owed goes
/// out); the first error wins.
fn finish<S: Transport>(ws: &mut WebSocket<S>, outcome: Result<(), String>) -> Result<(), String> {
    let finished = ws.finish().map_err(|e| e.to_string());
    outcome.and(finished)
}

/// Stdin mode: sends stdin lines as text and prints what arrives until the close handshake
/// (or `max`).
fn print_until_close<S: Transport>(
    ws: &mut WebSocket<S>,
    max: Option<MaxTime>,
) -> Result<(), String> {
    let lines = stdin_lines();
    let mut stdin_open = true;
    loop {
        if let Some(outcome) = over(max) {
            return outcome;
        }
        if stdin_open && queue_stdin_lines(&lines, &mut ws.sender())? {
            stdin_open = false;
            ws.close(CloseCode::NORMAL, "").map_err(|e| e.to_string())?;
        }
        ws.flush().map_err(|e| e.to_string())?;
        if let Some(outcome) = print_received(ws.recv()) {
            return outcome;
        }
    }
}

/// Stdin mode: queues the lines typed since the last call as text messages; `Ok(true)` once
/// stdin has ended (the caller then starts the close handshake).
fn queue_stdin_lines(
    lines: &mpsc::Receiver<String>,
    sender: &mut Sender<'_>,
) -> Result<bool, String> {
    loop {
        match lines.try_recv() {
            Ok(line) => sender.text(&line).map_err(|e| e.to_string())?,
            Err(mpsc::TryRecvError::Empty) => return Ok(false),
            Err(mpsc::TryRecvError::Disconnected) => return Ok(true),
        }
    }
}

/// Stdin mode: prints what a receive returned; `Some` ends the loop with the outcome (the
/// peer's close, the end of the stream, or the error).
fn print_received(received: Result<Recv<'_>, Error>) -> Option<Result<(), String>> {
    match received {
        Ok(Recv::Message(message)) => print_message(&message),
        Ok(Recv::Closed(frame)) => {
            Some(close_outcome(frame.map(|f| (f.code, f.reason.to_owned()))))
        }
        Ok(_) => None,
        Err(e) => Some(Err(e.to_string())),
    }
}

/// Stdin mode's output for one received message: a text line, or `[binary N bytes] HEX`.
fn print_message(message: &Message<'_>) -> Option<Result<(), String>> {
    let mut out = std::io::stdout().lock();
    match message {
        Message::Text(text) => {
            let _ = writeln!(out, "{text}");
        }
        Message::Binary(data) => {
            let _ = writeln!(out, "[binary {} bytes] {}", data.len(), hex(data));
        }
        // The peer's close is `Recv::Closed`, never a message.
        Message::Close(_) | Message::Ping(_) | Message::Pong(_) => return None,
    }
    let _ = out.flush();
    None
}

fn echo_until_close<S: Transport>(
    ws: &mut WebSocket<S>,
    max: Option<MaxTime>,
) -> Result<(), String> {
    loop {
        if let Some(outcome) = over(max) {
            return outcome;
        }
        if let Some(max) = max {
            ws.set_read_timeout(max.left());
        }
        let (recv, mut sender) = ws.recv_with_sender().map_err(|e| e.to_string())?;
        if matches!(recv, Recv::Timeout) {
            continue;
        }
        let message = match echoed_message(recv) {
            Ok(message) => message,
            Err(outcome) => return outcome,
        };
        if let Some(outcome) = echo_message(message, &mut sender) {
            return outcome;
        }
    }
}

/// `--echo`: the message to send back, or the loop's end as an `Err`: the outcome of the
/// peer's close (see `close_outcome`), or `Ok` at the end of the stream.
fn echoed_message(recv: Recv<'_>) -> Result<Message<'_>, Result<(), String>> {
    match recv {
        Recv::Message(message) => Ok(message),
        Recv::Closed(frame) => Err(close_outcome(frame.map(|f| (f.code, f.reason.to_owned())))),
        _ => Err(Ok(())),
    }
}

/// `--echo`: queues a data message back unchanged; `Some` ends the loop: a failed send.
fn echo_message(message: Message<'_>, sender: &mut Sender<'_>) -> Option<Result<(), String>> {
    let queued = match message {
        Message::Text(text) => sender.text(text),
        Message::Binary(data) => sender.binary(data),
        Message::Close(_) | Message::Ping(_) | Message::Pong(_) => return None,
    };
    queued.err().map(|e| Err(e.to_string()))
}

/// A close from the peer: exit 0 for a normal (or empty) close, else name the code.
fn close_outcome(frame: Option<(CloseCode, String)>) -> Result<(), String> {
    match frame {
        None => Ok(()),
        Some((code, _)) if code == CloseCode::NORMAL || code == CloseCode::GOING_AWAY => Ok(()),
        Some((code, reason)) => Err(format!("peer closed with {code} {reason}")),
    }
}

/// Stdin lines on a channel, so the socket loop never blocks on the terminal.
fn stdin_lines() -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::stdin().lock().lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn hex(data: &[u8]) -> String {
    use std::fmt::Write as _;
    data.iter()
        .fold(String::with_capacity(data.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}
