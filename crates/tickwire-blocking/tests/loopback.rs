//! The blocking transports end to end over loopback TCP: what a user of `connect` and
//! `accept` sees.

mod common;
use common::server;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread;
use std::time::{Duration, Instant};

use tickwire_blocking::{
    ClientBuilder, CloseCode, CloseFrame, Config, Error, Message, Recv, Response, ServerBuilder,
    WebSocket,
};

/// An echo server that returns how the connection ended; it finishes the connection (close
/// handshake, TCP close) after the peer's close or a failure.
fn echo_server() -> (String, thread::JoinHandle<Result<(), String>>) {
    server(|stream| {
        let mut ws = ServerBuilder::new()
            .accept(stream)
            .map_err(|e| e.to_string())?;
        let echoed = echo_messages(&mut ws);
        ws.finish().map_err(|e| e.to_string())?;
        echoed
    })
}

fn echo_messages(ws: &mut WebSocket<TcpStream>) -> Result<(), String> {
    loop {
        let (recv, mut sender) = ws.recv_with_sender().map_err(|e| e.to_string())?;
        match recv {
            Recv::Message(Message::Text(text)) => sender.text(text).map_err(|e| e.to_string())?,
            Recv::Message(Message::Binary(data)) => {
                sender.binary(data).map_err(|e| e.to_string())?
            }
            Recv::Closed(_) => return Ok(()),
            _ => {}
        }
    }
}

#[test]
fn text_binary_and_large_messages_round_trip() {
    let (url, handle) = echo_server();
    let mut ws = ClientBuilder::new()
        .connect(&format!("{url}/echo?x=1"))
        .unwrap();
    ws.send_text_now("héllo").unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("héllo")));
    ws.send_binary_now(&[0, 1, 2, 255]).unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Binary(&[0, 1, 2, 255]))
    );
    let big: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    ws.send_binary_now(&big).unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Binary(&big[..])));
    // Many queued messages, one flush, answered in order.
    for i in 0..100 {
        ws.send_text(&format!("m{i}")).unwrap();
    }
    ws.flush().unwrap();
    for i in 0..100 {
        assert_eq!(
            ws.recv().unwrap(),
            Recv::Message(Message::Text(format!("m{i}").as_str()))
        );
    }
    ws.close(CloseCode::NORMAL, "done").unwrap();
    // The reply echoes the code (RFC 6455 §5.5.1), not the reason.
    let reply = Recv::Closed(Some(CloseFrame {
        code: CloseCode::NORMAL,
        reason: "",
    }));
    // The end of the close handshake is a value, reported once and then the same again.
    assert_eq!(ws.recv().unwrap(), reply);
    assert_eq!(ws.recv().unwrap(), reply);
    assert_eq!(ws.try_recv().unwrap(), reply);
    ws.finish().unwrap();
    assert_eq!(handle.join().unwrap(), Ok(()));
}

#[test]
fn reply_while_holding_the_received_message() {
    let (url, handle) = echo_server();
    let mut ws = ClientBuilder::new().connect(&url).unwrap();
    ws.send_text_now("ping-pong").unwrap();
    let (recv, mut sender) = ws.recv_with_sender().unwrap();
    let Recv::Message(Message::Text(text)) = recv else {
        panic!("{recv:?}")
    };
    // `text` still borrows the receive buffer while the sender queues it back.
    sender.text(text).unwrap();
    ws.flush().unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Text("ping-pong"))
    );
    drop(ws);
    handle.join().unwrap().unwrap_err();
}

#[test]
fn server_initiated_close_reaches_the_client_with_its_code() {
    let (url, handle) = server(|stream| {
        let mut ws = tickwire_blocking::accept(stream).unwrap();
        ws.close(CloseCode(4001), "bye").unwrap();
        // Drain until the client's reply completes the handshake.
        loop {
            match ws.recv() {
                Ok(Recv::Closed(frame)) => {
                    let code = frame.map(|f| f.code);
                    ws.finish().unwrap();
                    return code;
                }
                Ok(_) => {}
                Err(e) => panic!("server: {e}"),
            }
        }
    });
    let mut ws = ClientBuilder::new().connect(&url).unwrap();
    let closed = Recv::Closed(Some(CloseFrame {
        code: CloseCode(4001),
        reason: "bye",
    }));
    assert_eq!(ws.recv().unwrap(), closed, "the peer's close, once");
    assert_eq!(ws.recv().unwrap(), closed, "and the same end again");
    ws.finish().unwrap();
    assert_eq!(
        handle.join().unwrap(),
        Some(CloseCode(4001)),
        "the client echoed the code"
    );
}

#[test]
fn finish_sends_a_normal_close_and_completes_the_handshake() {
    let (url, handle) = server(|stream| {
        let mut ws = tickwire_blocking::accept(stream).unwrap();
        let code = loop {
            if let Recv::Closed(frame) = ws.recv().unwrap() {
                break frame.map(|f| f.code);
            }
        };
        ws.finish().unwrap();
        code
    });
    let mut ws = ClientBuilder::new().connect(&url).unwrap();
    let started = Instant::now();
    ws.finish().unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    assert!(matches!(ws.recv().unwrap(), Recv::Closed(Some(f)) if f.code == CloseCode::NORMAL));
    assert_eq!(handle.join().unwrap(), Some(CloseCode::NORMAL));
}

#[test]
fn finish_gives_up_after_the_close_timeout() {
    // A peer that completes the upgrade and then never reads nor answers.
    let (url, handle) = server(|stream| {
        let ws = tickwire_blocking::accept(stream).unwrap();
        thread::sleep(Duration::from_millis(1500));
        drop(ws);
    });
    let mut config = Config::client();
    config.close_timeout = Duration::from_millis(200);
    let mut ws = ClientBuilder::new().config(config).connect(&url).unwrap();
    let started = Instant::now();
    let error = ws.finish().unwrap_err();
    let took = started.elapsed();
    assert!(
        matches!(
            error,
            Error::Protocol(tickwire_blocking::codec::ws::Error::CloseTimeout)
        ),
        "{error}"
    );
    assert!(took < Duration::from_secs(1), "{took:?}");
    handle.join().unwrap();
}

#[test]
fn dropping_a_connection_never_blocks() {
    let (url, handle) = server(|stream| {
        let mut ws = tickwire_blocking::accept(stream).unwrap();
        while let Recv::Message(_) = ws.recv().unwrap() {}
        // The handshake is over and the client keeps TCP open: `finish` would wait for it to
        // close, dropping must not.
        let started = Instant::now();
        drop(ws);
        started.elapsed()
    });
    let mut ws = ClientBuilder::new().connect(&url).unwrap();
    ws.close(CloseCode::NORMAL, "").unwrap();
    let dropped_in = handle.join().unwrap();
    assert!(dropped_in < Duration::from_millis(100), "{dropped_in:?}");
    drop(ws);
}

#[test]
fn pings_are_answered_automatically() {
    let (url, handle) = server(|stream| {
        let mut ws = tickwire_blocking::accept(stream).unwrap();
        ws.ping(b"are you there").unwrap();
        ws.flush().unwrap();
        let pong = match ws.recv().unwrap() {
            Recv::Message(Message::Pong(payload)) => payload.to_vec(),
            other => panic!("{other:?}"),
        };
        ws.send_text_now("got your pong").unwrap();
        pong
    });
    let mut ws = ClientBuilder::new().connect(&url).unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Ping(b"are you there"))
    );
    // The pong goes out when the client next waits for input, without any flush call.
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Text("got your pong"))
    );
    assert_eq!(handle.join().unwrap(), b"are you there");
}

#[test]
fn read_timeout_leaves_the_connection_usable() {
    let (url, handle) = echo_server();
    let mut ws = ClientBuilder::new()
        .read_timeout(Some(Duration::from_millis(50)))
        .connect(&url)
        .unwrap();
    // An expired wait is a value, not an error.
    assert_eq!(ws.recv().unwrap(), Recv::Timeout);
    ws.send_text_now("still here").unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Text("still here"))
    );
    drop(ws);
    let _ = handle.join();
}

/// A peer that stops answering fails the connection on the keepalive's pong timeout, and
/// `finish` then writes the close it owes and closes without waiting the close timeout (5 s)
/// for a FIN that is not coming.
#[test]
fn keepalive_ping_fails_a_silent_peer_and_finish_does_not_wait_for_it() {
    let (release, released) = std::sync::mpsc::channel::<()>();
    // A "server" that completes the handshake, then neither reads nor closes until released.
    let (url, handle) = server(move |stream| {
        let _ws = tickwire_blocking::accept(stream).unwrap();
        let _ = released.recv_timeout(Duration::from_secs(30));
    });
    let mut ws = ClientBuilder::new()
        .keepalive(Duration::from_millis(100), Duration::from_millis(200))
        .connect(&url)
        .unwrap();
    // The server-side WebSocket does auto-pong only when it reads; it never reads here.
    let error = ws.recv().unwrap_err();
    assert!(
        matches!(
            error,
            Error::Protocol(tickwire_blocking::codec::ws::Error::PongTimeout)
        ),
        "{error}"
    );
    let started = Instant::now();
    ws.finish().unwrap();
    let took = started.elapsed();
    release.send(()).unwrap();
    handle.join().unwrap();
    assert!(
        took < Duration::from_secs(2),
        "finish waited {took:?} on a peer that stopped answering (close timeout 5 s)"
    );
}

#[test]
fn accept_hook_selects_a_subprotocol_or_rejects() {
    let (url, handle) = server(|stream| {
        let ws = ServerBuilder::new()
            .accept_with(stream, |request| {
                assert_eq!(request.path(), "/feed");
                assert_eq!(request.header("authorization"), Some(&b"Bearer t0ken"[..]));
                Response::accept(request).subprotocol("v2")
            })
            .unwrap();
        ws.subprotocol().map(str::to_owned)
    });
    let ws = ClientBuilder::new()
        .header("Authorization", "Bearer t0ken")
        .subprotocol("v1")
        .subprotocol("v2")
        .connect(&format!("{url}/feed"))
        .unwrap();
    assert_eq!(ws.subprotocol(), Some("v2"));
    assert_eq!(handle.join().unwrap(), Some("v2".to_owned()));

    let (url, handle) = server(|stream| {
        ServerBuilder::new()
            .accept_with(stream, |_| Response::reject(403))
            .err()
            .map(|e| e.to_string())
    });
    let error = ClientBuilder::new().connect(&url).unwrap_err();
    assert!(error.to_string().contains("403"), "{error}");
    assert!(handle.join().unwrap().unwrap().contains("403"));
}

#[test]
fn bytes_after_the_upgrade_request_are_frames_only_after_the_101() {
    let (url, handle) = echo_server();
    let addr = url.trim_start_matches("ws://");
    let mut raw = TcpStream::connect(addr).unwrap();
    // Handshake and a masked text frame "hi" in one write.
    let mut bytes = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .into_bytes();
    bytes.extend_from_slice(&[0x81, 0x82, 1, 2, 3, 4, b'h' ^ 1, b'i' ^ 2]);
    raw.write_all(&bytes).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut received = Vec::new();
    let mut chunk = [0u8; 1024];
    while !received.ends_with(b"\x81\x02hi") {
        let n = raw.read(&mut chunk).unwrap();
        assert!(
            n > 0,
            "closed early: {:?}",
            String::from_utf8_lossy(&received)
        );
        received.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 101 "), "{text}");
    let head_end = text.find("\r\n\r\n").unwrap() + 4;
    assert_eq!(
        &received[head_end..],
        b"\x81\x02hi",
        "the echo follows the 101"
    );
    drop(raw);
    let _ = handle.join();
}

/// What a build without the `deflate` feature does with every offer (and a server that was not
/// given a `DeflateConfig` does in any build): RFC 7692 §5 lets it decline by answering
/// without the extension, and the connection works uncompressed.
#[test]
fn a_server_not_configured_for_deflate_ignores_an_offer() {
    let (url, handle) = echo_server();
    let addr = url.trim_start_matches("ws://");
    let mut raw = TcpStream::connect(addr).unwrap();
    let mut bytes = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
    )
    .into_bytes();
    bytes.extend_from_slice(&[0x81, 0x82, 1, 2, 3, 4, b'h' ^ 1, b'i' ^ 2]);
    raw.write_all(&bytes).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut received = Vec::new();
    let mut chunk = [0u8; 1024];
    while !received.ends_with(b"\x81\x02hi") {
        let n = raw.read(&mut chunk).unwrap();
        assert!(
            n > 0,
            "closed early: {:?}",
            String::from_utf8_lossy(&received)
        );
        received.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&received);
    assert!(text.starts_with("HTTP/1.1 101 "), "{text}");
    assert!(
        !text
            .to_ascii_lowercase()
            .contains("sec-websocket-extensions"),
        "{text}"
    );
    drop(raw);
    let _ = handle.join();
}

#[test]
fn malformed_handshake_gets_an_http_error_not_a_dropped_socket() {
    let (url, handle) = echo_server();
    let addr = url.trim_start_matches("ws://");
    let mut raw = TcpStream::connect(addr).unwrap();
    raw.write_all(
        format!("GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 8\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    let mut response = String::new();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    raw.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 426 "), "{response}");
    assert!(
        response
            .to_ascii_lowercase()
            .contains("sec-websocket-version: 13"),
        "{response}"
    );
    let error = handle.join().unwrap().unwrap_err();
    assert!(error.contains("handshake"), "{error}");
}

#[test]
fn protocol_violation_is_answered_with_its_close_code() {
    let (url, handle) = echo_server();
    let addr = url.trim_start_matches("ws://");
    let mut raw = TcpStream::connect(addr).unwrap();
    raw.write_all(
        format!("GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
            .as_bytes(),
    )
    .unwrap();
    // An unmasked frame from a client: the server must close with 1002.
    raw.write_all(&[0x81, 0x02, b'h', b'i']).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut received = Vec::new();
    raw.read_to_end(&mut received).unwrap();
    let head_end = received.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert_eq!(&received[head_end..], &[0x88, 0x02, 0x03, 0xea]);
    drop(raw);
    let error = handle.join().unwrap().unwrap_err();
    assert!(error.contains("1002"), "{error}");
}

#[test]
fn peer_vanishing_without_close_is_unexpected_eof() {
    let (url, handle) = server(|stream| {
        let ws = tickwire_blocking::accept(stream).unwrap();
        ws.stream().shutdown(std::net::Shutdown::Both).unwrap();
    });
    let mut ws = ClientBuilder::new().connect(&url).unwrap();
    handle.join().unwrap();
    assert!(matches!(ws.recv(), Err(Error::UnexpectedEof)));
}

#[test]
fn urls_are_checked_before_connecting() {
    assert!(matches!(
        ClientBuilder::new().connect("http://127.0.0.1:1/"),
        Err(Error::InvalidUrl(_))
    ));
    // wss:// is supported (the tls feature is on by default): the attempt gets as far as TCP.
    assert!(matches!(
        ClientBuilder::new().connect("wss://127.0.0.1:1/"),
        Err(Error::Io(_))
    ));
    assert!(matches!(
        ClientBuilder::new().connect("not a url"),
        Err(Error::InvalidUrl(_))
    ));
    let (url, handle) = echo_server();
    let bad_header = ClientBuilder::new()
        .header("X-Evil", "a\r\nInjected: 1")
        .connect(&url);
    assert!(
        matches!(bad_header, Err(Error::Handshake(_))),
        "{bad_header:?}"
    );
    drop(bad_header);
    let _ = handle.join();
}

#[test]
fn ipv6_loopback_works() {
    let Ok(listener) = TcpListener::bind("[::1]:0") else {
        return;
    };
    let port = listener.local_addr().unwrap().port();
    let handle = thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut ws = tickwire_blocking::accept(stream).unwrap();
        let (recv, mut sender) = ws.recv_with_sender().unwrap();
        if let Recv::Message(Message::Text(t)) = recv {
            sender.text(t).unwrap();
        }
        ws.flush().unwrap();
    });
    let mut ws = ClientBuilder::new()
        .connect(&format!("ws://[::1]:{port}/v6"))
        .unwrap();
    ws.send_text_now("six").unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("six")));
    handle.join().unwrap();
}
