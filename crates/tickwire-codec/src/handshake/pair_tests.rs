//! Both roles driven against each other in memory: the request and the answer split at every
//! point (a byte at a time included), the first frames arriving in the same read as a head,
//! negotiation, and every refusal as the client sees it.

use std::time::Instant;

use super::*;
use crate::buf::{ReadBuf, WriteBuf};
use crate::ws::{Buffers, Connection, Event, MaskSource, Message, Sender};

/// One connection's two ends after a handshake in memory.
struct Pair {
    client: Accepted,
    server: Upgraded,
    /// The client's buffers: its handshake ReadBuf became their receive side.
    client_bufs: Buffers,
    server_bufs: Buffers,
    /// What the client's ReadBuf held after the 101 (given to the connection).
    client_leftover: Vec<u8>,
    /// What the server's ReadBuf held after the request.
    server_leftover: Vec<u8>,
}

fn client_for(options: ClientOptions) -> ClientHandshake {
    ClientHandshake::for_target("example.com", "/feed", options, MaskSource::seeded(3)).unwrap()
}

fn request_bytes(client: &ClientHandshake) -> Vec<u8> {
    let mut out = WriteBuf::new(64, 0);
    client.write_request(&mut out).unwrap();
    out.as_slice().to_vec()
}

/// Feeds `bytes` (a head of `head_len` bytes and what follows it) to `step` in the pieces
/// `cuts` makes, calling `step` after each piece, as a transport would after each read.
/// Returns the result, which must come with the piece holding the head's last byte, and the
/// ReadBuf with every byte after the head (later pieces appended, as later reads would).
fn feed_in_pieces<T>(
    bytes: &[u8],
    head_len: usize,
    cuts: &[usize],
    mut step: impl FnMut(&mut ReadBuf) -> Result<Parsed<T>, HandshakeError>,
) -> Result<(T, ReadBuf), HandshakeError> {
    let mut buf = ReadBuf::with_capacity(16);
    let mut from = 0;
    for &to in cuts.iter().chain([&bytes.len()]) {
        buf.extend_from_slice(&bytes[from..to]);
        from = to;
        if let Parsed::Complete(done) = step(&mut buf)? {
            assert!(
                to >= head_len,
                "complete at {to}, before the head's end {head_len}"
            );
            buf.extend_from_slice(&bytes[to..]);
            return Ok((done, buf));
        }
        assert!(
            to < head_len,
            "not complete at {to} though the head ends at {head_len}"
        );
    }
    panic!("never complete")
}

/// Runs a full handshake; the request bytes (plus `client_early`) reach the server in the
/// pieces `request_cuts` makes, the 101 (plus `server_early`) reaches the client in pieces
/// `response_cuts`.
fn handshake(
    client_options: ClientOptions,
    server_options: &ServerOptions,
    decide: impl FnOnce(&Request) -> Response,
    request_cuts: &[usize],
    response_cuts: &[usize],
    client_early: &[u8],
    server_early: &[u8],
) -> Pair {
    let mut client = client_for(client_options);
    let mut wire = request_bytes(&client);
    let request_len = wire.len();
    wire.extend_from_slice(client_early);
    let mut server = ServerHandshake::new(server_options);
    let mut answer = WriteBuf::new(64, 0);
    let (request, server_buf) = feed_in_pieces(&wire, request_len, request_cuts, |buf| {
        server.read_request(buf, &mut answer)
    })
    .unwrap();
    let server_leftover = server_buf.data().to_vec();
    let Outcome::Upgraded(upgraded) = server
        .respond(decide(&request), &mut answer, Instant::now())
        .unwrap()
    else {
        panic!("refused")
    };
    let server_bufs = Buffers::with_read(server_buf, upgraded.connection.config());
    let mut wire = answer.as_slice().to_vec();
    let response_len = wire.len();
    wire.extend_from_slice(server_early);
    let (accepted, client_buf) = feed_in_pieces(&wire, response_len, response_cuts, |buf| {
        client.read_response(buf, Instant::now())
    })
    .unwrap();
    let client_leftover = client_buf.data().to_vec();
    let client_bufs = Buffers::with_read(client_buf, accepted.connection.config());
    Pair {
        client: accepted,
        server: upgraded,
        client_bufs,
        server_bufs,
        client_leftover,
        server_leftover,
    }
}

fn whole(
    client_options: ClientOptions,
    server_options: &ServerOptions,
    decide: impl FnOnce(&Request) -> Response,
) -> Pair {
    handshake(client_options, server_options, decide, &[], &[], &[], &[])
}

impl Pair {
    fn client_sender(&mut self) -> Sender<'_> {
        self.client.connection.sender(&mut self.client_bufs)
    }

    fn server_sender(&mut self) -> Sender<'_> {
        self.server.connection.sender(&mut self.server_bufs)
    }

    fn client_to_server(&mut self) {
        let (from, from_bufs) = (&mut self.client.connection, &mut self.client_bufs);
        deliver(
            from,
            from_bufs,
            &mut self.server.connection,
            &mut self.server_bufs,
        );
    }

    fn server_to_client(&mut self) {
        let (from, from_bufs) = (&mut self.server.connection, &mut self.server_bufs);
        deliver(
            from,
            from_bufs,
            &mut self.client.connection,
            &mut self.client_bufs,
        );
    }

    fn server_next_text(&mut self) -> String {
        next_text(&mut self.server.connection, &mut self.server_bufs)
    }

    fn client_next_text(&mut self) -> String {
        next_text(&mut self.client.connection, &mut self.client_bufs)
    }
}

/// Moves everything `from` has queued into `to`.
fn deliver(
    from: &mut Connection,
    from_bufs: &mut Buffers,
    to: &mut Connection,
    to_bufs: &mut Buffers,
) {
    let output = from.output(from_bufs).to_vec();
    from.advance_output(from_bufs, output.len());
    to.feed(to_bufs, &output, Instant::now());
}

fn next_text(conn: &mut Connection, bufs: &mut Buffers) -> String {
    match conn.poll(bufs).unwrap() {
        Event::Message(Message::Text(text)) => text.to_owned(),
        other => panic!("expected a text message, got {other:?}"),
    }
}

/// A masked client text frame, as a client would send it right behind its request.
fn masked_text(text: &[u8]) -> Vec<u8> {
    let key = [1, 2, 3, 4];
    let mut frame = vec![0x81, 0x80 | text.len() as u8];
    frame.extend_from_slice(&key);
    frame.extend(text.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
    frame
}

#[test]
fn both_roles_open_connections_that_talk() {
    let mut pair = whole(
        ClientOptions::default(),
        &ServerOptions::default(),
        Response::accept,
    );
    assert_eq!(pair.client.subprotocol, None);
    assert_eq!(pair.server.subprotocol, None);
    pair.client_sender().text("to server").unwrap();
    pair.client_to_server();
    assert_eq!(pair.server_next_text(), "to server");
    pair.server_sender().text("to client").unwrap();
    pair.server_to_client();
    assert_eq!(pair.client_next_text(), "to client");
}

#[test]
fn heads_split_at_every_point_complete_once_with_the_same_outcome() {
    let request_len = request_bytes(&client_for(ClientOptions::default())).len();
    for cut in 0..=request_len {
        let pair = handshake(
            ClientOptions::default(),
            &ServerOptions::default(),
            Response::accept,
            &[cut],
            &[],
            &[],
            &[],
        );
        assert!(pair.server_leftover.is_empty(), "request cut {cut}");
    }
    let pair = whole(
        ClientOptions::default(),
        &ServerOptions::default(),
        Response::accept,
    );
    drop(pair);
    // The 101 is 129 bytes with this key; cut it everywhere too.
    for cut in 0..=129 {
        let pair = handshake(
            ClientOptions::default(),
            &ServerOptions::default(),
            Response::accept,
            &[],
            &[cut],
            &[],
            &[],
        );
        assert!(pair.client_leftover.is_empty(), "response cut {cut}");
    }
}

#[test]
fn heads_arriving_one_byte_at_a_time() {
    let request_len = request_bytes(&client_for(ClientOptions::default())).len();
    let every_byte: Vec<usize> = (1..request_len).collect();
    let response_bytes: Vec<usize> = (1..129).collect();
    let mut pair = handshake(
        ClientOptions::default(),
        &ServerOptions::default(),
        Response::accept,
        &every_byte,
        &response_bytes,
        &[],
        &[],
    );
    pair.server_sender().text("after").unwrap();
    pair.server_to_client();
    assert_eq!(pair.client_next_text(), "after");
}

#[test]
fn first_frames_in_the_same_read_as_the_head_are_delivered_by_the_connection() {
    // A server's first frame right behind its 101, and a client's behind its request.
    let server_frame = [0x81, 0x05, b'h', b'e', b'l', b'l', b'o'];
    let client_frame = masked_text(b"hi");
    let mut pair = handshake(
        ClientOptions::default(),
        &ServerOptions::default(),
        Response::accept,
        &[],
        &[],
        &client_frame,
        &server_frame,
    );
    assert_eq!(
        pair.server_leftover, client_frame,
        "left in the ReadBuf, unparsed"
    );
    assert_eq!(pair.client_leftover, server_frame);
    assert_eq!(pair.server_next_text(), "hi");
    assert_eq!(pair.client_next_text(), "hello");
    // Split inside the frame that follows the head: the head completes, the frame waits.
    let request_len = request_bytes(&client_for(ClientOptions::default())).len();
    let mut pair = handshake(
        ClientOptions::default(),
        &ServerOptions::default(),
        Response::accept,
        &[request_len + 3],
        &[],
        &client_frame,
        &[],
    );
    assert_eq!(
        pair.server_leftover, client_frame,
        "the later read appended the rest"
    );
    assert_eq!(pair.server_next_text(), "hi");
}

#[test]
fn subprotocols_from_the_decision_or_the_server_options() {
    let offers = || ClientOptions {
        subprotocols: vec!["v1".into(), "v2".into()],
        ..ClientOptions::default()
    };
    let pair = whole(offers(), &ServerOptions::default(), |request| {
        Response::accept(request).subprotocol("v2")
    });
    assert_eq!(pair.client.subprotocol.as_deref(), Some("v2"));
    assert_eq!(pair.server.subprotocol.as_deref(), Some("v2"));
    let speaks = ServerOptions {
        subprotocols: vec!["v2".into(), "v1".into()],
        headers: vec![("X-Server".into(), "tickwire".into())],
        ..ServerOptions::default()
    };
    let pair = whole(offers(), &speaks, Response::accept);
    assert_eq!(
        pair.client.subprotocol.as_deref(),
        Some("v1"),
        "the client's preference among those the server speaks"
    );
    assert!(
        pair.client
            .headers
            .iter()
            .any(|(name, value)| name == "X-Server" && value == b"tickwire")
    );
    let pair = whole(ClientOptions::default(), &speaks, Response::accept);
    assert_eq!(pair.client.subprotocol, None, "none offered, none selected");
}

#[test]
fn every_refusal_reaches_the_client_with_its_status() {
    let options = ServerOptions::default();
    for (status, body) in [(403, &b"no"[..]), (401, b""), (503, b"busy, retry")] {
        let mut client = client_for(ClientOptions::default());
        let mut server = ServerHandshake::new(&options);
        let mut buf = ReadBuf::with_capacity(16);
        buf.extend_from_slice(&request_bytes(&client));
        let mut answer = WriteBuf::new(64, 0);
        let Ok(Parsed::Complete(_)) = server.read_request(&mut buf, &mut answer) else {
            panic!("valid request")
        };
        let outcome = server
            .respond(
                Response::reject(status).body(body),
                &mut answer,
                Instant::now(),
            )
            .unwrap();
        assert!(matches!(outcome, Outcome::Rejected(s) if s == status));
        let mut reply = ReadBuf::with_capacity(16);
        reply.extend_from_slice(answer.as_slice());
        assert_eq!(
            client
                .read_response(&mut reply, Instant::now())
                .unwrap_err(),
            HandshakeError::UnexpectedStatus {
                status,
                body: body.to_vec()
            }
        );
    }
}

#[test]
fn every_bad_request_answer_reaches_the_client_with_its_status() {
    let good = String::from_utf8(request_bytes(&client_for(ClientOptions::default()))).unwrap();
    let cases = [
        (good.replacen("GET", "PUT", 1), 405),
        (good.replace("Upgrade: websocket\r\n", ""), 426),
        (
            good.replace("Sec-WebSocket-Version: 13", "Sec-WebSocket-Version: 7"),
            426,
        ),
        (good.replace("Host: example.com\r\n", ""), 400),
        (
            good.replace("Connection: Upgrade", "Connection: keep-alive"),
            400,
        ),
        (good.replace("HTTP/1.1", "HTTP/3.0"), 505),
        (
            good.replace("\r\n\r\n", &format!("\r\nX: {}\r\n\r\n", "a".repeat(9000))),
            431,
        ),
    ];
    for (request, status) in cases {
        let options = ServerOptions::default();
        let mut server = ServerHandshake::new(&options);
        let mut buf = ReadBuf::with_capacity(16);
        buf.extend_from_slice(request.as_bytes());
        let mut answer = WriteBuf::new(64, 0);
        let error = server.read_request(&mut buf, &mut answer).unwrap_err();
        assert_eq!(error.status(), Some(status), "{error:?}");
        let mut client = client_for(ClientOptions::default());
        let mut reply = ReadBuf::with_capacity(16);
        reply.extend_from_slice(answer.as_slice());
        match client.read_response(&mut reply, Instant::now()) {
            Err(HandshakeError::UnexpectedStatus { status: seen, body }) => {
                assert_eq!(seen, status);
                assert_eq!(
                    body,
                    format!("{error}\n").into_bytes(),
                    "the reason in words"
                );
            }
            other => panic!("{status}: {other:?}"),
        }
        assert_eq!(
            server.read_request(&mut buf, &mut answer).unwrap_err(),
            HandshakeError::Finished,
            "an error is final"
        );
    }
}

#[test]
fn a_wrong_accept_key_fails_the_client() {
    let client_options = ClientOptions::default();
    let mut client = client_for(client_options).with_key(*b"the sample nonce");
    let mut other = client_for(ClientOptions::default()).with_key(*b"another nonce!!!");
    let options = ServerOptions::default();
    let mut server = ServerHandshake::new(&options);
    let mut buf = ReadBuf::with_capacity(16);
    buf.extend_from_slice(&request_bytes(&other));
    let mut answer = WriteBuf::new(64, 0);
    let Ok(Parsed::Complete(request)) = server.read_request(&mut buf, &mut answer) else {
        panic!("valid request")
    };
    server
        .respond(Response::accept(&request), &mut answer, Instant::now())
        .unwrap();
    let mut reply = ReadBuf::with_capacity(16);
    reply.extend_from_slice(answer.as_slice());
    assert_eq!(
        client
            .read_response(&mut reply, Instant::now())
            .unwrap_err(),
        HandshakeError::BadAccept
    );
    let mut reply = ReadBuf::with_capacity(16);
    reply.extend_from_slice(answer.as_slice());
    assert!(matches!(
        other.read_response(&mut reply, Instant::now()),
        Ok(Parsed::Complete(_))
    ));
}

#[cfg(feature = "deflate")]
mod deflate {
    use super::*;
    use crate::deflate::DeflateConfig;

    fn offering() -> ClientOptions {
        ClientOptions {
            deflate: Some(DeflateConfig::default()),
            ..ClientOptions::default()
        }
    }

    fn accepting(config: DeflateConfig) -> ServerOptions {
        ServerOptions {
            deflate: Some(config),
            ..ServerOptions::default()
        }
    }

    #[test]
    fn negotiated_deflate_is_installed_on_both_connections() {
        let server_config = DeflateConfig {
            server_no_context_takeover: true,
            ..DeflateConfig::default()
        };
        let mut pair = whole(offering(), &accepting(server_config), Response::accept);
        let client = pair.client.deflate.expect("negotiated");
        assert_eq!(Some(client), pair.server.deflate);
        assert!(client.server_no_context_takeover);
        assert!(pair.client.connection.has_extension());
        assert!(pair.server.connection.has_extension());
        let text = "{\"price\":1,\"qty\":2}".repeat(20);
        pair.client_sender().text(&text).unwrap();
        let output = pair.client.connection.output(&pair.client_bufs).to_vec();
        assert!(output.len() < text.len() / 2, "compressed on the wire");
        assert_eq!(output[0] & 0x40, 0x40, "RSV1 set");
        pair.client_to_server();
        assert_eq!(pair.server_next_text(), text);
        pair.server_sender().text(&text).unwrap();
        pair.server_to_client();
        assert_eq!(pair.client_next_text(), text);
    }

    #[test]
    fn a_server_without_a_deflate_policy_ignores_the_offer() {
        let pair = whole(offering(), &ServerOptions::default(), Response::accept);
        assert_eq!(pair.client.deflate, None);
        assert_eq!(pair.server.deflate, None);
        assert!(!pair.client.connection.has_extension());
    }

    #[test]
    fn bad_deflate_offers_and_answers_fail_with_their_errors() {
        let options = accepting(DeflateConfig::default());
        let mut server = ServerHandshake::new(&options);
        let mut buf = ReadBuf::with_capacity(16);
        let request = String::from_utf8(request_bytes(&client_for(ClientOptions::default())))
            .unwrap()
            .replace(
                "\r\n\r\n",
                "\r\nSec-WebSocket-Extensions: permessage-deflate; server_max_window_bits=99\r\n\r\n",
            );
        buf.extend_from_slice(request.as_bytes());
        let mut answer = WriteBuf::new(64, 0);
        let error = server.read_request(&mut buf, &mut answer).unwrap_err();
        assert!(
            matches!(error, HandshakeError::BadExtensionOffer(_)),
            "{error:?}"
        );
        assert!(
            answer
                .as_slice()
                .starts_with(b"HTTP/1.1 400 Bad Request\r\n")
        );

        let mut client = client_for(offering());
        let accept = accept_key(client.key().as_bytes());
        let reply = format!(
            "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Accept: {accept}\r\n\
             Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits=16\r\n\r\n"
        );
        let mut buf = ReadBuf::with_capacity(16);
        buf.extend_from_slice(reply.as_bytes());
        assert!(matches!(
            client.read_response(&mut buf, Instant::now()),
            Err(HandshakeError::BadExtensionResponse(_))
        ));
    }
}
