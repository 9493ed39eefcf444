//! The codec's timers on tokio's clock: keepalive pings, the pong deadline, the idle
//! timeout, and the close timeout of a peer that never answers.

use std::time::Duration;

use crate::support::{PATIENCE, listen};
use tickwire_tokio::codec::ws::Error as WsError;
use tickwire_tokio::{
    ClientBuilder, CloseCode, Config, Error, Message, Recv, ServerBuilder, accept, connect,
};
use tokio::time::timeout;

#[tokio::test(flavor = "current_thread")]
async fn keepalive_pings_go_out_while_the_client_waits() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = accept(tcp).await.unwrap();
        let mut pings = 0;
        loop {
            match ws.recv().await.unwrap() {
                Recv::Message(Message::Ping(_)) => pings += 1,
                Recv::Closed(_) => break,
                other => panic!("{other:?}"),
            }
        }
        ws.finish().await.unwrap();
        pings
    });
    let mut ws = ClientBuilder::new()
        .keepalive(Duration::from_millis(40), Duration::from_secs(5))
        .connect(&format!("ws://{addr}/"))
        .await
        .unwrap();
    // The client only waits; what arrives is the answers to its pings (pongs are returned
    // to the caller too), numbered from 1.
    for expected in 1..=3u64 {
        let received = timeout(PATIENCE, ws.recv()).await.unwrap().unwrap();
        assert_eq!(
            received,
            Recv::Message(Message::Pong(&expected.to_be_bytes())),
            "pong {expected}"
        );
    }
    ws.finish().await.unwrap();
    let pings = timeout(PATIENCE, server).await.unwrap().unwrap();
    assert_eq!(pings, 3);
}

/// A client with a 30 ms keepalive to `addr`, once its receive failed on the pong timeout.
async fn failed_on_a_missing_pong(
    addr: std::net::SocketAddr,
) -> tickwire_tokio::WebSocket<tickwire_tokio::MaybeTlsStream> {
    let mut ws = ClientBuilder::new()
        .keepalive(Duration::from_millis(30), Duration::from_millis(60))
        .connect(&format!("ws://{addr}/"))
        .await
        .unwrap();
    let failed = timeout(PATIENCE, ws.recv()).await.unwrap();
    assert!(
        matches!(failed, Err(Error::Protocol(WsError::PongTimeout))),
        "{failed:?}"
    );
    ws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_pong_fails_the_connection() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut config = Config::server();
        config.auto_pong = false;
        let mut ws = ServerBuilder::new()
            .config(config)
            .accept(tcp)
            .await
            .unwrap();
        // Reads (so the pings arrive) but never answers them.
        loop {
            match ws.recv().await {
                Ok(Recv::Closed(frame)) => return frame.map(|f| f.code),
                Ok(_) => {}
                Err(e) => panic!("{e}"),
            }
        }
    });
    let mut ws = failed_on_a_missing_pong(addr).await;
    ws.finish().await.unwrap();
    // The peer is told why: 1001 going away.
    let code = timeout(PATIENCE, server).await.unwrap().unwrap();
    assert_eq!(code, Some(CloseCode::GOING_AWAY));
}

/// After a pong timeout the peer is not answering: `finish` writes the close it owes and
/// closes without waiting the close timeout (5 s) for a FIN that is not coming.
#[tokio::test(flavor = "current_thread")]
async fn finish_after_a_pong_timeout_does_not_wait_for_the_silent_peer() {
    let (listener, addr) = listen().await;
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    // Completes the handshake, then neither reads nor closes until released.
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let _ws = ServerBuilder::new().accept(tcp).await.unwrap();
        let _ = timeout(PATIENCE, released).await;
    });
    let mut ws = failed_on_a_missing_pong(addr).await;
    let started = std::time::Instant::now();
    ws.finish().await.unwrap();
    let took = started.elapsed();
    release.send(()).unwrap();
    server.await.unwrap();
    assert!(
        took < Duration::from_secs(2),
        "finish waited {took:?} on a peer that stopped answering (close timeout 5 s)"
    );
}

#[tokio::test(flavor = "current_thread")]
async fn an_idle_client_is_dropped_by_the_server() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = ServerBuilder::new()
            .idle_timeout(Some(Duration::from_millis(80)))
            .accept(tcp)
            .await
            .unwrap();
        let failed = ws.recv().await;
        assert!(
            matches!(failed, Err(Error::Protocol(WsError::IdleTimeout))),
            "{failed:?}"
        );
        ws.finish().await.unwrap();
    });
    let mut ws = connect(&format!("ws://{addr}/")).await.unwrap();
    let close = timeout(PATIENCE, ws.recv()).await.unwrap().unwrap();
    assert!(
        matches!(close, Recv::Closed(Some(f)) if f.code == CloseCode::GOING_AWAY),
        "{close:?}"
    );
    ws.finish().await.unwrap();
    timeout(PATIENCE, server).await.unwrap().unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn finish_gives_up_on_a_peer_that_never_answers_the_close() {
    let (listener, addr) = listen().await;
    let (_hold, held) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let ws = accept(tcp).await.unwrap();
        // Never reads: the close is not answered.
        let _ = held.await;
        drop(ws);
    });
    let mut config = Config::client();
    config.close_timeout = Duration::from_millis(100);
    let mut ws = ClientBuilder::new()
        .config(config)
        .connect(&format!("ws://{addr}/"))
        .await
        .unwrap();
    let finished = timeout(PATIENCE, ws.finish()).await.unwrap();
    assert!(
        matches!(finished, Err(Error::Protocol(WsError::CloseTimeout))),
        "{finished:?}"
    );
    // Calling it again does nothing more.
    ws.finish().await.unwrap();
    drop(_hold);
    server.await.unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_flush_to_a_peer_that_stops_reading_times_out_and_the_rest_goes_out_later() {
    const MESSAGES: usize = 512;
    const SIZE: usize = 64 * 1024;
    let (listener, addr) = listen().await;
    let (read_now, reading) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = accept(tcp).await.unwrap();
        // Reads nothing until told: the client's 32 MiB fill both sockets' buffers.
        reading.await.unwrap();
        let mut received = 0;
        while received < MESSAGES {
            match ws.recv().await.unwrap() {
                Recv::Message(Message::Binary(payload)) => {
                    assert_eq!(payload.len(), SIZE, "message {received}");
                    assert!(
                        payload.iter().all(|&b| b == received as u8),
                        "message {received} whole and in order"
                    );
                    received += 1;
                }
                other => panic!("{other:?}"),
            }
        }
        ws.close(CloseCode::NORMAL, "").await.unwrap();
        ws.finish().await.unwrap();
        received
    });
    let mut ws = connect(&format!("ws://{addr}/")).await.unwrap();
    for i in 0..MESSAGES {
        ws.send_binary(&vec![i as u8; SIZE]).unwrap();
    }
    let write_timeout = Duration::from_millis(50);
    ws.set_write_timeout(Some(write_timeout));
    let started = std::time::Instant::now();
    let timed_out = timeout(PATIENCE, ws.flush()).await.unwrap();
    assert!(
        matches!(&timed_out, Err(Error::Io(e)) if e.kind() == std::io::ErrorKind::TimedOut),
        "{timed_out:?}"
    );
    assert!(started.elapsed() >= write_timeout, "not before the timeout");
    assert!(
        ws.connection().wants_write(ws.buffers()),
        "what the socket did not take stays queued"
    );
    // The peer reads again: the next flush writes the rest, no frame split or lost.
    ws.set_write_timeout(None);
    read_now.send(()).unwrap();
    timeout(PATIENCE, ws.flush()).await.unwrap().unwrap();
    match timeout(PATIENCE, ws.recv()).await.unwrap().unwrap() {
        Recv::Closed(_) => {}
        other => panic!("{other:?}"),
    }
    ws.finish().await.unwrap();
    assert_eq!(timeout(PATIENCE, server).await.unwrap().unwrap(), MESSAGES);
}
