//! Many requests in flight: answers out of order, per-request timeouts, cancellation, busy
//! refusals at the server's cap, and keepalive against a silent peer.

use std::collections::HashMap;
use std::task::Poll;
use std::time::Duration;

use tickwire_tokio::codec::mux::{ClientConfig, ServerConfig};
use tickwire_tokio::packet::{Error, Keepalive, PacketClient, PacketServer, RequestId};

use crate::support::{PATIENCE, builder, echo_server, listen};

#[tokio::test]
async fn many_in_flight_are_matched_when_answered_in_reverse() {
    const N: usize = 64;
    let (listener, port) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut connection = PacketServer::new().accept(tcp).await.unwrap();
        let mut received = Vec::new();
        while received.len() < N {
            let (id, payload) = connection.recv_request().await.unwrap();
            received.push((id, payload.to_vec()));
        }
        for (id, payload) in received.iter().rev() {
            let mut answer = b"re: ".to_vec();
            answer.extend_from_slice(payload);
            connection.respond(*id, &answer).unwrap();
        }
        connection.flush().await.unwrap();
        // Keep the connection open until the client is done.
        let _ = connection.recv_request().await;
    });
    let mut client = builder().connect("127.0.0.1", port).await.unwrap();
    let mut sent = HashMap::new();
    for i in 0..N {
        let payload = format!("request {i}").into_bytes();
        sent.insert(client.send_request(&payload).unwrap(), payload);
    }
    assert_eq!(client.in_flight(), N);
    let mut order = Vec::new();
    for _ in 0..N {
        let (id, answer) = client.recv_response().await.unwrap();
        let payload = sent.remove(&id).expect("each id answered once");
        assert_eq!(answer, [&b"re: "[..], &payload].concat());
        order.push(id);
    }
    assert!(sent.is_empty());
    assert!(
        order.windows(2).all(|w| w[0].0 > w[1].0),
        "answered in reverse"
    );
    assert!(matches!(
        client.recv_response().await,
        Err(Error::NothingInFlight)
    ));
    drop(client);
    server.await.unwrap();
}

#[tokio::test]
async fn a_request_times_out_and_its_late_answer_is_dropped() {
    let (listener, port) = listen().await;
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut connection = PacketServer::new().accept(tcp).await.unwrap();
        let (slow, _) = connection.recv_request().await.unwrap();
        // Answer the first request only after its deadline, then echo the rest.
        tokio::time::sleep(Duration::from_millis(300)).await;
        connection.respond(slow, b"too late").unwrap();
        loop {
            let Ok((id, payload)) = connection.recv_request().await else {
                return;
            };
            let payload = payload.to_vec();
            connection.respond(id, &payload).unwrap();
        }
    });
    let mut client = builder()
        .request_timeout(Some(Duration::from_millis(100)))
        .connect("127.0.0.1", port)
        .await
        .unwrap();
    let slow = client.send_request(b"slow").unwrap();
    match client.recv_response().await {
        Err(error @ Error::TimedOut(_)) => {
            assert_eq!(error.request_id(), Some(slow));
            assert!(!error.is_fatal());
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The late answer arrives first on the wire and is dropped; this request gets its own.
    let answer = client.request(b"next").await.unwrap();
    assert_eq!(answer, b"next");
}

#[tokio::test]
async fn cancelled_requests_never_get_an_answer_and_a_dropped_request_is_cancelled() {
    let (server, port) = echo_server(PacketServer::new()).await;
    let mut client = builder().connect("127.0.0.1", port).await.unwrap();
    let cancelled = client.send_request(b"cancelled").unwrap();
    let kept = client.send_request(b"kept").unwrap();
    client.cancel(cancelled).unwrap();
    assert!(client.cancel(cancelled).is_err(), "no longer in flight");
    assert_eq!(client.recv_response().await.unwrap(), (kept, &b"kept"[..]));
    assert!(matches!(
        client.recv_response().await,
        Err(Error::NothingInFlight)
    ));

    // A `request` future dropped before its answer: the next request gets its own answer.
    // Polled once (the request is written), then dropped.
    let mut abandoned = Box::pin(client.request(b"abandoned"));
    let first = std::future::poll_fn(|cx| Poll::Ready(abandoned.as_mut().poll(cx).is_pending()));
    assert!(first.await, "no answer can have come yet");
    drop(abandoned);
    assert_eq!(client.request(b"mine").await.unwrap(), b"mine");
    assert_eq!(client.request(b"and this").await.unwrap(), b"and this");
    server.shutdown().await;
}

#[tokio::test]
async fn requests_past_the_server_cap_are_answered_busy() {
    let (listener, port) = listen().await;
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let server = PacketServer::new().mux_config(ServerConfig::new().with_max_in_flight(2));
        let mut connection = server.accept(tcp).await.unwrap();
        let mut held = Vec::new();
        while held.len() < 2 {
            held.push(connection.recv_request().await.unwrap().0);
        }
        // The others are refused "busy" while this waits.
        let _ = tokio::time::timeout(Duration::from_millis(200), connection.recv_request()).await;
        assert_eq!(connection.stats().busy, 3);
        for id in held {
            connection.respond(id, b"done").unwrap();
        }
        connection.flush().await.unwrap();
        let _ = connection.recv_request().await;
    });
    let mut client = builder().connect("127.0.0.1", port).await.unwrap();
    let ids: Vec<RequestId> = (0..5)
        .map(|_| client.send_request(b"work").unwrap())
        .collect();
    let (mut busy, mut done) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        match client.recv_response().await {
            Ok((id, answer)) => {
                assert_eq!(answer, b"done");
                done.push(id);
            }
            Err(error @ Error::Busy(_)) => {
                assert!(!error.is_fatal());
                busy.push(error.request_id().unwrap());
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!((busy.len(), done.len()), (3, 2));
    busy.extend(done);
    busy.sort();
    assert_eq!(busy, ids);
    assert!(!client.is_closed());
}

#[tokio::test]
async fn a_silent_peer_fails_the_connection_at_the_keepalive_deadline() {
    let (listener, port) = listen().await;
    // Accepts and never reads or answers.
    let silent = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        tokio::time::sleep(PATIENCE).await;
        drop(tcp);
    });
    let mut client = builder()
        .keepalive(Some(Keepalive {
            interval: Duration::from_millis(100),
            timeout: Duration::from_millis(200),
        }))
        .connect("127.0.0.1", port)
        .await
        .unwrap();
    client.send_request(b"anyone?").unwrap();
    let outcome = tokio::time::timeout(PATIENCE, client.recv_response()).await;
    match outcome.expect("the keepalive deadline ends the wait") {
        Err(error @ Error::KeepaliveTimeout) => assert!(error.is_fatal()),
        other => panic!("expected KeepaliveTimeout, got {other:?}"),
    }
    assert!(client.is_closed());
    assert!(matches!(client.request(b"again").await, Err(Error::Closed)));
    silent.abort();
}

#[tokio::test]
async fn a_local_refusal_leaves_the_connection_usable() {
    let (server, port) = echo_server(PacketServer::new()).await;
    let mut client = builder()
        .mux_config(ClientConfig::new().with_max_in_flight(1))
        .connect("127.0.0.1", port)
        .await
        .unwrap();
    let first = client.send_request(b"one").unwrap();
    match client.send_request(b"two") {
        Err(error @ Error::Mux(_)) => assert!(!error.is_fatal()),
        other => panic!("expected back-pressure, got {other:?}"),
    }
    assert!(matches!(
        client.request(b"x").await,
        Err(Error::RequestsInFlight)
    ));
    assert_eq!(client.recv_response().await.unwrap(), (first, &b"one"[..]));
    assert_eq!(client.request(b"three").await.unwrap(), b"three");
    server.shutdown().await;
}

#[tokio::test]
async fn a_batch_larger_than_the_socket_buffers_does_not_deadlock() {
    // 16 MiB each way: neither end's writes fit in the kernel's buffers, so each must keep
    // reading while its own writes wait.
    const N: usize = 256;
    let (server, port) = echo_server(PacketServer::new()).await;
    let mut client = builder().connect("127.0.0.1", port).await.unwrap();
    let mut sent = HashMap::new();
    for i in 0..N {
        let payload = vec![i as u8; 64 << 10];
        sent.insert(client.send_request(&payload).unwrap(), payload);
    }
    let all = async {
        for _ in 0..N {
            let (id, answer) = client.recv_response().await.unwrap();
            assert_eq!(answer, sent.remove(&id).unwrap());
        }
    };
    tokio::time::timeout(PATIENCE, all)
        .await
        .expect("both ends keep reading while their writes wait");
    assert!(sent.is_empty());
    server.shutdown().await;
}

#[tokio::test]
async fn a_server_with_keepalive_drops_a_client_that_never_answers_pings() {
    use tokio::io::AsyncReadExt;

    let server = PacketServer::new().keepalive(Some(Keepalive {
        interval: Duration::from_millis(100),
        timeout: Duration::from_millis(200),
    }));
    let (server, port) = echo_server(server).await;
    let mut raw = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let mut received = Vec::new();
    let read = tokio::time::timeout(PATIENCE, raw.read_to_end(&mut received)).await;
    let read = read.expect("the server ends the connection");
    assert!(read.is_ok() || received.len() >= 25, "{read:?}");
    assert_eq!(&received[..2], b"TW", "a ping came first");
    assert_eq!(received[16], 0x01, "kind: ping");
    server.shutdown().await;
}

#[tokio::test]
async fn a_read_timeout_is_reported_and_the_connection_carries_on() {
    let (listener, port) = listen().await;
    tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut connection = PacketServer::new().accept(tcp).await.unwrap();
        let (id, _) = connection.recv_request().await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        connection.respond(id, b"slow but sure").unwrap();
        connection.flush().await.unwrap();
        let _ = connection.recv_request().await;
    });
    let mut client = builder()
        .read_timeout(Some(Duration::from_millis(100)))
        .connect("127.0.0.1", port)
        .await
        .unwrap();
    let id = client.send_request(b"slow").unwrap();
    match client.recv_response().await {
        Err(error @ Error::ReadTimeout) => assert!(!error.is_fatal()),
        other => panic!("expected a read timeout, got {other:?}"),
    }
    let answered = loop {
        match client.recv_response().await {
            Ok((answered, payload)) => break (answered, payload.to_vec()),
            Err(Error::ReadTimeout) => continue,
            Err(other) => panic!("unexpected {other:?}"),
        }
    };
    assert_eq!(answered, (id, b"slow but sure".to_vec()));
}

#[path = "../../../tickwire-blocking/tests/packet_support/flood.rs"]
mod flood;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_never_reads_stalls_on_tcp_instead_of_growing_the_servers_queue() {
    use tickwire_tokio::codec::packet::PacketConfig;

    let config = PacketConfig::server().with_max_queued(256 << 10);
    let (server, port) = echo_server(PacketServer::new().packet_config(config)).await;
    tokio::time::timeout(
        PATIENCE,
        tokio::task::spawn_blocking(move || flood::never_reading_client(port, PATIENCE)),
    )
    .await
    .expect("the flood and its answers within the patience")
    .unwrap();
    server.shutdown().await;
}

/// How long the write-timeout tests let the socket take nothing.
const WRITE_TIMEOUT: Duration = Duration::from_millis(200);

/// Whether `result` is the write timeout's fatal `TimedOut` I/O error.
fn is_write_timeout<T: std::fmt::Debug>(result: &Result<T, Error>) -> bool {
    matches!(result, Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut)
}

/// A client with the write timeout and 64 MiB of requests queued (far more than the two
/// sockets' buffers hold) to a server that accepted and reads nothing; the task holding the
/// server's end.
async fn client_to_a_server_that_reads_nothing() -> (PacketClient, tokio::task::JoinHandle<()>) {
    let (listener, port) = listen().await;
    let holder = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        tokio::time::sleep(PATIENCE).await;
        drop(tcp);
    });
    let mut client = builder()
        .write_timeout(Some(WRITE_TIMEOUT))
        .request_timeout(None)
        .keepalive(None)
        .connect("127.0.0.1", port)
        .await
        .unwrap();
    let payload = vec![0x33; 1 << 20];
    for _ in 0..64 {
        client.send_request(&payload).unwrap();
    }
    (client, holder)
}

/// `wait` (on the client) ends in the write timeout's fatal error, not before the timeout.
async fn ends_in_the_write_timeout<T: std::fmt::Debug>(
    wait: impl std::future::Future<Output = Result<T, Error>>,
) {
    let started = std::time::Instant::now();
    let result = tokio::time::timeout(PATIENCE, wait)
        .await
        .expect("the write timeout ends the wait, not the test's patience");
    assert!(is_write_timeout(&result), "got {result:?}");
    assert!(result.unwrap_err().is_fatal());
    assert!(started.elapsed() >= WRITE_TIMEOUT);
}

#[tokio::test]
async fn a_client_whose_server_stopped_reading_fails_at_the_write_timeout() {
    let (mut client, holder) = client_to_a_server_that_reads_nothing().await;
    ends_in_the_write_timeout(client.recv_response()).await;
    assert!(matches!(client.send_request(b"after"), Err(Error::Closed)));
    holder.abort();
}

#[tokio::test]
async fn a_flush_to_a_server_that_stopped_reading_fails_at_the_write_timeout() {
    let (mut client, holder) = client_to_a_server_that_reads_nothing().await;
    ends_in_the_write_timeout(client.flush()).await;
    assert!(matches!(client.flush().await, Err(Error::Closed)));
    holder.abort();
}

#[tokio::test]
async fn a_server_drops_a_client_that_stopped_reading_at_the_write_timeout() {
    use tickwire_tokio::codec::buf::WriteBuf;
    use tickwire_tokio::codec::packet::{PacketConfig, PacketWriter};
    use tokio::io::AsyncWriteExt;

    let (listener, port) = listen().await;
    // A client that sends 16 MiB of 64 KiB requests and reads none of the answers.
    let flood = tokio::spawn(async move {
        let mut tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .unwrap();
        let mut writer = PacketWriter::new(PacketConfig::client());
        let mut bytes = WriteBuf::new(0, 0);
        let payload = vec![0x5A; 64 << 10];
        for id in 1..=256 {
            writer.encode(&mut bytes, id, &payload).unwrap();
        }
        // Stalls once the server stops reading; the task is aborted at the end.
        let _ = tcp.write_all(bytes.as_slice()).await;
        tokio::time::sleep(PATIENCE).await;
        drop(tcp);
    });
    let (tcp, _) = listener.accept().await.unwrap();
    let mut connection = PacketServer::new()
        .write_timeout(Some(WRITE_TIMEOUT))
        .packet_config(PacketConfig::server().with_max_queued(256 << 10))
        .accept(tcp)
        .await
        .unwrap();
    let ended = tokio::time::timeout(PATIENCE, async {
        loop {
            match connection.recv_request().await {
                Ok((id, payload)) => {
                    let answer = payload.to_vec();
                    connection.respond(id, &answer).unwrap();
                }
                Err(error) => break error,
            }
        }
    })
    .await
    .expect("the write timeout ends the connection, not the test's patience");
    assert!(is_write_timeout::<()>(&Err(ended)));
    flood.abort();
}
