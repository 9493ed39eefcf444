//! The blocking packet link keeps reading while its writes wait: a client and a server that
//! each queue more than the sockets' buffers hold, without reading in between, do not block
//! each other, in plain TCP and TLS; and a write that makes no progress still ends at the
//! write timeout. Every wait is bounded by a watchdog, so a regression fails instead of
//! hanging.

#[path = "packet_support/flood.rs"]
mod flood;
mod packet_support;
#[expect(dead_code, reason = "shared with tests/tls.rs, which uses the rest")]
mod tls_support;

use std::collections::HashMap;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use packet_support::echo_server;
use tickwire_blocking::packet::{Error, PacketClient, PacketClientBuilder, PacketServer};
use tls_support::{Ca, client_config, server_config};

/// How long a batch may take (a debug build checksums and copies 32 MiB) before the
/// watchdog calls it a deadlock.
const PATIENCE: Duration = Duration::from_secs(60);

/// 256 requests of 64 KiB: 16 MiB each way, far more than loopback's socket buffers.
const REQUESTS: usize = 256;
const PAYLOAD: usize = 64 << 10;

fn builder() -> PacketClientBuilder {
    PacketClientBuilder::new()
        .connect_timeout(PATIENCE)
        .request_timeout(Some(PATIENCE))
}

/// Runs `work` on its own thread and fails the test when it has not finished within
/// [`PATIENCE`] (the stuck thread is left behind; the test process ends without it).
fn within_patience<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        let _ = done.send(work());
    });
    finished
        .recv_timeout(PATIENCE)
        .expect("finished in time: both ends keep reading while their writes wait")
}

/// Queues the whole batch (nothing is written by `send_request`), then takes every answer:
/// the first wait writes 16 MiB while the echo server writes its answers back.
fn pipeline_a_batch(client: &mut PacketClient) {
    let mut sent = HashMap::new();
    for i in 0..REQUESTS {
        let payload = vec![i as u8; PAYLOAD];
        sent.insert(client.send_request(&payload).unwrap(), payload);
    }
    for _ in 0..REQUESTS {
        let (id, answer) = client.recv_response().unwrap();
        assert_eq!(answer, sent.remove(&id).expect("each id answered once"));
    }
    assert!(sent.is_empty());
}

#[test]
fn a_batch_larger_than_the_socket_buffers_does_not_deadlock() {
    let (server, port) = echo_server(PacketServer::new());
    within_patience(move || {
        let mut client = builder().connect("127.0.0.1", port).unwrap();
        pipeline_a_batch(&mut client);
        // The link is still in step: a one-shot request after the batch.
        assert_eq!(client.request(b"after").unwrap(), b"after");
    });
    server.shutdown();
}

#[test]
fn a_tls_batch_larger_than_the_socket_buffers_does_not_deadlock() {
    let ca = Ca::new("packet duplex");
    let tls = server_config(&ca.server_cert(&["localhost"]));
    let (server, port) = echo_server(PacketServer::new().tls(tls));
    let client_tls = client_config(&ca);
    within_patience(move || {
        let mut client = builder()
            .tls(client_tls)
            .connect("localhost", port)
            .unwrap();
        pipeline_a_batch(&mut client);
        assert_eq!(client.request(b"after").unwrap(), b"after");
    });
    server.shutdown();
}

#[test]
fn a_server_answering_a_batch_out_of_order_keeps_reading_while_it_writes() {
    // The server queues an answer to every request as it arrives and only flushes when it
    // waits for the next one: both ends pipeline at once.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        let mut connection = PacketServer::new().accept(tcp).unwrap();
        for _ in 0..REQUESTS {
            let (id, payload) = connection.recv_request().unwrap();
            let answer = payload.iter().rev().copied().collect::<Vec<_>>();
            connection.respond(id, &answer).unwrap();
        }
        connection.flush().unwrap();
        // Open until the client is done.
        let _ = connection.recv_request();
    });
    within_patience(move || {
        let mut client = builder().connect("127.0.0.1", port).unwrap();
        pipeline_a_batch(&mut client);
    });
    server.join().unwrap();
}

#[test]
fn a_write_the_peer_never_reads_ends_at_the_write_timeout() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // A peer that accepts and then neither reads nor writes.
    let (hold, release) = mpsc::channel::<()>();
    let peer = thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        let _ = release.recv();
        drop(tcp);
    });
    let result = within_patience(move || {
        let mut client = builder()
            .write_timeout(Some(Duration::from_millis(200)))
            .connect("127.0.0.1", port)
            .unwrap();
        for _ in 0..REQUESTS {
            client.send_request(&[0x5A; PAYLOAD]).unwrap();
        }
        client
            .recv_response()
            .map(|_| ())
            .map_err(|e| (e.is_fatal(), e))
    });
    // The wait reports `TimedOut`; a blocking write past `SO_SNDTIMEO` reports `WouldBlock`.
    match result {
        Err((true, Error::Io(e))) => assert!(
            matches!(e.kind(), ErrorKind::TimedOut | ErrorKind::WouldBlock),
            "{e:?}"
        ),
        other => panic!("expected a fatal write timeout, got {other:?}"),
    }
    drop(hold);
    peer.join().unwrap();
}

#[test]
fn a_client_that_never_reads_stalls_on_tcp_instead_of_growing_the_servers_queue() {
    use tickwire_blocking::codec::packet::PacketConfig;

    let config = PacketConfig::server().with_max_queued(256 << 10);
    let (server, port) = echo_server(PacketServer::new().packet_config(config));
    within_patience(move || flood::never_reading_client(port, PATIENCE));
    server.shutdown();
}
