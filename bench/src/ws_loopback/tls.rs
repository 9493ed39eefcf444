//! The `wss://` loopback workloads: the round trip and the one-way stream of `loopback_rtt`
//! and `loopback_stream`, over TLS 1.3, for every client that speaks `wss://` here, with plain
//! tickwire `ws://` in the same round as the reference.
//!
//! Owns the `loopback_tls_*` tables and which server and client each row uses. The client
//! loops are the ones the plain workloads time (`round_trip.rs`, `stream.rs`), run on a TLS
//! connection, so a row here differs from its plain counterpart only by TLS.
//!
//! Server: the same tickwire blocking server as the plain workloads, behind `accept_tls`
//! (tickwire's own TLS server; no peer here has a TLS server, and a common server keeps the
//! rule that only the client differs). TLS 1.3 with TLS13_AES_128_GCM_SHA256 only, ring, a
//! leaf from a CA made at startup (`ws_tls/pki.rs`) that every client trusts through its own
//! configuration API; every handshake is checked to settle on that suite.
//!
//! Not measured: fastwebsockets (no TLS of its own; it runs over any stream a user wraps, so
//! a row would measure tokio-rustls, which the tokio-tungstenite row already does) and
//! blocking tungstenite (kept to its plain rows; tokio-tungstenite is its TLS path here).

use std::sync::Arc;
use std::sync::mpsc::sync_channel;
use std::time::Duration;

use hdrhistogram::Histogram;
use tickwire_blocking::ServerTlsConfig;

use super::{PAYLOAD_LEN, STREAM_MESSAGES_FULL, connect, round_trip, servers, stream};
use crate::Ctx;
use crate::harness::Plan;
use crate::report::{Row, Table};
use crate::ws_tls::pki;

/// The workload ids.
pub(super) const RTT_ID: &str = "loopback_tls_rtt";
/// See [`RTT_ID`].
pub(super) const STREAM_ID: &str = "loopback_tls_stream";

/// A row: the plain reference or a `wss://` client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Client {
    /// tickwire over `ws://`, to the plain server: the reference.
    TickwirePlain,
    Tickwire,
    TokioTungstenite,
    NexusWeb,
}

impl Client {
    /// Table order: the reference first, then tickwire, then its peers.
    pub(super) const ALL: [Self; 4] = [
        Self::TickwirePlain,
        Self::Tickwire,
        Self::TokioTungstenite,
        Self::NexusWeb,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::TickwirePlain => "tickwire ws (no TLS)",
            Self::Tickwire => "tickwire wss",
            Self::TokioTungstenite => "tokio-tungstenite wss (tokio-rustls)",
            Self::NexusWeb => "nexus-web wss",
        }
    }
}

/// The round-trip table: `ctx.rounds` rounds, each measuring every client once.
pub(super) fn round_trip_table(ctx: &Ctx, payload: &[u8]) -> Table {
    let text = std::str::from_utf8(payload).expect("the JSON payload is UTF-8");
    let tls = pki::server_config();
    let mut rounds: Vec<Vec<_>> = Client::ALL.iter().map(|_| Vec::new()).collect();
    for round in 1..=ctx.rounds {
        for (client, histograms) in Client::ALL.into_iter().zip(&mut rounds) {
            ctx.step(&format!(
                "wss round trip: {} (round {round}/{})",
                client.name(),
                ctx.rounds
            ));
            histograms.push(round_trip(client, ctx, &tls, text));
        }
    }
    let note = format!(
        "TLS 1.3, {} only (the server offers no other suite; every handshake is checked), \
         ring for every client, certificate verified against a CA made at startup. One TCP \
         connection over 127.0.0.1 per client and round, TCP_NODELAY on every socket; the \
         client sends one {PAYLOAD_LEN} B text message (one TLS record) and waits for its echo, \
         one unbatched sample per round trip ({} warm-up + {} recorded), client on core {}, \
         server on core {}. Every wss client talks to the same tickwire blocking echo server \
         behind accept_tls, the plain reference to the same server without TLS; the client \
         loops are those of loopback_rtt. Async clients run on a tokio current-thread runtime \
         on the measuring thread. Echo content checked before timing; clients interleaved in \
         each round; median round by p50. {}",
        pki::CIPHER_SUITE,
        ctx.plan.warmup,
        ctx.plan.samples,
        ctx.core,
        ctx.peer_core,
        SKIPPED,
    );
    let mut table = Table::new(
        RTT_ID,
        &format!("Loopback round trip over TLS 1.3 (wss), {PAYLOAD_LEN} B text"),
        Client::TickwirePlain.name(),
        &note,
    );
    for (client, histograms) in Client::ALL.into_iter().zip(rounds) {
        table
            .rows
            .push(Row::median_round(client.name(), histograms));
    }
    table
}

/// What the notes say about the clients without a row.
const SKIPPED: &str = "No row for fastwebsockets (no TLS of its own: over a user's \
                       tokio-rustls stream it would measure what the tokio-tungstenite row does) \
                       nor blocking tungstenite (tokio-tungstenite is its rustls path here).";

/// One connection of `client` to a fresh echo server, timed over the suite's plan.
fn round_trip(client: Client, ctx: &Ctx, tls: &ServerTlsConfig, text: &str) -> Histogram<u64> {
    let (plan, peer_core) = (ctx.plan, ctx.peer_core);
    let server = match client {
        Client::TickwirePlain => servers::tickwire_echo(peer_core),
        _ => servers::tickwire_echo_tls(peer_core, tls.clone()),
    };
    let addr = server.addr();
    let name = client.name();
    // Each arm drops its connection before the join: the server ends on the client's EOF.
    let histogram = match client {
        Client::TickwirePlain => {
            round_trip::tickwire_round_trips(&mut connect::tickwire(addr), plan, text, name)
        }
        Client::Tickwire => {
            round_trip::tickwire_round_trips(&mut connect::tickwire_tls(addr), plan, text, name)
        }
        Client::NexusWeb => {
            round_trip::nexus_web_round_trips(&mut connect::nexus_web_tls(addr), plan, text, name)
        }
        Client::TokioTungstenite => connect::current_thread_runtime().block_on(async {
            let mut ws = connect::tokio_tungstenite_tls(addr).await;
            round_trip::tokio_tungstenite_round_trips(&mut ws, plan, text, name).await
        }),
    };
    server.join();
    histogram
}

/// The one-way streaming table: `ctx.rounds` rounds, each streaming into every client once.
pub(super) fn stream_table(ctx: &Ctx, payload: &[u8]) -> Table {
    let messages = if ctx.plan.samples >= Plan::FULL.samples {
        STREAM_MESSAGES_FULL
    } else {
        STREAM_MESSAGES_FULL / 10
    };
    let bytes = stream::encoded_stream(payload, messages);
    let tls = pki::server_config();
    let mut rounds: Vec<Vec<f64>> = Client::ALL.iter().map(|_| Vec::new()).collect();
    for round in 1..=ctx.rounds {
        for (client, rates) in Client::ALL.into_iter().zip(&mut rounds) {
            ctx.step(&format!(
                "wss stream: {} (round {round}/{})",
                client.name(),
                ctx.rounds
            ));
            let elapsed = stream_once(client, ctx.peer_core, &tls, &bytes, messages);
            rates.push(messages as f64 / elapsed.as_secs_f64().max(f64::MIN_POSITIVE));
        }
    }
    let note = format!(
        "TLS 1.3, {} only (checked on every handshake), ring for every client. One TCP \
         connection over 127.0.0.1 per client and round, TCP_NODELAY on. After the handshakes \
         the server thread (core {}) writes {messages} pre-encoded unmasked {PAYLOAD_LEN} B text \
         frames ({} bytes) with one write_all through tickwire's server TLS stream, which \
         encrypts them into 16 KiB records 64 KiB at a time (the plain reference: the same \
         bytes straight to the socket, as in loopback_stream); the client (core {}) receives \
         and parses every message with its library's message API and default buffers, \
         checking the count and the last message's length. Timed on the client from the \
         first byte being readable on the TCP socket to the last message: over TLS the rate is \
         the pipeline's, the slower of the server encrypting and the client decrypting and \
         parsing. Median of {} round(s), range over rounds. {}",
        pki::CIPHER_SUITE,
        ctx.peer_core,
        bytes.len(),
        ctx.core,
        ctx.rounds,
        SKIPPED,
    );
    let mut table = Table::new(
        STREAM_ID,
        &format!(
            "Loopback one-way stream over TLS 1.3 (wss), {PAYLOAD_LEN} B text, messages per second"
        ),
        Client::TickwirePlain.name(),
        &note,
    );
    for (client, rates) in Client::ALL.into_iter().zip(rounds) {
        table.rows.push(Row::rate(client.name(), rates));
    }
    table
}

/// Streams `bytes` (holding `messages` frames) into one fresh connection of `client`.
fn stream_once(
    client: Client,
    peer_core: usize,
    tls: &ServerTlsConfig,
    bytes: &Arc<[u8]>,
    messages: usize,
) -> Duration {
    let (go, ready) = sync_channel(1);
    let server = match client {
        Client::TickwirePlain => servers::stream_sender(peer_core, Arc::clone(bytes), true, ready),
        _ => servers::stream_sender_tls(
            peer_core,
            Arc::clone(bytes),
            tls.clone(),
            servers::Encrypt::AsItGoes,
            ready,
        ),
    };
    let addr = server.addr();
    let name = client.name();
    // Each arm drops its connection before the join: the server ends on the client's EOF.
    let elapsed = match client {
        Client::TickwirePlain => stream::tickwire_receive(
            &mut connect::tickwire(addr),
            &go,
            messages,
            PAYLOAD_LEN,
            name,
        ),
        Client::Tickwire => stream::tickwire_receive(
            &mut connect::tickwire_tls(addr),
            &go,
            messages,
            PAYLOAD_LEN,
            name,
        ),
        Client::NexusWeb => {
            stream::nexus_web_receive(&mut connect::nexus_web_tls(addr), &go, messages, name)
        }
        Client::TokioTungstenite => connect::current_thread_runtime().block_on(async {
            let mut ws = connect::tokio_tungstenite_tls(addr).await;
            stream::tokio_tungstenite_receive(&mut ws, &go, messages, PAYLOAD_LEN, name).await
        }),
    };
    server.join();
    elapsed
}
