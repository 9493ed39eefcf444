//! The async HTTP client against scripted loopback servers, on both runtimes: the bytes that
//! reach the server, the response handed back (Content-Length, chunked, gzip), keep-alive
//! reuse, and the pool's cap shown by counting the connections the server accepted.

use crate::http_async::{ManyServer, client, joined, on_both_runtimes, stopped};
use crate::http_support::*;

use std::time::Duration;

#[test]
fn requests_on_the_wire_and_their_responses() {
    on_both_runtimes(|| async {
        let server = server(|mut listener| listener.accept().serve_until_close(|_| ok(b"done")));
        let port = server.port();
        let mut client =
            tickwire_tokio::HttpClient::builder(&format!("http://127.0.0.1:{port}/api/v3/"))
                .read_timeout(Some(PATIENCE))
                .default_header("X-Api-Key", "k1")
                .build()
                .unwrap();
        let response = client
            .get("/ticker")
            .query("symbol", "BTC USD")
            .query_display("depth", 20)
            .header("X-Request-Id", "7")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 200);
        assert_eq!(response.body(), b"done");
        assert_eq!(response.header("content-length"), Some("4"));
        assert!(response.keep_alive());
        drop(response);
        let response = client
            .post("orders")
            .header("Content-Type", "application/json")
            .send_body(br#"{"qty":"0.5"}"#)
            .await
            .unwrap();
        assert_eq!(response.text(), Some("done"));
        drop(response);
        client
            .put("orders/9")
            .send_body_with(|w| {
                use std::fmt::Write;
                write!(w, "price={}", 101.25)
            })
            .await
            .unwrap();
        client.delete("orders/9").send().await.unwrap();
        assert_eq!(client.connections_opened(), 1);
        drop(client);
        let requests = joined(server).await;
        let agent = concat!("User-Agent: tickwire/", env!("CARGO_PKG_VERSION"));
        let fixed = format!("Host: 127.0.0.1:{port}\r\n{agent}\r\nX-Api-Key: k1\r\n");
        let heads: Vec<String> = requests.iter().map(|r| r.head().to_owned()).collect();
        assert_eq!(
            heads,
            [
                format!(
                    "GET /api/v3/ticker?symbol=BTC%20USD&depth=20 HTTP/1.1\r\n{fixed}X-Request-Id: 7\r\n\r\n"
                ),
                format!(
                    "POST /api/v3/orders HTTP/1.1\r\n{fixed}Content-Type: application/json\r\nContent-Length: 13\r\n\r\n"
                ),
                format!("PUT /api/v3/orders/9 HTTP/1.1\r\n{fixed}Content-Length: 12\r\n\r\n"),
                format!("DELETE /api/v3/orders/9 HTTP/1.1\r\n{fixed}\r\n"),
            ]
        );
        assert_eq!(requests[1].body(), br#"{"qty":"0.5"}"#);
        assert_eq!(requests[2].body(), b"price=101.25");
    });
}

#[test]
fn sequential_requests_with_varied_bodies_reuse_one_connection() {
    // Sizes from empty to past the 16 KiB initial read buffer, Content-Length and chunked.
    let size = |i: usize| (i * i * 13) % 40_000;
    on_both_runtimes(|| async move {
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
        for i in 0..30 {
            let response = client
                .get("/item")
                .query_display("n", i)
                .send()
                .await
                .unwrap();
            assert!(response.body() == varied_body(i, size(i)), "body {i}");
        }
        assert_eq!(client.connections_opened(), 1);
        assert_eq!(client.idle_connections(), 1);
        drop(client);
        let counts = joined(server).await;
        assert_eq!(counts, (30, 1));
    });
}

#[cfg(feature = "deflate")]
#[test]
fn a_chunked_body_with_trailers_and_a_gzip_body_are_decoded() {
    on_both_runtimes(|| async {
        let text = b"the quick brown fox jumps over the lazy dog ".repeat(200);
        let expected = text.clone();
        let server = server(move |mut listener| {
            let mut conn = listener.accept();
            let gzip_request = conn.read_request().unwrap();
            let compressed = gzip(&text);
            conn.send(&response(
                &format!(
                    "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\n",
                    compressed.len()
                ),
                &compressed,
            ));
            conn.read_request().unwrap();
            conn.send_bytewise(
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
                  5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-Checksum: 42\r\n\r\n",
            );
            conn.expect_close();
            gzip_request
        });
        let mut client = client(server.port()).gzip(true).build().unwrap();
        let response = client.get("/snapshot").send().await.unwrap();
        assert!(response.was_decompressed());
        assert!(response.body() == expected.as_slice());
        assert!(response.raw().body().len() < expected.len());
        drop(response);
        let response = client.get("/chunked").send().await.unwrap();
        assert!(!response.was_decompressed());
        assert_eq!(response.body(), b"hello world");
        assert_eq!(response.trailers().get_str("x-checksum"), Some("42"));
        drop(response);
        drop(client);
        let request = joined(server).await;
        assert_eq!(request.header("accept-encoding"), Some("gzip"));
    });
}

#[test]
fn connection_close_in_a_response_makes_the_next_request_use_another_connection() {
    on_both_runtimes(|| async {
        let server = ManyServer::start(|_| {
            response(
                "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n",
                b"bye",
            )
        });
        let mut client = client(server.port()).max_connections(1).build().unwrap();
        for _ in 0..3 {
            let response = client.get("/").send().await.unwrap();
            assert_eq!(response.body(), b"bye");
            assert!(!response.keep_alive());
        }
        // Each one after the first found a connection opened in the background.
        assert!(client.connections_opened() >= 3);
        drop(client);
        let (accepted, requests) = stopped(server).await;
        assert_eq!(requests, 3);
        assert!(accepted >= 3);
    });
}

#[test]
fn eight_concurrent_requests_use_at_most_the_cap_and_the_connections_stay_warm() {
    on_both_runtimes(|| async {
        let server = ManyServer::start(|request| {
            // Slow enough that the eight requests overlap.
            std::thread::sleep(Duration::from_millis(30));
            ok(request.target().as_bytes())
        });
        let client = client(server.port()).max_connections(3).build().unwrap();
        for round in 0..3 {
            let tasks: Vec<_> = (0..8)
                .map(|i| {
                    let mut client = client.clone();
                    tokio::spawn(async move {
                        let path = format!("/r{round}/{i}");
                        let response = client.get(&path).send().await.unwrap();
                        assert_eq!(response.body(), path.as_bytes());
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
            assert!(server.accepted() <= 3, "{} connections", server.accepted());
        }
        assert_eq!(
            client.idle_connections() as u64,
            client.connections_opened()
        );
        drop(client);
        let (accepted, requests) = stopped(server).await;
        assert!((1..=3).contains(&accepted), "{accepted} connections");
        assert_eq!(requests, 24);
    });
}

#[test]
fn a_warm_up_connect_is_used_by_the_first_request() {
    on_both_runtimes(|| async {
        let server = ManyServer::start(|_| ok(b"warm"));
        let mut client = client(server.port()).build().unwrap();
        client.connect().await.unwrap();
        assert_eq!(client.idle_connections(), 1);
        assert_eq!(client.get("/").send().await.unwrap().body(), b"warm");
        assert_eq!(client.connections_opened(), 1);
        drop(client);
        let (accepted, _) = stopped(server).await;
        assert_eq!(accepted, 1);
    });
}

/// A caller can keep `send`'s future in a field of its own type (it is named:
/// `ResponseFuture`), hand it to code that needs a `Send` future, and await it later: nothing
/// is sent before that, and a request that could not be written fails without a connection.
#[test]
fn the_send_future_is_named_send_and_lazy() {
    struct Order<'c> {
        placing: tickwire_tokio::ResponseFuture<'c>,
    }
    fn sendable<F: Future + Send>(future: F) -> F {
        future
    }
    on_both_runtimes(|| async {
        let server = ManyServer::start(|_| ok(b"filled"));
        let mut client = client(server.port()).build().unwrap();
        let pool = client.clone();
        let response = {
            let order = Order {
                placing: sendable(client.post("/orders").send_body(b"qty=1")),
            };
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(
                pool.connections_opened(),
                0,
                "nothing happens before it is polled"
            );
            order.placing.await.unwrap()
        };
        assert_eq!(response.body(), b"filled");
        drop(response);
        let refused = client.get("/").header("X-Note", "a\r\nb").send().await;
        assert!(
            matches!(refused, Err(tickwire_core::http::HttpClientError::Write(_))),
            "{refused:?}"
        );
        assert_eq!(client.connections_opened(), 1);
        drop((client, pool));
        let (accepted, requests) = stopped(server).await;
        assert_eq!(accepted, 1);
        assert_eq!(requests, 1, "the refused request never reached the server");
    });
}

#[test]
fn an_idle_connection_past_the_idle_timeout_is_closed_and_replaced() {
    on_both_runtimes(|| async {
        let server = ManyServer::start(|_| ok(b"x"));
        let mut client = client(server.port())
            .idle_timeout(Duration::from_millis(50))
            .build()
            .unwrap();
        client.get("/").send().await.unwrap();
        client.get("/").send().await.unwrap();
        assert_eq!(client.connections_opened(), 1);
        tokio::time::sleep(Duration::from_millis(120)).await;
        client.get("/").send().await.unwrap();
        assert_eq!(client.connections_opened(), 2);
        assert_eq!(client.idle_connections(), 1);
        drop(client);
        let (accepted, requests) = stopped(server).await;
        assert_eq!((accepted, requests), (2, 3));
    });
}

#[test]
fn a_connection_lost_in_use_is_replaced_in_the_background_before_the_next_request() {
    on_both_runtimes(|| async {
        let server = ManyServer::start(|request| {
            if request.target() == "/last-on-this-connection" {
                response(
                    "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n",
                    b"bye",
                )
            } else {
                ok(b"hi")
            }
        });
        let mut client = client(server.port()).build().unwrap();
        let response = client.get("/last-on-this-connection").send().await.unwrap();
        assert!(!response.keep_alive());
        drop(response);
        // Nothing is asked of the client: the replacement opens on its own (on the
        // multi_thread runtime it may already be open here).
        let waited = std::time::Instant::now();
        while client.idle_connections() == 0 {
            assert!(waited.elapsed() < PATIENCE, "no replacement connection");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(client.connections_opened(), 2);
        // The next request finds it warm: no connect on its path.
        assert_eq!(client.get("/").send().await.unwrap().body(), b"hi");
        assert_eq!(client.connections_opened(), 2);
        drop(client);
        assert_eq!(stopped(server).await, (2, 2));
    });
}

#[test]
fn a_request_dropped_while_waiting_for_the_capped_pool_leaves_it_sound() {
    on_both_runtimes(|| async {
        let server = ManyServer::start(|_| ok(b"one"));
        let mut client = client(server.port()).max_connections(1).build().unwrap();
        let held = client.get("/").send().await.unwrap();
        let mut other = client.clone();
        // The only connection is held: this request waits for it, and is dropped waiting.
        tokio::select! {
            _ = other.get("/").send() => panic!("the cap of one connection was exceeded"),
            () = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
        drop(held);
        assert_eq!(other.get("/").send().await.unwrap().body(), b"one");
        assert_eq!(client.connections_opened(), 1);
        drop((client, other));
        assert_eq!(stopped(server).await, (1, 2));
    });
}
