//! Opening one client connection per library to a loopback server, TCP_NODELAY on.
//!
//! Owns connection setup only (TCP connect, the opening handshake, socket options); nothing
//! here is timed. Every function panics with the library's name when setup fails: the
//! benchmark cannot go on without the connection.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use tickwire_codec::deflate::DeflateConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::ws_tls::pki;

/// Bounds every blocking read on a client socket, so a dead server fails the run instead of
/// hanging it (SO_RCVTIMEO costs nothing per read).
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// The RFC 6455 §1.3 sample nonce. One fixed key is fine for a benchmark, and its known accept
/// value lets the hand-done handshake check the server's answer without a SHA-1 dependency.
const SAMPLE_KEY: &str = "dGhlIHNhbXBsZSBub25jZQ==";

/// `Sec-WebSocket-Accept` for [`SAMPLE_KEY`] (RFC 6455 §1.3).
const SAMPLE_ACCEPT: &str = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=";

/// Longest response head the hand-done handshake reads before giving up.
const MAX_HEAD: usize = 8 * 1024;

/// The `ws://` URL of a loopback server.
pub(crate) fn url(addr: SocketAddr) -> String {
    format!("ws://{addr}/")
}

/// A plain TCP connection (the raw floor), TCP_NODELAY on.
pub(super) fn raw(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("raw TCP: connect to the loopback server");
    stream.set_nodelay(true).expect("raw TCP: set TCP_NODELAY");
    stream
        .set_read_timeout(Some(READ_TIMEOUT))
        .expect("raw TCP: set the read timeout");
    stream
}

/// A tickwire client (its builder turns TCP_NODELAY on by default).
pub(crate) fn tickwire(
    addr: SocketAddr,
) -> tickwire_blocking::WebSocket<tickwire_blocking::MaybeTlsStream> {
    tickwire_blocking::ClientBuilder::new()
        .nodelay(true)
        .read_timeout(Some(READ_TIMEOUT))
        .connect(&url(addr))
        .unwrap_or_else(|e| panic!("tickwire: connect to {addr}: {e}"))
}

/// A tickwire client offering permessage-deflate with `config`, or offering nothing.
pub(super) fn tickwire_deflate(
    addr: SocketAddr,
    deflate: Option<DeflateConfig>,
) -> tickwire_blocking::WebSocket<tickwire_blocking::MaybeTlsStream> {
    let mut builder = tickwire_blocking::ClientBuilder::new()
        .nodelay(true)
        .read_timeout(Some(READ_TIMEOUT));
    if let Some(config) = deflate {
        builder = builder.deflate(config);
    }
    builder
        .connect(&url(addr))
        .unwrap_or_else(|e| panic!("tickwire: connect to {addr}: {e}"))
}

/// A tungstenite client over a std `TcpStream`, default configuration.
pub(super) fn tungstenite(addr: SocketAddr) -> tungstenite::WebSocket<TcpStream> {
    let stream = raw(addr);
    let (ws, _response) = tungstenite::client(url(addr), stream)
        .unwrap_or_else(|e| panic!("tungstenite: handshake with {addr}: {e}"));
    ws
}

/// A nexus-web blocking client, default buffers, Nagle disabled: [`raw`]'s socket (TCP_NODELAY
/// and the read timeout set, as its builder's `disable_nagle` and `read_timeout` set them)
/// upgraded with `connect_with`. Its builder's `connect` would return a
/// `Client<MaybeTls<TcpStream>>` once the `tls` feature is on (the wss workloads need it);
/// this keeps the `ws://` client a plain `Client<TcpStream>`, as without that feature.
pub(super) fn nexus_web(addr: SocketAddr) -> nexus_web::ws::Client<TcpStream> {
    nexus_web::ws::Client::builder()
        .connect_with(raw(addr), &url(addr))
        .unwrap_or_else(|e| panic!("nexus-web: connect to {addr}: {e}"))
}

/// The `wss://` URL of a loopback server: an IP address, which the test leaf names.
pub(crate) fn wss_url(addr: SocketAddr) -> String {
    format!("wss://{addr}/")
}

/// A tickwire `wss://` client trusting the bench CA (see [`pki`]).
pub(crate) fn tickwire_tls(
    addr: SocketAddr,
) -> tickwire_blocking::WebSocket<tickwire_blocking::MaybeTlsStream> {
    tickwire_blocking::ClientBuilder::new()
        .nodelay(true)
        .read_timeout(Some(READ_TIMEOUT))
        .tls(pki::tickwire_client_config())
        .connect(&wss_url(addr))
        .unwrap_or_else(|e| panic!("tickwire wss: connect to {addr}: {e}"))
}

/// A nexus-web `wss://` client through its builder's `tls`, trusting the bench CA, default
/// buffers, Nagle disabled.
pub(super) fn nexus_web_tls(
    addr: SocketAddr,
) -> nexus_web::ws::Client<nexus_web::MaybeTls<TcpStream>> {
    nexus_web::ws::Client::builder()
        .disable_nagle()
        .read_timeout(READ_TIMEOUT)
        .tls(&pki::nexus_client_config())
        .connect(&wss_url(addr))
        .unwrap_or_else(|e| panic!("nexus-web wss: connect to {addr}: {e}"))
}

/// A tokio-tungstenite `wss://` client on the current runtime: `Connector::Rustls` with the
/// bench's rustls configuration (ring, the bench CA), default WebSocket configuration.
pub(crate) async fn tokio_tungstenite_tls(
    addr: SocketAddr,
) -> tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>> {
    let stream = tokio_tcp(addr, "tokio-tungstenite wss").await;
    let connector = tokio_tungstenite::Connector::Rustls(pki::rustls_client_config());
    let (ws, _response) = tokio_tungstenite::client_async_tls_with_config(
        wss_url(addr),
        stream,
        None,
        Some(connector),
    )
    .await
    .unwrap_or_else(|e| panic!("tokio-tungstenite wss: handshake with {addr}: {e}"));
    ws
}

/// A tokio-tungstenite client on the current runtime, default configuration.
pub(crate) async fn tokio_tungstenite(
    addr: SocketAddr,
) -> tokio_tungstenite::WebSocketStream<tokio::net::TcpStream> {
    let stream = tokio_tcp(addr, "tokio-tungstenite").await;
    let (ws, _response) = tokio_tungstenite::client_async(url(addr), stream)
        .await
        .unwrap_or_else(|e| panic!("tokio-tungstenite: handshake with {addr}: {e}"));
    ws
}

/// A tokio `TcpStream` on which the HTTP upgrade has been done by hand (fastwebsockets is built
/// without its `upgrade` feature). The caller wraps it with
/// `fastwebsockets::WebSocket::after_handshake(stream, Role::Client)`.
///
/// The response is read a byte at a time so no frame byte after the head is taken from the
/// socket (the servers here send nothing before the client speaks or signals, but the client
/// must not rely on that).
pub(crate) async fn fastwebsockets_upgraded(addr: SocketAddr) -> tokio::net::TcpStream {
    let mut stream = tokio_tcp(addr, "fastwebsockets").await;
    upgrade_by_hand(&mut stream, addr).await;
    stream
}

/// The hand-done upgrade of [`fastwebsockets_upgraded`] over any connected stream (plain TCP,
/// or a TLS stream a user wrapped it in), for a server at `addr`.
pub(crate) async fn upgrade_by_hand<S>(stream: &mut S, addr: SocketAddr)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {SAMPLE_KEY}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("fastwebsockets: write the upgrade request");
    let mut head = Vec::with_capacity(256);
    while !head.ends_with(b"\r\n\r\n") {
        assert!(
            head.len() < MAX_HEAD,
            "fastwebsockets: no end of the response head in {MAX_HEAD} bytes"
        );
        head.push(
            stream
                .read_u8()
                .await
                .expect("fastwebsockets: read the upgrade response"),
        );
    }
    let head = String::from_utf8(head).expect("fastwebsockets: the response head is not UTF-8");
    let status = head.lines().next().unwrap_or_default();
    assert!(
        status.starts_with("HTTP/1.1 101"),
        "fastwebsockets: upgrade refused: {status}"
    );
    assert_eq!(
        header(&head, "sec-websocket-accept"),
        Some(SAMPLE_ACCEPT),
        "fastwebsockets: wrong Sec-WebSocket-Accept in {head:?}"
    );
}

/// A tokio TCP connection, TCP_NODELAY on.
pub(crate) async fn tokio_tcp(addr: SocketAddr, library: &str) -> tokio::net::TcpStream {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .unwrap_or_else(|e| panic!("{library}: connect to {addr}: {e}"));
    stream
        .set_nodelay(true)
        .unwrap_or_else(|e| panic!("{library}: set TCP_NODELAY: {e}"));
    stream
}

/// The trimmed value of header `name` (lowercase) in a response head.
fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then_some(value.trim())
    })
}

/// A tokio current-thread runtime with I/O, for the async clients on the measuring thread.
pub(super) fn current_thread_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .expect("build a tokio current-thread runtime")
}
