//! The async HTTP client over TLS (the crate's `MaybeTls`, rustls through
//! `tickwire_tls::TlsCodec`), on both runtimes, against a blocking TLS server on loopback:
//! keep-alive over one TLS connection, the pool's connections for concurrent requests, and
//! the liveness check of an idle TLS connection the server closed.

use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::http_async::{joined, on_both_runtimes};
use crate::http_support::{Conn, Listener, PATIENCE, ok, server};
use crate::tls_support::{Ca, client_config, server_config};
use tickwire_blocking::tls::TlsCodec;
use tickwire_blocking::{ServerTlsConfig, TlsStream};
use tickwire_tokio::{HttpClient, HttpClientError};

/// The next connection on `listener`, TLS handshake done.
fn accept_tls(listener: &mut Listener, config: &ServerTlsConfig) -> Conn<TlsStream<TcpStream>> {
    let codec = TlsCodec::server(config).unwrap();
    let mut stream = TlsStream::new(listener.accept_tcp(), codec);
    stream.handshake(Instant::now() + PATIENCE).unwrap();
    Conn::new(stream)
}

#[test]
fn twenty_requests_over_one_tls_connection() {
    on_both_runtimes(|| async {
        let ca = Ca::new("https");
        let config = server_config(&ca.server_cert(&["localhost", "127.0.0.1"]));
        let server = server(move |mut listener| {
            let mut conn = accept_tls(&mut listener, &config);
            let requests = conn.serve_until_close(|request| ok(request.target().as_bytes()));
            (requests.len(), listener.connections())
        });
        let mut client = HttpClient::builder(&format!("https://127.0.0.1:{}", server.port()))
            .tls(client_config(&ca))
            .read_timeout(Some(PATIENCE))
            .build()
            .unwrap();
        for i in 0..20 {
            let response = client
                .get("/tick")
                .query_display("i", i)
                .send()
                .await
                .unwrap();
            assert_eq!(response.text(), Some(format!("/tick?i={i}").as_str()));
        }
        assert_eq!(client.connections_opened(), 1);
        drop(client);
        let counts = joined(server).await;
        assert_eq!(counts, (20, 1));
    });
}

#[test]
fn an_idle_tls_connection_the_server_closed_is_replaced_before_a_post() {
    on_both_runtimes(|| async {
        let ca = Ca::new("https-idle");
        let config = server_config(&ca.server_cert(&["localhost", "127.0.0.1"]));
        let server = server(move |mut listener| {
            let mut first = accept_tls(&mut listener, &config);
            first.serve_one();
            // close_notify and FIN while the client keeps the connection idle.
            drop(first);
            let requests = accept_tls(&mut listener, &config).serve_until_close(|_| ok(b"new"));
            (requests.len(), listener.connections())
        });
        let mut client = HttpClient::builder(&format!("https://127.0.0.1:{}", server.port()))
            .tls(client_config(&ca))
            .read_timeout(Some(PATIENCE))
            .probe_idle_after(Duration::ZERO)
            .max_connections(1)
            .build()
            .unwrap();
        client.get("/one").send().await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let response = client.post("/order").send_body(b"qty=1").await.unwrap();
        assert_eq!(response.body(), b"new");
        drop(response);
        drop(client);
        let counts = joined(server).await;
        assert_eq!(counts, (1, 2));
    });
}

#[test]
fn an_untrusted_certificate_is_a_tls_error() {
    on_both_runtimes(|| async {
        let config = server_config(&Ca::new("real").server_cert(&["127.0.0.1"]));
        let server = server(move |mut listener| {
            let codec = TlsCodec::server(&config).unwrap();
            let mut stream = TlsStream::new(listener.accept_tcp(), codec);
            stream.handshake(Instant::now() + PATIENCE).is_err()
        });
        let mut client = HttpClient::builder(&format!("https://127.0.0.1:{}", server.port()))
            .tls(client_config(&Ca::new("other")))
            .build()
            .unwrap();
        let error = crate::http_support::the_error(client.get("/").send().await);
        assert!(matches!(error, HttpClientError::Tls(_)), "{error}");
        assert!(joined(server).await);
    });
}

#[test]
fn https_through_each_proxy_with_tls_end_to_end() {
    use tickwire_core::connect::{ConnectOptions, Proxy as Through};
    use tickwire_test_support::proxies::Proxy;
    use tickwire_tokio::codec::connect::{NoProxy, ProxyUrl};

    on_both_runtimes(|| async {
        let ca = Ca::new("https-proxied");
        for proxy in [Proxy::tinyproxy(true), Proxy::microsocks(true)] {
            let config = server_config(&ca.server_cert(&["localhost", "127.0.0.1"]));
            let server = server(move |mut listener| {
                let codec = TlsCodec::server(&config).unwrap();
                let mut stream = TlsStream::new(listener.accept_tcp(), codec);
                stream.handshake(Instant::now() + PATIENCE).unwrap();
                let sni = stream.codec().server_name().map(str::to_owned);
                let request = Conn::new(stream).serve_one();
                (request.target().to_owned(), sni)
            });
            let options = ConnectOptions::new().with_proxy(Through::Fixed {
                url: ProxyUrl::parse(&proxy.url()).unwrap(),
                except: NoProxy::parse(""),
            });
            let mut client = HttpClient::builder(&format!("https://localhost:{}", server.port()))
                .tls(client_config(&ca))
                .read_timeout(Some(PATIENCE))
                .connect_options(options)
                .build()
                .unwrap();
            let response = client.get("/sealed").send().await.unwrap();
            assert_eq!(response.text(), Some("/sealed"), "{}", proxy.url());
            drop(client);
            // The TLS session is the client's with the server: it saw the target's name.
            assert_eq!(
                joined(server).await,
                ("/sealed".to_owned(), Some("localhost".to_owned()))
            );
        }
    });
}
