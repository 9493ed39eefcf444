//! wss:// end to end over loopback TCP: what a user of `ClientBuilder::tls` and
//! `ServerBuilder::accept_tls` sees when TLS works, and the typed error that names the cause
//! when it does not. Certificates are generated at test time (see `tls_support`).
#![cfg(feature = "tls")]

mod tls_support;
use tls_support::*;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use tickwire_blocking::tls::rustls::SupportedProtocolVersion;
use tickwire_blocking::tls::rustls::version::{TLS12, TLS13};
use tickwire_blocking::tls::{AlertDescription, TlsVersion};
use tickwire_blocking::{
    ClientBuilder, ClientTlsConfig, Error, Message, Recv, ServerBuilder, ServerTlsConfig, TlsError,
};

/// What the server side of a successful echo connection saw.
#[derive(Debug, PartialEq)]
struct ServerView {
    version: Option<TlsVersion>,
    sni: Option<String>,
    resumed: bool,
    echoed: usize,
}

/// An echo server for `connections` connections that reports what each one saw.
fn echo_server(
    tls: ServerTlsConfig,
    connections: usize,
) -> (u16, JoinHandle<Vec<Result<ServerView, Error>>>) {
    tls_server(tls, connections, |accepted| {
        let mut ws = accepted?;
        let echoed = echo(&mut ws)?;
        let codec = ws.stream().codec();
        Ok(ServerView {
            version: codec.protocol_version(),
            sni: codec.server_name().map(str::to_owned),
            resumed: codec.is_resumed(),
            echoed,
        })
    })
}

/// One connection whose server hands back `accept_tls`'s error (or panics when it succeeds).
fn failing_server(tls: ServerTlsConfig) -> (u16, JoinHandle<Vec<Error>>) {
    tls_server(tls, 1, |accepted| match accepted {
        Ok(_) => panic!("the server accepted a connection that should have failed"),
        Err(e) => e,
    })
}

/// The error a call that must fail returned.
fn the_error<T>(result: Result<T, Error>) -> Error {
    match result {
        Ok(_) => panic!("expected an error, the connection succeeded"),
        Err(e) => e,
    }
}

fn text_binary_and_one_mebibyte(url: &str, tls: &ClientTlsConfig) {
    let mut ws = client(tls).connect(url).unwrap();
    ws.send_text_now("héllo over TLS").unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Text("héllo over TLS"))
    );
    ws.send_binary_now(&[0, 1, 2, 0xFF]).unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Binary(&[0, 1, 2, 0xFF]))
    );
    // 1 MiB spans 64+ TLS records each way.
    let big: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    ws.send_binary_now(&big).unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Binary(&big[..])));
    close(&mut ws);
}

#[test]
fn echo_over_wss_to_an_ip_address() {
    let ca = Ca::new("ip");
    let identity = ca.server_cert(&["localhost", "127.0.0.1"]);
    let (port, server) = echo_server(server_config(&identity), 1);
    text_binary_and_one_mebibyte(&format!("wss://127.0.0.1:{port}/feed"), &client_config(&ca));
    let view = server.join().unwrap().remove(0).unwrap();
    assert_eq!(view.echoed, 3);
    assert_eq!(
        view.sni, None,
        "no SNI is sent for an IP address (RFC 6066 §3)"
    );
}

#[test]
fn echo_over_wss_to_a_dns_name() {
    let ca = Ca::new("dns");
    let identity = ca.server_cert(&["localhost", "127.0.0.1"]);
    let (port, server) = echo_server(server_config(&identity), 1);
    text_binary_and_one_mebibyte(&format!("wss://localhost:{port}/feed"), &client_config(&ca));
    let view = server.join().unwrap().remove(0).unwrap();
    assert_eq!(view.echoed, 3);
    assert_eq!(view.sni.as_deref(), Some("localhost"));
}

/// Connects once, echoes one message and returns the version each side negotiated.
fn negotiated_versions(tls: ServerTlsConfig, ca: &Ca) -> (TlsVersion, TlsVersion) {
    let (port, server) = echo_server(tls, 1);
    let mut ws = client(&client_config(ca))
        .connect(&format!("wss://localhost:{port}"))
        .unwrap();
    let client_version = ws.stream().tls().unwrap().protocol_version().unwrap();
    echo_once_and_close(&mut ws, "which version?");
    drop(ws);
    let view = server.join().unwrap().remove(0).unwrap();
    (client_version, view.version.unwrap())
}

#[test]
fn tls13_is_negotiated_by_default() {
    let ca = Ca::new("tls13");
    let identity = ca.server_cert(&["localhost"]);
    let versions = negotiated_versions(server_config(&identity), &ca);
    assert_eq!(versions, (TlsVersion::Tls13, TlsVersion::Tls13));
}

#[test]
fn tls12_is_negotiated_with_a_tls12_only_server() {
    let ca = Ca::new("tls12");
    let identity = ca.server_cert(&["localhost"]);
    let tls = rustls_server_config(&identity, &[&TLS12], None);
    let versions = negotiated_versions(tls, &ca);
    assert_eq!(versions, (TlsVersion::Tls12, TlsVersion::Tls12));
}

#[test]
fn mutual_tls_accepts_a_client_certificate_from_the_trusted_ca() {
    for version in [&TLS12, &TLS13] {
        let ca = Ca::new("mtls");
        let server_identity = ca.server_cert(&["localhost"]);
        let client_identity = ca.client_cert("trading-client-7");
        let tls = rustls_server_config(&server_identity, &[version], Some(&ca));
        let (port, server) = tls_server(tls, 1, |accepted| {
            let mut ws = accepted?;
            let seen = ws.stream().codec().peer_certificates().map(<[_]>::to_vec);
            echo(&mut ws)?;
            Ok::<_, Error>(seen)
        });
        let client_tls = ClientTlsConfig::builder()
            .webpki_roots(false)
            .add_root_pem(ca.pem().as_bytes())
            .unwrap()
            .client_identity_pem(
                client_identity.chain_pem.as_bytes(),
                client_identity.key_pem.as_bytes(),
            )
            .unwrap()
            .build()
            .unwrap();
        let mut ws = client(&client_tls)
            .connect(&format!("wss://localhost:{port}"))
            .unwrap();
        echo_once_and_close(&mut ws, "authenticated");
        drop(ws);
        let seen = server.join().unwrap().remove(0).unwrap();
        assert_eq!(
            seen,
            Some(vec![client_identity.leaf.clone()]),
            "{version:?}"
        );
    }
}

/// Runs a client with `client_tls` against a server that requires certificates from `ca`;
/// returns the server's and the client's errors.
fn refused_by_mutual_tls(
    version: &'static SupportedProtocolVersion,
    ca: &Ca,
    client_tls: &ClientTlsConfig,
) -> (Error, Error) {
    let server_identity = ca.server_cert(&["localhost"]);
    let tls = rustls_server_config(&server_identity, &[version], Some(ca));
    let (port, server) = failing_server(tls);
    // TLS 1.3: the client's handshake completes before the server has checked its
    // certificate; the refusal arrives as an alert when the client reads the upgrade reply.
    let client_error = the_error(client(client_tls).connect(&format!("wss://localhost:{port}")));
    (server.join().unwrap().remove(0), client_error)
}

#[test]
fn mutual_tls_refuses_a_client_without_a_certificate() {
    for version in [&TLS12, &TLS13] {
        let ca = Ca::new("mtls-none");
        let (server, client) = refused_by_mutual_tls(version, &ca, &client_config(&ca));
        assert!(
            matches!(server, Error::Tls(TlsError::ClientCertificateRequired)),
            "{version:?} server: {server}"
        );
        // certificate_required (RFC 8446 §4.4.2.4); rustls sends it under TLS 1.2 too.
        assert!(
            matches!(
                client,
                Error::Tls(TlsError::AlertReceived(
                    AlertDescription::CertificateRequired
                ))
            ),
            "{version:?} client: {client}"
        );
    }
}

#[test]
fn mutual_tls_refuses_a_certificate_from_another_ca() {
    for version in [&TLS12, &TLS13] {
        let ca = Ca::new("mtls-trusted");
        let stranger = Ca::new("mtls-stranger").client_cert("intruder");
        let client_tls = ClientTlsConfig::builder()
            .webpki_roots(false)
            .add_root_pem(ca.pem().as_bytes())
            .unwrap()
            .client_identity_pem(stranger.chain_pem.as_bytes(), stranger.key_pem.as_bytes())
            .unwrap()
            .build()
            .unwrap();
        let (server, client) = refused_by_mutual_tls(version, &ca, &client_tls);
        assert!(
            matches!(server, Error::Tls(TlsError::UntrustedCertificate(_))),
            "{version:?} server: {server}"
        );
        assert!(
            matches!(
                client,
                Error::Tls(TlsError::AlertReceived(AlertDescription::UnknownCA))
            ),
            "{version:?} client: {client}"
        );
    }
}

/// Connects to a server presenting `identity` with `client_tls`; returns the client's error
/// and the server's.
fn refused_server_certificate(
    identity: &Identity,
    client_tls: &ClientTlsConfig,
    host: &str,
) -> (Error, Error) {
    let (port, server) = failing_server(server_config(identity));
    let client_error = the_error(client(client_tls).connect(&format!("wss://{host}:{port}")));
    (client_error, server.join().unwrap().remove(0))
}

#[test]
fn untrusted_certificate_is_named_on_both_sides() {
    let identity = Ca::new("unknown").server_cert(&["localhost"]);
    // The default configuration: Mozilla's roots, which do not include the test CA.
    let (client, server) = refused_server_certificate(
        &identity,
        &ClientTlsConfig::builder().build().unwrap(),
        "localhost",
    );
    assert!(
        matches!(client, Error::Tls(TlsError::UntrustedCertificate(_))),
        "client: {client}"
    );
    assert!(
        client.to_string().contains("untrusted certificate"),
        "{client}"
    );
    // The server learns why from the client's alert.
    assert!(
        matches!(
            server,
            Error::Tls(TlsError::AlertReceived(AlertDescription::UnknownCA))
        ),
        "server: {server}"
    );
}

#[test]
fn hostname_mismatch_is_named_for_dns_names_and_ip_addresses() {
    let ca = Ca::new("mismatch");
    let identity = ca.server_cert(&["feed.example.com", "10.1.2.3"]);
    for host in ["localhost", "127.0.0.1"] {
        let (client, server) = refused_server_certificate(&identity, &client_config(&ca), host);
        assert!(
            matches!(client, Error::Tls(TlsError::HostnameMismatch(_))),
            "{host}: {client}"
        );
        assert!(
            matches!(
                server,
                Error::Tls(TlsError::AlertReceived(AlertDescription::BadCertificate))
            ),
            "{host} server: {server}"
        );
    }
}

#[test]
fn expired_and_not_yet_valid_certificates_are_named() {
    let ca = Ca::new("validity");
    let expired = ca.expired_server_cert(&["localhost"]);
    let (client, server) = refused_server_certificate(&expired, &client_config(&ca), "localhost");
    assert!(
        matches!(client, Error::Tls(TlsError::CertificateExpired)),
        "{client}"
    );
    assert!(
        matches!(
            server,
            Error::Tls(TlsError::AlertReceived(
                AlertDescription::CertificateExpired
            ))
        ),
        "server: {server}"
    );
    let future = ca.future_server_cert(&["localhost"]);
    let (client, _) = refused_server_certificate(&future, &client_config(&ca), "localhost");
    assert!(
        matches!(client, Error::Tls(TlsError::CertificateNotYetValid)),
        "{client}"
    );
}

#[test]
fn alpn_is_agreed_or_refused_with_an_alert() {
    let ca = Ca::new("alpn");
    let identity = ca.server_cert(&["localhost"]);
    let server_tls =
        ServerTlsConfig::builder(identity.chain_pem.as_bytes(), identity.key_pem.as_bytes())
            .unwrap()
            .alpn([&b"x-tickwire"[..]])
            .build()
            .unwrap();
    let client_tls = |protocol: &[u8]| {
        ClientTlsConfig::builder()
            .webpki_roots(false)
            .add_root_pem(ca.pem().as_bytes())
            .unwrap()
            .alpn([protocol])
            .build()
            .unwrap()
    };
    // Agreed: both sides see the protocol.
    let (port, server) = tls_server(server_tls.clone(), 1, |accepted| {
        let mut ws = accepted?;
        let alpn = ws.stream().codec().alpn_protocol().map(<[u8]>::to_vec);
        echo(&mut ws)?;
        Ok::<_, Error>(alpn)
    });
    let mut ws = client(&client_tls(b"x-tickwire"))
        .connect(&format!("wss://localhost:{port}"))
        .unwrap();
    assert_eq!(
        ws.stream().tls().unwrap().alpn_protocol(),
        Some(&b"x-tickwire"[..])
    );
    echo_once_and_close(&mut ws, "alpn");
    drop(ws);
    let seen = server.join().unwrap().remove(0).unwrap();
    assert_eq!(seen.as_deref(), Some(&b"x-tickwire"[..]));
    // No overlap: the server refuses (RFC 7301 §3.2) and the client is told why.
    let (port, server) = failing_server(server_tls);
    let client_error =
        the_error(client(&client_tls(b"h2")).connect(&format!("wss://localhost:{port}")));
    assert!(
        matches!(
            client_error,
            Error::Tls(TlsError::AlertReceived(
                AlertDescription::NoApplicationProtocol
            ))
        ),
        "client: {client_error}"
    );
    let server_error = server.join().unwrap().remove(0);
    match &server_error {
        Error::Tls(TlsError::Protocol(why)) => assert!(why.contains("protocol"), "{why}"),
        other => panic!("server: {other}"),
    }
}

#[test]
fn tls13_only_client_against_a_tls12_only_server_gets_a_protocol_version_alert() {
    let ca = Ca::new("versions");
    let identity = ca.server_cert(&["localhost"]);
    let (port, server) = failing_server(rustls_server_config(&identity, &[&TLS12], None));
    let client_tls = ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_pem(ca.pem().as_bytes())
        .unwrap()
        .tls13_only(true)
        .build()
        .unwrap();
    let client_error = the_error(client(&client_tls).connect(&format!("wss://localhost:{port}")));
    assert!(
        matches!(
            client_error,
            Error::Tls(TlsError::AlertReceived(AlertDescription::ProtocolVersion))
        ),
        "client: {client_error}"
    );
    let server_error = server.join().unwrap().remove(0);
    match &server_error {
        Error::Tls(TlsError::Protocol(why)) => assert!(why.contains("Tls12NotOffered"), "{why}"),
        other => panic!("server: {other}"),
    }
}

#[test]
fn truncated_record_during_the_handshake_is_named() {
    // The first 3 bytes of a record header; a whole header announcing 100 bytes and 10 of them.
    let partial_header = vec![0x16, 0x03, 0x03];
    let partial_body = [&[0x16, 0x03, 0x03, 0x00, 0x64][..], &[0u8; 10]].concat();
    for sent in [partial_header, partial_body] {
        let (port, server) = raw_server(move |mut stream| {
            read_record(&mut stream);
            write_then_close(&mut stream, &sent);
        });
        let error = the_error(
            client(&ClientTlsConfig::builder().build().unwrap())
                .connect(&format!("wss://127.0.0.1:{port}")),
        );
        assert!(
            matches!(error, Error::Tls(TlsError::TruncatedRecord)),
            "{error}"
        );
        server.join().unwrap();
    }
}

#[test]
fn after_the_handshake_a_truncated_record_is_told_apart_from_an_eof_between_records() {
    let ca = Ca::new("truncated-later");
    let identity = ca.server_cert(&["localhost"]);
    // Half an application-data record announcing 64 bytes; then nothing at all.
    let half_record = [&[0x17, 0x03, 0x03, 0x00, 0x40][..], &[0u8; 10]].concat();
    for (sent, truncated) in [(half_record, true), (Vec::new(), false)] {
        let (port, server) = tls_server(server_config(&identity), 1, move |accepted| {
            // Bypass TLS: raw bytes, then end of stream without close_notify.
            let mut ws = accepted.unwrap();
            write_then_close(ws.stream_mut().get_mut(), &sent);
        });
        let mut ws = client(&client_config(&ca))
            .connect(&format!("wss://localhost:{port}"))
            .unwrap();
        let error = the_error(ws.recv().map(|_| ()));
        drop(ws);
        server.join().unwrap();
        if truncated {
            assert!(
                matches!(error, Error::Tls(TlsError::TruncatedRecord)),
                "{error}"
            );
        } else {
            // A WebSocket has its own end marker: no close frame is what the user hears.
            assert!(matches!(error, Error::UnexpectedEof), "{error}");
        }
    }
}

#[test]
fn plaintext_on_a_tls_port_is_answered_with_http_400() {
    let identity = Ca::new("plaintext").server_cert(&["localhost"]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut raw = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    bound(&raw);
    raw.write_all(b"GET /feed HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n\r\n")
        .unwrap();
    let (stream, _) = listener.accept().unwrap();
    let error = the_error(
        ServerBuilder::new()
            .handshake_timeout(PATIENCE)
            .accept_tls(stream, &server_config(&identity)),
    );
    assert!(matches!(error, Error::Tls(TlsError::NotTls)), "{error}");
    let mut response = String::new();
    raw.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 400 "), "{response:?}");
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(
        head.contains(&format!("Content-Length: {}", body.len())),
        "{response:?}"
    );
    assert!(body.contains("TLS"), "the body says what to do: {body:?}");
}

#[test]
fn wss_client_against_a_plaintext_server_is_not_tls() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        ServerBuilder::new()
            .handshake_timeout(PATIENCE)
            .accept(stream)
            .map(drop)
    });
    let error = the_error(
        client(&ClientTlsConfig::builder().build().unwrap())
            .connect(&format!("wss://127.0.0.1:{port}")),
    );
    assert!(matches!(error, Error::Tls(TlsError::NotTls)), "{error}");
    // The plaintext server saw a ClientHello where an HTTP request belongs.
    let server_error = server.join().unwrap().unwrap_err();
    assert!(
        matches!(server_error, Error::Handshake(_)),
        "{server_error}"
    );
}

#[test]
fn a_server_that_stalls_mid_handshake_hits_the_client_handshake_timeout() {
    let (done, wait) = mpsc::channel::<()>();
    let (port, server) = raw_server(move |mut stream| {
        // Take the ClientHello, answer nothing, keep the connection open until told.
        let hello = read_record(&mut stream);
        let _ = wait.recv_timeout(PATIENCE);
        hello
    });
    let start = Instant::now();
    let error = the_error(
        ClientBuilder::new()
            .tls(ClientTlsConfig::builder().build().unwrap())
            .handshake_timeout(Duration::from_millis(300))
            .connect(&format!("wss://127.0.0.1:{port}")),
    );
    let waited = start.elapsed();
    assert!(matches!(error, Error::HandshakeTimeout), "{error}");
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    done.send(()).unwrap();
    assert_eq!(
        server.join().unwrap()[0],
        0x16,
        "the client sent its ClientHello"
    );
}

#[test]
fn a_client_that_stalls_mid_hello_hits_the_server_handshake_timeout() {
    let identity = Ca::new("stall").server_cert(&["localhost"]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut raw = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let hello = client_hello();
    raw.write_all(&hello[..hello.len() / 2]).unwrap();
    let (stream, _) = listener.accept().unwrap();
    let start = Instant::now();
    let error = the_error(
        ServerBuilder::new()
            .handshake_timeout(Duration::from_millis(300))
            .accept_tls(stream, &server_config(&identity)),
    );
    let waited = start.elapsed();
    assert!(matches!(error, Error::HandshakeTimeout), "{error}");
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
}

#[test]
fn eof_during_the_handshake_is_named_on_the_client() {
    let (port, server) = raw_server(|mut stream| {
        read_record(&mut stream);
        write_then_close(&mut stream, &[]);
    });
    let error = the_error(
        client(&ClientTlsConfig::builder().build().unwrap())
            .connect(&format!("wss://127.0.0.1:{port}")),
    );
    assert!(
        matches!(error, Error::Tls(TlsError::HandshakeEof)),
        "{error}"
    );
    server.join().unwrap();
}

#[test]
fn eof_during_the_handshake_is_named_on_the_server() {
    let identity = Ca::new("eof").server_cert(&["localhost"]);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut raw = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    bound(&raw);
    raw.write_all(&client_hello()).unwrap();
    raw.shutdown(Shutdown::Write).unwrap();
    let (stream, _) = listener.accept().unwrap();
    let error = the_error(
        ServerBuilder::new()
            .handshake_timeout(PATIENCE)
            .accept_tls(stream, &server_config(&identity)),
    );
    assert!(
        matches!(error, Error::Tls(TlsError::HandshakeEof)),
        "{error}"
    );
    // The server had answered the hello before the end of stream.
    assert_eq!(read_to_eof(&mut raw).first(), Some(&0x16));
}

/// Root, 8 intermediates and a leaf, each padded with 2 KiB: 10 certificates.
fn ten_certificate_chain() -> LongChain {
    let chain = LongChain::new(8, 2048);
    assert_eq!(chain.certificates.len(), 10);
    let total: usize = chain.certificates.iter().map(|c| c.len()).sum();
    assert!(total > 16 * 1024, "the chain is {total} bytes");
    chain
}

#[test]
fn a_ten_certificate_chain_over_16_kib_handshakes_and_echoes() {
    let chain = ten_certificate_chain();
    let (port, server) = echo_server(server_config(&chain.server), 1);
    // webpki builds paths of at most 6 intermediates (see the next test), so the client
    // anchors its trust at intermediate 2: the path it verifies is leaf, intermediates 8..3,
    // anchor. The server still sends all 10 certificates, so its Certificate message spans
    // two records.
    let client_tls = ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_der(chain.certificates[2].clone())
        .build()
        .unwrap();
    let mut ws = client(&client_tls)
        .connect(&format!("wss://localhost:{port}"))
        .unwrap();
    let presented = ws
        .stream()
        .tls()
        .unwrap()
        .peer_certificates()
        .unwrap()
        .len();
    assert_eq!(presented, 10);
    echo_once_and_close(&mut ws, "long chain");
    drop(ws);
    assert_eq!(server.join().unwrap().remove(0).unwrap().echoed, 1);
}

#[test]
fn a_chain_deeper_than_webpki_allows_is_refused_by_name() {
    let chain = ten_certificate_chain();
    let client_tls = ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_der(chain.certificates[0].clone())
        .build()
        .unwrap();
    let (client, _server) = refused_server_certificate(&chain.server, &client_tls, "localhost");
    match &client {
        Error::Tls(TlsError::BadCertificate(why)) => {
            assert!(why.contains("MaximumPathDepthExceeded"), "{why}");
        }
        other => panic!("{other}"),
    }
}

/// Two connections to one server with one client configuration; returns whether each was
/// resumed, as the client and the server saw it.
fn resumed_twice(tls: ServerTlsConfig, client_tls: &ClientTlsConfig) -> Vec<(bool, bool)> {
    let (port, server) = echo_server(tls, 2);
    let mut on_client = Vec::new();
    for _ in 0..2 {
        let mut ws = client(client_tls)
            .connect(&format!("wss://localhost:{port}"))
            .unwrap();
        // One message each way, so the TLS 1.3 session ticket has surely been read.
        echo_once_and_close(&mut ws, "ticket?");
        on_client.push(ws.stream().tls().unwrap().is_resumed());
    }
    let on_server = server
        .join()
        .unwrap()
        .into_iter()
        .map(|view| view.unwrap().resumed);
    on_client.into_iter().zip(on_server).collect()
}

#[test]
fn the_second_connection_resumes_the_session() {
    let ca = Ca::new("resume");
    let identity = ca.server_cert(&["localhost"]);
    for (name, tls) in [
        ("TLS 1.3", server_config(&identity)),
        ("TLS 1.2", rustls_server_config(&identity, &[&TLS12], None)),
    ] {
        let resumed = resumed_twice(tls, &client_config(&ca));
        assert_eq!(resumed, [(false, false), (true, true)], "{name}");
    }
}

#[test]
fn without_session_resumption_every_handshake_is_full() {
    let ca = Ca::new("no-resume");
    let identity = ca.server_cert(&["localhost"]);
    let client_tls = ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_pem(ca.pem().as_bytes())
        .unwrap()
        .session_resumption(false)
        .build()
        .unwrap();
    let resumed = resumed_twice(server_config(&identity), &client_tls);
    assert_eq!(resumed, [(false, false), (false, false)]);
}

#[test]
fn echo_over_wss_through_each_proxy_with_tls_end_to_end() {
    use tickwire_blocking::ConnectOptions;
    use tickwire_blocking::codec::connect::{NoProxy, ProxyUrl};
    use tickwire_core::connect::Proxy as Through;
    use tickwire_test_support::proxies::Proxy;

    let ca = Ca::new("proxied");
    let identity = ca.server_cert(&["localhost", "127.0.0.1"]);
    for proxy in [Proxy::tinyproxy(true), Proxy::microsocks(true)] {
        let (port, server) = echo_server(server_config(&identity), 1);
        let options = ConnectOptions::new().with_proxy(Through::Fixed {
            url: ProxyUrl::parse(&proxy.url()).unwrap(),
            except: NoProxy::parse(""),
        });
        let mut ws = client(&client_config(&ca))
            .connect_options(options)
            .connect(&format!("wss://localhost:{port}/feed"))
            .unwrap_or_else(|e| panic!("{}: {e}", proxy.url()));
        echo_once_and_close(&mut ws, "sealed through the tunnel");
        let view = server.join().unwrap().remove(0).unwrap();
        // The TLS session is the client's with the server, the proxy only carrying it: the
        // server saw the target's name.
        assert_eq!(view.sni.as_deref(), Some("localhost"), "{}", proxy.url());
        assert_eq!(view.echoed, 1);
    }
}
