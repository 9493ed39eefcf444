//! Round trips over plain TCP, TLS and mutual TLS; compression with both codecs; limits;
//! an answer to an id never issued; an idle connection without buffers.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use tickwire_tokio::codec::buf::WriteBuf;
use tickwire_tokio::codec::mux;
#[cfg(any(feature = "lz4", feature = "zstd"))]
use tickwire_tokio::codec::packet::CompressionPolicy;
use tickwire_tokio::codec::packet::{BASE_HEADER_LEN, PacketConfig, PacketError, PacketWriter};
use tickwire_tokio::packet::{Error, PacketClient, PacketClientBuilder, PacketServer};

use crate::support::{Ca, PATIENCE, builder, echo_server, listen};

async fn assert_echoes<S: tickwire_tokio::Transport>(client: &mut PacketClient<S>) {
    for payload in [&b"order 1"[..], b"", &[0xA5; 70_000]] {
        assert_eq!(client.request(payload).await.unwrap(), payload);
    }
}

#[tokio::test]
async fn plain_round_trips_and_a_pong_answers_a_ping() {
    let (server, port) = echo_server(PacketServer::new()).await;
    let mut client = builder().connect("127.0.0.1", port).await.unwrap();
    assert_echoes(&mut client).await;
    assert!(client.ping().await.unwrap() < PATIENCE);
    assert_eq!(client.stats().completed, 3);
    server.shutdown().await;
}

#[tokio::test]
async fn tls_round_trips() {
    let ca = Ca::new();
    let (server, port) = echo_server(PacketServer::new().tls(ca.server(false))).await;
    let mut client = builder()
        .tls(ca.client(false))
        .connect("localhost", port)
        .await
        .unwrap();
    assert_echoes(&mut client).await;
    assert!(client.stream().tls().is_some());
    server.shutdown().await;
}

#[tokio::test]
async fn mutual_tls_round_trips_and_refuses_a_client_without_certificate() {
    let ca = Ca::new();
    let (server, port) = echo_server(PacketServer::new().tls(ca.server(true))).await;
    let mut client = builder()
        .tls(ca.client(true))
        .connect("localhost", port)
        .await
        .unwrap();
    assert_echoes(&mut client).await;

    // Without a certificate the server's alert arrives with the first read at the latest.
    let outcome = async {
        let mut client = builder()
            .tls(ca.client(false))
            .connect("localhost", port)
            .await?;
        client.request(b"no certificate").await.map(<[u8]>::to_vec)
    };
    match outcome.await {
        Err(Error::Tls(_)) => {}
        other => panic!("expected a TLS error, got {other:?}"),
    }
    server.shutdown().await;
}

#[cfg(any(feature = "lz4", feature = "zstd"))]
/// Round trips with `policy` on both ends, and the codec bits of the first request on the
/// wire (read by a raw listener) are `bits`.
async fn compresses(policy: CompressionPolicy, bits: u8) {
    let config = |base: PacketConfig| base.with_compression(policy);
    let server = PacketServer::new().packet_config(config(PacketConfig::server()));
    let (server, port) = echo_server(server).await;
    let client = builder().packet_config(config(PacketConfig::client()));
    let mut connected = client.connect("127.0.0.1", port).await.unwrap();
    let payload = "{\"px\":101.25,\"qty\":3}".repeat(200);
    for _ in 0..3 {
        assert_eq!(
            connected.request(payload.as_bytes()).await.unwrap(),
            payload.as_bytes()
        );
    }
    server.shutdown().await;

    let (listener, port) = listen().await;
    let raw = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut header = [0; BASE_HEADER_LEN + 4];
        tcp.read_exact(&mut header).await.unwrap();
        header
    });
    let mut connected = client.connect("127.0.0.1", port).await.unwrap();
    connected.send_request(payload.as_bytes()).unwrap();
    connected.flush().await.unwrap();
    let header = tokio::time::timeout(PATIENCE, raw).await.unwrap().unwrap();
    assert_eq!(header[3] & 0b11, bits, "codec bits");
    let wire_len = u32::from_le_bytes(header[4..8].try_into().unwrap()) as usize;
    assert!(wire_len < payload.len() / 4, "{wire_len} bytes on the wire");
}

#[cfg(feature = "lz4")]
#[tokio::test]
async fn lz4_payloads_travel_compressed_both_ways() {
    compresses(CompressionPolicy::lz4(), 0b01).await;
}

#[cfg(feature = "zstd")]
#[tokio::test]
async fn zstd_payloads_travel_compressed_both_ways() {
    compresses(CompressionPolicy::zstd(), 0b10).await;
}

#[tokio::test]
async fn an_oversized_answer_is_a_typed_error_and_closes_the_connection() {
    let (server, port) = echo_server(PacketServer::new()).await;
    let small = PacketConfig::client().with_max_payload_len(1024);
    let mut client = builder()
        .packet_config(small.clone())
        .connect("127.0.0.1", port)
        .await
        .unwrap();
    // Over this end's limit: refused before anything is sent, the connection carries on.
    match client.request(&[7; 2000]).await {
        Err(error @ Error::Encode(_)) => assert!(!error.is_fatal()),
        other => panic!("expected an encode error, got {other:?}"),
    }
    assert_eq!(client.request(b"fits").await.unwrap(), b"fits");

    // An answer over the limit, from a server with a larger one, closes the connection: the
    // server sees it end while the client is still held.
    let (listener, port) = listen().await;
    let raw = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut request = [0; BASE_HEADER_LEN + 1];
        tcp.read_exact(&mut request).await.unwrap();
        let mut out = WriteBuf::new(4096, 0);
        let mut writer = PacketWriter::new(PacketConfig::server());
        writer.encode(&mut out, 1, &[1; 2000]).unwrap();
        tcp.write_all(out.as_slice()).await.unwrap();
        let mut rest = Vec::new();
        tokio::time::timeout(PATIENCE, tcp.read_to_end(&mut rest)).await
    });
    let mut client = builder()
        .packet_config(small)
        .connect("127.0.0.1", port)
        .await
        .unwrap();
    match client.request(b"x").await {
        Err(error @ Error::Protocol(PacketError::PayloadTooLarge { len: 2000, .. })) => {
            assert!(error.is_fatal());
        }
        other => panic!("expected PayloadTooLarge, got {other:?}"),
    }
    assert!(client.is_closed());
    let ended = raw.await.unwrap().expect("the client shut its side");
    assert_eq!(ended.unwrap(), 0, "nothing after the request");
    assert!(matches!(client.request(b"y").await, Err(Error::Closed)));
    server.shutdown().await;
}

#[tokio::test]
async fn an_answer_to_an_id_never_issued_closes_the_connection() {
    let (listener, port) = listen().await;
    let raw = tokio::spawn(async move {
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut request = [0; BASE_HEADER_LEN + 1];
        tcp.read_exact(&mut request).await.unwrap();
        let mut out = WriteBuf::new(64, 0);
        PacketWriter::new(PacketConfig::server())
            .encode(&mut out, 999, b"not yours")
            .unwrap();
        tcp.write_all(out.as_slice()).await.unwrap();
        let mut rest = Vec::new();
        tokio::time::timeout(PATIENCE, tcp.read_to_end(&mut rest)).await
    });
    let mut client = builder().connect("127.0.0.1", port).await.unwrap();
    match client.request(b"x").await {
        Err(Error::Mux(mux::Error::UnknownId { id })) => assert_eq!(id.0, 999),
        other => panic!("expected UnknownId, got {other:?}"),
    }
    assert!(client.is_closed());
    let ended = raw.await.unwrap().expect("the client shut its side");
    assert_eq!(ended.unwrap(), 0);
}

#[tokio::test]
async fn an_idle_connection_can_wait_without_its_buffers() {
    let (listener, port) = listen().await;
    let mut client = builder()
        .release_idle_buffers(true)
        .connect("127.0.0.1", port)
        .await
        .unwrap();
    let (tcp, _) = listener.accept().await.unwrap();
    let server = PacketServer::new().release_idle_buffers(true);
    let mut connection = server.accept(tcp).await.unwrap();

    // A wait that is given up (cancelled) leaves the idle connection without buffers.
    let waited = tokio::time::timeout(Duration::from_millis(50), connection.recv_request()).await;
    assert!(waited.is_err(), "nothing was sent");
    assert!(connection.buffers_released());

    let id = client.send_request(b"wake up").unwrap();
    client.flush().await.unwrap();
    let (got, payload) = tokio::time::timeout(PATIENCE, connection.recv_request())
        .await
        .unwrap()
        .unwrap();
    assert_eq!((got, payload), (id, &b"wake up"[..]));
    assert!(!connection.buffers_released());
    connection.respond(got, b"awake").unwrap();
    connection.flush().await.unwrap();
    assert_eq!(client.recv_response().await.unwrap(), (id, &b"awake"[..]));

    // After an exchange too: the socket's stale readiness is not taken for bytes.
    let waited = tokio::time::timeout(Duration::from_millis(50), connection.recv_request()).await;
    assert!(waited.is_err());
    assert!(connection.buffers_released());
    let _ = tokio::time::timeout(Duration::from_millis(50), client.ping()).await;
    assert!(
        client.buffers_released(),
        "the client waited for its pong without buffers"
    );

    // Over TLS the buffers stay (module docs).
    let ca = Ca::new();
    let (listener, port) = listen().await;
    let tls = ca.client(false);
    let connect = tokio::spawn(async move { builder().tls(tls).connect("localhost", port).await });
    let (tcp, _) = listener.accept().await.unwrap();
    let mut connection = server.tls(ca.server(false)).accept(tcp).await.unwrap();
    let _client = connect.await.unwrap().unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(50), connection.recv_request()).await;
    assert!(waited.is_err());
    assert!(!connection.buffers_released());

    // Defaults: a server lends its buffers out while idle, a client keeps them; off on a
    // server keeps them too.
    for (release, expected) in [(None, true), (Some(false), false)] {
        let (listener, port) = listen().await;
        let mut client = PacketClientBuilder::new()
            .connect("127.0.0.1", port)
            .await
            .unwrap();
        let (tcp, _) = listener.accept().await.unwrap();
        let server = match release {
            Some(on) => PacketServer::new().release_idle_buffers(on),
            None => PacketServer::new(),
        };
        let mut connection = server.accept(tcp).await.unwrap();
        let waited =
            tokio::time::timeout(Duration::from_millis(50), connection.recv_request()).await;
        assert!(waited.is_err());
        assert_eq!(
            connection.buffers_released(),
            expected,
            "server {release:?}"
        );
        let _ = tokio::time::timeout(Duration::from_millis(50), client.ping()).await;
        assert!(!client.buffers_released(), "a client keeps them by default");
    }
}
