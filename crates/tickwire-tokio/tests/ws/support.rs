//! What the tokio transport tests share: certificates generated at test time with rcgen (a
//! CA and a leaf for 127.0.0.1), TLS configurations, loopback listeners, and a TCP relay that
//! cuts the byte stream into small pieces with pauses between some of them, so that a
//! receive waits in the middle of TLS records and WebSocket frames.
//!
//! Every wait in the tests is bounded by [`PATIENCE`], so a broken build fails instead of
//! hanging.

use std::net::SocketAddr;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use tickwire_tokio::{
    ClientTlsConfig, MaybeTlsStream, Message, Recv, ServerBuilder, ServerTlsConfig, Transport,
    WebSocket,
};

/// The bound on every wait.
pub(crate) const PATIENCE: Duration = Duration::from_secs(30);

/// A server configuration for 127.0.0.1 and the client configuration that trusts it.
pub(crate) fn tls_pair() -> (ServerTlsConfig, ClientTlsConfig) {
    let mut ca = CertificateParams::default();
    ca.distinguished_name = name("tickwire-tokio test CA");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let issuer = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let mut leaf =
        CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    leaf.distinguished_name = name("localhost");
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let key = KeyPair::generate().unwrap();
    let cert = leaf.signed_by(&key, &issuer).unwrap();
    let server = ServerTlsConfig::builder(cert.pem().as_bytes(), key.serialize_pem().as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let client = ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_pem(issuer.pem().as_bytes())
        .unwrap()
        .build()
        .unwrap();
    (server, client)
}

fn name(common: &str) -> DistinguishedName {
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, common);
    dn
}

/// A listener on 127.0.0.1 and its address.
pub(crate) async fn listen() -> (TcpListener, SocketAddr) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// The server side of the next connection on `listener`: TLS with `tls`, then the upgrade
/// with `builder`'s options.
pub(crate) async fn accept_tls(
    listener: &TcpListener,
    builder: ServerBuilder,
    tls: &ServerTlsConfig,
) -> WebSocket<MaybeTlsStream> {
    let (tcp, _) = listener.accept().await.unwrap();
    builder.accept_tls(tcp, tls).await.unwrap()
}

/// How a relay forwards one direction.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pace {
    /// Largest piece written at once (pieces vary from 1 byte up to this).
    pub(crate) max_piece: usize,
    /// A pause after every this many pieces.
    pub(crate) pause_every: u32,
    pub(crate) pause: Duration,
}

/// A relay on 127.0.0.1 to `upstream`, for one connection: bytes from the client to
/// `upstream` are paced by `to_server`, the other way by `to_client`. Returns its address.
pub(crate) async fn relay(upstream: SocketAddr, to_server: Pace, to_client: Pace) -> SocketAddr {
    // Small kernel buffers on the relay's side, so a slow direction pushes back on the
    // sender within a few KiB instead of megabytes.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(16 << 10).unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let listener = socket.listen(16).unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (client, _) = listener.accept().await.unwrap();
        let server = TcpStream::connect(upstream).await.unwrap();
        client.set_nodelay(true).unwrap();
        server.set_nodelay(true).unwrap();
        let (client_read, client_write) = client.into_split();
        let (server_read, server_write) = server.into_split();
        let up = tokio::spawn(forward(client_read, server_write, to_server, 1));
        let down = tokio::spawn(forward(server_read, client_write, to_client, 7));
        let _ = tokio::join!(up, down);
    });
    addr
}

async fn forward(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    pace: Pace,
    seed: u64,
) {
    let mut buf = vec![0u8; pace.max_piece];
    let mut rng = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut pieces = 0u32;
    loop {
        // xorshift: piece sizes vary, so cuts land anywhere in records and frames.
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let want = 1 + (rng as usize) % pace.max_piece;
        let n = match from.read(&mut buf[..want]).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
        pieces += 1;
        if pieces.is_multiple_of(pace.pause_every) {
            tokio::time::sleep(pace.pause).await;
        }
    }
    let _ = to.shutdown().await;
}

/// A relay direction that forwards as fast as it can.
pub(crate) const FAST: Pace = Pace {
    max_piece: 64 << 10,
    pause_every: u32::MAX,
    pause: Duration::ZERO,
};

/// The text of message `i` in the streaming tests: its number, then a compressible body
/// whose length varies with `i` (so messages take one or several fragments).
pub(crate) fn message_text(i: u32) -> String {
    let mut text = format!("{i:08}:");
    let len = 16 + (i as usize * 37) % 300;
    while text.len() < len {
        text.push_str(&format!("{} ", i % 1000));
    }
    text
}

/// Echoes every text and binary message until the close handshake ends, then finishes;
/// returns how many it echoed.
pub(crate) async fn echo<S: Transport>(mut ws: WebSocket<S>) -> usize {
    let mut echoed = 0;
    loop {
        match ws.recv_with_sender().await.unwrap() {
            (Recv::Message(Message::Text(text)), mut sender) => sender.text(text).unwrap(),
            (Recv::Message(Message::Binary(bytes)), mut sender) => sender.binary(bytes).unwrap(),
            (Recv::Message(_), _) => continue,
            (Recv::Closed(_), _) => break,
            (other, _) => panic!("unexpected {other:?}"),
        }
        echoed += 1;
        ws.flush().await.unwrap();
    }
    ws.finish().await.unwrap();
    echoed
}
