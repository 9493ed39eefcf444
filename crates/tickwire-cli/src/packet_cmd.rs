//! `tickwire packet serve` and `tickwire packet send`: the blocking packet transport
//! (`tickwire::packet`) by hand. `serve` echoes every request's payload; `send` sends each
//! line of standard input as a request and prints each answer on its own line.

use std::io::{BufRead, Write};
use std::net::TcpListener;

use clap::{Args, Subcommand, ValueEnum};
use tickwire::codec::packet::{CompressionPolicy, PacketConfig};
use tickwire::packet::{PacketClientBuilder, PacketServer};
use tickwire::{ClientTlsConfig, ServerTlsConfig};

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

/// Runs `tickwire packet ...`.
pub(crate) fn run(args: &PacketArgs) -> Result<(), String> {
    match &args.command {
        PacketCommand::Serve(args) => serve(args),
        PacketCommand::Send(args) => send(args),
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

fn serve(args: &ServeArgs) -> Result<(), String> {
    let listener =
        TcpListener::bind((args.bind.as_str(), args.port)).map_err(|e| format!("bind: {e}"))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    let mut server = PacketServer::new()
        .packet_config(PacketConfig::server().with_compression(policy(args.compress)));
    let scheme = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            let tls = ServerTlsConfig::builder_from_files(cert, key)
                .and_then(|builder| builder.build())
                .map_err(|e| e.to_string())?;
            server = server.tls(tls);
            "tls"
        }
        _ => "tcp",
    };
    println!("tickwire: packet echo server listening on {scheme}://{local}");
    let _ = std::io::stdout().flush();
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
    let (host, port) = args
        .address
        .rsplit_once(':')
        .and_then(|(host, port)| Some((host.trim_matches(['[', ']']), port.parse().ok()?)))
        .ok_or_else(|| format!("{}: expected HOST:PORT", args.address))?;
    let mut builder = PacketClientBuilder::new()
        .packet_config(PacketConfig::client().with_compression(policy(args.compress)));
    if let Some(ca) = &args.ca {
        let tls = ClientTlsConfig::builder()
            .add_root_pem_file(ca)
            .and_then(|builder| builder.build())
            .map_err(|e| e.to_string())?;
        builder = builder.tls(tls);
    }
    let mut client = builder
        .connect(host, port)
        .map_err(|e| format!("{}: {e}", args.address))?;
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let line = line.map_err(|e| format!("stdin: {e}"))?;
        let answer = client.request(line.as_bytes()).map_err(|e| e.to_string())?;
        let mut out = stdout.lock();
        out.write_all(answer)
            .and_then(|()| out.write_all(b"\n"))
            .and_then(|()| out.flush())
            .map_err(|e| format!("stdout: {e}"))?;
    }
    Ok(())
}
