//! The async HTTP client when connections fail, on both runtimes: a stale keep-alive
//! connection (an idempotent request is resent on a new one, a POST is not), a trickling
//! server held to the request's deadline, a read timeout, a refused connection, malformed
//! responses; after each, the next request works.

use crate::http_async::{client, joined, on_both_runtimes};
use crate::http_support::*;

use std::time::{Duration, Instant};

use tickwire_blocking::codec::http::HttpError;
use tickwire_tokio::HttpClientError;

/// Long enough for a FIN sent by the server to reach the client.
const SETTLE: Duration = Duration::from_millis(100);

#[test]
fn a_get_on_a_connection_the_server_closed_is_resent_a_post_is_not() {
    on_both_runtimes(|| async {
        let server = server(|mut listener| {
            // Each of the first two connections answers one request, then the server closes
            // it while the client keeps it idle.
            let mut first = listener.accept();
            first.serve_one();
            drop(first);
            let mut second = listener.accept();
            let resent = second.serve_one();
            drop(second);
            // The replacement for the connection the POST was lost on, opened in the
            // background, carries the last GET.
            let last = listener.accept().serve_until_close(|_| ok(b"after"));
            (resent, last, listener.connections())
        });
        // Never probed: the requests are written into the closed connections, as when the
        // server's idle timeout races the request.
        let mut client = client(server.port())
            .probe_idle_after(Duration::from_secs(3600))
            .max_connections(1)
            .build()
            .unwrap();
        assert_eq!(client.get("/one").send().await.unwrap().body(), b"/one");
        tokio::time::sleep(SETTLE).await;
        assert_eq!(client.get("/two").send().await.unwrap().body(), b"/two");
        tokio::time::sleep(SETTLE).await;
        let error = the_error(client.post("/order").send_body(b"qty=1").await);
        assert!(
            matches!(error, HttpClientError::NoResponse | HttpClientError::Io(_)),
            "{error}"
        );
        assert_eq!(client.get("/three").send().await.unwrap().body(), b"after");
        assert_eq!(client.connections_opened(), 3);
        drop(client);
        let (resent, last, connections) = joined(server).await;
        assert_eq!(resent.target(), "/two");
        let targets: Vec<&str> = last.iter().map(Received::target).collect();
        // The POST never reached a server that could read it, and was not sent again.
        assert_eq!(targets, ["/three"]);
        assert_eq!(connections, 3);
    });
}

#[test]
fn a_post_marked_idempotent_is_resent_on_a_connection_the_server_closed() {
    on_both_runtimes(|| async {
        let server = server(|mut listener| {
            let mut first = listener.accept();
            first.serve_one();
            drop(first);
            // The marked POST, written into the closed connection, comes again here.
            let requests = listener.accept().serve_until_close(|_| ok(b"placed"));
            (requests, listener.connections())
        });
        let mut client = client(server.port())
            .probe_idle_after(Duration::from_secs(3600))
            .max_connections(1)
            .build()
            .unwrap();
        assert_eq!(client.get("/one").send().await.unwrap().body(), b"/one");
        tokio::time::sleep(SETTLE).await;
        let response = client
            .post("/order")
            .idempotent()
            .send_body(br#"{"newClientOrderId":"x-1"}"#)
            .await
            .unwrap();
        assert_eq!(response.body(), b"placed");
        drop(response);
        drop(client);
        let (requests, connections) = joined(server).await;
        let targets: Vec<&str> = requests.iter().map(Received::target).collect();
        assert_eq!(targets, ["/order"]);
        assert_eq!(connections, 2);
    });
}

#[test]
fn a_connection_closed_while_idle_is_found_by_the_probe_before_a_post() {
    on_both_runtimes(|| async {
        let server = server(|mut listener| {
            let mut first = listener.accept();
            first.serve_one();
            drop(first);
            let requests = listener.accept().serve_until_close(|_| ok(b"fresh"));
            (requests.len(), listener.connections())
        });
        let mut client = client(server.port())
            .probe_idle_after(Duration::ZERO)
            .max_connections(1)
            .build()
            .unwrap();
        client.get("/one").send().await.unwrap();
        tokio::time::sleep(SETTLE).await;
        // The probe finds the close: the POST goes on a new connection, once.
        let response = client.post("/order").send_body(b"qty=1").await.unwrap();
        assert_eq!(response.body(), b"fresh");
        drop(response);
        drop(client);
        let counts = joined(server).await;
        assert_eq!(counts, (1, 2));
    });
}

#[test]
fn a_trickling_server_cannot_hold_a_request_past_its_deadline() {
    on_both_runtimes(|| async {
        let deadline = Duration::from_millis(300);
        let server = server(|mut listener| {
            let mut trickling = listener.accept();
            trickling.read_request().unwrap();
            let sent = trickling.trickle(&endless_response(), Duration::from_millis(20));
            let requests = listener.accept().serve_until_close(|_| ok(b"on time"));
            (sent, requests.len(), listener.connections())
        });
        let mut client = client(server.port())
            .request_deadline(Some(deadline))
            .max_connections(1)
            .build()
            .unwrap();
        let started = Instant::now();
        let error = the_error(client.get("/slow").send().await);
        let waited = started.elapsed();
        assert!(
            matches!(error, HttpClientError::DeadlineExceeded { deadline: d } if d == deadline),
            "{error}"
        );
        assert!(waited >= deadline, "failed early, after {waited:?}");
        assert!(waited < deadline * 5, "held for {waited:?}");
        assert_eq!(client.get("/next").send().await.unwrap().body(), b"on time");
        assert_eq!(client.connections_opened(), 2);
        drop(client);
        let (sent, requests, connections) = joined(server).await;
        // Bytes kept coming all along: the read timeout alone would never have fired.
        assert!(sent > 5, "only {sent} bytes trickled");
        assert_eq!((requests, connections), (1, 2));
    });
}

#[test]
fn a_read_timeout_fails_the_request_and_the_connection_is_not_reused() {
    on_both_runtimes(|| async {
        let server = server(|mut listener| {
            let mut silent = listener.accept();
            silent.read_request().unwrap();
            let requests = listener
                .accept()
                .serve_until_close(|_| ok(b"late but fine"));
            drop(silent);
            (requests.len(), listener.connections())
        });
        let mut client = client(server.port())
            .read_timeout(Some(Duration::from_millis(200)))
            .max_connections(1)
            .build()
            .unwrap();
        let error = the_error(client.get("/never").send().await);
        assert!(error.is_timeout(), "{error}");
        assert!(!matches!(error, HttpClientError::DeadlineExceeded { .. }));
        let response = client.get("/again").send().await.unwrap();
        assert_eq!(response.body(), b"late but fine");
        drop(response);
        drop(client);
        let counts = joined(server).await;
        assert_eq!(counts, (1, 2));
    });
}

#[test]
fn malformed_responses_are_typed_errors_and_the_next_request_gets_a_new_connection() {
    on_both_runtimes(|| async {
        let server = server(|mut listener| {
            let mut bad = listener.accept();
            bad.read_request().unwrap();
            bad.send(b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabcd");
            let mut cut = listener.accept();
            cut.read_request().unwrap();
            cut.send(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
            drop(cut);
            let requests = listener.accept().serve_until_close(|_| ok(b"fine"));
            drop(bad);
            (requests.len(), listener.connections())
        });
        let mut client = client(server.port()).max_connections(1).build().unwrap();
        let error = the_error(client.get("/conflict").send().await);
        assert!(
            matches!(
                error,
                HttpClientError::Http(HttpError::ConflictingContentLength)
            ),
            "{error}"
        );
        let error = the_error(client.get("/cut").send().await);
        assert!(
            matches!(error, HttpClientError::Http(HttpError::IncompleteBody)),
            "{error}"
        );
        assert_eq!(client.get("/fine").send().await.unwrap().body(), b"fine");
        drop(client);
        let counts = joined(server).await;
        assert_eq!(counts, (1, 3));
    });
}

#[test]
fn a_refused_connection_and_an_unwritable_request_are_typed_errors() {
    on_both_runtimes(|| async {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let mut client = client(port).build().unwrap();
        let error = the_error(client.get("/").send().await);
        assert!(matches!(error, HttpClientError::Io(_)), "{error}");
        let error = the_error(client.get("/").header("X-Bad", "a\r\nb").send().await);
        assert!(matches!(error, HttpClientError::Write(_)), "{error}");
        assert_eq!(client.connections_opened(), 0);
    });
}
