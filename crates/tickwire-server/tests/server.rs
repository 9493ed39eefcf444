//! The reactor end to end over loopback: what a client and the application see.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::thread;
use std::time::{Duration, Instant};

use support::{Fixture, Seen, client_frame, closed_by_server, raw_upgrade, read_frame, read_head};
use tickwire_blocking::codec::handshake::HandshakeError;
use tickwire_blocking::{ClientBuilder, Error, Message, Recv};
use tickwire_server::{BusyPoll, CloseCode, DisconnectKind, ServerBuilder};

fn one_worker() -> ServerBuilder {
    ServerBuilder::new().workers(1)
}

#[test]
fn echoes_in_order_and_completes_the_close_handshake() {
    let fixture = Fixture::start(ServerBuilder::new().workers(2));
    let mut ws = ClientBuilder::new().connect(&fixture.url("/echo")).unwrap();
    ws.send_text_now("héllo").unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("héllo")));
    ws.send_binary_now(&[0, 1, 2, 255]).unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Binary(&[0, 1, 2, 255]))
    );
    // Larger than the worker's 16 KiB buffers: the frame is reassembled across reads.
    let big: Vec<u8> = (0..1 << 20).map(|i| (i % 251) as u8).collect();
    ws.send_binary_now(&big).unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Binary(&big[..])));
    for i in 0..500 {
        ws.send_text(&format!("m{i}")).unwrap();
    }
    ws.flush().unwrap();
    for i in 0..500 {
        assert_eq!(
            ws.recv().unwrap(),
            Recv::Message(Message::Text(format!("m{i}").as_str()))
        );
    }
    ws.close(CloseCode::NORMAL, "done").unwrap();
    match ws.recv().unwrap() {
        Recv::Closed(Some(frame)) => assert_eq!(frame.code, CloseCode::NORMAL),
        other => panic!("expected the close reply, got {other:?}"),
    }
    assert!(
        matches!(ws.recv().unwrap(), Recv::Closed(Some(frame)) if frame.code == CloseCode::NORMAL),
        "the same end again"
    );
    let (_, disconnect, count) = fixture.next_close();
    assert_eq!(disconnect.kind, DisconnectKind::Closed);
    assert_eq!(disconnect.code, Some(CloseCode::NORMAL));
    assert_eq!(count, 503);
}

#[test]
fn frames_sent_with_the_request_are_answered_after_the_101() {
    let fixture = Fixture::start(one_worker());
    let mut stream = TcpStream::connect(fixture.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut bytes = b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        .to_vec();
    bytes.extend(client_frame(1, b"early"));
    // More than the worker's 16 KiB buffer holds with the head: the rest of it is still in
    // the socket when the request is answered.
    let big = vec![7u8; 40_000];
    bytes.extend(client_frame(2, &big));
    stream.write_all(&bytes).unwrap();
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert_eq!(read_frame(&mut stream), (0x81, b"early".to_vec()));
    assert_eq!(read_frame(&mut stream), (0x82, big));
}

/// Bytes and the FIN in one segment: the event that reports the data already carries the
/// end of stream, so the server must read on past a short read to see it.
fn send_then_fin(stream: &TcpStream, bytes: &[u8]) {
    let socket = socket2::SockRef::from(stream);
    socket.set_tcp_cork(true).unwrap();
    (&*stream).write_all(bytes).unwrap();
    stream.shutdown(std::net::Shutdown::Write).unwrap();
}

#[test]
fn a_fin_that_comes_with_data_is_not_missed() {
    let fixture = Fixture::start(one_worker());
    // Half a frame, then the end: the server closes its side (no CLOSE-WAIT left behind).
    let stream = raw_upgrade(fixture.addr, "/");
    send_then_fin(&stream, &client_frame(2, &[5; 100])[..50]);
    assert!(closed_by_server(stream));
    let (_, disconnect, _) = fixture.next_close();
    assert_eq!(disconnect.kind, DisconnectKind::Reset);
    // A whole message, then the end: it is answered, then the socket closes.
    let mut stream = raw_upgrade(fixture.addr, "/");
    send_then_fin(&stream, &client_frame(1, b"last words"));
    assert_eq!(read_frame(&mut stream), (0x81, b"last words".to_vec()));
    assert!(closed_by_server(stream));
    let (_, disconnect, count) = fixture.next_close();
    assert_eq!((disconnect.kind, count), (DisconnectKind::Reset, 1));
}

#[test]
fn refusals_get_their_status() {
    let fixture = Fixture::start(one_worker());
    // The hook's refusal.
    match ClientBuilder::new().connect(&fixture.url("/reject")) {
        Err(Error::Handshake(HandshakeError::UnexpectedStatus { status, .. })) => {
            assert_eq!(status, 403)
        }
        other => panic!("expected a 403, got {other:?}"),
    }
    // A hook that panics: 500, and the worker goes on.
    match ClientBuilder::new().connect(&fixture.url("/panic")) {
        Err(Error::Handshake(HandshakeError::UnexpectedStatus { status, .. })) => {
            assert_eq!(status, 500)
        }
        other => panic!("expected a 500, got {other:?}"),
    }
    // Malformed requests: the codec's 4xx.
    for (request, status) in [
        ("GET / HTTP/1.1\r\nHost: x\r\n\r\n", "426"),
        (
            "POST / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
            "405",
        ),
        ("GET / HTTP/1.1\nHost: x\n\n", "400"),
    ] {
        let mut stream = TcpStream::connect(fixture.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        stream.write_all(request.as_bytes()).unwrap();
        let head = read_head(&mut stream);
        assert!(
            head.starts_with(&format!("HTTP/1.1 {status} ")),
            "{request:?}: {head}"
        );
        assert!(closed_by_server(stream));
    }
    // A head over the limit, and far more behind it: 431, read before any reset (the server
    // drops the rest of what the client sends until it closes).
    let mut stream = TcpStream::connect(fixture.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let huge = format!(
        "GET / HTTP/1.1\r\nHost: x\r\nX-Fill: {}\r\n\r\n",
        "a".repeat(300_000)
    );
    // All of it sent before anything is read: most of it is still unread when the server
    // answers.
    let _ = stream.write_all(huge.as_bytes());
    assert!(read_head(&mut stream).starts_with("HTTP/1.1 431 "));
    // The refusal's short body, then a clean end of stream.
    let mut body = Vec::new();
    stream
        .read_to_end(&mut body)
        .expect("the body and a FIN, not a reset");
    assert!(!body.is_empty());
    drop(stream);
    let mut ws = ClientBuilder::new().connect(&fixture.url("/")).unwrap();
    ws.send_text_now("still serving").unwrap();
    assert_eq!(
        ws.recv().unwrap(),
        Recv::Message(Message::Text("still serving"))
    );
}

#[test]
fn a_refused_client_that_stays_does_not_disturb_the_next() {
    let fixture = Fixture::start(one_worker());
    // Refused, and still connected: the server lingers on it.
    let mut refused = TcpStream::connect(fixture.addr).unwrap();
    refused
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    refused
        .write_all(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    assert!(read_head(&mut refused).starts_with("HTTP/1.1 426 "));
    // The next connection on the same worker sees none of the refused request's bytes.
    let mut ws = ClientBuilder::new().connect(&fixture.url("/")).unwrap();
    ws.send_text_now("clean").unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("clean")));
    drop(refused);
}

#[test]
fn a_panicking_callback_closes_its_connection_with_1011_only() {
    let fixture = Fixture::start(one_worker());
    let mut calm = ClientBuilder::new().connect(&fixture.url("/")).unwrap();
    let mut doomed = ClientBuilder::new().connect(&fixture.url("/")).unwrap();
    doomed.send_text_now("panic").unwrap();
    match doomed.recv().unwrap() {
        Recv::Closed(Some(frame)) => {
            assert_eq!(frame.code, CloseCode::INTERNAL_ERROR)
        }
        other => panic!("expected a 1011 close, got {other:?}"),
    }
    drop(doomed.finish());
    let (_, disconnect, _) = fixture.next_close();
    assert_eq!(disconnect.kind, DisconnectKind::Panicked);
    assert_eq!(disconnect.code, Some(CloseCode::INTERNAL_ERROR));
    calm.send_text_now("fine").unwrap();
    assert_eq!(calm.recv().unwrap(), Recv::Message(Message::Text("fine")));
}

#[test]
fn protocol_errors_close_with_their_code() {
    let fixture = Fixture::start(one_worker());
    // An unmasked client frame: 1002.
    let mut stream = raw_upgrade(fixture.addr, "/");
    stream.write_all(&[0x81, 0x02, b'h', b'i']).unwrap();
    let (first, payload) = read_frame(&mut stream);
    assert_eq!(first, 0x88);
    assert_eq!(&payload[..2], &1002u16.to_be_bytes());
    assert!(closed_by_server(stream));
    // Invalid UTF-8 in a text message: 1007.
    let mut stream = raw_upgrade(fixture.addr, "/");
    stream.write_all(&client_frame(1, &[0xff, 0xfe])).unwrap();
    let (first, payload) = read_frame(&mut stream);
    assert_eq!(first, 0x88);
    assert_eq!(&payload[..2], &1007u16.to_be_bytes());
    assert!(closed_by_server(stream));
    let mut kinds = Vec::new();
    for _ in 0..2 {
        let (_, disconnect, _) = fixture.next_close();
        kinds.push((disconnect.kind, disconnect.code));
    }
    kinds.sort_by_key(|(_, code)| code.map(u16::from));
    assert_eq!(
        kinds,
        [
            (DisconnectKind::Failed, Some(CloseCode::PROTOCOL_ERROR)),
            (DisconnectKind::Failed, Some(CloseCode::INVALID_PAYLOAD)),
        ]
    );
}

#[test]
fn a_failed_connection_lingers_so_its_close_frame_is_not_reset_away() {
    let fixture = Fixture::start(
        one_worker().limits(tickwire_server::Limits::server().with_max_message_size(1000)),
    );
    let mut stream = raw_upgrade(fixture.addr, "/");
    // Too big, and more bytes behind it that the server will never parse: closing with them
    // unread would reset the connection.
    let mut bytes = client_frame(2, &[1; 2000]);
    bytes.extend(std::iter::repeat_n(0u8, 100_000));
    stream.write_all(&bytes).unwrap();
    let (first, payload) = read_frame(&mut stream);
    assert_eq!(first, 0x88);
    assert_eq!(&payload[..2], &1009u16.to_be_bytes());
    // Then the server's FIN, not a reset.
    let mut rest = [0u8; 64];
    assert_eq!(stream.read(&mut rest).unwrap(), 0, "a clean end of stream");
    drop(stream);
    let (_, disconnect, _) = fixture.next_close();
    assert_eq!(disconnect.kind, DisconnectKind::Failed);
    assert_eq!(disconnect.code, Some(CloseCode::MESSAGE_TOO_BIG));
}

#[test]
fn the_handle_sends_and_closes_from_another_thread() {
    let fixture = Fixture::start(ServerBuilder::new().workers(2));
    let mut ws = ClientBuilder::new().connect(&fixture.url("/")).unwrap();
    let Seen::Open(id) = fixture.next() else {
        panic!("expected the open event first")
    };
    let handle = fixture.handle.clone();
    thread::spawn(move || {
        handle.send_text(id, "pushed").unwrap();
        handle.send_binary(id, &[9; 3]).unwrap();
        handle.close(id, CloseCode::from(4000), "bye").unwrap();
    })
    .join()
    .unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("pushed")));
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Binary(&[9; 3])));
    match ws.recv().unwrap() {
        Recv::Closed(Some(frame)) => {
            assert_eq!(u16::from(frame.code), 4000);
            assert_eq!(frame.reason, "bye");
        }
        other => panic!("expected the close, got {other:?}"),
    }
    ws.finish().unwrap();
    let (closed, disconnect, _) = fixture.next_close();
    assert_eq!(closed.worker(), id.worker());
    assert_eq!(closed, id);
    assert_eq!(disconnect.kind, DisconnectKind::Closed);
    // A handler reaches the handle it was made with.
    let mut ws = ClientBuilder::new().connect(&fixture.url("/")).unwrap();
    ws.send_text_now("via-handle").unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("direct")));
    match ws.recv().unwrap() {
        Recv::Message(Message::Text(text)) => {
            assert!(text.starts_with("from the handle of worker "), "{text}")
        }
        other => panic!("expected the handle's message, got {other:?}"),
    }
    // The id is dead: a send to it reaches nobody (the slot may be reused by a new
    // connection, which must not get it).
    let mut next = ClientBuilder::new().connect(&fixture.url("/")).unwrap();
    fixture.handle.send_text(id, "stale").unwrap();
    next.send_text_now("fresh").unwrap();
    assert_eq!(next.recv().unwrap(), Recv::Message(Message::Text("fresh")));
}

#[test]
fn connections_past_the_cap_get_503() {
    let fixture = Fixture::start(one_worker().max_connections_per_worker(2));
    let _a = ClientBuilder::new().connect(&fixture.url("/")).unwrap();
    let _b = ClientBuilder::new().connect(&fixture.url("/")).unwrap();
    match ClientBuilder::new().connect(&fixture.url("/")) {
        Err(Error::Handshake(HandshakeError::UnexpectedStatus { status, .. })) => {
            assert_eq!(status, 503)
        }
        other => panic!("expected a 503, got {other:?}"),
    }
    assert!(fixture.next_failure().contains("503"));
}

#[test]
fn a_request_in_pieces_is_upgraded() {
    let fixture = Fixture::start(one_worker());
    let mut stream = TcpStream::connect(fixture.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    stream.set_nodelay(true).unwrap();
    let mut request = b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
        Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        .to_vec();
    request.extend(client_frame(1, b"after pieces"));
    // Cuts inside the request line, inside a field, between CR and LF of the blank line.
    let cuts = [5, 30, request.len() - 25, request.len() - 23];
    let mut from = 0;
    for cut in cuts.into_iter().chain([request.len()]) {
        stream.write_all(&request[from..cut]).unwrap();
        from = cut;
        thread::sleep(Duration::from_millis(20));
    }
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    assert_eq!(read_frame(&mut stream), (0x81, b"after pieces".to_vec()));
}

#[test]
fn a_trickled_request_is_dropped_at_the_handshake_timeout() {
    let fixture = Fixture::start(one_worker().handshake_timeout(Duration::from_millis(300)));
    let mut stream = TcpStream::connect(fixture.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let started = Instant::now();
    let request = b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n";
    let mut sent = 0;
    // A byte every 50 ms: never complete within 300 ms.
    while started.elapsed() < Duration::from_millis(600) && sent < request.len() {
        if stream.write_all(&request[sent..=sent]).is_err() {
            break;
        }
        sent += 1;
        thread::sleep(Duration::from_millis(50));
    }
    assert!(closed_by_server(stream));
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(300), "{waited:?}");
    assert!(waited < Duration::from_secs(2), "{waited:?}");
    assert_eq!(fixture.next_failure(), "handshake timed out");
}

/// A client that never answers: the keepalive ping, then (no pong) the close with 1001 and
/// the end of the stream.
fn ping_then_close_1001(mut stream: TcpStream) {
    let (first, _) = read_frame(&mut stream);
    assert_eq!(first, 0x89, "a keepalive ping");
    let (first, payload) = read_frame(&mut stream);
    assert_eq!(first, 0x88);
    assert_eq!(&payload[..2], &1001u16.to_be_bytes());
    assert!(closed_by_server(stream));
}

#[test]
fn a_silent_peer_fails_the_pong_deadline_with_1001() {
    let fixture = Fixture::start(
        one_worker().keepalive(Some(Duration::from_millis(100)), Duration::from_millis(200)),
    );
    ping_then_close_1001(raw_upgrade(fixture.addr, "/"));
    let (_, disconnect, _) = fixture.next_close();
    assert_eq!(disconnect.kind, DisconnectKind::Failed);
    assert_eq!(disconnect.code, Some(CloseCode::GOING_AWAY));
    // A client that answers pings stays (the blocking client pongs from recv).
    let mut ws = ClientBuilder::new()
        .read_timeout(Some(Duration::from_millis(150)))
        .connect(&fixture.url("/"))
        .unwrap();
    let started = Instant::now();
    let mut pings = 0;
    while started.elapsed() < Duration::from_millis(800) {
        match ws.recv().unwrap() {
            Recv::Message(Message::Ping(_)) => pings += 1,
            Recv::Timeout => {}
            other => panic!("expected pings, got {other:?}"),
        }
    }
    assert!(pings >= 3, "{pings} pings in 800 ms at a 100 ms interval");
    ws.send_text_now("alive").unwrap();
    loop {
        match ws.recv().unwrap() {
            Recv::Message(Message::Ping(_)) | Recv::Timeout => {}
            other => {
                assert_eq!(other, Recv::Message(Message::Text("alive")));
                break;
            }
        }
    }
}

#[test]
fn a_client_that_stops_reading_is_paused_not_buffered_without_bound() {
    let limit = 256 << 10;
    let fixture = Fixture::start(one_worker().backpressure_limit(limit));
    let mut stream = raw_upgrade(fixture.addr, "/");
    // 32 MiB of 64 KiB messages, written while nothing is read: the server must stop
    // reading once its queue passes the limit, so the writer blocks (TCP backpressure)
    // instead of the server buffering the echoes.
    let message: Vec<u8> = (0..64 << 10).map(|i| (i % 253) as u8).collect();
    let frame = client_frame(2, &message);
    let total = 512;
    let writer = {
        let mut stream = stream.try_clone().unwrap();
        thread::spawn(move || {
            for _ in 0..total {
                stream.write_all(&frame).unwrap();
            }
        })
    };
    thread::sleep(Duration::from_millis(500));
    assert!(
        !writer.is_finished(),
        "the server read everything without backpressure"
    );
    let queued = fixture.max_queued.load(Ordering::Relaxed);
    assert!(queued <= limit + (64 << 10) + 14, "queued {queued} bytes");
    // Now read: every echo arrives, whole and in order.
    for _ in 0..total {
        let (first, payload) = read_frame(&mut stream);
        assert_eq!(first, 0x82);
        assert!(payload == message);
    }
    writer.join().unwrap();
    let queued = fixture.max_queued.load(Ordering::Relaxed);
    assert!(queued <= limit + (64 << 10) + 14, "queued {queued} bytes");
}

#[test]
fn shutdown_closes_every_connection_with_1001() {
    let mut fixture = Fixture::start(ServerBuilder::new().workers(2));
    let mut clients: Vec<_> = (0..4)
        .map(|_| ClientBuilder::new().connect(&fixture.url("/")).unwrap())
        .collect();
    for ws in &mut clients {
        ws.send_text_now("x").unwrap();
        assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("x")));
    }
    let handle = fixture.handle.clone();
    let stopper = thread::spawn(move || handle.shutdown(Duration::from_secs(5)));
    for ws in &mut clients {
        match ws.recv().unwrap() {
            Recv::Closed(Some(frame)) => {
                assert_eq!(frame.code, CloseCode::GOING_AWAY)
            }
            other => panic!("expected 1001, got {other:?}"),
        }
        ws.finish().unwrap();
    }
    stopper.join().unwrap();
    let started = Instant::now();
    fixture.stop();
    assert!(started.elapsed() < Duration::from_secs(4));
    for _ in 0..4 {
        let (_, disconnect, count) = fixture.next_close();
        assert_eq!(disconnect.kind, DisconnectKind::Closed);
        assert_eq!(disconnect.code, Some(CloseCode::GOING_AWAY));
        assert_eq!(count, 1);
    }
    assert!(
        TcpStream::connect(fixture.addr).is_err() || {
            // A listener may linger in the kernel for a moment: it must not answer.
            let mut s = TcpStream::connect(fixture.addr).unwrap();
            s.set_read_timeout(Some(Duration::from_millis(300)))
                .unwrap();
            let mut b = [0];
            !matches!(s.read(&mut b), Ok(1))
        }
    );
}

#[test]
fn a_busy_polling_worker_still_echoes_and_runs_its_timers() {
    // A window longer than the test: after the first event the worker never sleeps again.
    let fixture = Fixture::start(
        one_worker()
            .busy_poll(BusyPoll::Fixed(Duration::from_secs(3600)))
            .keepalive(Some(Duration::from_millis(100)), Duration::from_millis(200)),
    );
    let mut ws = ClientBuilder::new().connect(&fixture.url("/")).unwrap();
    for i in 0..100 {
        ws.send_text_now(&format!("m{i}")).unwrap();
        loop {
            match ws.recv().unwrap() {
                Recv::Message(Message::Ping(_)) => {}
                other => {
                    assert_eq!(
                        other,
                        Recv::Message(Message::Text(format!("m{i}").as_str()))
                    );
                    break;
                }
            }
        }
    }
    // The timers fire while the worker spins: a ping, then the pong deadline's 1001.
    ping_then_close_1001(raw_upgrade(fixture.addr, "/"));
}
