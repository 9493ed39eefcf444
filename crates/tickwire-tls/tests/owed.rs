//! What a failed TLS connection owes its peer ([`TlsCodec::owed_to_peer`]), the one policy
//! every transport follows: the alert rustls queued, an HTTP 400 from a server to a plaintext
//! client, nothing from a client to a plaintext server.

#[expect(dead_code, reason = "the support module serves every TLS test")]
mod support;

use support::{Pair, client_config, drain, feed, server_config};
use tickwire_tls::{Owed, PLAINTEXT_ON_TLS_PORT, TlsCodec, TlsError};

#[test]
fn a_working_connection_owes_nothing() {
    let server = TlsCodec::server(&server_config()).unwrap();
    assert_eq!(server.owed_to_peer(), Owed::Nothing);
    let pair = Pair::connected(&client_config(), &server_config());
    assert_eq!(pair.client.owed_to_peer(), Owed::Nothing);
    assert_eq!(pair.server.owed_to_peer(), Owed::Nothing);
}

#[test]
fn a_server_answers_a_plaintext_client_with_an_http_400() {
    let mut server = TlsCodec::server(&server_config()).unwrap();
    let request = b"GET / HTTP/1.1\r\nHost: localhost\r\n\r\n";
    assert_eq!(server.read_tls(request), Err(TlsError::NotTls));
    assert_eq!(
        server.owed_to_peer(),
        Owed::Plaintext(PLAINTEXT_ON_TLS_PORT)
    );
    assert!(PLAINTEXT_ON_TLS_PORT.starts_with(b"HTTP/1.1 400 "));
}

#[test]
fn a_client_owes_a_plaintext_server_nothing() {
    let mut client = TlsCodec::client(&client_config(), "localhost").unwrap();
    drain(&mut client);
    let response = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(client.read_tls(response), Err(TlsError::NotTls));
    assert_eq!(client.owed_to_peer(), Owed::Nothing);
}

#[test]
fn a_protocol_failure_owes_the_queued_alert_until_it_is_written() {
    let mut pair = Pair::connected(&client_config(), &server_config());
    assert_eq!(pair.server.write_plaintext(b"authentic"), Ok(9));
    let mut records = drain(&mut pair.server);
    let last = records.len() - 1;
    records[last] ^= 0x01; // the AEAD tag
    assert!(feed(&mut pair.client, &records, &mut Vec::new()).is_err());
    assert_eq!(pair.client.owed_to_peer(), Owed::Alert);
    drain(&mut pair.client);
    assert_eq!(pair.client.owed_to_peer(), Owed::Nothing);
}

#[test]
fn a_failed_server_handshake_owes_the_client_its_alert() {
    let mut server = TlsCodec::server(&server_config()).unwrap();
    // A handshake record whose ClientHello is garbage.
    let hello = [0x16, 0x03, 0x01, 0x00, 0x04, 0x01, 0x00, 0x00, 0x00];
    assert!(server.read_tls(&hello).is_err());
    assert_eq!(server.owed_to_peer(), Owed::Alert);
}
