//! The tokio clients through an `https://` proxy: TLS to the proxy (stunnel in front of
//! tinyproxy, scripts/proxies.sh), HTTP CONNECT inside it, and the server's own TLS, when it
//! has one, inside the tunnel (the TLS stream generic over what carries it). `ws://`,
//! `wss://`, `http://` and `https://` go through with and without credentials; a proxy
//! certificate the client does not trust, wrong credentials and a TLS proxy that is silent
//! or closes mid-handshake are typed errors, in bounded time. The servers are the blocking
//! transport's, on threads.

#![cfg(feature = "tls")]

#[allow(dead_code, reason = "the scripted HTTP server only")]
#[path = "../../tickwire-blocking/tests/http_support/mod.rs"]
mod http_support;
#[path = "../../tickwire-blocking/tests/proxy_support/mod.rs"]
mod proxy_support;
#[allow(dead_code, reason = "the certificates and the TLS echo server only")]
#[path = "../../tickwire-blocking/tests/tls_support/mod.rs"]
mod tls_support;

use std::net::TcpListener;
use std::thread;
use std::time::Instant;

use proxy_support::{assert_refused_credentials, plain_echo_server, through_tls};

use tickwire_test_support::proxies::{Proxy, closing_proxy};
use tickwire_tokio::{
    ClientBuilder, ClientTlsConfig, Error, HttpClient, HttpClientError, MaybeTlsStream, Message,
    Recv, WebSocket,
};
use tls_support::{Ca, Identity, PATIENCE, client_config, echo, server_config, tls_server};

/// An `https://` proxy on 127.0.0.1 with a certificate from `ca`.
fn https_proxy(ca: &Ca, credentials: bool) -> Proxy {
    let Identity {
        chain_pem, key_pem, ..
    } = ca.server_cert(&["127.0.0.1"]);
    Proxy::tinyproxy_tls(credentials, &chain_pem, &key_pem)
}

/// A client whose every wait is bounded.
fn bounded() -> ClientBuilder {
    ClientBuilder::new()
        .connect_timeout(Some(PATIENCE / 2))
        .handshake_timeout(PATIENCE / 2)
        .read_timeout(Some(PATIENCE))
}

/// One text message there and back, then the close handshake.
async fn echo_once_and_finish(ws: &mut WebSocket<MaybeTlsStream>, text: &str) {
    ws.send_text(text).unwrap();
    ws.flush().await.unwrap();
    match ws.recv().await.unwrap() {
        Recv::Message(Message::Text(echoed)) => assert_eq!(echoed, text),
        other => panic!("{other:?}"),
    }
    ws.finish().await.unwrap();
}

/// The error a WebSocket connect to `ws://127.0.0.1:{port}` through `proxy_url` fails
/// with, within [`PATIENCE`].
async fn ws_failure(proxy_url: &str, proxy_tls: &ClientTlsConfig, port: u16) -> Error {
    let started = Instant::now();
    let error = bounded()
        .connect_options(through_tls(proxy_url, proxy_tls))
        .connect(&format!("ws://127.0.0.1:{port}/"))
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(started.elapsed() < PATIENCE, "{:?}", started.elapsed());
    error
}

#[tokio::test]
async fn ws_goes_through_an_https_proxy_with_tls_to_the_proxy_only() {
    let ca = Ca::new("https-proxy");
    let trusted = client_config(&ca);
    let port = plain_echo_server();
    for credentials in [false, true] {
        let proxy = https_proxy(&ca, credentials);
        let mut ws = bounded()
            .connect_options(through_tls(&proxy.url(), &trusted))
            .connect(&format!("ws://127.0.0.1:{port}/"))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", proxy.url()));
        let stream = ws.stream();
        // TLS to the proxy; none to the plain server.
        assert!(stream.is_tls() && stream.tls().is_none());
        let to_proxy = stream.proxy_tls().expect("TLS to the proxy");
        assert!(to_proxy.protocol_version().is_some());
        echo_once_and_finish(&mut ws, "through TLS to the proxy").await;
        let url = proxy.url();
        drop(proxy);
        let error = ws_failure(&url, &trusted, port).await;
        assert!(error.to_string().contains("refused"), "{url}: {error}");
    }
}

#[tokio::test]
async fn wss_runs_its_own_tls_inside_the_tls_to_the_proxy() {
    let ca = Ca::new("tls-in-tls");
    let trusted = client_config(&ca);
    for credentials in [false, true] {
        let proxy = https_proxy(&ca, credentials);
        let identity = ca.server_cert(&["localhost"]);
        let (port, server) = tls_server(server_config(&identity), 1, |accepted| {
            let mut ws = accepted.unwrap();
            let sni = ws.stream().codec().server_name().map(str::to_owned);
            (sni, echo(&mut ws).unwrap())
        });
        let mut ws = bounded()
            .tls(trusted.clone())
            .connect_options(through_tls(&proxy.url(), &trusted))
            .connect(&format!("wss://localhost:{port}/feed"))
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", proxy.url()));
        let stream = ws.stream();
        assert!(stream.tls().is_some() && stream.proxy_tls().is_some());
        // Enough to take several records each way through both layers.
        let big = "x".repeat(100_000);
        for text in ["sealed twice", big.as_str()] {
            ws.send_text(text).unwrap();
            ws.flush().await.unwrap();
            match ws.recv().await.unwrap() {
                Recv::Message(Message::Text(echoed)) => assert_eq!(echoed.len(), text.len()),
                other => panic!("{other:?}"),
            }
        }
        ws.finish().await.unwrap();
        // The server's TLS session is the client's with it: it saw the target's name.
        let (sni, echoed) = tokio::task::spawn_blocking(move || server.join().unwrap())
            .await
            .unwrap()
            .remove(0);
        assert_eq!((sni.as_deref(), echoed), (Some("localhost"), 2));
    }
}

#[tokio::test]
async fn http_and_https_go_through_an_https_proxy() {
    let ca = Ca::new("https-proxy-http");
    let trusted = client_config(&ca);
    let proxy = https_proxy(&ca, true);
    let plain = http_support::server(|mut listener| listener.accept().serve_one());
    let sealed = http_support::https_once(server_config(&ca.server_cert(&["localhost"])));
    for (origin, path) in [
        (format!("http://127.0.0.1:{}", plain.port()), "/plain"),
        (format!("https://localhost:{}", sealed.port()), "/sealed"),
    ] {
        let mut client = HttpClient::builder(&origin)
            .tls(trusted.clone())
            .read_timeout(Some(PATIENCE))
            .connect_options(through_tls(&proxy.url(), &trusted))
            .build()
            .unwrap();
        let response = client.get(path).send().await.unwrap();
        assert_eq!(response.text(), Some(path), "{origin}");
    }
    let (plain, sealed) = tokio::task::spawn_blocking(move || (plain.join(), sealed.join()))
        .await
        .unwrap();
    assert_eq!(plain.target(), "/plain");
    let (request, sni) = sealed;
    assert_eq!(
        (request.target(), sni.as_deref()),
        ("/sealed", Some("localhost"))
    );
}

#[tokio::test]
async fn an_untrusted_proxy_certificate_is_a_tls_error() {
    let port = plain_echo_server();
    let proxy = https_proxy(&Ca::new("proxy-ca"), false);
    // Trusting another CA only: the proxy's certificate does not verify.
    let other = client_config(&Ca::new("other"));
    let error = ws_failure(&proxy.url(), &other, port).await;
    assert!(matches!(error, Error::Tls(_)), "{error:?}");
    let mut http = HttpClient::builder(&format!("http://127.0.0.1:{port}"))
        .connect_options(through_tls(&proxy.url(), &other))
        .build()
        .unwrap();
    let error = http.get("/").send().await.unwrap_err();
    assert!(matches!(error, HttpClientError::Tls(_)), "{error:?}");
}

#[tokio::test]
async fn wrong_credentials_over_tls_are_the_proxys_refusal() {
    let ca = Ca::new("https-proxy-auth");
    let trusted = client_config(&ca);
    let port = plain_echo_server();
    let proxy = https_proxy(&ca, true);
    for url in [
        proxy.url_with("mallory", "nope"),
        proxy.url().replace("alice:s3cret@", ""),
    ] {
        let error = ws_failure(&url, &trusted, port).await;
        assert_refused_credentials(&error, &url);
    }
}

#[tokio::test]
async fn a_tls_proxy_that_is_silent_or_closes_mid_handshake_fails_in_time() {
    // Accepts and reads, never answers: TLS to the proxy must not wait past the budget.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_port = listener.local_addr().unwrap().port();
    let silent = thread::spawn(move || listener.accept().map(|(tcp, _)| tcp));
    let started = Instant::now();
    let error = ClientBuilder::new()
        .connect_timeout(Some(PATIENCE / 10))
        .connect_options(through_tls(
            &format!("https://127.0.0.1:{proxy_port}"),
            &client_config(&Ca::new("silent")),
        ))
        .connect("ws://127.0.0.1:9/")
        .await
        .map(|_| ())
        .unwrap_err();
    assert!(started.elapsed() < PATIENCE / 2, "{:?}", started.elapsed());
    assert!(matches!(error, Error::HandshakeTimeout), "{error:?}");
    drop(silent.join());
    let closing = closing_proxy();
    let closing_url = format!("https://127.0.0.1:{closing}");
    let error = ws_failure(&closing_url, &client_config(&Ca::new("closing")), 9).await;
    assert!(matches!(error, Error::Tls(_)), "{error:?}");
}
