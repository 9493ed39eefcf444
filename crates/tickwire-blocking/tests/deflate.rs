//! permessage-deflate through the blocking transports: negotiation on the wire, compressed
//! round trips, the per-message override, the inflated-size limit, and bad offers and answers.

mod common;
use common::server;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use tickwire_blocking::codec::handshake::HandshakeError;
use tickwire_blocking::{
    ClientBuilder, CloseCode, Compression, DeflateConfig, Error, Limits, Message, Recv,
    ServerBuilder,
};

/// A deflate echo server; returns the negotiated parameters and how the connection ended.
fn deflate_echo(
    builder: ServerBuilder,
) -> (String, thread::JoinHandle<Result<Option<String>, String>>) {
    server(move |stream| {
        let mut ws = builder.accept(stream).map_err(|e| e.to_string())?;
        let negotiated = ws.deflate().map(|p| format!("{p:?}"));
        let echoed = echo_messages(&mut ws);
        ws.finish().map_err(|e| e.to_string())?;
        echoed.map(|()| negotiated)
    })
}

/// Echoes text and binary messages until the end of the close handshake.
fn echo_messages<S: tickwire_blocking::Transport>(
    ws: &mut tickwire_blocking::WebSocket<S>,
) -> Result<(), String> {
    loop {
        let (recv, mut sender) = match ws.recv_with_sender() {
            Ok(received) => received,
            Err(e) => return Err(e.to_string()),
        };
        let Recv::Message(message) = recv else {
            return Ok(());
        };
        match message {
            Message::Text(text) => sender.text(text).map_err(|e| e.to_string())?,
            Message::Binary(data) => sender.binary(data).map_err(|e| e.to_string())?,
            _ => {}
        }
    }
}

fn json(n: usize) -> String {
    let mut s = String::new();
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!(
            "{{\"px\":\"{}.25\",\"qty\":{}}},",
            60_000 + i % 977,
            i % 13
        ));
        i += 1;
    }
    s.truncate(n);
    s
}

#[test]
fn compressed_round_trips_with_each_context_mode() {
    let modes = [
        DeflateConfig::default(),
        DeflateConfig::default()
            .with_server_no_context_takeover(true)
            .with_client_no_context_takeover(true),
        DeflateConfig::default()
            .with_server_max_window_bits(Some(9))
            .with_client_max_window_bits(Some(10)),
    ];
    for config in modes {
        let (url, handle) = deflate_echo(ServerBuilder::new().deflate(DeflateConfig::default()));
        let mut ws = ClientBuilder::new()
            .deflate(config.clone())
            .connect(&url)
            .unwrap();
        let params = *ws.deflate().expect("negotiated");
        assert_eq!(
            params.server_no_context_takeover,
            config.server_no_context_takeover
        );
        assert_eq!(
            params.server_max_window_bits,
            config.server_max_window_bits.unwrap_or(15)
        );
        for size in [0, 10, 200, 5_000, 300_000] {
            let text = json(size);
            ws.send_text_now(&text).unwrap();
            assert_eq!(
                ws.recv().unwrap(),
                Recv::Message(Message::Text(text.as_str())),
                "{size}"
            );
        }
        let binary: Vec<u8> = (0..70_000u32).map(|i| (i * 31 % 251) as u8).collect();
        ws.send_binary_now(&binary).unwrap();
        assert_eq!(
            ws.recv().unwrap(),
            Recv::Message(Message::Binary(&binary[..]))
        );
        ws.send_text_with(&json(500), Compression::Never).unwrap();
        ws.send_text_with("x", Compression::Always).unwrap();
        ws.flush().unwrap();
        assert_eq!(
            ws.recv().unwrap(),
            Recv::Message(Message::Text(json(500).as_str()))
        );
        assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("x")));
        ws.close(CloseCode::NORMAL, "").unwrap();
        assert!(matches!(ws.recv().unwrap(), Recv::Closed(Some(_))));
        ws.finish().unwrap();
        let server_saw = handle.join().unwrap().unwrap();
        assert!(server_saw.is_some(), "server negotiated deflate");
    }
}

#[test]
fn no_deflate_unless_both_sides_enable_it() {
    let (url, handle) = deflate_echo(ServerBuilder::new());
    let mut ws = ClientBuilder::new()
        .deflate(DeflateConfig::default())
        .connect(&url)
        .unwrap();
    assert!(ws.deflate().is_none());
    ws.send_text_now(&json(1000)).unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Text(json(1000).as_str()))
    );
    ws.finish().unwrap();
    assert_eq!(handle.join().unwrap(), Ok(None));

    let (url, handle) = deflate_echo(ServerBuilder::new().deflate(DeflateConfig::default()));
    let mut ws = ClientBuilder::new().connect(&url).unwrap();
    assert!(ws.deflate().is_none());
    ws.send_text_now("plain").unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("plain")));
    ws.finish().unwrap();
    assert_eq!(handle.join().unwrap(), Ok(None));
}

#[test]
fn inflated_size_over_the_limit_is_closed_with_1009() {
    let limit = 64 << 10;
    let builder = ServerBuilder::new()
        .deflate(DeflateConfig::default())
        .limits(Limits::server().with_max_message_size(limit));
    let (url, handle) = deflate_echo(builder);
    let mut ws = ClientBuilder::new()
        .deflate(DeflateConfig::default())
        .connect(&url)
        .unwrap();
    let at_limit = "z".repeat(limit);
    ws.send_text_now(&at_limit).unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Text(at_limit.as_str()))
    );
    ws.send_text_now(&"z".repeat(limit + 1)).unwrap();
    match ws.recv().unwrap() {
        Recv::Closed(Some(frame)) => assert_eq!(frame.code, CloseCode::MESSAGE_TOO_BIG),
        other => panic!("expected close 1009, got {other:?}"),
    }
    ws.finish().unwrap();
    let ended = handle.join().unwrap().unwrap_err();
    assert!(ended.contains("limit"), "{ended}");
}

/// Sends a raw upgrade request with `extensions` and returns the status line.
fn raw_upgrade_status(addr: &str, extensions: &str) -> String {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Extensions: {extensions}\r\n\r\n"
    )
    .unwrap();
    let mut response = Vec::new();
    let _ = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response).into_owned();
    text.lines().next().unwrap_or("").to_owned()
}

#[test]
fn server_answers_an_invalid_offer_with_400() {
    for offer in [
        "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; client_no_context_takeover; client_no_context_takeover",
        "permessage-deflate; unknown_param",
    ] {
        let (url, handle) = server(|stream| {
            ServerBuilder::new()
                .deflate(DeflateConfig::default())
                .accept(stream)
                .map(|_| ())
        });
        let addr = url.trim_start_matches("ws://").to_owned();
        assert_eq!(raw_upgrade_status(&addr, offer), "HTTP/1.1 400 Bad Request");
        assert!(matches!(
            handle.join().unwrap(),
            Err(Error::Handshake(HandshakeError::BadExtensionOffer(_)))
        ));
    }
}

#[test]
fn server_declines_an_invalid_offer_for_a_later_valid_one() {
    let (url, handle) = server(|stream| {
        ServerBuilder::new()
            .deflate(DeflateConfig::default())
            .accept(stream)
            .map(|ws| ws.deflate().copied())
    });
    let addr = url.trim_start_matches("ws://").to_owned();
    let status = raw_upgrade_status(
        &addr,
        "permessage-deflate; foo=1, permessage-deflate; server_max_window_bits=11",
    );
    assert_eq!(status, "HTTP/1.1 101 Switching Protocols");
    let params = handle.join().unwrap().unwrap().expect("deflate negotiated");
    assert_eq!(params.server_max_window_bits, 11);
}

#[test]
fn client_fails_when_the_server_selects_what_was_not_offered() {
    let answers = [
        // A larger server window than asked for.
        "permessage-deflate; server_max_window_bits=12",
        // A parameter that does not exist.
        "permessage-deflate; server_max_window_bits=10; bogus",
    ];
    for answer in answers {
        let (url, _handle) = server(move |mut stream| {
            let mut request = [0u8; 4096];
            let n = stream.read(&mut request).unwrap();
            let request = String::from_utf8_lossy(&request[..n]).into_owned();
            let key = request
                .lines()
                .find_map(|l| l.strip_prefix("Sec-WebSocket-Key: "))
                .unwrap()
                .trim()
                .to_owned();
            let accept = tickwire_blocking::codec::handshake::accept_key(key.as_bytes());
            write!(
                stream,
                "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
                 Sec-WebSocket-Accept: {accept}\r\nSec-WebSocket-Extensions: {answer}\r\n\r\n"
            )
            .unwrap();
            thread::sleep(Duration::from_millis(200));
        });
        let result = ClientBuilder::new()
            .deflate(DeflateConfig::default().with_server_max_window_bits(Some(10)))
            .connect(&url);
        assert!(
            matches!(
                result,
                Err(Error::Handshake(HandshakeError::BadExtensionResponse(_)))
            ),
            "{answer}: {result:?}"
        );
    }
}
