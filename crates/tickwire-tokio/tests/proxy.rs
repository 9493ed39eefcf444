//! The clients through real proxies on loopback (scripts/proxies.sh): tinyproxy for HTTP
//! CONNECT and microsocks for SOCKS5, each with and without credentials. A message goes
//! through each tunnel and back; wrong credentials, an unreachable target and a proxy that
//! closes mid-handshake are typed errors with the proxy's status or reply code, in bounded
//! time.

use std::net::TcpListener;
use std::time::{Duration, Instant};

#[allow(dead_code, reason = "the TLS proxy's helper is proxy_tls.rs's")]
#[path = "../../tickwire-blocking/tests/proxy_support/mod.rs"]
mod proxy_support;

use proxy_support::{assert_refused_credentials, plain_echo_server, through};
use tickwire_test_support::connect::find_error;
use tickwire_test_support::proxies::{Proxy, closing_proxy, http_once};
use tickwire_tokio::codec::connect::{HttpProxyError, ReplyCode, Socks5Error};
use tickwire_tokio::{ClientBuilder, Error, HttpClient, Message, Recv};

/// The bound on every failure: nothing may hang past it.
const PATIENCE: Duration = Duration::from_secs(10);

/// A WebSocket connect to the echo server on `port` through `proxy_url`.
async fn connect(
    proxy_url: &str,
    port: u16,
) -> Result<tickwire_tokio::WebSocket<tickwire_tokio::MaybeTlsStream>, Error> {
    ClientBuilder::new()
        .connect_timeout(Some(Duration::from_secs(5)))
        .connect_options(through(proxy_url))
        .connect(&format!("ws://127.0.0.1:{port}/"))
        .await
}

/// The error a connect through `proxy_url` to `port` fails with, within [`PATIENCE`].
async fn failure(proxy_url: &str, port: u16) -> Error {
    let started = Instant::now();
    let error = connect(proxy_url, port).await.map(|_| ()).unwrap_err();
    assert!(
        started.elapsed() < PATIENCE,
        "{proxy_url}: {:?}",
        started.elapsed()
    );
    error
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn a_message_goes_through_each_proxy_and_back_and_not_without_it() {
    let port = plain_echo_server();
    for credentials in [false, true] {
        for proxy in [
            Proxy::tinyproxy(credentials),
            Proxy::microsocks(credentials),
        ] {
            let mut urls = vec![proxy.url()];
            if proxy.url().starts_with("socks5h") {
                // The name resolved here rather than by the proxy.
                urls.push(proxy.url_as("socks5"));
            }
            for url in &urls {
                let mut ws = connect(url, port)
                    .await
                    .unwrap_or_else(|e| panic!("{url}: {e}"));
                ws.send_text("through the tunnel").unwrap();
                ws.flush().await.unwrap();
                match ws.recv().await.unwrap() {
                    Recv::Message(Message::Text(text)) => assert_eq!(text, "through the tunnel"),
                    other => panic!("{url}: {other:?}"),
                }
                ws.finish().await.unwrap();
            }
            let url = proxy.url();
            drop(proxy);
            // The proxy gone, the same connect fails: it was in the path.
            let error = failure(&url, port).await;
            assert!(error.to_string().contains("refused"), "{url}: {error}");
        }
    }
}

#[tokio::test]
async fn wrong_or_missing_credentials_are_the_proxys_refusal() {
    let port = plain_echo_server();
    let http = Proxy::tinyproxy(true);
    for url in [
        http.url_with(USER_WRONG, "nope"),
        http.url().replace("alice:s3cret@", ""),
    ] {
        let error = failure(&url, port).await;
        assert_refused_credentials(&error, &url);
    }
    let socks = Proxy::microsocks(true);
    let error = failure(&socks.url_with(USER_WRONG, "nope"), port).await;
    let refusal = find_error::<Socks5Error>(&error).unwrap_or_else(|| panic!("{error}"));
    assert!(matches!(refusal, Socks5Error::AuthFailed(_)), "{refusal}");
    let anonymous = socks.url().replace("alice:s3cret@", "");
    let error = failure(&anonymous, port).await;
    let refusal = find_error::<Socks5Error>(&error).unwrap_or_else(|| panic!("{error}"));
    assert_eq!(*refusal, Socks5Error::NoAcceptableMethod);
}

const USER_WRONG: &str = "mallory";

#[tokio::test]
async fn an_unreachable_target_is_the_proxys_typed_answer() {
    let target = closed_port();
    let http = Proxy::tinyproxy(false);
    let error = failure(&http.url(), target).await;
    match find_error::<HttpProxyError>(&error) {
        Some(HttpProxyError::Refused { status, .. }) => assert!(*status >= 500, "{status}"),
        other => panic!("{other:?}: {error}"),
    }
    let socks = Proxy::microsocks(false);
    let error = failure(&socks.url(), target).await;
    let answer = find_error::<Socks5Error>(&error).unwrap_or_else(|| panic!("{error}"));
    assert_eq!(*answer, Socks5Error::Reply(ReplyCode::CONNECTION_REFUSED));
}

#[tokio::test]
async fn a_proxy_that_closes_mid_handshake_fails_at_once() {
    let port = plain_echo_server();
    let closing = closing_proxy();
    let error = failure(&format!("http://127.0.0.1:{closing}"), port).await;
    assert_eq!(
        find_error::<HttpProxyError>(&error),
        Some(&HttpProxyError::Closed),
        "{error}"
    );
    let error = failure(&format!("socks5h://127.0.0.1:{closing}"), port).await;
    assert_eq!(
        find_error::<Socks5Error>(&error),
        Some(&Socks5Error::Closed),
        "{error}"
    );
}

#[tokio::test]
async fn the_http_client_goes_through_a_proxy() {
    let (port, server) = http_once();
    let proxy = Proxy::microsocks(true);
    let mut client = HttpClient::builder(&format!("http://127.0.0.1:{port}"))
        .connect_options(through(&proxy.url()))
        .build()
        .unwrap();
    let response = client.get("/via").send().await.unwrap();
    assert_eq!(response.body(), b"ok");
    assert!(server.join().unwrap().starts_with("GET /via HTTP/1.1\r\n"));
}
