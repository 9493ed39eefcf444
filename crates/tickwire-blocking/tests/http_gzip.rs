//! gzip response bodies through the blocking HTTP client: inflated when asked for, handed over
//! as sent otherwise, and a corrupt, truncated or oversized body refused with a typed error.

#[allow(dead_code, reason = "the gzip tests use part of the shared helpers")]
mod http_support;
use http_support::*;

#[cfg(feature = "deflate")]
use std::time::{Duration, Instant};

#[cfg(feature = "deflate")]
use tickwire_blocking::HttpClientError;
#[cfg(feature = "deflate")]
use tickwire_blocking::codec::http::Limits;

#[cfg(feature = "deflate")]
const JSON: &[u8] = br#"{"symbol":"BTC-USD","bids":[["101.25","0.5"],["101.20","1.5"]]}"#;

#[cfg(feature = "deflate")]
#[test]
fn gzip_bodies_are_inflated_when_asked_for() {
    let server = server(|mut listener| {
        listener.accept().serve_until_close(|request| {
            assert_eq!(request.header("accept-encoding"), Some("gzip"));
            let head = "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n";
            match request.target() {
                "/length" => response(
                    &format!("{head}Content-Length: {}\r\n", gzip(JSON).len()),
                    &gzip(JSON),
                ),
                "/chunked" => {
                    let mut bytes = chunked(&gzip(JSON), 10);
                    let at = bytes.windows(2).position(|w| w == b"\r\n").unwrap() + 2;
                    bytes.splice(at..at, b"Content-Encoding: gzip\r\n".iter().copied());
                    bytes
                }
                _ => ok(b"plain"),
            }
        })
    });
    let mut client = client(server.port()).gzip(true).build().unwrap();
    for path in ["/length", "/chunked"] {
        let response = client.get(path).send().unwrap();
        assert!(response.was_decompressed(), "{path}");
        assert_eq!(response.body(), JSON, "{path}");
        assert_eq!(response.raw().body(), gzip(JSON), "{path}");
    }
    let response = client.get("/identity").send().unwrap();
    assert!(!response.was_decompressed());
    assert_eq!(response.body(), b"plain");
    drop(client);
    assert_eq!(server.join().len(), 3);
}

/// `{"symbol":"BTC-USD"}` as one gzip member (Python's `gzip.compress`, mtime 0): a fixed
/// body, so that the test below also runs without the `deflate` feature.
const GZIPPED: &[u8] = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\x03\xab\x56\x2a\xae\xcc\x4d\xca\xcf\
\x51\xb2\x52\x72\x0a\x71\xd6\x0d\x0d\x76\x51\xaa\x05\x00\x93\xef\x6a\x5f\x14\x00\x00\x00";

/// Without `.gzip(true)`, and in a build without the `deflate` feature (which has no such
/// option), the client asks for no encoding and hands a gzip body over as sent, its
/// `Content-Encoding` visible to the caller.
#[test]
fn without_gzip_the_body_comes_back_as_sent() {
    let server = server(|mut listener| {
        listener.accept().serve_until_close(|request| {
            assert_eq!(request.header("accept-encoding"), None);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n",
                GZIPPED.len()
            );
            response(&head, GZIPPED)
        })
    });
    let mut client = client(server.port()).build().unwrap();
    let response = client.get("/gzip").send().unwrap();
    assert!(!response.was_decompressed());
    assert_eq!(response.header("content-encoding"), Some("gzip"));
    assert_eq!(response.body(), GZIPPED);
    drop(client);
    assert_eq!(server.join().len(), 1);
}

/// Serves `bodies` in turn as gzip-encoded Content-Length responses, then `ok("fine")`.
#[cfg(feature = "deflate")]
fn gzip_server(bodies: Vec<Vec<u8>>) -> Server<()> {
    server(move |mut listener| {
        let mut bodies = bodies.into_iter();
        listener
            .accept()
            .serve_until_close(|_| match bodies.next() {
                Some(body) => response(
                    &format!(
                        "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n",
                        body.len()
                    ),
                    &body,
                ),
                None => ok(b"fine"),
            });
    })
}

#[cfg(feature = "deflate")]
#[test]
fn a_corrupt_or_truncated_gzip_body_is_a_decompress_error() {
    let mut corrupt = gzip(JSON);
    let middle = corrupt.len() / 2;
    corrupt[middle] ^= 0xFF;
    corrupt[middle + 1] ^= 0x55;
    let truncated = gzip(JSON)[..20].to_vec();
    let not_gzip = b"{\"plain\":true}".to_vec();
    let server = gzip_server(vec![corrupt, truncated, not_gzip]);
    let mut client = client(server.port()).gzip(true).build().unwrap();
    for what in ["corrupt", "truncated", "not gzip"] {
        let error = the_error(client.get("/gzip").send());
        assert!(
            matches!(error, HttpClientError::Decompress(_)),
            "{what}: {error}"
        );
    }
    assert_eq!(client.get("/after").send().unwrap().body(), b"fine");
    drop(client);
    server.join();
}

#[cfg(feature = "deflate")]
#[test]
fn a_gzip_body_inflating_past_the_body_limit_is_refused() {
    const LIMIT: usize = 10_000;
    let zeros = |len: usize| gzip(&vec![0u8; len]);
    // A bomb: 8 MiB of zeros in about 8 KiB (within the limit on the wire); then one byte
    // past the limit; then exactly at it.
    let bomb = zeros(8 << 20);
    assert!(bomb.len() < LIMIT, "{}", bomb.len());
    let limits = Limits::client().with_max_body_bytes(LIMIT as u64);
    let server = gzip_server(vec![bomb, zeros(LIMIT + 1), zeros(LIMIT)]);
    let mut client = client(server.port())
        .gzip(true)
        .limits(limits)
        .build()
        .unwrap();
    let started = Instant::now();
    for what in ["bomb", "one byte past"] {
        let error = the_error(client.get("/gzip").send());
        assert!(
            matches!(error, HttpClientError::Decompress(_)),
            "{what}: {error}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let response = client.get("/gzip").send().unwrap();
    assert_eq!(response.body().len(), LIMIT);
    assert_eq!(client.get("/after").send().unwrap().body(), b"fine");
    drop(client);
    server.join();
}
