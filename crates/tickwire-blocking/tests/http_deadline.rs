//! The blocking HTTP client's total deadline per request: a server that keeps a request alive
//! by trickling bytes (each one restarting the read timeout) cannot hold it past the deadline.

#[allow(
    dead_code,
    reason = "the deadline tests use part of the shared helpers"
)]
mod http_support;
use http_support::*;

use std::time::{Duration, Instant};

use tickwire_blocking::HttpClientError;

/// One byte every 20 ms: never long enough for the read timeout, forever for the request.
const GAP: Duration = Duration::from_millis(20);

#[test]
fn a_trickling_server_cannot_hold_a_request_past_its_deadline() {
    let deadline = Duration::from_millis(300);
    let server = server(|mut listener| {
        let mut trickling = listener.accept();
        trickling.read_request().unwrap();
        let sent = trickling.trickle(&endless_response(), GAP);
        let mut answering = listener.accept();
        answering.serve_until_close(|_| ok(b"on time"));
        (sent, listener.connections())
    });
    let mut client = client(server.port())
        .request_deadline(Some(deadline))
        .build()
        .unwrap();
    let started = Instant::now();
    let error = the_error(client.get("/slow").send());
    let waited = started.elapsed();
    assert!(
        matches!(error, HttpClientError::DeadlineExceeded { deadline: d } if d == deadline),
        "{error}"
    );
    assert!(error.is_timeout());
    assert!(waited >= deadline, "failed early, after {waited:?}");
    assert!(waited < deadline * 5, "held for {waited:?}");
    assert!(!client.is_connected(), "the connection is never reused");
    assert_eq!(client.get("/next").send().unwrap().body(), b"on time");
    assert_eq!(client.connections_opened(), 2);
    drop(client);
    let (sent, connections) = server.join();
    // Bytes kept coming all along: the read timeout alone would never have fired.
    assert!(sent > 5, "only {sent} bytes trickled");
    assert_eq!(connections, 2);
}

#[test]
fn a_trickled_head_is_held_to_the_deadline_too() {
    let deadline = Duration::from_millis(250);
    let server = server(|mut listener| {
        let mut trickling = listener.accept();
        trickling.read_request().unwrap();
        let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
        head.extend((0..10_000).flat_map(|i| format!("X-Pad-{i}: y\r\n").into_bytes()));
        trickling.trickle(&head, GAP);
        listener.connections()
    });
    let mut client = client(server.port())
        .request_deadline(Some(deadline))
        .build()
        .unwrap();
    let started = Instant::now();
    let error = the_error(client.get("/slow-head").send());
    assert!(
        matches!(error, HttpClientError::DeadlineExceeded { .. }),
        "{error}"
    );
    assert!(started.elapsed() < deadline * 5, "{:?}", started.elapsed());
    drop(client);
    assert_eq!(server.join(), 1);
}

#[test]
fn without_a_deadline_only_the_read_timeout_applies_and_a_slow_answer_completes() {
    let server = server(|mut listener| {
        let mut conn = listener.accept();
        conn.read_request().unwrap();
        // 15 bytes at 20 ms: 300 ms in all, longer than the deadline of the other tests.
        conn.trickle(&ok(b"slow"), GAP);
        conn.expect_close();
    });
    let mut client = client(server.port())
        .request_deadline(None)
        .read_timeout(Some(Duration::from_millis(500)))
        .build()
        .unwrap();
    assert_eq!(client.get("/slow").send().unwrap().body(), b"slow");
    drop(client);
    server.join();
}

#[test]
fn the_deadline_is_per_request_and_a_connection_that_met_it_is_reused() {
    let server = server(|mut listener| {
        let requests = listener.accept().serve_until_close(|_| ok(b"quick"));
        (requests.len(), listener.connections())
    });
    let mut client = client(server.port())
        .request_deadline(Some(Duration::from_millis(200)))
        .build()
        .unwrap();
    for _ in 0..3 {
        assert_eq!(client.get("/quick").send().unwrap().body(), b"quick");
        // Longer than the deadline between requests: each request has its own.
        std::thread::sleep(Duration::from_millis(250));
    }
    drop(client);
    assert_eq!(server.join(), (3, 1));
}
