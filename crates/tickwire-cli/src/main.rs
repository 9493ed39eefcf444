//! The `tickwire` command: a WebSocket echo server and client, and a one-shot HTTP client, for
//! trying the library and for driving conformance and interop runs.
#![forbid(unsafe_code)]

mod http_cmd;

use std::io::{BufRead, Write};
use std::net::TcpListener;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use tickwire::{
    ClientBuilder, ClientTlsConfig, CloseCode, Error, Limits, Message, Recv, ServerBuilder,
    ServerTlsConfig, Stream, WebSocket,
};

#[derive(Parser)]
#[command(
    name = "tickwire",
    version,
    about = "Low-latency WebSocket and HTTP toolkit"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a WebSocket echo server: every text or binary message is sent back with its opcode.
    Serve(ServeArgs),
    /// Connect to a WebSocket server: send stdin lines as text and print what arrives, or echo.
    Connect(ConnectArgs),
    /// Send one HTTP request and print the response body (with -i, its head first).
    Http(http_cmd::HttpArgs),
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
}

#[derive(Args)]
struct ConnectArgs {
    /// ws:// or wss:// URL to connect to.
    url: String,
    /// Send every received data message back unchanged until the peer closes.
    #[arg(long)]
    echo: bool,
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

fn main() -> ExitCode {
    let result = match Cli::parse().command {
        Command::Serve(args) => serve(&args),
        Command::Connect(args) => connect(&args),
        Command::Http(args) => http_cmd::run(&args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tickwire: {message}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: &ServeArgs) -> Result<(), String> {
    let listener =
        TcpListener::bind((args.bind.as_str(), args.port)).map_err(|e| format!("bind: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let tls = server_tls(args)?;
    let scheme = if tls.is_some() { "wss" } else { "ws" };
    println!("tickwire: echo server listening on {scheme}://{local}");
    let _ = std::io::stdout().flush();
    let builder = ServerBuilder::new().limits(args.limits.limits());
    #[cfg(feature = "deflate")]
    let builder = if args.deflate {
        builder.deflate(tickwire::DeflateConfig::default())
    } else {
        builder
    };
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

fn server_tls(args: &ServeArgs) -> Result<Option<ServerTlsConfig>, String> {
    let (Some(cert), Some(key)) = (&args.tls_cert, &args.tls_key) else {
        return Ok(None);
    };
    let mut builder = ServerTlsConfig::builder_from_files(cert, key).map_err(|e| e.to_string())?;
    if let Some(ca) = &args.tls_client_ca {
        let pem = std::fs::read(ca).map_err(|e| format!("{ca}: {e}"))?;
        builder = builder
            .client_auth_required(&pem)
            .map_err(|e| e.to_string())?;
    }
    builder.build().map(Some).map_err(|e| e.to_string())
}

fn client_tls(args: &ConnectArgs) -> Result<Option<ClientTlsConfig>, String> {
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

/// Echoes until the peer's close, then ends the connection with [`WebSocket::finish`], also
/// after a failure: the close frame owed goes out and the socket is drained before it closes.
fn echo_connection<S: Stream>(ws: &mut WebSocket<S>) -> Result<(), Error> {
    let echoed = echo_messages(ws);
    let finished = ws.finish();
    echoed.and(finished)
}

fn echo_messages<S: Stream>(ws: &mut WebSocket<S>) -> Result<(), Error> {
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
    let mut builder = ClientBuilder::new().limits(args.limits.limits());
    #[cfg(feature = "deflate")]
    if args.deflate {
        builder = builder.deflate(tickwire::DeflateConfig::default());
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
    if args.echo {
        let mut ws = builder.connect(&args.url).map_err(|e| e.to_string())?;
        let outcome = echo_until_close(&mut ws);
        return finish(&mut ws, outcome);
    }
    let mut ws = builder
        .read_timeout(Some(Duration::from_millis(20)))
        .connect(&args.url)
        .map_err(|e| e.to_string())?;
    let outcome = print_until_close(&mut ws);
    finish(&mut ws, outcome)
}

/// Ends the connection after `outcome` (also after a failure, so the close frame owed goes
/// out); the first error wins.
fn finish<S: Stream>(ws: &mut WebSocket<S>, outcome: Result<(), String>) -> Result<(), String> {
    let finished = ws.finish().map_err(|e| e.to_string());
    outcome.and(finished)
}

/// Stdin mode: sends stdin lines as text and prints what arrives until the close handshake.
fn print_until_close<S: Stream>(ws: &mut WebSocket<S>) -> Result<(), String> {
    let lines = stdin_lines();
    let mut stdin_open = true;
    let stdout = std::io::stdout();
    loop {
        while stdin_open {
            match lines.try_recv() {
                Ok(line) => ws.send_text(&line).map_err(|e| e.to_string())?,
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    stdin_open = false;
                    ws.close(CloseCode::NORMAL, "").map_err(|e| e.to_string())?;
                }
            }
        }
        ws.flush().map_err(|e| e.to_string())?;
        match ws.recv() {
            Ok(Recv::Message(Message::Text(text))) => {
                let mut out = stdout.lock();
                let _ = writeln!(out, "{text}");
                let _ = out.flush();
            }
            Ok(Recv::Message(Message::Binary(data))) => {
                let mut out = stdout.lock();
                let _ = writeln!(out, "[binary {} bytes] {}", data.len(), hex(data));
                let _ = out.flush();
            }
            Ok(Recv::Message(Message::Close(frame))) => {
                return close_outcome(frame.map(|f| (f.code, f.reason.to_owned())));
            }
            Ok(Recv::Closed) => return Ok(()),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
    }
}

fn echo_until_close<S: Stream>(ws: &mut WebSocket<S>) -> Result<(), String> {
    loop {
        let (recv, mut sender) = ws.recv_with_sender().map_err(|e| e.to_string())?;
        let Recv::Message(message) = recv else {
            return Ok(());
        };
        match message {
            Message::Text(text) => sender.text(text).map_err(|e| e.to_string())?,
            Message::Binary(data) => sender.binary(data).map_err(|e| e.to_string())?,
            Message::Close(frame) => {
                return close_outcome(frame.map(|f| (f.code, f.reason.to_owned())));
            }
            Message::Ping(_) | Message::Pong(_) => {}
        }
    }
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
