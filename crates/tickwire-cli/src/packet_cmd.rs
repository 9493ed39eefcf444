//! `tickwire packet serve` and `tickwire packet send`: the packet transports by hand, the
//! blocking one (`tickwire::blocking::packet`, a thread per connection) or with `--runtime tokio`
//! tickwire-tokio's (`serve`: a multi-thread runtime, a task per connection; `send`: a
//! current-thread runtime). `serve` echoes every request's payload; `send` sends each line
//! of standard input as a request and prints each answer on its own line. Both runtimes
//! print the same.

use std::io::{BufRead, Write};
use std::net::TcpListener;

use clap::{Args, Subcommand, ValueEnum};
use tickwire::blocking::codec::packet::{CompressionPolicy, PacketConfig};
use tickwire::blocking::packet::{PacketClientBuilder, PacketServer};
use tickwire::blocking::{ClientTlsConfig, ServerTlsConfig};

/// `tickwire packet ...`.
#[derive(Args)]
pub(crate) struct PacketArgs {
    #[command(subcommand)]
    command: PacketCommand,
}

#[derive(Subcommand)]
enum PacketCommand {
    /// Run a packet echo server: every request is answered with its own payload.
    Serve(ServeArgs),
    /// Send each line of standard input as a request; print each answer on its own line.
    Send(SendArgs),
}

#[derive(Args)]
struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    bind: String,
    /// Port to listen on (0 picks a free one; the chosen port is printed).
    #[arg(long, default_value_t = 9002)]
    port: u16,
    /// Serve TLS: the certificate chain (PEM, leaf first). Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<String>,
    /// The certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<String>,
    /// Compress answers with this codec when it helps.
    #[arg(long, value_enum)]
    compress: Option<Codec>,
}

#[derive(Args)]
struct SendArgs {
    /// The server, HOST:PORT.
    address: String,
    /// Compress requests with this codec when it helps.
    #[arg(long, value_enum)]
    compress: Option<Codec>,
    /// Connect with TLS, trusting the CA certificates in this PEM file.
    #[arg(long, value_name = "FILE")]
    ca: Option<String>,
}

/// `--compress`.
#[derive(Clone, Copy, ValueEnum)]
enum Codec {
    /// LZ4 block.
    Lz4,
    /// Zstd frame, level 1.
    Zstd,
    /// LZ4 below 64 KiB, Zstd from there.
    Auto,
}

/// Runs `tickwire packet ...`, on tickwire-tokio's transports when `tokio`.
pub(crate) fn run(args: &PacketArgs, tokio: bool) -> Result<(), String> {
    match (&args.command, tokio) {
        (PacketCommand::Serve(args), false) => serve(args),
        (PacketCommand::Send(args), false) => send(args),
        (PacketCommand::Serve(args), true) => serve_tokio(args),
        (PacketCommand::Send(args), true) => send_tokio(args),
    }
}

fn policy(codec: Option<Codec>) -> CompressionPolicy {
    match codec {
        None => CompressionPolicy::none(),
        Some(Codec::Lz4) => CompressionPolicy::lz4(),
        Some(Codec::Zstd) => CompressionPolicy::zstd(),
        Some(Codec::Auto) => CompressionPolicy::auto(),
    }
}

/// `--tls-cert` and `--tls-key`, loaded.
fn server_tls(args: &ServeArgs) -> Result<Option<ServerTlsConfig>, String> {
    match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => ServerTlsConfig::builder_from_files(cert, key)
            .and_then(|builder| builder.build())
            .map(Some)
            .map_err(|e| e.to_string()),
        _ => Ok(None),
    }
}

/// `--ca`, loaded.
fn client_tls(args: &SendArgs) -> Result<Option<ClientTlsConfig>, String> {
    let Some(ca) = &args.ca else {
        return Ok(None);
    };
    ClientTlsConfig::builder()
        .add_root_pem_file(ca)
        .and_then(|builder| builder.build())
        .map(Some)
        .map_err(|e| e.to_string())
}

/// The first line `serve` prints (tests and scripts read the port from it).
fn print_listening(tls: bool, local: std::net::SocketAddr) {
    let scheme = if tls { "tls" } else { "tcp" };
    println!("tickwire: packet echo server listening on {scheme}://{local}");
    let _ = std::io::stdout().flush();
}

/// `HOST:PORT` (an IPv6 host in brackets).
fn host_port(address: &str) -> Result<(&str, u16), String> {
    address
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host.trim_matches(['[', ']']), port.parse().ok()?)))
        .ok_or_else(|| format!("{address}: expected HOST:PORT"))
}

/// Prints one answer on its own line.
fn print_answer(answer: &[u8]) -> Result<(), String> {
    let mut out = std::io::stdout().lock();
    out.write_all(answer)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush())
        .map_err(|e| format!("stdout: {e}"))
}

fn serve(args: &ServeArgs) -> Result<(), String> {
    let listener =
        TcpListener::bind((args.bind.as_str(), args.port)).map_err(|e| format!("bind: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let mut server = PacketServer::new()
        .packet_config(PacketConfig::server().with_compression(policy(args.compress)));
    let tls = server_tls(args)?;
    print_listening(tls.is_some(), local);
    if let Some(tls) = tls {
        server = server.tls(tls);
    }
    for tcp in listener.incoming() {
        let Ok(tcp) = tcp else { continue };
        let server = server.clone();
        std::thread::spawn(move || {
            let served = server.accept(tcp).and_then(|mut connection| {
                connection.serve(|_, request, responder| {
                    // Only a payload over the packet limit fails; serve answers it empty.
                    let _ = responder.respond(request);
                })
            });
            if let Err(e) = served {
                eprintln!("tickwire: connection ended: {e}");
            }
        });
    }
    Ok(())
}

fn send(args: &SendArgs) -> Result<(), String> {
    let (host, port) = host_port(&args.address)?;
    let mut builder = PacketClientBuilder::new()
        .packet_config(PacketConfig::client().with_compression(policy(args.compress)));
    if let Some(tls) = client_tls(args)? {
        builder = builder.tls(tls);
    }
    let mut client = builder
        .connect(host, port)
        .map_err(|e| format!("{}: {e}", args.address))?;
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| format!("stdin: {e}"))?;
        print_answer(client.request(line.as_bytes()).map_err(|e| e.to_string())?)?;
    }
    Ok(())
}

/// `serve` on tickwire-tokio: [`PacketServer::spawn`](tickwire::tokio::packet::PacketServer::spawn)
/// on a multi-thread runtime, until the process is stopped.
fn serve_tokio(args: &ServeArgs) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind((args.bind.as_str(), args.port))
            .await
            .map_err(|e| format!("bind: {e}"))?;
        let local = listener.local_addr().map_err(|e| e.to_string())?;
        let mut server = tickwire::tokio::packet::PacketServer::new()
            .packet_config(PacketConfig::server().with_compression(policy(args.compress)));
        let tls = server_tls(args)?;
        let secure = tls.is_some();
        if let Some(tls) = tls {
            server = server.tls(tls);
        }
        let _handle = server
            .spawn(listener, |_, request, responder| {
                // Only a payload over the packet limit fails; serve answers it empty.
                let _ = responder.respond(request);
            })
            .map_err(|e| e.to_string())?;
        print_listening(secure, local);
        std::future::pending::<()>().await;
        Ok(())
    })
}

/// `send` on tickwire-tokio's client, on a current-thread runtime (standard input is read
/// between requests, as the blocking `send` does).
fn send_tokio(args: &SendArgs) -> Result<(), String> {
    let (host, port) = host_port(&args.address)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("tokio runtime: {e}"))?;
    runtime.block_on(async {
        let mut builder = tickwire::tokio::packet::PacketClientBuilder::new()
            .packet_config(PacketConfig::client().with_compression(policy(args.compress)));
        if let Some(tls) = client_tls(args)? {
            builder = builder.tls(tls);
        }
        let mut client = builder
            .connect(host, port)
            .await
            .map_err(|e| format!("{}: {e}", args.address))?;
        for line in std::io::stdin().lock().lines() {
            let line = line.map_err(|e| format!("stdin: {e}"))?;
            print_answer(
                client
                    .request(line.as_bytes())
                    .await
                    .map_err(|e| e.to_string())?,
            )?;
        }
        Ok(())
    })
}
