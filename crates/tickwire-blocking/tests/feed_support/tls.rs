//! The feed suite's case over `wss://` (both drivers' tests include it beside
//! `tls_support`): kernel receive timestamps taken under TLS.

use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use tickwire_blocking::feed::Timestamps;
use tickwire_blocking::{ClientBuilder, Message, Recv, ServerBuilder};

use super::feed_support::{Driver, check_kernel_stamps, config, send, wall_now};
use super::tls_support::{Ca, PATIENCE, client_config, server_config};

/// Over TLS the kernel's time is that of the socket read that completed the record a
/// message came in: after the send, before the user stamp.
pub(crate) fn kernel_timestamps_are_taken_under_tls<D: Driver>() {
    let ca = Ca::new("feed");
    let tls = server_config(&ca.server_cert(&["localhost"]));
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "wss://localhost:{}/feed",
        listener.local_addr().unwrap().port()
    );
    let sent_at = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&sent_at);
    thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut ws = ServerBuilder::new()
            .handshake_timeout(PATIENCE)
            .accept_tls(stream, &tls)
            .unwrap();
        ws.set_read_timeout(Some(PATIENCE));
        // The subscription first.
        assert!(matches!(ws.recv(), Ok(Recv::Message(Message::Text(_)))));
        for n in 1..=3 {
            log.lock().unwrap().push(wall_now());
            send(&mut ws, "BTC", [n]);
            thread::sleep(Duration::from_millis(5));
        }
        ws.set_read_timeout(Some(Duration::from_secs(3)));
        let _ = ws.recv();
    });
    let client = ClientBuilder::new().tls(client_config(&ca)).into_options();
    let config = config(&url).with_timestamps(Timestamps::Kernel);
    let mut feed = D::start_with(config, client);
    check_kernel_stamps(&mut feed, &sent_at);
}
