//! The one-way streaming workload: the server writes pre-encoded frames as fast as the socket
//! takes them, the client library receives and parses every message.
//!
//! Owns the client receive loop of each library and the timing: from the moment the first
//! byte is readable (a `peek` or readiness wait, outside any library) to the last message
//! parsed, on the client. Every client uses its library's default buffers.

use std::hint::black_box;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::time::{Duration, Instant};

use fastwebsockets::{FragmentCollector, OpCode, Role};
use futures_util::StreamExt;

use super::{Library, PAYLOAD_LEN, connect, servers};
use crate::wire;

/// Read buffer of the raw floor: as large as the largest client default (nexus-web's 1 MiB), so
/// no client reads in bigger pieces than the floor does; 64 KiB made the floor ~25% slower.
const RAW_READ_BUFFER: usize = 1024 * 1024;

/// `messages` unmasked text frames of `payload`, back to back: what the server writes.
pub(crate) fn encoded_stream(payload: &[u8], messages: usize) -> Arc<[u8]> {
    let frame = wire::frame(true, 0x1, payload, None);
    let mut bytes = Vec::with_capacity(frame.len() * messages);
    for _ in 0..messages {
        bytes.extend_from_slice(&frame);
    }
    bytes.into()
}

/// Streams `bytes` (holding `messages` frames) into one fresh connection of `library`, the
/// server on `peer_core`. Returns messages per second as the client saw them.
pub(super) fn measure(
    library: Library,
    bytes: &Arc<[u8]>,
    messages: usize,
    peer_core: usize,
) -> f64 {
    let (go, ready) = sync_channel(1);
    let handshake = library != Library::RawTcp;
    let server = servers::stream_sender(peer_core, Arc::clone(bytes), handshake, ready);
    let addr = server.addr();
    let elapsed = match library {
        Library::RawTcp => raw_tcp(addr, go, bytes.len()),
        Library::Tickwire => tickwire(addr, go, messages),
        Library::Tungstenite => tungstenite(addr, go, messages),
        Library::TokioTungstenite => tokio_tungstenite(addr, go, messages),
        Library::Fastwebsockets => fastwebsockets(addr, go, messages),
        Library::NexusWeb => nexus_web(addr, go, messages),
    };
    // Each client function drops its connection before returning, which ends the server.
    server.join();
    messages as f64 / elapsed.as_secs_f64().max(f64::MIN_POSITIVE)
}

/// The floor: reads the stream's byte count with no parsing at all.
fn raw_tcp(addr: SocketAddr, go: SyncSender<()>, total: usize) -> Duration {
    let mut stream = connect::raw(addr);
    let mut buffer = vec![0u8; RAW_READ_BUFFER];
    start(&go, "raw TCP");
    stream
        .peek(&mut buffer[..1])
        .expect("raw TCP: wait for the first byte");
    let started = Instant::now();
    let mut received = 0;
    while received < total {
        match stream.read(&mut buffer) {
            Ok(0) => panic!("raw TCP: EOF after {received} of {total} bytes"),
            Ok(n) => received += n,
            Err(e) => panic!("raw TCP: read after {received} of {total} bytes: {e}"),
        }
    }
    let elapsed = started.elapsed();
    black_box(&buffer);
    elapsed
}

/// tickwire: blocking `recv`, borrowed validated text.
fn tickwire(addr: SocketAddr, go: SyncSender<()>, messages: usize) -> Duration {
    let mut ws = connect::tickwire(addr);
    tickwire_receive(&mut ws, &go, messages, PAYLOAD_LEN, "tickwire")
}

/// The timed part of [`tickwire_blocking`] on a connected client, over `ws://` or `wss://`: signals
/// `go`, waits for the first byte on the TCP socket, then receives `messages` messages;
/// `library` names it in failures.
pub(crate) fn tickwire_receive(
    ws: &mut tickwire_blocking::WebSocket<tickwire_blocking::MaybeTlsStream>,
    go: &SyncSender<()>,
    messages: usize,
    len: usize,
    library: &str,
) -> Duration {
    start(go, library);
    ws.stream()
        .tcp()
        .peek(&mut [0u8; 1])
        .unwrap_or_else(|e| panic!("{library}: wait for the first byte: {e}"));
    receive_all(library, messages, len, || match ws.recv() {
        Ok(tickwire_blocking::Recv::Message(tickwire_blocking::Message::Text(text))) => text.len(),
        other => panic!("{library}: expected text, got {other:?}"),
    })
}

/// tungstenite: blocking `read`, an owned `Utf8Bytes` split from its read buffer.
fn tungstenite(addr: SocketAddr, go: SyncSender<()>, messages: usize) -> Duration {
    let mut ws = connect::tungstenite(addr);
    start(&go, "tungstenite");
    ws.get_ref()
        .peek(&mut [0u8; 1])
        .expect("tungstenite: wait for the first byte");
    receive_all("tungstenite", messages, PAYLOAD_LEN, || {
        match ws.read().expect("tungstenite: receive") {
            tungstenite::Message::Text(text) => text.len(),
            other => panic!("tungstenite: expected text, got {other:?}"),
        }
    })
}

/// tokio-tungstenite: `StreamExt::next` on the current-thread runtime, timed inside one
/// `block_on`.
fn tokio_tungstenite(addr: SocketAddr, go: SyncSender<()>, messages: usize) -> Duration {
    let runtime = connect::current_thread_runtime();
    runtime.block_on(async {
        let mut ws = connect::tokio_tungstenite(addr).await;
        tokio_tungstenite_receive(&mut ws, &go, messages, PAYLOAD_LEN, "tokio-tungstenite").await
    })
}

/// The timed part of [`tokio_tungstenite`](mod@::tokio_tungstenite) on a connected client (plain or TLS stream), run
/// inside the caller's `block_on`: signals `go`, waits until the TCP socket is readable, then
/// receives `messages` messages; `library` names it in failures.
pub(crate) async fn tokio_tungstenite_receive<S>(
    ws: &mut tokio_tungstenite::WebSocketStream<S>,
    go: &SyncSender<()>,
    messages: usize,
    len: usize,
    library: &str,
) -> Duration
where
    S: TokioSocket + tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio_tungstenite::tungstenite::Message;
    start(go, library);
    ws.get_ref()
        .tcp()
        .readable()
        .await
        .unwrap_or_else(|e| panic!("{library}: wait for the first byte: {e}"));
    let started = Instant::now();
    let mut last_len = 0;
    for received in 0..messages {
        last_len = match ws.next().await {
            Some(Ok(Message::Text(text))) => text.len(),
            other => panic!("{library}: message {received}: got {other:?}"),
        };
    }
    let elapsed = started.elapsed();
    check_last(library, last_len, len);
    elapsed
}

/// fastwebsockets: `read_frame` on a `FragmentCollector` (whole messages, UTF-8 checked), on the
/// current-thread runtime, timed inside one `block_on`.
fn fastwebsockets(addr: SocketAddr, go: SyncSender<()>, messages: usize) -> Duration {
    let runtime = connect::current_thread_runtime();
    runtime.block_on(async {
        let stream = connect::fastwebsockets_upgraded(addr).await;
        fastwebsockets_receive(stream, &go, messages, PAYLOAD_LEN, "fastwebsockets").await
    })
}

/// The timed part of [`fastwebsockets`](mod@::fastwebsockets) on an upgraded stream (plain or
/// TLS), run inside the caller's `block_on`: signals `go`, waits until the TCP socket is
/// readable, then receives `messages` messages of `len` bytes; `library` names it in failures.
pub(crate) async fn fastwebsockets_receive<S>(
    stream: S,
    go: &SyncSender<()>,
    messages: usize,
    len: usize,
    library: &str,
) -> Duration
where
    S: TokioSocket + tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    start(go, library);
    stream
        .tcp()
        .readable()
        .await
        .unwrap_or_else(|e| panic!("{library}: wait for the first byte: {e}"));
    let mut ws = FragmentCollector::new(fastwebsockets::WebSocket::after_handshake(
        stream,
        Role::Client,
    ));
    let started = Instant::now();
    let mut last_len = 0;
    for received in 0..messages {
        let frame = ws
            .read_frame()
            .await
            .unwrap_or_else(|e| panic!("{library}: message {received}: {e}"));
        assert!(
            frame.opcode == OpCode::Text,
            "{library}: message {received}: expected text, got {:?}",
            frame.opcode
        );
        last_len = frame.payload.len();
    }
    let elapsed = started.elapsed();
    check_last(library, last_len, len);
    elapsed
}

/// nexus-web: blocking `recv`, borrowed validated text.
fn nexus_web(addr: SocketAddr, go: SyncSender<()>, messages: usize) -> Duration {
    let mut ws = connect::nexus_web(addr);
    nexus_web_receive(&mut ws, &go, messages, "nexus-web")
}

/// The timed part of [`nexus_web`](mod@::nexus_web) on a connected client, over `ws://` or `wss://`: signals
/// `go`, waits for the first byte on the TCP socket, then receives `messages` messages;
/// `library` names it in failures.
pub(super) fn nexus_web_receive<S: BlockingSocket + Read + Write>(
    ws: &mut nexus_web::ws::Client<S>,
    go: &SyncSender<()>,
    messages: usize,
    library: &str,
) -> Duration {
    start(go, library);
    ws.stream()
        .tcp()
        .peek(&mut [0u8; 1])
        .unwrap_or_else(|e| panic!("{library}: wait for the first byte: {e}"));
    receive_all(library, messages, PAYLOAD_LEN, || match ws.recv() {
        Ok(Some(nexus_web::ws::Message::Text(text))) => text.len(),
        other => panic!("{library}: expected text, got {other:?}"),
    })
}

/// The TCP socket under a blocking client's stream, to wait for the first byte below the
/// library (and below TLS).
pub(super) trait BlockingSocket {
    /// The socket.
    fn tcp(&self) -> &TcpStream;
}

impl BlockingSocket for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl BlockingSocket for nexus_web::MaybeTls<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        match self {
            Self::Plain(socket) => socket,
            Self::Tls(tls) => tls.stream(),
        }
    }
}

/// The TCP socket under an async client's stream, as [`BlockingSocket`].
pub(crate) trait TokioSocket {
    /// The socket.
    fn tcp(&self) -> &tokio::net::TcpStream;
}

impl TokioSocket for tokio::net::TcpStream {
    fn tcp(&self) -> &tokio::net::TcpStream {
        self
    }
}

impl TokioSocket for tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream> {
    fn tcp(&self) -> &tokio::net::TcpStream {
        self.get_ref()
    }
}

/// Tells the server the client is set up and waiting.
pub(crate) fn start(go: &SyncSender<()>, library: &str) {
    go.send(())
        .unwrap_or_else(|_| panic!("{library}: the stream server ended before the start"));
}

/// Times `messages` calls of `next` (each receives one text message and returns its length)
/// and checks the last one. The count is exact by construction: `next` panics on anything but
/// a text message, and on EOF.
fn receive_all(
    library: &str,
    messages: usize,
    len: usize,
    mut next: impl FnMut() -> usize,
) -> Duration {
    let started = Instant::now();
    let mut last_len = 0;
    for _ in 0..messages {
        last_len = next();
    }
    let elapsed = started.elapsed();
    check_last(library, last_len, len);
    elapsed
}

/// Fails the run when the last message is not `len` bytes, the payload's length.
pub(crate) fn check_last(library: &str, last_len: usize, len: usize) {
    assert_eq!(
        last_len, len,
        "{library}: the last message has the wrong length"
    );
}
