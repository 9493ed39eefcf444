//! The clients through an `https://` proxy: TLS to the proxy (stunnel in front of tinyproxy,
//! scripts/proxies.sh), HTTP CONNECT inside it, and the server's own TLS, when it has one,
//! inside the tunnel. `ws://`, `wss://`, `http://` and `https://` go through with and
//! without credentials; a proxy certificate the client does not trust, wrong credentials
//! and a TLS proxy that closes mid-handshake are typed errors, in bounded time.

#![cfg(feature = "tls")]

#[allow(dead_code, reason = "the scripted HTTP server only")]
mod http_support;
mod proxy_support;
#[allow(dead_code, reason = "the certificates and the TLS echo server only")]
mod tls_support;

use std::net::TcpListener;
use std::thread;
use std::time::Instant;

use proxy_support::{assert_refused_credentials, plain_echo_server, through_tls};

use tickwire_blocking::{
    ClientTlsConfig, Error, HttpClient, HttpClientError, MaybeTlsStream, Message, Recv, WebSocket,
};
use tickwire_test_support::proxies::Proxy;
use tls_support::{
    Ca, Identity, PATIENCE, client, client_config, echo, echo_once_and_close, server_config,
    tls_server,
};

/// An `https://` proxy on 127.0.0.1 with a certificate from `ca`.
fn https_proxy(ca: &Ca, credentials: bool) -> Proxy {
    let Identity {
        chain_pem, key_pem, ..
    } = ca.server_cert(&["127.0.0.1"]);
    Proxy::tinyproxy_tls(credentials, &chain_pem, &key_pem)
}

/// One text message there and back.
fn echo_once(ws: &mut WebSocket<MaybeTlsStream>, text: &str) {
    ws.send_text_now(text).unwrap();
    match ws.recv().unwrap() {
        Recv::Message(Message::Text(echoed)) => assert_eq!(echoed, text),
        other => panic!("{other:?}"),
    }
}

/// The error a WebSocket connect to `ws://127.0.0.1:{port}` through `proxy_url` fails
/// with, within [`PATIENCE`].
fn ws_failure(proxy_url: &str, proxy_tls: &ClientTlsConfig, port: u16) -> Error {
    let started = Instant::now();
    let error = tickwire_blocking::ClientBuilder::new()
        .connect_timeout(Some(PATIENCE / 2))
        .handshake_timeout(PATIENCE / 2)
        .connect_options(through_tls(proxy_url, proxy_tls))
        .connect(&format!("ws://127.0.0.1:{port}/"))
        .map(|_| ())
        .unwrap_err();
    assert!(started.elapsed() < PATIENCE, "{:?}", started.elapsed());
    error
}

#[test]
fn ws_goes_through_an_https_proxy_with_tls_to_the_proxy_only() {
    let ca = Ca::new("https-proxy");
    let trusted = client_config(&ca);
    let port = plain_echo_server();
    for credentials in [false, true] {
        let proxy = https_proxy(&ca, credentials);
        let mut ws = tickwire_blocking::ClientBuilder::new()
            .connect_timeout(Some(PATIENCE))
            .read_timeout(Some(PATIENCE))
            .connect_options(through_tls(&proxy.url(), &trusted))
            .connect(&format!("ws://127.0.0.1:{port}/"))
            .unwrap_or_else(|e| panic!("{}: {e}", proxy.url()));
        let stream = ws.stream();
        // TLS to the proxy, checked against its certificate; none to the plain server.
        assert!(stream.is_tls());
        assert!(stream.tls().is_none());
        let to_proxy = stream.proxy_tls().expect("TLS to the proxy");
        assert!(to_proxy.protocol_version().is_some());
        echo_once(&mut ws, "through TLS to the proxy");
        ws.finish().unwrap();
        let url = proxy.url();
        drop(proxy);
        let error = ws_failure(&url, &trusted, port);
        assert!(error.to_string().contains("refused"), "{url}: {error}");
    }
}

#[test]
fn wss_runs_its_own_tls_inside_the_tls_to_the_proxy() {
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
        let mut ws = client(&trusted)
            .connect_options(through_tls(&proxy.url(), &trusted))
            .connect(&format!("wss://localhost:{port}/feed"))
            .unwrap_or_else(|e| panic!("{}: {e}", proxy.url()));
        let stream = ws.stream();
        assert!(stream.tls().is_some() && stream.proxy_tls().is_some());
        // Enough to take several records each way through both layers.
        echo_once(&mut ws, &"x".repeat(100_000));
        echo_once_and_close(&mut ws, "sealed twice");
        // The server's TLS session is the client's with it: it saw the target's name.
        let (sni, echoed) = server.join().unwrap().remove(0);
        assert_eq!((sni.as_deref(), echoed), (Some("localhost"), 2));
    }
}

#[test]
fn http_and_https_go_through_an_https_proxy() {
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
        let response = client.get(path).send().unwrap();
        assert_eq!(response.text(), Some(path), "{origin}");
    }
    assert_eq!(plain.join().target(), "/plain");
    let (request, sni) = sealed.join();
    assert_eq!(
        (request.target(), sni.as_deref()),
        ("/sealed", Some("localhost"))
    );
}

#[test]
fn an_untrusted_proxy_certificate_is_a_tls_error() {
    let port = plain_echo_server();
    let proxy = https_proxy(&Ca::new("proxy-ca"), false);
    // Trusting another CA only: the proxy's certificate does not verify.
    let error = ws_failure(&proxy.url(), &client_config(&Ca::new("other")), port);
    assert!(matches!(error, Error::Tls(_)), "{error:?}");
    // The HTTP client gives the same typed answer.
    let mut http = HttpClient::builder(&format!("http://127.0.0.1:{port}"))
        .connect_options(through_tls(&proxy.url(), &client_config(&Ca::new("other"))))
        .build()
        .unwrap();
    let error = http.get("/").send().unwrap_err();
    assert!(matches!(error, HttpClientError::Tls(_)), "{error:?}");
}

#[test]
fn wrong_credentials_over_tls_are_the_proxys_refusal() {
    let ca = Ca::new("https-proxy-auth");
    let trusted = client_config(&ca);
    let port = plain_echo_server();
    let proxy = https_proxy(&ca, true);
    for url in [
        proxy.url_with("mallory", "nope"),
        proxy.url().replace("alice:s3cret@", ""),
    ] {
        let error = ws_failure(&url, &trusted, port);
        assert_refused_credentials(&error, &url);
    }
}

#[test]
fn a_tls_proxy_that_is_silent_or_closes_mid_handshake_fails_in_time() {
    // Accepts and reads, never answers: TLS to the proxy must not wait past the budget.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let proxy_port = listener.local_addr().unwrap().port();
    let silent = thread::spawn(move || listener.accept().map(|(tcp, _)| tcp));
    let started = Instant::now();
    let error = tickwire_blocking::ClientBuilder::new()
        .connect_timeout(Some(PATIENCE / 10))
        .connect_options(through_tls(
            &format!("https://127.0.0.1:{proxy_port}"),
            &client_config(&Ca::new("silent")),
        ))
        .connect("ws://127.0.0.1:9/")
        .map(|_| ())
        .unwrap_err();
    assert!(started.elapsed() < PATIENCE / 2, "{:?}", started.elapsed());
    assert!(
        matches!(error, Error::HandshakeTimeout),
        "{error:?}: the TLS handshake to the proxy timed out"
    );
    drop(silent.join());
    // One that closes at once: the handshake's end of stream, typed.
    let closing = tickwire_test_support::proxies::closing_proxy();
    let error = ws_failure(
        &format!("https://127.0.0.1:{closing}"),
        &client_config(&Ca::new("closing")),
        9,
    );
    assert!(matches!(error, Error::Tls(_)), "{error:?}");
}
