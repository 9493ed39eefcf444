//! The client side of the tokio suite's WebSocket workloads: which connection and which loop
//! each library gets, plain and over TLS.
//!
//! tickwire (blocking) and tokio-tungstenite run the `ws_loopback` loops unchanged;
//! fastwebsockets runs `ws_loopback`'s loops over its hand-done upgrade, on plain TCP or on a
//! tokio-rustls stream (it has no TLS of its own); tickwire-tokio and nexus-async-web have
//! their loops here. Each connection first checks one echo byte for byte (round trip) or the
//! last message's length (stream). Owns no timing primitive and no server.

use std::hint::black_box;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use nexus_async_web::ws::{MaybeTls, WsReader, WsStreamBuilder, WsWriter};
use tickwire_blocking::ServerTlsConfig;
use tickwire_tokio::{MaybeTlsStream, Message, Recv, WebSocket};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::runtime;
use super::ws::Client;
use crate::alloc_count;
use crate::harness::Plan;
use crate::ws_loopback::stream::{self as loopback_stream, TokioSocket};
use crate::ws_loopback::{connect, round_trip, servers};
use crate::ws_tls::pki;

/// One connection of `client` to a fresh echo server on `peer_core` (behind TLS with `tls`),
/// timed over `plan`. Returns ticks per round trip and allocations per round trip.
pub(super) fn round_trip(
    client: Client,
    tls: Option<&ServerTlsConfig>,
    plan: Plan,
    peer_core: usize,
    payload: &[u8],
) -> (Histogram<u64>, f64) {
    let text = std::str::from_utf8(payload).expect("the JSON payload is UTF-8");
    let server = match tls {
        None => servers::tickwire_echo(peer_core),
        Some(config) => servers::tickwire_echo_tls(peer_core, config.clone()),
    };
    let (addr, secure, name) = (server.addr(), tls.is_some(), client.name());
    // Each arm drops its connection (and runtime) before the join: the server ends on EOF.
    let histogram = match client {
        Client::Tickwire => {
            let mut ws = if secure {
                connect::tickwire_tls(addr)
            } else {
                connect::tickwire(addr)
            };
            round_trip::tickwire_round_trips(&mut ws, plan, text, name)
        }
        Client::TokioTungstenite => runtime().block_on(async {
            if secure {
                let mut ws = connect::tokio_tungstenite_tls(addr).await;
                round_trip::tokio_tungstenite_round_trips(&mut ws, plan, text, name).await
            } else {
                let mut ws = connect::tokio_tungstenite(addr).await;
                round_trip::tokio_tungstenite_round_trips(&mut ws, plan, text, name).await
            }
        }),
        Client::Fastwebsockets => runtime().block_on(async {
            if secure {
                let stream = fastwebsockets_tls(addr).await;
                round_trip::fastwebsockets_round_trips(stream, plan, payload, name).await
            } else {
                let stream = connect::fastwebsockets_upgraded(addr).await;
                round_trip::fastwebsockets_round_trips(stream, plan, payload, name).await
            }
        }),
        Client::TickwireTokio => runtime().block_on(async {
            let mut ws = tickwire_tokio(addr, secure).await;
            tickwire_tokio_round_trips(&mut ws, plan, text).await
        }),
        Client::NexusAsyncWeb => runtime().block_on(async {
            let (mut reader, mut writer, mut conn) = nexus_async_web(addr, secure).await;
            nexus_async_web_round_trips(&mut reader, &mut writer, &mut conn, plan, text).await
        }),
    };
    server.join();
    (histogram, alloc_count::last_per_op())
}

/// Streams `bytes` (`messages` frames of `len` bytes) into one fresh connection of `client`,
/// from a server on `peer_core` (behind TLS with `tls`). Returns the time from the first byte
/// readable to the last message, and the allocations and the CPU nanoseconds of the measuring
/// thread per message while it received them ([`Cost`]).
pub(super) fn stream(
    client: Client,
    tls: Option<&ServerTlsConfig>,
    bytes: &Arc<[u8]>,
    (messages, len): (usize, usize),
    peer_core: usize,
) -> (Duration, f64, f64) {
    // A rendezvous: the start signal is taken only once the server is ready to write (over
    // TLS, once it has encrypted everything). The client's first-byte wait can fire early on
    // the session tickets a TLS 1.3 server sends after the handshake, so a server still
    // encrypting would be timed as the client's.
    let (go, ready) = sync_channel(0);
    let server = match tls {
        None => servers::stream_sender(peer_core, Arc::clone(bytes), true, ready),
        Some(config) => servers::stream_sender_tls(
            peer_core,
            Arc::clone(bytes),
            config.clone(),
            servers::Encrypt::Ahead,
            ready,
        ),
    };
    let (addr, secure, name) = (server.addr(), tls.is_some(), client.name());
    let per = messages as u64;
    // Counted from the start signal to the last message: connection set-up stays out.
    let (elapsed, (allocations, cpu)) = match client {
        Client::Tickwire => {
            let mut ws = if secure {
                connect::tickwire_tls(addr)
            } else {
                connect::tickwire(addr)
            };
            let cost = Cost::start();
            let elapsed = loopback_stream::tickwire_receive(&mut ws, &go, messages, len, name);
            (elapsed, cost.stop(per))
        }
        Client::TokioTungstenite => runtime().block_on(async {
            if secure {
                let mut ws = connect::tokio_tungstenite_tls(addr).await;
                let cost = Cost::start();
                let elapsed =
                    loopback_stream::tokio_tungstenite_receive(&mut ws, &go, messages, len, name)
                        .await;
                (elapsed, cost.stop(per))
            } else {
                let mut ws = connect::tokio_tungstenite(addr).await;
                let cost = Cost::start();
                let elapsed =
                    loopback_stream::tokio_tungstenite_receive(&mut ws, &go, messages, len, name)
                        .await;
                (elapsed, cost.stop(per))
            }
        }),
        Client::Fastwebsockets => runtime().block_on(async {
            if secure {
                let stream = fastwebsockets_tls(addr).await;
                let cost = Cost::start();
                let elapsed =
                    loopback_stream::fastwebsockets_receive(stream, &go, messages, len, name).await;
                (elapsed, cost.stop(per))
            } else {
                let stream = connect::fastwebsockets_upgraded(addr).await;
                let cost = Cost::start();
                let elapsed =
                    loopback_stream::fastwebsockets_receive(stream, &go, messages, len, name).await;
                (elapsed, cost.stop(per))
            }
        }),
        Client::TickwireTokio => runtime().block_on(async {
            let mut ws = tickwire_tokio(addr, secure).await;
            let cost = Cost::start();
            let elapsed = tickwire_tokio_receive(&mut ws, &go, messages, len).await;
            (elapsed, cost.stop(per))
        }),
        Client::NexusAsyncWeb => runtime().block_on(async {
            let (mut reader, _writer, mut conn) = nexus_async_web(addr, secure).await;
            let cost = Cost::start();
            let elapsed = nexus_async_web_receive(&mut reader, &mut conn, &go, messages, len).await;
            (elapsed, cost.stop(per))
        }),
    };
    server.join();
    (elapsed, allocations, cpu)
}

/// What receiving a stream cost the measuring thread, counted once the connection is up:
/// allocations, and CPU time (user and kernel, `CLOCK_THREAD_CPUTIME_ID`). Waiting for bytes
/// costs no CPU, so unlike the rate this does not depend on how fast the sender and the
/// loopback deliver: it is what the client's own work and system calls take per message.
struct Cost {
    allocations: alloc_count::Counting,
    cpu: Duration,
}

impl Cost {
    fn start() -> Self {
        Self {
            allocations: alloc_count::start(),
            cpu: thread_cpu(),
        }
    }

    /// Allocations and CPU nanoseconds per message over `messages`.
    fn stop(self, messages: u64) -> (f64, f64) {
        let cpu = thread_cpu().saturating_sub(self.cpu);
        let allocations = alloc_count::stop_per_op(self.allocations, messages);
        (allocations, cpu.as_nanos() as f64 / messages.max(1) as f64)
    }
}

/// CPU time the calling thread has used.
fn thread_cpu() -> Duration {
    crate::harness::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID)
}

const TICKWIRE_TOKIO: &str = "tickwire-tokio";

/// The `ws://` or `wss://` URL of a loopback server.
fn url(addr: SocketAddr, secure: bool) -> String {
    if secure {
        connect::wss_url(addr)
    } else {
        connect::url(addr)
    }
}
const NEXUS_ASYNC_WEB: &str = "nexus-async-web";

/// A tickwire-tokio client (`ClientBuilder`, TCP_NODELAY on, trusting the bench CA for wss).
/// No read timeout: on tokio it is a timer per `recv`, which a user who does not ask for one
/// does not pay.
async fn tickwire_tokio(addr: SocketAddr, secure: bool) -> WebSocket<MaybeTlsStream> {
    let url = url(addr, secure);
    let builder = tickwire_tokio::ClientBuilder::new().nodelay(true);
    let builder = if secure {
        builder.tls(pki::tickwire_client_config())
    } else {
        builder
    };
    builder
        .connect(&url)
        .await
        .unwrap_or_else(|e| panic!("{TICKWIRE_TOKIO}: connect to {url}: {e}"))
}

/// tickwire-tokio: `send_text` (queue), `flush().await` (one write), then `recv().await`
/// (borrowed, validated text): the documented async API.
async fn tickwire_tokio_round_trips(
    ws: &mut WebSocket<MaybeTlsStream>,
    plan: Plan,
    text: &str,
) -> Histogram<u64> {
    ws.send_text(text)
        .unwrap_or_else(|e| panic!("{TICKWIRE_TOKIO}: send: {e}"));
    ws.flush()
        .await
        .unwrap_or_else(|e| panic!("{TICKWIRE_TOKIO}: flush: {e}"));
    match ws.recv().await {
        Ok(Recv::Message(Message::Text(echo))) if echo == text => {}
        other => panic!("{TICKWIRE_TOKIO}: wrong echo: {other:?}"),
    }
    round_trip::sample_each_async(plan, async || {
        ws.send_text(text)
            .unwrap_or_else(|e| panic!("{TICKWIRE_TOKIO}: send: {e}"));
        ws.flush()
            .await
            .unwrap_or_else(|e| panic!("{TICKWIRE_TOKIO}: flush: {e}"));
        match ws.recv().await {
            Ok(Recv::Message(Message::Text(echo))) if echo.len() == text.len() => {
                black_box(echo);
            }
            other => panic!("{TICKWIRE_TOKIO}: unexpected echo {other:?}"),
        }
    })
    .await
}

/// The timed part of a tickwire-tokio stream: signals `go`, waits until the TCP socket is
/// readable, then receives `messages` messages with `recv().await`.
async fn tickwire_tokio_receive(
    ws: &mut WebSocket<MaybeTlsStream>,
    go: &SyncSender<()>,
    messages: usize,
    len: usize,
) -> Duration {
    loopback_stream::start(go, TICKWIRE_TOKIO);
    ws.stream()
        .tcp()
        .readable()
        .await
        .unwrap_or_else(|e| panic!("{TICKWIRE_TOKIO}: wait for the first byte: {e}"));
    let started = Instant::now();
    let mut last_len = 0;
    for received in 0..messages {
        last_len = match ws.recv().await {
            Ok(Recv::Message(Message::Text(text))) => text.len(),
            other => panic!("{TICKWIRE_TOKIO}: message {received}: got {other:?}"),
        };
    }
    let elapsed = started.elapsed();
    loopback_stream::check_last(TICKWIRE_TOKIO, last_len, len);
    elapsed
}

/// A nexus-async-web client: `WsStreamBuilder` with Nagle disabled and default buffers, its
/// tokio-rustls path with the bench CA for wss. Returns its reader, writer and connection.
async fn nexus_async_web(addr: SocketAddr, secure: bool) -> (WsReader, WsWriter, MaybeTls) {
    let url = url(addr, secure);
    let builder = WsStreamBuilder::new().disable_nagle();
    let builder = if secure {
        builder.tls(&pki::nexus_client_config())
    } else {
        builder
    };
    builder
        .connect(&url)
        .await
        .unwrap_or_else(|e| panic!("{NEXUS_ASYNC_WEB}: connect to {url}: {e}"))
}

/// nexus-async-web: `WsWriter::send_text(conn, ..).await` (encode, mask, write) then
/// `WsReader::recv(conn).await` (borrowed, validated text), its primary API.
async fn nexus_async_web_round_trips(
    reader: &mut WsReader,
    writer: &mut WsWriter,
    conn: &mut MaybeTls,
    plan: Plan,
    text: &str,
) -> Histogram<u64> {
    use nexus_async_web::Message as Nexus;
    writer
        .send_text(conn, text)
        .await
        .unwrap_or_else(|e| panic!("{NEXUS_ASYNC_WEB}: send: {e}"));
    match reader.recv(conn).await {
        Ok(Some(Nexus::Text(echo))) if echo == text => {}
        other => panic!("{NEXUS_ASYNC_WEB}: wrong echo: {other:?}"),
    }
    round_trip::sample_each_async(plan, async || {
        writer
            .send_text(conn, text)
            .await
            .unwrap_or_else(|e| panic!("{NEXUS_ASYNC_WEB}: send: {e}"));
        match reader.recv(conn).await {
            Ok(Some(Nexus::Text(echo))) if echo.len() == text.len() => {
                black_box(echo);
            }
            other => panic!("{NEXUS_ASYNC_WEB}: unexpected echo {other:?}"),
        }
    })
    .await
}

/// The timed part of a nexus-async-web stream, as [`tickwire_tokio_receive`].
async fn nexus_async_web_receive(
    reader: &mut WsReader,
    conn: &mut MaybeTls,
    go: &SyncSender<()>,
    messages: usize,
    len: usize,
) -> Duration {
    use nexus_async_web::Message as Nexus;
    loopback_stream::start(go, NEXUS_ASYNC_WEB);
    conn.tcp()
        .readable()
        .await
        .unwrap_or_else(|e| panic!("{NEXUS_ASYNC_WEB}: wait for the first byte: {e}"));
    let started = Instant::now();
    let mut last_len = 0;
    for received in 0..messages {
        last_len = match reader.recv(conn).await {
            Ok(Some(Nexus::Text(text))) => text.len(),
            other => panic!("{NEXUS_ASYNC_WEB}: message {received}: got {other:?}"),
        };
    }
    let elapsed = started.elapsed();
    loopback_stream::check_last(NEXUS_ASYNC_WEB, last_len, len);
    elapsed
}

/// fastwebsockets over `wss://` as its users do it: tokio-rustls around the TCP stream (the
/// bench's rustls configuration: ring, the bench CA), then the hand-done upgrade over TLS.
async fn fastwebsockets_tls(addr: SocketAddr) -> TlsStream<TcpStream> {
    let tcp = connect::tokio_tcp(addr, "fastwebsockets wss").await;
    let connector = tokio_rustls::TlsConnector::from(pki::rustls_client_config());
    let name = rustls::pki_types::ServerName::try_from(pki::HOST).expect("an IP server name");
    let mut tls = connector
        .connect(name, tcp)
        .await
        .unwrap_or_else(|e| panic!("fastwebsockets wss: TLS handshake with {addr}: {e}"));
    connect::upgrade_by_hand(&mut tls, addr).await;
    tls
}

impl TokioSocket for TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

impl TokioSocket for MaybeTls {
    fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(tcp) => tcp,
            Self::Tls(tls) => tls.get_ref().0,
        }
    }
}
