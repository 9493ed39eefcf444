//! The `stream` feature: a WebSocket as a `Stream` of owned messages and a `Sink` of them,
//! as code written against tokio-tungstenite uses it.

use crate::support::{PATIENCE, listen};
use futures_util::{SinkExt, StreamExt};
use tickwire_tokio::{CloseCode, OwnedMessage, accept, connect};
use tokio::time::timeout;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_and_sink_of_owned_messages() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = accept(tcp).await.unwrap();
        let mut seen = 0;
        // Echo through the Sink until the stream ends with the close handshake.
        while let Some(message) = ws.next().await {
            match message.unwrap() {
                OwnedMessage::Close(_) => {}
                message => {
                    seen += 1;
                    ws.send(message).await.unwrap();
                }
            }
        }
        ws.finish().await.unwrap();
        seen
    });
    let mut ws = connect(&format!("ws://{addr}/")).await.unwrap();
    for i in 0..100u8 {
        ws.feed(OwnedMessage::Text(format!("t{i}"))).await.unwrap();
        ws.feed(OwnedMessage::Binary(vec![i; 10])).await.unwrap();
    }
    ws.flush().await.unwrap();
    for i in 0..100u8 {
        assert_eq!(
            ws.next().await.unwrap().unwrap(),
            OwnedMessage::Text(format!("t{i}"))
        );
        assert_eq!(
            ws.next().await.unwrap().unwrap(),
            OwnedMessage::Binary(vec![i; 10])
        );
    }
    ws.send(OwnedMessage::Close(Some((
        CloseCode::NORMAL,
        "done".into(),
    ))))
    .await
    .unwrap();
    // The reply echoes the code (RFC 6455 §5.5.1), not the reason.
    assert_eq!(
        ws.next().await.unwrap().unwrap(),
        OwnedMessage::Close(Some((CloseCode::NORMAL, String::new())))
    );
    assert!(ws.next().await.is_none());
    ws.finish().await.unwrap();
    assert_eq!(timeout(PATIENCE, server).await.unwrap().unwrap(), 200);
}
