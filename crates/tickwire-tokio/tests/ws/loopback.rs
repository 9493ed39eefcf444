//! Client against server over loopback: echo on both runtimes, plain and TLS, deflate,
//! subprotocols and headers, read timeouts, and the close handshake ended by either side.

use std::time::Duration;

use crate::support::{PATIENCE, accept_tls, echo, listen, tls_pair};
use tickwire_tokio::{
    ClientBuilder, CloseCode, CloseFrame, DeflateConfig, Message, Recv, Response, ServerBuilder,
    WebSocket, accept, connect,
};
use tokio::time::timeout;

async fn round_trips<S: tickwire_tokio::Transport>(ws: &mut WebSocket<S>, count: usize) {
    for i in 0..count {
        let text = format!("message {i}");
        ws.send_text(&text).unwrap();
        ws.send_binary(&[i as u8; 3]).unwrap();
        ws.flush().await.unwrap();
        assert_eq!(
            ws.recv().await.unwrap(),
            Recv::Message(Message::Text(&text))
        );
        assert_eq!(
            ws.recv().await.unwrap(),
            Recv::Message(Message::Binary(&[i as u8; 3]))
        );
    }
}

async fn plain_echo_round_trips() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        echo(accept(tcp).await.unwrap()).await
    });
    let mut ws = connect(&format!("ws://{addr}/echo")).await.unwrap();
    round_trips(&mut ws, 100).await;
    ws.close(CloseCode::NORMAL, "bye").await.unwrap();
    // The reply echoes the code (RFC 6455 §5.5.1), once; later calls give the same end.
    let closed = ws.recv().await.unwrap();
    assert!(
        matches!(closed, Recv::Closed(Some(frame)) if frame.code == CloseCode::NORMAL),
        "{closed:?}"
    );
    assert!(
        matches!(ws.recv().await.unwrap(), Recv::Closed(Some(frame)) if frame.code == CloseCode::NORMAL)
    );
    ws.finish().await.unwrap();
    assert_eq!(timeout(PATIENCE, server).await.unwrap().unwrap(), 200);
}

#[tokio::test(flavor = "current_thread")]
async fn echo_on_the_current_thread_runtime() {
    plain_echo_round_trips().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_on_the_multi_thread_runtime() {
    plain_echo_round_trips().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_over_tls_with_the_server_closing_first() {
    let (server_tls, client_tls) = tls_pair();
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let mut ws = accept_tls(&listener, ServerBuilder::new(), &server_tls).await;
        for _ in 0..50 {
            let (recv, mut sender) = ws.recv_with_sender().await.unwrap();
            let Recv::Message(Message::Text(text)) = recv else {
                panic!("{recv:?}")
            };
            sender.text(text).unwrap();
            ws.flush().await.unwrap();
        }
        ws.close(CloseCode::GOING_AWAY, "done").await.unwrap();
        ws.finish().await
    });
    let mut ws = ClientBuilder::new()
        .tls(client_tls)
        .connect(&format!("wss://{addr}/"))
        .await
        .unwrap();
    assert!(ws.stream().tls().is_some());
    for i in 0..50 {
        ws.send_text(&format!("secure {i}")).unwrap();
        ws.flush().await.unwrap();
        let expected = format!("secure {i}");
        assert_eq!(
            ws.recv().await.unwrap(),
            Recv::Message(Message::Text(&expected))
        );
    }
    let closed = Recv::Closed(Some(CloseFrame {
        code: CloseCode::GOING_AWAY,
        reason: "done",
    }));
    assert_eq!(ws.recv().await.unwrap(), closed);
    assert_eq!(ws.recv().await.unwrap(), closed, "the same end again");
    ws.finish().await.unwrap();
    timeout(PATIENCE, server).await.unwrap().unwrap().unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn deflate_is_negotiated_and_large_messages_round_trip() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let ws = ServerBuilder::new()
            .deflate(DeflateConfig::default())
            .accept(tcp)
            .await
            .unwrap();
        assert!(ws.deflate().is_some());
        echo(ws).await
    });
    let mut ws = ClientBuilder::new()
        .deflate(DeflateConfig::default())
        .connect(&format!("ws://{addr}/"))
        .await
        .unwrap();
    assert!(ws.deflate().is_some());
    let big = "snapshot ".repeat(100_000);
    ws.send_text(&big).unwrap();
    ws.flush().await.unwrap();
    assert_eq!(ws.recv().await.unwrap(), Recv::Message(Message::Text(&big)));
    round_trips(&mut ws, 20).await;
    ws.finish().await.unwrap();
    assert_eq!(timeout(PATIENCE, server).await.unwrap().unwrap(), 41);
}

#[tokio::test(flavor = "current_thread")]
async fn subprotocol_headers_and_the_accept_hook() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let ws = ServerBuilder::new()
            .accept_with(tcp, |request| {
                assert_eq!(request.path(), "/feed?x=1");
                assert_eq!(request.header("authorization"), Some(&b"Bearer t"[..]));
                Response::accept(request).subprotocol("v2")
            })
            .await
            .unwrap();
        assert_eq!(ws.subprotocol(), Some("v2"));
        echo(ws).await
    });
    let mut ws = ClientBuilder::new()
        .header("Authorization", "Bearer t")
        .subprotocol("v1")
        .subprotocol("v2")
        .connect(&format!("ws://{addr}/feed?x=1"))
        .await
        .unwrap();
    assert_eq!(ws.subprotocol(), Some("v2"));
    ws.finish().await.unwrap();
    assert_eq!(timeout(PATIENCE, server).await.unwrap().unwrap(), 0);
}

#[tokio::test(flavor = "current_thread")]
async fn a_rejected_upgrade_and_a_read_timeout() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let refused = ServerBuilder::new()
            .accept_with(tcp, |_| Response::reject(403))
            .await;
        assert!(matches!(refused, Err(tickwire_tokio::Error::Rejected(403))));
        let (tcp, _) = listener.accept().await.unwrap();
        echo(accept(tcp).await.unwrap()).await
    });
    let refused = connect(&format!("ws://{addr}/")).await;
    assert!(
        matches!(refused, Err(tickwire_tokio::Error::Handshake(_))),
        "{refused:?}"
    );
    let mut ws = ClientBuilder::new()
        .read_timeout(Some(Duration::from_millis(30)))
        .connect(&format!("ws://{addr}/"))
        .await
        .unwrap();
    assert_eq!(ws.recv().await.unwrap(), Recv::Timeout);
    // Each receive has its own deadline: the next one waits again, then times out again.
    let waited = std::time::Instant::now();
    assert_eq!(ws.recv().await.unwrap(), Recv::Timeout);
    assert!(waited.elapsed() >= Duration::from_millis(30));
    // Still usable after the timeout.
    round_trips(&mut ws, 3).await;
    ws.finish().await.unwrap();
    assert_eq!(timeout(PATIENCE, server).await.unwrap().unwrap(), 6);
}

#[tokio::test(flavor = "current_thread")]
async fn a_peer_that_vanishes_is_unexpected_eof() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        drop(accept(tcp).await.unwrap());
    });
    let mut ws = connect(&format!("ws://{addr}/")).await.unwrap();
    server.await.unwrap();
    assert!(matches!(
        ws.recv().await,
        Err(tickwire_tokio::Error::UnexpectedEof)
    ));
}

#[tokio::test(flavor = "current_thread")]
async fn a_silent_server_is_a_handshake_timeout() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        // Accepts, reads the request, never answers.
        let (mut tcp, _) = listener.accept().await.unwrap();
        let mut sink = [0u8; 1024];
        while let Ok(n) = tokio::io::AsyncReadExt::read(&mut tcp, &mut sink).await {
            if n == 0 {
                break;
            }
        }
    });
    let failed = ClientBuilder::new()
        .handshake_timeout(Duration::from_millis(50))
        .connect(&format!("ws://{addr}/"))
        .await;
    assert!(
        matches!(failed, Err(tickwire_tokio::Error::HandshakeTimeout)),
        "{failed:?}"
    );
    timeout(PATIENCE, server).await.unwrap().unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn a_plaintext_client_of_a_tls_server_gets_a_400() {
    let (server_tls, _) = tls_pair();
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        ServerBuilder::new()
            .accept_tls(tcp, &server_tls)
            .await
            .map(drop)
    });
    let refused = connect(&format!("ws://{addr}/")).await;
    match refused {
        Err(tickwire_tokio::Error::Handshake(e)) => assert!(e.to_string().contains("400"), "{e}"),
        other => panic!("{other:?}"),
    }
    let failed = timeout(PATIENCE, server).await.unwrap().unwrap();
    assert!(
        matches!(
            failed,
            Err(tickwire_tokio::Error::Tls(tickwire_tokio::TlsError::NotTls))
        ),
        "{failed:?}"
    );
}
