//! The reactor over wss://: the TLS handshake before the upgrade, echo, the close handshake,
//! and what a plaintext client on the TLS port gets.

mod support;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use support::{Fixture, read_head};
use tickwire_blocking::{ClientBuilder, ClientTlsConfig, CloseCode, Message, Recv};
use tickwire_server::{DisconnectKind, ServerBuilder, ServerTlsConfig};

/// A self-signed certificate for 127.0.0.1, the server's config, and a client config that
/// trusts it alone.
fn tls_pair() -> (ServerTlsConfig, ClientTlsConfig) {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let server = ServerTlsConfig::builder(
        cert.cert.pem().as_bytes(),
        cert.signing_key.serialize_pem().as_bytes(),
    )
    .unwrap()
    .build()
    .unwrap();
    let client = ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_pem(cert.cert.pem().as_bytes())
        .unwrap()
        .build()
        .unwrap();
    (server, client)
}

#[test]
fn echoes_over_wss_and_closes_cleanly() {
    let (server, client) = tls_pair();
    let fixture = Fixture::start(ServerBuilder::new().workers(2).tls(server));
    let url = format!("wss://{}/", fixture.addr);
    let mut ws = ClientBuilder::new().tls(client).connect(&url).unwrap();
    ws.send_text_now("over tls").unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("over tls")));
    // Larger than a TLS record and than the worker's buffers.
    let big: Vec<u8> = (0..300_000).map(|i| (i % 241) as u8).collect();
    ws.send_binary_now(&big).unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Binary(&big[..])));
    for i in 0..200 {
        ws.send_text(&format!("t{i}")).unwrap();
    }
    ws.flush().unwrap();
    for i in 0..200 {
        assert_eq!(
            ws.recv().unwrap(),
            Recv::Message(Message::Text(format!("t{i}").as_str()))
        );
    }
    ws.close(CloseCode::NORMAL, "").unwrap();
    match ws.recv().unwrap() {
        Recv::Closed(Some(frame)) => assert_eq!(frame.code, CloseCode::NORMAL),
        other => panic!("expected the close reply, got {other:?}"),
    }
    ws.finish().unwrap();
    let (_, disconnect, count) = fixture.next_close();
    assert_eq!(disconnect.kind, DisconnectKind::Closed);
    assert_eq!(count, 202);
}

#[test]
fn a_plaintext_client_on_the_tls_port_is_told_in_http() {
    let (server, _) = tls_pair();
    let fixture = Fixture::start(ServerBuilder::new().workers(1).tls(server));
    let mut stream = TcpStream::connect(fixture.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n\r\n")
        .unwrap();
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 400 "));
}

#[test]
fn a_client_that_distrusts_the_certificate_fails_and_the_server_goes_on() {
    let (server, client) = tls_pair();
    let (_, stranger) = tls_pair();
    let fixture = Fixture::start(ServerBuilder::new().workers(1).tls(server));
    let url = format!("wss://{}/", fixture.addr);
    assert!(ClientBuilder::new().tls(stranger).connect(&url).is_err());
    let failure = fixture.next_failure();
    assert!(failure.starts_with("TLS: "), "{failure}");
    let mut ws = ClientBuilder::new().tls(client).connect(&url).unwrap();
    ws.send_text_now("after").unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("after")));
}
