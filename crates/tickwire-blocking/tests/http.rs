//! The blocking HTTP client against scripted loopback servers: what a user of `HttpClient`
//! notices (the bytes that reach the server, the response handed back, the typed error, how
//! many connections were opened) for keep-alive, connection loss, framing, timeouts,
//! malformed responses and https (gzip bodies: `http_gzip.rs`).

#[allow(dead_code, reason = "gzip helpers serve http_gzip.rs")]
mod http_support;
use http_support::*;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use tickwire_blocking::codec::http::{HttpError, Limits, WriteError};
use tickwire_blocking::{HttpClient, HttpClientError};

#[test]
fn fifty_gets_with_varied_bodies_share_one_connection() {
    // Sizes from empty to past the 16 KiB initial read buffer, Content-Length and chunked.
    let size = |i: usize| (i * i * 13) % 40_000;
    let server = server(move |mut listener| {
        let mut conn = listener.accept();
        let mut i = 0;
        let requests = conn.serve_until_close(|_| {
            let body = varied_body(i, size(i));
            i += 1;
            if i % 2 == 0 {
                chunked(&body, 1000)
            } else {
                ok(&body)
            }
        });
        (requests.len(), listener.connections())
    });
    let mut client = client(server.port()).build().unwrap();
    for i in 0..50 {
        let response = client.get("/item").query_display("n", i).send().unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert!(response.body() == varied_body(i, size(i)), "body {i}");
        assert!(response.keep_alive());
    }
    assert_eq!(client.connections_opened(), 1);
    drop(client);
    assert_eq!(server.join(), (50, 1));
}

#[test]
fn request_bytes_on_the_wire() {
    let server = server(|mut listener| listener.accept().serve_until_close(|_| ok(b"")));
    let port = server.port();
    let mut client = HttpClient::builder(&format!("http://127.0.0.1:{port}/api/v3/"))
        .read_timeout(Some(PATIENCE))
        .default_header("X-Api-Key", "k1")
        .build()
        .unwrap();
    client
        .get("/ticker")
        .query("symbol", "BTC USD&x=1/é+%?#")
        .query_display("depth", 20)
        .header("X-Request-Id", "7")
        .send()
        .unwrap();
    client
        .post("orders")
        .header("Content-Type", "application/json")
        .send_body(br#"{"qty":"0.5"}"#)
        .unwrap();
    client
        .put("orders/9")
        .send_body_with(|w| {
            use std::fmt::Write;
            write!(w, "price={}", 101.25)
        })
        .unwrap();
    client.delete("orders/9").send().unwrap();
    drop(client);
    let requests = server.join();
    let agent = concat!("User-Agent: tickwire/", env!("CARGO_PKG_VERSION"));
    let fixed = format!("Host: 127.0.0.1:{port}\r\n{agent}\r\nX-Api-Key: k1\r\n");
    let expected = [
        format!(
            "GET /api/v3/ticker?symbol=BTC%20USD%26x%3D1%2F%C3%A9%2B%25%3F%23&depth=20 \
             HTTP/1.1\r\n{fixed}X-Request-Id: 7\r\n\r\n"
        ),
        format!(
            "POST /api/v3/orders HTTP/1.1\r\n{fixed}Content-Type: application/json\r\n\
             Content-Length: 13\r\n\r\n{{\"qty\":\"0.5\"}}"
        ),
        format!("PUT /api/v3/orders/9 HTTP/1.1\r\n{fixed}Content-Length: 12\r\n\r\nprice=101.25"),
        format!("DELETE /api/v3/orders/9 HTTP/1.1\r\n{fixed}\r\n"),
    ];
    let received: Vec<String> = requests
        .iter()
        .map(|r| String::from_utf8(r.raw.clone()).unwrap())
        .collect();
    assert_eq!(received, expected);
}

#[test]
fn a_connection_the_server_closed_while_idle_is_replaced_for_get_and_post() {
    let (closed_tx, closed) = mpsc::channel();
    let server = server(move |mut listener| {
        let mut methods = Vec::new();
        for _ in 0..3 {
            let mut conn = listener.accept();
            let request = conn.read_request().unwrap();
            conn.send(&ok(request.target().as_bytes()));
            methods.push(request.method().to_owned());
            // Close while the client is idle, and let the test go on once it is closed.
            drop(conn);
            closed_tx.send(()).unwrap();
        }
        methods
    });
    // A connection idle for at least the probe interval is checked before reuse; the sleeps
    // below make sure both are (back-to-back requests skip the check).
    let idle = Duration::from_millis(20);
    let mut client = client(server.port())
        .probe_idle_after(idle)
        .build()
        .unwrap();
    assert_eq!(client.get("/first").send().unwrap().body(), b"/first");
    closed.recv_timeout(PATIENCE).unwrap();
    std::thread::sleep(2 * idle);
    assert_eq!(client.get("/second").send().unwrap().body(), b"/second");
    assert_eq!(client.connections_opened(), 2);
    closed.recv_timeout(PATIENCE).unwrap();
    std::thread::sleep(2 * idle);
    let response = client.post("/third").send_body(b"order").unwrap();
    assert_eq!(response.body(), b"/third");
    assert_eq!(client.connections_opened(), 3);
    assert_eq!(server.join(), ["GET", "GET", "POST"]);
}

#[test]
fn a_server_that_answers_before_reading_the_body_gets_its_answer_to_the_caller() {
    // The server reads the head, answers 413 and closes without reading the 8 MiB body: the
    // client's write fails (reset or broken pipe), and the 413 it already received is what
    // the caller must see, not the write error.
    let server = server(move |mut listener| {
        let mut conn = listener.accept_tcp();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            std::io::Read::read_exact(&mut conn, &mut byte).unwrap();
            head.push(byte[0]);
        }
        std::io::Write::write_all(
            &mut conn,
            b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 9\r\nConnection: close\r\n\r\ntoo large",
        )
        .unwrap();
        drop(conn);
        String::from_utf8(head).unwrap()
    });
    let mut client = client(server.port()).build().unwrap();
    let body = vec![b'x'; 8 << 20];
    let response = client.post("/upload").send_body(&body).unwrap();
    assert_eq!(response.status().as_u16(), 413);
    assert_eq!(response.body(), b"too large");
    assert!(!response.keep_alive());
    let head = server.join();
    assert!(head.starts_with("POST /upload HTTP/1.1\r\n"), "{head}");
}

#[test]
fn a_get_that_races_the_servers_close_is_retried_a_post_is_not() {
    let (done_tx, done) = mpsc::channel::<()>();
    let server = server(move |mut listener| {
        let mut first = listener.accept();
        first.read_request().unwrap();
        first.send(&ok(b"one"));
        // Read the second request whole, then close without answering.
        let raced = first.read_request().unwrap();
        drop(first);
        let mut second = listener.accept();
        let retried = second.read_request().unwrap();
        second.send(&ok(b"two"));
        let post = second.read_request().unwrap();
        drop(second);
        // Once the client has its answer, a retry of the POST would have connected.
        done.recv_timeout(PATIENCE).unwrap();
        let mut seen = vec![raced, retried, post];
        if listener.connections() > 2 {
            seen.extend(listener.accept().read_request());
        }
        (seen, listener.connections())
    });
    let mut client = client(server.port())
        .read_timeout(Some(Duration::from_secs(2)))
        .build()
        .unwrap();
    assert_eq!(client.get("/one").send().unwrap().body(), b"one");
    assert_eq!(client.get("/two").send().unwrap().body(), b"two");
    assert_eq!(client.connections_opened(), 2);
    let error = the_error(client.post("/order").send_body(b"buy 1"));
    done_tx.send(()).unwrap();
    assert!(matches!(error, HttpClientError::NoResponse), "{error}");
    assert_eq!(client.connections_opened(), 2);
    drop(client);
    let (seen, connections) = server.join();
    let targets: Vec<&str> = seen.iter().map(|r| r.target()).collect();
    assert_eq!(targets, ["/two", "/two", "/order"]);
    assert_eq!(seen[2].body(), b"buy 1");
    assert_eq!(connections, 2);
}

/// Answers the first request on one connection with `first` and keeps that connection open,
/// then answers the second request, which must come on a new connection.
fn second_request_on_a_new_connection(first: &'static [u8]) {
    let server = server(move |mut listener| {
        let mut kept = listener.accept();
        kept.read_request().unwrap();
        kept.send(first);
        let mut fresh = listener.accept();
        fresh.read_request().unwrap();
        fresh.send(&ok(b"fresh"));
        fresh.expect_close();
        listener.connections()
    });
    let mut client = client(server.port()).build().unwrap();
    let response = client.get("/a").send().unwrap();
    assert_eq!(response.body(), b"last");
    assert!(!response.keep_alive());
    assert_eq!(client.get("/b").send().unwrap().body(), b"fresh");
    assert_eq!(client.connections_opened(), 2);
    drop(client);
    assert_eq!(server.join(), 2);
}

#[test]
fn connection_close_in_a_response_makes_the_next_request_open_a_new_connection() {
    second_request_on_a_new_connection(
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 4\r\n\r\nlast",
    );
}

#[test]
fn an_http10_response_without_keep_alive_makes_the_next_request_open_a_new_connection() {
    second_request_on_a_new_connection(b"HTTP/1.0 200 OK\r\nContent-Length: 4\r\n\r\nlast");
}

#[test]
fn an_http10_response_with_keep_alive_keeps_the_connection() {
    let server = server(|mut listener| {
        listener.accept().serve_until_close(|_| {
            b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok".to_vec()
        });
        listener.connections()
    });
    let mut client = client(server.port()).build().unwrap();
    for _ in 0..3 {
        assert_eq!(client.get("/").send().unwrap().body(), b"ok");
    }
    assert_eq!(client.connections_opened(), 1);
    drop(client);
    assert_eq!(server.join(), 1);
}

#[test]
fn a_body_delimited_by_close_is_returned_whole() {
    let body = varied_body(3, 50_000);
    let expected = body.clone();
    let server = server(move |mut listener| {
        let mut conn = listener.accept();
        conn.read_request().unwrap();
        conn.send(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n");
        for piece in body.chunks(7_000) {
            conn.send(piece);
        }
        drop(conn);
        listener.accept().serve_until_close(|_| ok(b"next"));
    });
    let mut client = client(server.port()).build().unwrap();
    let response = client.get("/until-close").send().unwrap();
    assert!(
        response.body() == expected,
        "{} bytes",
        response.body().len()
    );
    assert!(!response.keep_alive());
    assert_eq!(client.get("/next").send().unwrap().body(), b"next");
    assert_eq!(client.connections_opened(), 2);
    drop(client);
    server.join();
}

#[test]
fn a_chunked_body_with_extensions_and_trailers_is_decoded() {
    let server = server(|mut listener| {
        listener.accept().serve_until_close(|_| {
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Checksum\r\n\r\n\
              5;name=value\r\nhello\r\n\
              7;a;b=\"quoted; string\"\r\n, world\r\n\
              000;last\r\nX-Checksum: abc123\r\nX-Count:  2 \r\n\r\n"
                .to_vec()
        });
    });
    let mut client = client(server.port()).build().unwrap();
    for _ in 0..2 {
        let response = client.get("/chunked").send().unwrap();
        assert_eq!(response.text(), Some("hello, world"));
        assert!(response.raw().is_chunked());
        let trailers = response.trailers();
        assert_eq!(trailers.get_str("x-checksum"), Some("abc123"));
        assert_eq!(trailers.get_str("X-COUNT"), Some("2"));
        assert_eq!(trailers.len(), 2);
    }
    assert_eq!(client.connections_opened(), 1);
    drop(client);
    server.join();
}

#[test]
fn a_chunked_body_written_byte_by_byte_is_decoded() {
    let body = varied_body(11, 900);
    let expected = body.clone();
    let server = server(move |mut listener| {
        let mut conn = listener.accept();
        let mut trailer = chunked(&body, 300);
        trailer.truncate(trailer.len() - 2);
        trailer.extend_from_slice(b"X-Done: yes\r\n\r\n");
        while conn.read_request().is_some() {
            conn.send_bytewise(&trailer);
        }
    });
    let mut client = client(server.port()).build().unwrap();
    for _ in 0..2 {
        let response = client.get("/slow").send().unwrap();
        assert!(response.body() == expected);
        assert_eq!(response.trailers().get_str("x-done"), Some("yes"));
    }
    assert_eq!(client.connections_opened(), 1);
    drop(client);
    server.join();
}

#[test]
fn head_204_and_304_have_no_body_and_keep_the_connection() {
    let server = server(|mut listener| {
        let requests = listener.accept().serve_until_close(|request| {
            match (request.method(), request.target()) {
                ("HEAD", _) => b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n".to_vec(),
                (_, "/204") => b"HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n".to_vec(),
                (_, "/304") => {
                    b"HTTP/1.1 304 Not Modified\r\nContent-Length: 1234\r\nETag: \"v1\"\r\n\r\n"
                        .to_vec()
                }
                _ => ok(b"after"),
            }
        });
        (requests.len(), listener.connections())
    });
    let mut client = client(server.port()).build().unwrap();
    let response = client.head("/resource").send().unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.header("content-length"), Some("1234"));
    assert_eq!(response.body(), b"");
    assert_eq!(client.get("/next").send().unwrap().body(), b"after");
    assert_eq!(client.delete("/204").send().unwrap().body(), b"");
    assert_eq!(client.get("/next").send().unwrap().body(), b"after");
    let response = client.get("/304").send().unwrap();
    assert_eq!(response.status().as_u16(), 304);
    assert_eq!(response.body(), b"");
    assert_eq!(client.get("/next").send().unwrap().body(), b"after");
    assert_eq!(client.connections_opened(), 1);
    drop(client);
    assert_eq!(server.join(), (6, 1));
}

#[test]
fn informational_responses_are_skipped_for_the_final_one() {
    let server = server(|mut listener| {
        let mut conn = listener.accept();
        conn.read_request().unwrap();
        conn.send(b"HTTP/1.1 100 Continue\r\n\r\n");
        conn.send(&ok(b"done"));
        conn.read_request().unwrap();
        let mut both =
            b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n".to_vec();
        both.extend_from_slice(&ok(b"again"));
        conn.send(&both);
        conn.expect_close();
    });
    let mut client = client(server.port()).build().unwrap();
    let response = client.post("/upload").send_body(b"data").unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.body(), b"done");
    let response = client.get("/hinted").send().unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.header("link"), None);
    assert_eq!(response.body(), b"again");
    assert_eq!(client.connections_opened(), 1);
    drop(client);
    server.join();
}

#[test]
fn redirects_are_reported_not_followed() {
    let server = server(|mut listener| {
        let requests = listener.accept().serve_until_close(|request| match request.target() {
            "/old" => response(
                "HTTP/1.1 301 Moved Permanently\r\nLocation: /new\r\nContent-Length: 5\r\n",
                b"moved",
            ),
            _ => response(
                "HTTP/1.1 302 Found\r\nLocation: https://elsewhere.example/x\r\nContent-Length: 0\r\n",
                b"",
            ),
        });
        requests
            .iter()
            .map(|r| r.target().to_owned())
            .collect::<Vec<_>>()
    });
    let mut client = client(server.port()).build().unwrap();
    let response = client.get("/old").send().unwrap();
    assert_eq!(response.status().as_u16(), 301);
    assert!(response.is_redirect());
    assert_eq!(response.location(), Some("/new"));
    assert_eq!(response.body(), b"moved");
    let response = client.get("/temporary").send().unwrap();
    assert_eq!(response.status().as_u16(), 302);
    assert!(response.is_redirect());
    assert_eq!(response.location(), Some("https://elsewhere.example/x"));
    drop(client);
    assert_eq!(server.join(), ["/old", "/temporary"]);
}

#[test]
fn a_read_timeout_fails_the_request_and_the_next_one_opens_a_new_connection() {
    let server = server(|mut listener| {
        let mut silent = listener.accept();
        silent.read_request().unwrap();
        let mut answering = listener.accept();
        answering.serve_until_close(|_| ok(b"late but fine"));
        drop(silent);
        listener.connections()
    });
    let mut client = client(server.port())
        .read_timeout(Some(Duration::from_millis(200)))
        .build()
        .unwrap();
    let started = Instant::now();
    let error = the_error(client.get("/never").send());
    assert!(error.is_timeout(), "{error}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(150) && waited < Duration::from_secs(2),
        "{waited:?}"
    );
    assert!(!client.is_connected());
    assert_eq!(
        client.get("/again").send().unwrap().body(),
        b"late but fine"
    );
    assert_eq!(client.connections_opened(), 2);
    drop(client);
    assert_eq!(server.join(), 2);
}

/// Answers the first request with `bytes` (then closes when `close`, else keeps the
/// connection open), and the second request, which must arrive on a new connection, with
/// `ok("fine")`. Returns the first request's error.
fn malformed_then_fresh(bytes: Vec<u8>, close: bool, limits: Limits) -> HttpError {
    let server = server(move |mut listener| {
        let mut first = listener.accept();
        first.read_request().unwrap();
        first.send(&bytes);
        let kept = (!close).then_some(first);
        let mut fresh = listener.accept();
        fresh.serve_until_close(|_| ok(b"fine"));
        drop(kept);
        listener.connections()
    });
    let mut client = client(server.port()).limits(limits).build().unwrap();
    let error = the_error(client.get("/bad").send());
    assert_eq!(client.get("/good").send().unwrap().body(), b"fine");
    assert_eq!(client.connections_opened(), 2);
    drop(client);
    assert_eq!(server.join(), 2);
    match error {
        HttpClientError::Http(e) => e,
        other => panic!("expected HttpClientError::Http, got {other}"),
    }
}

#[test]
fn malformed_responses_are_typed_errors_and_the_connection_is_replaced() {
    let small = Limits::client()
        .with_max_head_bytes(1024)
        .with_max_body_bytes(1000);
    let big_header = format!("HTTP/1.1 200 OK\r\nX-Big: {}\r\n\r\n", "a".repeat(2000));
    let cases: Vec<(&str, Vec<u8>, bool, HttpError)> = vec![
        (
            "differing duplicate Content-Length",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!".to_vec(),
            false,
            HttpError::ConflictingContentLength,
        ),
        (
            "invalid chunk size",
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nhello\r\n0\r\n\r\n"
                .to_vec(),
            false,
            HttpError::InvalidChunkSize,
        ),
        (
            "head over the limit",
            big_header.into_bytes(),
            false,
            HttpError::HeadTooLarge { limit: 1024 },
        ),
        (
            "Content-Length over max_body_bytes",
            b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n".to_vec(),
            false,
            HttpError::BodyTooLarge { limit: 1000 },
        ),
        (
            "EOF mid-body",
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nfour".to_vec(),
            true,
            HttpError::IncompleteBody,
        ),
        (
            "EOF mid-head",
            b"HTTP/1.1 200 OK\r\nContent-Le".to_vec(),
            true,
            HttpError::IncompleteHead,
        ),
        (
            "unsupported version",
            b"HTTP/2.0 200 OK\r\nContent-Length: 0\r\n\r\n".to_vec(),
            false,
            HttpError::UnsupportedVersion,
        ),
    ];
    for (what, bytes, close, expected) in cases {
        assert_eq!(
            malformed_then_fresh(bytes, close, small),
            expected,
            "{what}"
        );
    }
}

#[test]
fn an_unwritable_request_is_refused_before_anything_is_sent() {
    let server = server(|mut listener| {
        let requests = listener.accept().serve_until_close(|_| ok(b"ok"));
        requests
            .iter()
            .map(|r| r.target().to_owned())
            .collect::<Vec<_>>()
    });
    let mut client = client(server.port()).build().unwrap();
    assert_eq!(client.get("/first").send().unwrap().body(), b"ok");
    let refused = [
        (
            the_error(client.get("/x").header("X-Evil", "a\r\nInjected: 1").send()),
            WriteError::InvalidHeaderValue,
        ),
        (
            the_error(
                client
                    .post("/x")
                    .header("X-Evil", "a\nb")
                    .send_body(b"body"),
            ),
            WriteError::InvalidHeaderValue,
        ),
        (
            the_error(client.get("/x").header("Bad Name", "v").send()),
            WriteError::InvalidHeaderName,
        ),
        (
            the_error(client.get("/has space").send()),
            WriteError::InvalidMethodOrTarget,
        ),
        (
            the_error(client.get("/x\r\nInjected: 1").query("a", "b").send()),
            WriteError::InvalidMethodOrTarget,
        ),
    ];
    for (error, expected) in refused {
        assert!(
            matches!(&error, HttpClientError::Write(e) if *e == expected),
            "expected {expected:?}, got {error}"
        );
    }
    assert_eq!(client.get("/second").send().unwrap().body(), b"ok");
    assert_eq!(client.connections_opened(), 1);
    drop(client);
    assert_eq!(server.join(), ["/first", "/second"]);
    // A default header is checked when the client is built.
    let error = the_error(
        HttpClient::builder("http://127.0.0.1:1")
            .default_header("X-Key", "k\r\n")
            .build(),
    );
    assert!(
        matches!(
            error,
            HttpClientError::Write(WriteError::InvalidHeaderValue)
        ),
        "{error}"
    );
}

#[cfg(feature = "tls")]
#[path = "tls_support/mod.rs"]
#[expect(dead_code, reason = "the http tests use the certificate helpers only")]
mod tls_support;

#[cfg(feature = "tls")]
mod https {
    use std::io::Read;
    use std::net::TcpStream;
    use std::time::{Duration, Instant};

    use tickwire_blocking::tls::TlsCodec;
    use tickwire_blocking::{
        Error, HttpClient, HttpClientError, ServerTlsConfig, TlsError, TlsStream,
    };

    use super::http_support::{Conn, Listener, PATIENCE, ok, server};
    use super::tls_support::{Ca, client_config, server_config};

    /// The next connection on `listener`, TLS handshake done.
    fn accept_tls(
        listener: &mut Listener,
        config: &ServerTlsConfig,
    ) -> Result<Conn<TlsStream<TcpStream>>, Error> {
        let mut stream = TlsStream::new(listener.accept_tcp(), TlsCodec::server(config)?);
        stream.handshake(Instant::now() + PATIENCE)?;
        stream.get_ref().set_read_timeout(Some(PATIENCE))?;
        Ok(Conn::new(stream))
    }

    #[test]
    fn twenty_requests_over_one_tls_connection() {
        let ca = Ca::new("https");
        let config = server_config(&ca.server_cert(&["localhost", "127.0.0.1"]));
        let server = server(move |mut listener| {
            let mut conn = accept_tls(&mut listener, &config).unwrap();
            let requests = conn.serve_until_close(|request| ok(request.target().as_bytes()));
            (requests.len(), listener.connections())
        });
        let mut client = HttpClient::builder(&format!("https://127.0.0.1:{}", server.port()))
            .tls(client_config(&ca))
            .read_timeout(Some(PATIENCE))
            .build()
            .unwrap();
        for i in 0..20 {
            let response = client.get("/tick").query_display("i", i).send().unwrap();
            assert_eq!(response.text(), Some(format!("/tick?i={i}").as_str()));
        }
        assert_eq!(client.connections_opened(), 1);
        drop(client);
        assert_eq!(server.join(), (20, 1));
    }

    #[test]
    fn a_server_that_never_answers_the_hello_is_a_handshake_timeout() {
        let server = server(|mut listener| {
            let mut tcp = listener.accept_tcp();
            let mut hello = [0u8; 1];
            let first = tcp.read(&mut hello).map(|n| (n, hello[0]));
            // Hold the connection, silent, until the client gives up and closes it.
            let mut rest = Vec::new();
            let _ = tcp.read_to_end(&mut rest);
            first.ok()
        });
        let mut client = HttpClient::builder(&format!("https://127.0.0.1:{}", server.port()))
            .tls(client_config(&Ca::new("silent")))
            .connect_timeout(Some(Duration::from_millis(300)))
            .read_timeout(Some(PATIENCE))
            .build()
            .unwrap();
        let start = Instant::now();
        let error = super::the_error(client.get("/").send());
        let waited = start.elapsed();
        assert!(
            matches!(error, HttpClientError::HandshakeTimeout),
            "{error}"
        );
        assert!(error.is_timeout(), "{error}");
        assert!(
            waited >= Duration::from_millis(250) && waited < Duration::from_secs(5),
            "{waited:?}"
        );
        assert!(!client.is_connected());
        drop(client);
        assert_eq!(
            server.join(),
            Some((1, 0x16)),
            "the client sent its ClientHello"
        );
    }

    #[test]
    fn an_untrusted_certificate_is_a_tls_error() {
        let config = server_config(&Ca::new("unknown").server_cert(&["127.0.0.1"]));
        let server = server(move |mut listener| accept_tls(&mut listener, &config).err());
        let mut client = HttpClient::builder(&format!("https://127.0.0.1:{}", server.port()))
            .tls(client_config(&Ca::new("trusted")))
            .read_timeout(Some(PATIENCE))
            .build()
            .unwrap();
        let error = match client.get("/").send() {
            Ok(response) => panic!("an untrusted server answered: {response:?}"),
            Err(e) => e,
        };
        assert!(
            matches!(
                error,
                HttpClientError::Tls(TlsError::UntrustedCertificate(_))
            ),
            "{error}"
        );
        assert!(!client.is_connected());
        drop(client);
        assert!(server.join().is_some(), "the server saw the handshake fail");
    }
}
