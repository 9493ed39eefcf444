//! What the proxy tests of both transports share (the tokio crate includes this file): the
//! connect options that tunnel through one proxy, a plain WebSocket echo server to reach
//! through it, and the check that a proxy refused the credentials.

use std::net::TcpListener;
use std::thread;

use tickwire_blocking::codec::connect::{HttpProxyError, NoProxy, ProxyUrl};
use tickwire_core::connect::{ConnectOptions, Proxy as Through};
use tickwire_test_support::connect::find_error;

/// Options that tunnel every connect through `url`.
pub(crate) fn through(url: &str) -> ConnectOptions {
    ConnectOptions::new().with_proxy(Through::Fixed {
        url: ProxyUrl::parse(url).unwrap(),
        except: NoProxy::parse(""),
    })
}

/// Options that tunnel every connect through the `https://` proxy `url`, its certificate
/// checked against `proxy_tls`.
#[cfg(feature = "tls")]
pub(crate) fn through_tls(url: &str, proxy_tls: &tickwire_core::ClientTlsConfig) -> ConnectOptions {
    through(url).with_proxy_tls(proxy_tls.clone())
}

/// A plain WebSocket echo server on 127.0.0.1 (the blocking one), a thread per connection;
/// its port.
pub(crate) fn plain_echo_server() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    thread::spawn(move || {
        for tcp in listener.incoming() {
            let Ok(tcp) = tcp else { return };
            thread::spawn(move || {
                let Ok(mut ws) = tickwire_blocking::accept(tcp) else {
                    return;
                };
                while let Ok((tickwire_blocking::Recv::Message(message), mut sender)) =
                    ws.recv_with_sender()
                {
                    let _ = match message {
                        tickwire_blocking::Message::Text(text) => sender.text(text),
                        tickwire_blocking::Message::Binary(data) => sender.binary(data),
                        _ => continue,
                    };
                }
                let _ = ws.finish();
            });
        }
    });
    port
}

/// Asserts that `error` (of a connect through the proxy `url`) is the proxy's refusal of
/// the credentials: tinyproxy answers 407 without credentials and 401 to wrong ones.
pub(crate) fn assert_refused_credentials(error: &(dyn std::error::Error + 'static), url: &str) {
    let refusal = find_error::<HttpProxyError>(error).unwrap_or_else(|| panic!("{error}"));
    assert!(
        matches!(
            refusal,
            HttpProxyError::Refused {
                status: 401 | 407,
                ..
            }
        ),
        "{url}: {refusal}"
    );
}
