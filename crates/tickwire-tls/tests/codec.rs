//! TlsCodec in memory: a client and a server codec joined by byte pumps, no sockets. The
//! handshake in both versions, application data both ways, split invariance, handshake bytes
//! and application data in one read, a first flight larger than a record, the ends of a
//! stream (close_notify, EOF between records, inside a record, during the handshake),
//! plaintext peers, and writes larger than the outgoing buffer limit.

#[expect(dead_code, reason = "the CA key serves the certificate tests")]
mod support;

use std::cell::Cell;
use std::io;

use support::{
    Identity, Pair, client_builder, client_config, drain, feed, feed_pieces, pki, read_available,
    server_config, server_config_for, tls12_server_config, unrelated_certificate_pem,
    with_half_rtt,
};
use tickwire_tls::{
    AlertDescription, ClientTlsConfig, Plaintext, ServerTlsConfig, TlsCodec, TlsError, TlsVersion,
    certificates_from_pem,
};

/// `len` bytes of a pattern that shows misplaced or dropped bytes.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// Writes `data` on `codec` (which must take it all) and returns the records.
fn seal(codec: &mut TlsCodec, data: &[u8]) -> Vec<u8> {
    assert_eq!(codec.write_plaintext(data), Ok(data.len()));
    drain(codec)
}

// --- handshake and application data ---

#[test]
fn tls13_handshake_and_data_both_ways() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    for side in [&pair.client, &pair.server] {
        assert!(!side.is_handshaking());
        assert_eq!(side.protocol_version(), Some(TlsVersion::Tls13));
        assert!(side.cipher_suite().unwrap().starts_with("TLS13_"));
        assert!(!side.is_resumed());
        assert_eq!(side.alpn_protocol(), None);
    }
    assert!(pair.server.is_server() && !pair.client.is_server());
    assert_eq!(pair.server.server_name(), Some("localhost"));
    assert_eq!(pair.client.peer_certificates().map(<[_]>::len), Some(1));
    assert_eq!(pair.server.peer_certificates(), None);

    pair.client
        .write_plaintext(b"ping from the client")
        .unwrap();
    pair.client_to_server().unwrap();
    assert_eq!(pair.server_received, b"ping from the client");
    pair.server
        .write_plaintext(b"pong from the server")
        .unwrap();
    pair.server_to_client().unwrap();
    assert_eq!(pair.client_received, b"pong from the server");
}

#[test]
fn tls12_handshake_and_data_both_ways() {
    let server = tls12_server_config(&pki().leaf);
    let mut pair = Pair::connected(&client_config(), &server);
    for side in [&pair.client, &pair.server] {
        assert!(!side.is_handshaking());
        assert_eq!(side.protocol_version(), Some(TlsVersion::Tls12));
        assert!(side.cipher_suite().unwrap().starts_with("TLS_ECDHE_"));
    }
    let request = pattern(3000);
    pair.client.write_plaintext(&request).unwrap();
    pair.client_to_server().unwrap();
    assert_eq!(pair.server_received, request);
    pair.server
        .write_plaintext(b"HTTP/1.1 204 No Content\r\n\r\n")
        .unwrap();
    pair.server_to_client().unwrap();
    assert_eq!(pair.client_received, b"HTTP/1.1 204 No Content\r\n\r\n");
}

#[test]
fn a_record_comes_out_through_a_buffer_smaller_than_itself() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    let message = pattern(16 * 1024);
    let records = seal(&mut pair.server, &message);
    assert_eq!(pair.client.read_tls(&records), Ok(records.len()));

    let mut buf = [0u8; 700];
    let mut received = Vec::new();
    let mut calls = 0;
    loop {
        match pair.client.read_plaintext(&mut buf).unwrap() {
            Plaintext::Data(n) => {
                assert!(n <= buf.len());
                received.extend_from_slice(&buf[..n]);
                calls += 1;
            }
            Plaintext::NeedMore => break,
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(received, message);
    assert!(calls >= message.len() / buf.len(), "{calls} reads");
    assert_eq!(pair.client.read_plaintext(&mut []), Ok(Plaintext::NeedMore));
}

// --- split invariance ---

/// What the client of one connection saw: its plaintext and the handshake's outcome.
#[derive(Debug, PartialEq)]
struct Outcome {
    plaintext: Vec<u8>,
    handshaking: bool,
    version: Option<TlsVersion>,
    cipher_suite: Option<String>,
    alpn: Option<Vec<u8>>,
    peer_certificates: usize,
}

/// One TLS 1.3 connection whose server sends application data right after its first flight
/// (0.5-RTT) and again after the client's Finished. Each of the two server transcripts is fed
/// to the client in the pieces `pieces(transcript index, transcript length)` chooses.
fn client_outcome(
    client: &ClientTlsConfig,
    server: &ServerTlsConfig,
    pieces: impl Fn(usize, usize) -> Vec<usize>,
) -> Outcome {
    let mut pair = Pair::new(client, server);
    pair.client_to_server().unwrap();
    pair.server.write_plaintext(b"0.5-RTT data; ").unwrap();
    let mut plaintext = Vec::new();
    let first = drain(&mut pair.server);
    feed_pieces(
        &mut pair.client,
        &first,
        &pieces(0, first.len()),
        &mut plaintext,
    )
    .unwrap();

    pair.client_to_server().unwrap();
    pair.server
        .write_plaintext(b"data after the client's Finished")
        .unwrap();
    let second = drain(&mut pair.server);
    feed_pieces(
        &mut pair.client,
        &second,
        &pieces(1, second.len()),
        &mut plaintext,
    )
    .unwrap();
    Outcome {
        plaintext,
        handshaking: pair.client.is_handshaking(),
        version: pair.client.protocol_version(),
        cipher_suite: pair.client.cipher_suite(),
        alpn: pair.client.alpn_protocol().map(<[u8]>::to_vec),
        peer_certificates: pair.client.peer_certificates().map_or(0, <[_]>::len),
    }
}

#[test]
fn server_transcripts_fed_whole_byte_by_byte_and_split_anywhere_agree() {
    // No resumption: every connection makes a full handshake, as the first one did.
    let client = client_builder()
        .alpn([&b"http/1.1"[..]])
        .session_resumption(false)
        .build()
        .unwrap();
    let server = ServerTlsConfig::builder(
        pki().leaf.chain_pem.as_bytes(),
        pki().leaf.key_pem.as_bytes(),
    )
    .unwrap()
    .alpn([&b"http/1.1"[..]])
    .build()
    .unwrap();
    let server = with_half_rtt(&server);

    let whole = client_outcome(&client, &server, |_, _| Vec::new());
    assert_eq!(
        whole,
        Outcome {
            plaintext: b"0.5-RTT data; data after the client's Finished".to_vec(),
            handshaking: false,
            version: Some(TlsVersion::Tls13),
            cipher_suite: whole.cipher_suite.clone(),
            alpn: Some(b"http/1.1".to_vec()),
            peer_certificates: 1,
        }
    );
    assert_eq!(
        client_outcome(&client, &server, |_, _| vec![1]),
        whole,
        "byte by byte"
    );
    assert_eq!(
        client_outcome(&client, &server, |_, _| vec![3, 7, 250]),
        whole
    );

    // Every split point of the first transcript (the server's whole first flight and the
    // 0.5-RTT record) and a moving one in the second (tickets and data), one connection per
    // point: transcripts of different connections differ by a few bytes of signature.
    let mut at = 0;
    loop {
        let past_the_end = Cell::new(false);
        let outcome = client_outcome(&client, &server, |transcript, len| {
            let cut = if transcript == 0 {
                past_the_end.set(at > len);
                at.min(len)
            } else {
                at % (len + 1)
            };
            vec![cut, len]
        });
        assert_eq!(outcome, whole, "split at {at}");
        if past_the_end.get() {
            break;
        }
        at += 1;
    }
    assert!(at > 500, "the first transcript had {at} bytes");
}

#[test]
fn tls12_transcript_fed_byte_by_byte_gives_the_same_outcome() {
    let server = tls12_server_config(&pki().leaf);
    let client = client_builder().session_resumption(false).build().unwrap();
    let run = |pieces: &[usize]| {
        let mut pair = Pair::new(&client, &server);
        let mut plaintext = Vec::new();
        pair.client_to_server().unwrap(); // ClientHello
        let flight = drain(&mut pair.server); // ServerHello .. ServerHelloDone
        feed_pieces(&mut pair.client, &flight, pieces, &mut plaintext).unwrap();
        pair.client_to_server().unwrap(); // ClientKeyExchange, ChangeCipherSpec, Finished
        pair.server.write_plaintext(b"tls 1.2 data").unwrap();
        let flight = drain(&mut pair.server); // ChangeCipherSpec, Finished, data
        feed_pieces(&mut pair.client, &flight, pieces, &mut plaintext).unwrap();
        (
            plaintext,
            pair.client.is_handshaking(),
            pair.client.protocol_version(),
            pair.client.cipher_suite(),
        )
    };
    let whole = run(&[]);
    assert_eq!(whole.0, b"tls 1.2 data");
    assert!(!whole.1);
    assert_eq!(whole.2, Some(TlsVersion::Tls12));
    assert_eq!(run(&[1]), whole);
    assert_eq!(run(&[2, 5, 11]), whole);
}

// --- handshake bytes and application data in one read ---

#[test]
fn client_finished_and_application_data_in_one_read_tls13() {
    let mut pair = Pair::new(&client_config(), &server_config());
    // Written before the handshake: buffered, then sent right behind the client's Finished.
    assert_eq!(
        pair.client.write_plaintext(b"GET / HTTP/1.1\r\n\r\n"),
        Ok(18)
    );
    pair.client_to_server().unwrap();
    pair.server_to_client().unwrap();
    assert!(!pair.client.is_handshaking());

    let finished_and_data = drain(&mut pair.client);
    assert!(pair.server.is_handshaking());
    assert_eq!(
        pair.server.read_tls(&finished_and_data),
        Ok(finished_and_data.len())
    );
    assert!(!pair.server.is_handshaking());
    let mut buf = [0u8; 64];
    assert_eq!(
        pair.server.read_plaintext(&mut buf),
        Ok(Plaintext::Data(18))
    );
    assert_eq!(&buf[..18], b"GET / HTTP/1.1\r\n\r\n");
}

#[test]
fn server_final_flight_and_application_data_in_one_read_tls12() {
    let mut pair = Pair::new(&client_config(), &tls12_server_config(&pki().leaf));
    // Queued before the handshake completes: sent right behind the server's Finished.
    assert_eq!(
        pair.server.write_plaintext(b"HTTP/1.1 200 OK\r\n\r\n"),
        Ok(19)
    );
    pair.client_to_server().unwrap(); // ClientHello
    pair.server_to_client().unwrap(); // ServerHello .. ServerHelloDone
    pair.client_to_server().unwrap(); // ClientKeyExchange, ChangeCipherSpec, Finished
    assert!(!pair.server.is_handshaking());

    let final_flight_and_data = drain(&mut pair.server);
    assert!(pair.client.is_handshaking());
    assert_eq!(
        pair.client.read_tls(&final_flight_and_data),
        Ok(final_flight_and_data.len())
    );
    assert!(!pair.client.is_handshaking());
    let mut buf = [0u8; 64];
    assert_eq!(
        pair.client.read_plaintext(&mut buf),
        Ok(Plaintext::Data(19))
    );
    assert_eq!(&buf[..19], b"HTTP/1.1 200 OK\r\n\r\n");
}

#[test]
fn server_first_flight_and_half_rtt_data_in_one_read_tls13() {
    let mut pair = Pair::new(&client_config(), &with_half_rtt(&server_config()));
    pair.client_to_server().unwrap();
    pair.server.write_plaintext(b"welcome").unwrap();
    let flight_and_data = drain(&mut pair.server);
    assert_eq!(
        pair.client.read_tls(&flight_and_data),
        Ok(flight_and_data.len())
    );
    assert!(!pair.client.is_handshaking());
    let mut buf = [0u8; 64];
    assert_eq!(pair.client.read_plaintext(&mut buf), Ok(Plaintext::Data(7)));
    assert_eq!(&buf[..7], b"welcome");
}

// --- a first flight larger than a record ---

/// A leaf under three padded intermediates, sent with six padded unrelated certificates:
/// ten certificates, more than 16 KiB of DER. Returns the identity and its DER size.
fn long_chain() -> (Identity, usize) {
    let mut ca = pki().ca.intermediate("intermediate 1", 1500);
    ca = ca.intermediate("intermediate 2", 1500);
    ca = ca.intermediate("intermediate 3", 1500);
    let mut identity = ca.leaf();
    for i in 0..6 {
        identity.chain_pem += &unrelated_certificate_pem(&format!("filler {i}"), 1800);
    }
    let chain = certificates_from_pem(identity.chain_pem.as_bytes()).unwrap();
    assert_eq!(chain.len(), 10);
    let der: usize = chain.iter().map(|cert| cert.len()).sum();
    assert!(der > 16 * 1024, "{der} bytes of DER");
    (identity, der)
}

#[test]
fn first_flight_over_16k_completes_fed_whole_and_in_pieces() {
    let (identity, der) = long_chain();
    let client = client_builder().session_resumption(false).build().unwrap();
    for server in [server_config_for(&identity), tls12_server_config(&identity)] {
        for pieces in [vec![], vec![1], vec![4096, 1, 16 * 1024 + 5]] {
            let mut pair = Pair::new(&client, &server);
            pair.client_to_server().unwrap();
            let flight = drain(&mut pair.server);
            assert!(flight.len() > der, "flight of {} bytes", flight.len());
            let mut plaintext = Vec::new();
            feed_pieces(&mut pair.client, &flight, &pieces, &mut plaintext).unwrap();
            assert_eq!(pair.client.peer_certificates().map(<[_]>::len), Some(10));
            pair.handshake().unwrap();
            pair.server.write_plaintext(b"through").unwrap();
            pair.server_to_client().unwrap();
            assert_eq!(pair.client_received, b"through", "pieces {pieces:?}");
        }
    }
}

// --- ends of the stream ---

#[test]
fn close_notify_after_data_reads_as_close_notify() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    pair.server.write_plaintext(b"last words").unwrap();
    pair.server.send_close_notify();
    let wire = drain(&mut pair.server);
    assert_eq!(pair.client.read_tls(&wire), Ok(wire.len()));
    let mut buf = [0u8; 64];
    assert_eq!(
        pair.client.read_plaintext(&mut buf),
        Ok(Plaintext::Data(10))
    );
    assert_eq!(
        pair.client.read_plaintext(&mut buf),
        Ok(Plaintext::CloseNotify)
    );
    assert_eq!(
        pair.client.read_plaintext(&mut buf),
        Ok(Plaintext::CloseNotify)
    );
    // The transport then ends: still a clean close.
    assert_eq!(pair.client.read_tls_from(&mut io::empty()).unwrap(), 0);
    assert_eq!(
        pair.client.read_plaintext(&mut buf),
        Ok(Plaintext::CloseNotify)
    );
}

#[test]
fn bytes_after_close_notify_are_ignored() {
    // RFC 8446 §6.1: "Any data received after a closure alert has been received MUST be
    // ignored": a partial record, or plaintext, in the same read or in later ones.
    for trailer in [&b"\x17\x03"[..], b"GET / HTTP/1.1\r\n\r\n"] {
        let mut pair = Pair::connected(&client_config(), &server_config());
        pair.server.write_plaintext(b"bye").unwrap();
        pair.server.send_close_notify();
        let mut wire = drain(&mut pair.server);
        wire.extend_from_slice(trailer);
        let mut plaintext = Vec::new();
        feed(&mut pair.client, &wire, &mut plaintext).unwrap();
        assert_eq!(plaintext, b"bye");
        let mut buf = [0u8; 16];
        assert_eq!(
            pair.client.read_plaintext(&mut buf),
            Ok(Plaintext::CloseNotify)
        );
        assert_eq!(pair.client.read_tls(trailer), Ok(0), "{trailer:?}");
        assert_eq!(pair.client.read_tls(&[]), Ok(0));
        assert_eq!(pair.client.read_tls_from(&mut io::empty()).unwrap(), 0);
        assert_eq!(
            pair.client.read_plaintext(&mut buf),
            Ok(Plaintext::CloseNotify)
        );
        assert_eq!(pair.client.error(), None);
    }
}

#[test]
fn eof_at_a_record_boundary_reads_as_eof_after_the_data() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    let records = seal(&mut pair.server, b"complete");
    let mut reader: &[u8] = &records;
    while pair.client.read_tls_from(&mut reader).unwrap() > 0 {}
    let mut buf = [0u8; 64];
    assert_eq!(pair.client.read_plaintext(&mut buf), Ok(Plaintext::Data(8)));
    assert_eq!(pair.client.read_plaintext(&mut buf), Ok(Plaintext::Eof));
    assert_eq!(pair.client.error(), None);

    // An empty slice is an end of stream too.
    let mut pair = Pair::connected(&client_config(), &server_config());
    assert_eq!(pair.server.read_tls(&[]), Ok(0));
    assert_eq!(pair.server.read_plaintext(&mut buf), Ok(Plaintext::Eof));
}

/// Feeds `wire` through `read_tls_from` with a reader that ends after it; returns the error
/// the end of stream gave.
fn eof_after(codec: &mut TlsCodec, wire: &[u8]) -> TlsError {
    let mut reader = wire;
    loop {
        match codec.read_tls_from(&mut reader) {
            Ok(0) => panic!("end of stream accepted"),
            Ok(_) => {}
            Err(_) => return codec.error().expect("a TLS error").clone(),
        }
    }
}

#[test]
fn eof_inside_a_record_is_truncation() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    let records = seal(&mut pair.server, &pattern(500));
    // Inside the body, and inside the 5-byte header of the next record.
    assert_eq!(
        eof_after(&mut pair.client, &records[..300]),
        TlsError::TruncatedRecord
    );
    let mut pair = Pair::connected(&client_config(), &server_config());
    let mut records = seal(&mut pair.server, b"one");
    let first = records.len();
    records.extend(seal(&mut pair.server, b"two"));
    assert_eq!(
        eof_after(&mut pair.client, &records[..first + 3]),
        TlsError::TruncatedRecord
    );
    // The connection failed for good, even for the complete record before the cut.
    assert_failed_for_good(&mut pair.client, &TlsError::TruncatedRecord);
}

#[test]
fn eof_during_the_handshake() {
    // The client sent its hello and the server vanished.
    let mut pair = Pair::new(&client_config(), &server_config());
    drain(&mut pair.client);
    let error = eof_after(&mut pair.client, &[]);
    assert_eq!(error, TlsError::HandshakeEof);
    // A server that got nothing.
    let mut server = TlsCodec::server(&server_config()).unwrap();
    assert_eq!(server.read_tls(&[]), Err(TlsError::HandshakeEof));
    // A server that got the hello, then the end: the handshake cannot finish.
    let mut pair = Pair::new(&client_config(), &server_config());
    pair.client_to_server().unwrap();
    assert_eq!(pair.server.read_tls(&[]), Err(TlsError::HandshakeEof));
    // A server cut off inside the hello: truncation.
    let mut pair = Pair::new(&client_config(), &server_config());
    let hello = drain(&mut pair.client);
    let cut = eof_after(&mut pair.server, &hello[..hello.len() / 2]);
    assert_eq!(cut, TlsError::TruncatedRecord);
}

// --- peers that do not speak TLS ---

/// Every call after a failure returns that failure.
fn assert_failed_for_good(codec: &mut TlsCodec, error: &TlsError) {
    assert_eq!(codec.error(), Some(error));
    assert_eq!(
        codec.read_tls(b"\x16\x03\x01\x00\x05hello").as_ref(),
        Err(error)
    );
    assert_eq!(codec.read_tls(&[]).as_ref(), Err(error));
    let from_reader = codec.read_tls_from(&mut io::empty()).unwrap_err();
    assert_eq!(from_reader.kind(), io::ErrorKind::InvalidData);
    assert_eq!(from_reader.to_string(), error.to_string());
    assert_eq!(codec.read_plaintext(&mut [0u8; 16]).as_ref(), Err(error));
    assert_eq!(codec.write_plaintext(b"more").as_ref(), Err(error));
    assert_eq!(codec.error(), Some(error));
}

#[test]
fn http_request_to_a_server_is_not_tls() {
    let mut server = TlsCodec::server(&server_config()).unwrap();
    let request = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    assert_eq!(server.read_tls(request), Err(TlsError::NotTls));
    assert_failed_for_good(&mut server, &TlsError::NotTls);
}

#[test]
fn http_request_arriving_byte_by_byte_is_not_tls_at_once() {
    let mut server = TlsCodec::server(&server_config()).unwrap();
    assert_eq!(server.read_tls(b"G"), Err(TlsError::NotTls));
    assert_failed_for_good(&mut server, &TlsError::NotTls);
}

#[test]
fn http_response_to_a_client_is_not_tls() {
    let mut client = TlsCodec::client(&client_config(), "localhost").unwrap();
    drain(&mut client);
    let response = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(client.read_tls(response), Err(TlsError::NotTls));
    assert_failed_for_good(&mut client, &TlsError::NotTls);
}

#[test]
fn a_protocol_failure_is_final_and_owes_the_peer_an_alert() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    let mut records = seal(&mut pair.server, b"authentic");
    let last = records.len() - 1;
    records[last] ^= 0x01; // the AEAD tag
    let error = feed(&mut pair.client, &records, &mut Vec::new()).unwrap_err();
    assert!(matches!(error, TlsError::Protocol(_)), "{error:?}");
    assert_failed_for_good(&mut pair.client, &error);
    assert!(
        pair.client.wants_write(),
        "a bad_record_mac alert is queued"
    );
    let alert = drain(&mut pair.client);
    assert_eq!(
        pair.server.read_tls(&alert),
        Err(TlsError::AlertReceived(AlertDescription::BadRecordMac))
    );
}

// --- large writes and backpressure ---

#[test]
fn a_large_write_is_taken_in_parts_and_arrives_intact() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    let payload = pattern(1 << 20);
    let first = pair.client.write_plaintext(&payload).unwrap();
    assert!(first > 0 && first < payload.len(), "took {first}");
    assert_eq!(
        pair.client.write_plaintext(&payload[first..]),
        Ok(0),
        "buffer full"
    );

    let mut sent = first;
    let mut chunk = vec![0u8; 10_000];
    while sent < payload.len() || pair.client.wants_write() {
        let n = pair.client.write_tls(&mut chunk);
        feed(&mut pair.server, &chunk[..n], &mut pair.server_received).unwrap();
        if sent < payload.len() {
            sent += pair.client.write_plaintext(&payload[sent..]).unwrap();
        }
    }
    assert_eq!(pair.server_received.len(), payload.len());
    assert!(pair.server_received == payload, "the bytes arrived altered");
}

#[test]
fn read_tls_takes_nothing_while_unread_plaintext_fills_the_buffer() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    pair.server.set_buffer_limit(None);
    let payload = pattern(100 * 1024);
    let records = seal(&mut pair.server, &payload);

    // Fed without reading plaintext: rustls stops taking ciphertext once more than its
    // plaintext limit waits, and the codec says so by taking less, not by failing.
    let mut at = 0;
    let mut stalled = false;
    while at < records.len() {
        let taken = pair
            .client
            .read_tls(&records[at..])
            .expect("backpressure, not an error");
        if taken == 0 {
            stalled = true;
            break;
        }
        at += taken;
    }
    assert!(stalled, "100 KiB of plaintext was buffered unread");
    assert_eq!(pair.client.error(), None);

    let mut received = Vec::new();
    read_available(&mut pair.client, &mut received).unwrap();
    feed(&mut pair.client, &records[at..], &mut received).unwrap();
    assert!(received == payload, "the bytes arrived altered");
}

#[test]
fn write_tls_into_a_tiny_buffer_gives_the_same_stream() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    pair.server.write_plaintext(&pattern(5000)).unwrap();
    let mut wire = Vec::new();
    let mut tiny = [0u8; 7];
    loop {
        let n = pair.server.write_tls(&mut tiny);
        if n == 0 {
            break;
        }
        wire.extend_from_slice(&tiny[..n]);
    }
    assert_eq!(pair.server.write_tls(&mut []), 0);
    let mut received = Vec::new();
    feed(&mut pair.client, &wire, &mut received).unwrap();
    assert_eq!(received, pattern(5000));
}

#[test]
fn write_tls_to_a_writer() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    pair.server.write_plaintext(b"via a writer").unwrap();
    let mut wire = Vec::new();
    while pair.server.wants_write() {
        pair.server.write_tls_to(&mut wire).unwrap();
    }
    let mut received = Vec::new();
    feed(&mut pair.client, &wire, &mut received).unwrap();
    assert_eq!(received, b"via a writer");
}
