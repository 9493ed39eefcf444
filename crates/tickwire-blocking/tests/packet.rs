//! The blocking packet transport end to end over loopback: round trips in plain TCP, TLS and
//! mutual TLS, compression on the wire, limits, pipelined answers out of order, request
//! timeouts, "busy" past the server's cap, and the keepalive deadline. Every wait is bounded,
//! so a broken build fails a test instead of hanging it.

mod packet_support;
#[expect(dead_code, reason = "shared with tests/tls.rs, which uses the rest")]
mod tls_support;

use std::io::Read;
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use packet_support::echo_server;
use tickwire_blocking::codec::mux::{ClientConfig, ServerConfig};
use tickwire_blocking::codec::packet::{
    BASE_HEADER_LEN, CompressionPolicy, PacketConfig, PacketError,
};
use tickwire_blocking::packet::{
    Error, Keepalive, PacketClient, PacketClientBuilder, PacketServer,
};
use tickwire_blocking::{ClientTlsConfig, ServerTlsConfig};
use tls_support::{Ca, client_config, server_config};

const PATIENCE: Duration = Duration::from_secs(10);

fn listener() -> (TcpListener, u16) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, port)
}

fn builder() -> PacketClientBuilder {
    PacketClientBuilder::new()
        .connect_timeout(PATIENCE)
        .request_timeout(Some(PATIENCE))
}

fn assert_echoes(client: &mut PacketClient) {
    for payload in [&b"order 1"[..], b"", &[0xA5; 70_000]] {
        assert_eq!(client.request(payload).unwrap(), payload);
    }
}

#[test]
fn plain_round_trips_and_a_pong_answers_a_ping() {
    let (server, port) = echo_server(PacketServer::new());
    let mut client = builder().connect("127.0.0.1", port).unwrap();
    assert_echoes(&mut client);
    assert!(client.ping().unwrap() < PATIENCE);
    assert_eq!(client.stats().completed, 3);
    server.shutdown();
}

#[test]
fn tls_round_trips() {
    let ca = Ca::new("packet");
    let tls = server_config(&ca.server_cert(&["localhost"]));
    let (server, port) = echo_server(PacketServer::new().tls(tls));
    let mut client = builder()
        .tls(client_config(&ca))
        .connect("localhost", port)
        .unwrap();
    assert_echoes(&mut client);
    assert!(client.stream().tls().is_some());
    server.shutdown();
}

#[test]
fn mutual_tls_round_trips_and_refuses_a_client_without_certificate() {
    let ca = Ca::new("packet mtls");
    let identity = ca.server_cert(&["localhost"]);
    let tls = ServerTlsConfig::builder(identity.chain_pem.as_bytes(), identity.key_pem.as_bytes())
        .unwrap()
        .client_auth_required(ca.pem().as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let (server, port) = echo_server(PacketServer::new().tls(tls));
    let me = ca.client_cert("risk-engine");
    let with_identity = ClientTlsConfig::builder()
        .webpki_roots(false)
        .add_root_pem(ca.pem().as_bytes())
        .unwrap()
        .client_identity_pem(me.chain_pem.as_bytes(), me.key_pem.as_bytes())
        .unwrap()
        .build()
        .unwrap();
    let mut client = builder()
        .tls(with_identity)
        .connect("localhost", port)
        .unwrap();
    assert_echoes(&mut client);

    // Without a certificate the server's alert arrives with the first read at the latest.
    let outcome = builder()
        .tls(client_config(&ca))
        .connect("localhost", port)
        .and_then(|mut client| client.request(b"no certificate").map(<[u8]>::to_vec));
    match outcome {
        Err(Error::Tls(_)) => {}
        other => panic!("expected a TLS error, got {other:?}"),
    }
    server.shutdown();
}

#[test]
fn a_compressible_payload_travels_compressed() {
    let (listener, port) = listener();
    let raw = thread::spawn(move || {
        let (mut tcp, _) = listener.accept().unwrap();
        tcp.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut header = [0; BASE_HEADER_LEN + 4];
        tcp.read_exact(&mut header).unwrap();
        header
    });
    let config = PacketConfig::client().with_compression(CompressionPolicy::lz4());
    let mut client = builder()
        .packet_config(config)
        .connect("127.0.0.1", port)
        .unwrap();
    let payload = "{\"px\":101.25,\"qty\":3}".repeat(200);
    client.send_request(payload.as_bytes()).unwrap();
    client.flush().unwrap();
    let header = raw.join().unwrap();
    assert_eq!(header[3] & 0b11, 0b01, "codec bits name LZ4");
    let wire_len = u32::from_le_bytes(header[4..8].try_into().unwrap()) as usize;
    let uncompressed = u32::from_le_bytes(header[16..20].try_into().unwrap()) as usize;
    assert_eq!(uncompressed, payload.len());
    assert!(wire_len < payload.len() / 4, "{wire_len} bytes on the wire");
}

#[test]
fn compressed_round_trips_both_ways() {
    let lz4 = PacketConfig::server().with_compression(CompressionPolicy::lz4());
    let (server, port) = echo_server(PacketServer::new().packet_config(lz4));
    let config = PacketConfig::client().with_compression(CompressionPolicy::lz4());
    let mut client = builder()
        .packet_config(config)
        .connect("127.0.0.1", port)
        .unwrap();
    let payload = "tick,".repeat(10_000);
    assert_eq!(
        client.request(payload.as_bytes()).unwrap(),
        payload.as_bytes()
    );
    server.shutdown();
}

#[test]
fn an_oversized_packet_is_a_typed_error_and_closes_the_connection() {
    let (listener, port) = listener();
    let served = thread::spawn(move || {
        let server =
            PacketServer::new().packet_config(PacketConfig::server().with_max_payload_len(1024));
        let mut connection = server.accept(listener.accept().unwrap().0).unwrap();
        connection.recv_request().map(|(id, _)| id).unwrap_err()
    });
    let mut client = builder().connect("127.0.0.1", port).unwrap();
    let error = client.request(&[1; 1025]).unwrap_err();
    assert!(matches!(error, Error::Closed | Error::Io(_)), "{error:?}");
    assert!(client.is_closed());
    assert!(matches!(client.request(b"again"), Err(Error::Closed)));
    match served.join().unwrap() {
        Error::Protocol(PacketError::PayloadTooLarge { .. }) => {}
        other => panic!("expected PayloadTooLarge, got {other:?}"),
    }
}

#[test]
fn pipelined_requests_are_matched_when_answered_in_reverse() {
    let (listener, port) = listener();
    let served = thread::spawn(move || {
        let mut connection = PacketServer::new()
            .accept(listener.accept().unwrap().0)
            .unwrap();
        let mut requests = Vec::new();
        for _ in 0..8 {
            let (id, payload) = connection.recv_request().unwrap();
            requests.push((id, payload.to_vec()));
        }
        for (id, payload) in requests.iter().rev() {
            connection.respond(*id, payload).unwrap();
        }
        connection.flush().unwrap();
        assert!(matches!(connection.recv_request(), Err(Error::Closed)));
    });
    let mut client = builder().connect("127.0.0.1", port).unwrap();
    let mut sent = Vec::new();
    for n in 0..8 {
        let payload = format!("request {n}").into_bytes();
        sent.push((client.send_request(&payload).unwrap(), payload));
    }
    let mut order = Vec::new();
    for _ in 0..8 {
        let (id, answer) = client.recv_response().unwrap();
        let (_, payload) = sent.iter().find(|(sent_id, _)| *sent_id == id).unwrap();
        assert_eq!(answer, &payload[..]);
        order.push(id);
    }
    let reversed: Vec<_> = sent.iter().rev().map(|(id, _)| *id).collect();
    assert_eq!(order, reversed);
    assert!(matches!(
        client.recv_response(),
        Err(Error::NothingInFlight)
    ));
    drop(client);
    served.join().unwrap();
}

#[test]
fn a_request_times_out_and_its_late_answer_is_dropped() {
    let (listener, port) = listener();
    let served = thread::spawn(move || {
        let mut connection = PacketServer::new()
            .accept(listener.accept().unwrap().0)
            .unwrap();
        let (slow, _) = connection.recv_request().unwrap();
        thread::sleep(Duration::from_millis(300));
        connection.respond(slow, b"too late").unwrap();
        connection.flush().unwrap();
        let (after, payload) = connection.recv_request().unwrap();
        let payload = payload.to_vec();
        connection.respond(after, &payload).unwrap();
        assert!(matches!(connection.recv_request(), Err(Error::Closed)));
    });
    let mut client = builder()
        .request_timeout(Some(Duration::from_millis(100)))
        .connect("127.0.0.1", port)
        .unwrap();
    let slow = client.send_request(b"slow").unwrap();
    let start = Instant::now();
    match client.recv_response() {
        Err(Error::TimedOut(id)) => assert_eq!(id, slow),
        other => panic!("expected a timeout, got {other:?}"),
    }
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(100) && waited < Duration::from_secs(1),
        "{waited:?}"
    );
    assert!(!client.is_closed());
    // The late answer arrives before the next one and is dropped, not handed to it.
    thread::sleep(Duration::from_millis(300));
    assert_eq!(client.request(b"after").unwrap(), b"after");
    assert_eq!(client.stats().late, 1);
    drop(client);
    served.join().unwrap();
}

#[test]
fn requests_past_the_server_cap_are_answered_busy() {
    let (listener, port) = listener();
    let served = thread::spawn(move || {
        let server = PacketServer::new().mux_config(ServerConfig::new().with_max_in_flight(2));
        let mut connection = server.accept(listener.accept().unwrap().0).unwrap();
        let first = connection.recv_request().unwrap().0;
        let second = connection.recv_request().unwrap().0;
        // The third is refused "busy" while this waits; then the client goes.
        assert!(matches!(connection.recv_request(), Err(Error::Closed)));
        assert_eq!(connection.stats().busy, 1);
        (first, second)
    });
    let mut client = builder().connect("127.0.0.1", port).unwrap();
    let ids: Vec<_> = (0..3).map(|n| client.send_request(&[n]).unwrap()).collect();
    match client.recv_response() {
        Err(Error::Busy(id)) => assert_eq!(id, ids[2]),
        other => panic!("expected busy, got {other:?}"),
    }
    assert_eq!(client.in_flight(), 2);
    drop(client);
    assert_eq!(served.join().unwrap(), (ids[0], ids[1]));
}

#[test]
fn a_missing_pong_fails_the_connection_after_the_keepalive_deadline() {
    let (listener, port) = listener();
    let silent = thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        thread::sleep(Duration::from_secs(2));
        drop(tcp);
    });
    let keepalive = Keepalive {
        interval: Duration::from_millis(100),
        timeout: Duration::from_millis(200),
    };
    let mut client = builder()
        .keepalive(Some(keepalive))
        .request_timeout(None)
        .connect("127.0.0.1", port)
        .unwrap();
    client.send_request(b"never answered").unwrap();
    let start = Instant::now();
    assert!(matches!(
        client.recv_response(),
        Err(Error::KeepaliveTimeout)
    ));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    assert!(client.is_closed());
    assert_eq!(client.stats().failed, 1);
    silent.join().unwrap();
}

#[test]
fn an_answer_that_came_while_the_caller_was_away_wins_over_its_deadline() {
    let (server, port) = echo_server(PacketServer::new());
    let mut client = builder()
        .request_timeout(Some(Duration::from_millis(50)))
        .connect("127.0.0.1", port)
        .unwrap();
    for n in 0..3u8 {
        let id = client.send_request(&[n]).unwrap();
        client.flush().unwrap();
        // The answer waits in the socket, unread, past the request's deadline.
        thread::sleep(Duration::from_millis(150));
        assert_eq!(client.recv_response().unwrap(), (id, &[n][..]));
    }
    assert_eq!(client.stats().timed_out, 0);
    server.shutdown();
}

#[test]
fn a_read_timeout_is_reported_and_the_connection_carries_on() {
    let (listener, port) = listener();
    let served = thread::spawn(move || {
        let mut connection = PacketServer::new()
            .accept(listener.accept().unwrap().0)
            .unwrap();
        let (id, _) = connection.recv_request().unwrap();
        thread::sleep(Duration::from_millis(300));
        connection.respond(id, b"finally").unwrap();
        assert!(matches!(connection.recv_request(), Err(Error::Closed)));
    });
    let mut client = builder()
        .read_timeout(Some(Duration::from_millis(100)))
        .connect("127.0.0.1", port)
        .unwrap();
    let id = client.send_request(b"slow").unwrap();
    assert!(matches!(client.recv_response(), Err(Error::ReadTimeout)));
    assert!(!client.is_closed());
    assert_eq!(client.in_flight(), 1);
    let answer = loop {
        match client.recv_response() {
            Err(Error::ReadTimeout) => continue,
            other => break other.map(|(id, payload)| (id, payload.to_vec())),
        }
    };
    assert_eq!(answer.unwrap(), (id, b"finally".to_vec()));
    drop(client);
    served.join().unwrap();
}

#[test]
fn a_cancelled_request_never_gets_an_answer() {
    let (server, port) = echo_server(PacketServer::new());
    let mut client = builder().connect("127.0.0.1", port).unwrap();
    let cancelled = client.send_request(b"cancelled").unwrap();
    let kept = client.send_request(b"kept").unwrap();
    client.cancel(cancelled).unwrap();
    assert!(matches!(client.cancel(cancelled), Err(Error::Mux(_))));
    assert_eq!(client.recv_response().unwrap(), (kept, &b"kept"[..]));
    assert!(matches!(
        client.recv_response(),
        Err(Error::NothingInFlight)
    ));
    // The dropped answer was read before "kept"'s (the server answers in order).
    assert_eq!(client.stats().late, 1);
    server.shutdown();
}

#[test]
fn a_malformed_control_packet_closes_the_connection() {
    let (listener, port) = listener();
    let raw = thread::spawn(move || {
        let (mut tcp, _) = listener.accept().unwrap();
        // Request id 0, a 9-byte body of unknown kind 0x7F.
        let mut packet = vec![0x54, 0x57, 0x01, 0x00, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        packet.extend_from_slice(&[0x7F, 0, 0, 0, 0, 0, 0, 0, 0]);
        std::io::Write::write_all(&mut tcp, &packet).unwrap();
        let mut rest = Vec::new();
        tcp.set_read_timeout(Some(PATIENCE)).unwrap();
        let _ = tcp.read_to_end(&mut rest);
    });
    let mut client = builder().connect("127.0.0.1", port).unwrap();
    let error = client.request(b"hello").unwrap_err();
    assert!(
        matches!(error, Error::MalformedControl) && error.is_fatal(),
        "{error:?}"
    );
    assert!(client.is_closed());
    assert_eq!(client.stats().failed, 1);
    drop(client);
    raw.join().unwrap();
}

#[test]
fn a_server_with_keepalive_drops_a_client_that_never_answers_pings() {
    let (listener, port) = listener();
    let silent = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let keepalive = Keepalive {
        interval: Duration::from_millis(50),
        timeout: Duration::from_millis(100),
    };
    let server = PacketServer::new().keepalive(Some(keepalive));
    let mut connection = server.accept(listener.accept().unwrap().0).unwrap();
    let start = Instant::now();
    let error = connection.recv_request().map(drop).unwrap_err();
    assert!(matches!(error, Error::KeepaliveTimeout), "{error:?}");
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(140) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    drop(silent);
}

#[test]
fn a_local_refusal_leaves_the_connection_usable() {
    let (server, port) = echo_server(PacketServer::new());
    let mut client = builder()
        .mux_config(ClientConfig::new().with_max_in_flight(1))
        .connect("127.0.0.1", port)
        .unwrap();
    client.send_request(b"one").unwrap();
    let refused = client.send_request(b"two").unwrap_err();
    assert!(matches!(refused, Error::Mux(_)) && !refused.is_fatal());
    assert!(matches!(
        client.request(b"three"),
        Err(Error::RequestsInFlight)
    ));
    assert_eq!(client.recv_response().unwrap().1, b"one");
    assert_eq!(client.request(b"four").unwrap(), b"four");
    server.shutdown();
}
