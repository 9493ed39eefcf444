//! Split halves in different tasks, TLS included: messages both ways at once, pings answered
//! and the close handshake completed when only the reader half is polled, on both runtimes.

use crate::support::{PATIENCE, accept_tls, echo, listen, tls_pair};
use tickwire_tokio::{
    ClientBuilder, CloseCode, CloseFrame, MaybeTlsStream, Message, Recv, ServerBuilder, WebSocket,
};
use tokio::time::timeout;

const MESSAGES: u32 = 2_000;

/// A TLS echo server for one connection; returns how many messages it echoed.
async fn tls_echo_server() -> (
    String,
    tokio::task::JoinHandle<u32>,
    tickwire_tokio::ClientTlsConfig,
) {
    let (server_tls, client_tls) = tls_pair();
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let ws = accept_tls(&listener, ServerBuilder::new(), &server_tls).await;
        echo(ws).await as u32
    });
    (
        format!("wss://127.0.0.1:{}/", addr.port()),
        server,
        client_tls,
    )
}

async fn halves_in_two_tasks() {
    let (url, server, client_tls) = tls_echo_server().await;
    let ws: WebSocket<MaybeTlsStream> = ClientBuilder::new()
        .tls(client_tls)
        .connect(&url)
        .await
        .unwrap();
    let (mut reader, mut writer) = ws.split();
    let writing = tokio::spawn(async move {
        for i in 0..MESSAGES {
            writer.send_text(&format!("m{i}")).unwrap();
            if i % 7 == 0 {
                writer.flush().await.unwrap();
            }
        }
        writer.flush().await.unwrap();
        writer
    });
    let reading = tokio::spawn(async move {
        for i in 0..MESSAGES {
            let expected = format!("m{i}");
            assert_eq!(
                reader.recv().await.unwrap(),
                Recv::Message(Message::Text(&expected))
            );
        }
        reader
    });
    let mut writer = timeout(PATIENCE, writing).await.unwrap().unwrap();
    let mut reader = timeout(PATIENCE, reading).await.unwrap().unwrap();
    writer.close(CloseCode::NORMAL, "").await.unwrap();
    let closed = Recv::Closed(Some(CloseFrame {
        code: CloseCode::NORMAL,
        reason: "",
    }));
    assert_eq!(
        reader.recv().await.unwrap(),
        closed,
        "the echo server's reply"
    );
    assert_eq!(reader.recv().await.unwrap(), closed, "the same end again");
    // Back together to end the transport the way RFC 6455 §7.1.1 asks (the server waits
    // for our FIN).
    let mut ws = reader.reunite(writer).unwrap();
    ws.finish().await.unwrap();
    assert_eq!(timeout(PATIENCE, server).await.unwrap().unwrap(), MESSAGES);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn halves_in_two_tasks_over_tls_multi_thread() {
    halves_in_two_tasks().await;
}

#[tokio::test(flavor = "current_thread")]
async fn halves_in_two_tasks_over_tls_current_thread() {
    halves_in_two_tasks().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_alone_answers_pings_and_finishes_the_peers_close_over_tls() {
    let (server_tls, client_tls) = tls_pair();
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let mut ws = accept_tls(&listener, ServerBuilder::new(), &server_tls).await;
        for round in 0..3u8 {
            ws.ping(&[round; 4]).unwrap();
            ws.flush().await.unwrap();
            assert_eq!(
                ws.recv().await.unwrap(),
                Recv::Message(Message::Pong(&[round; 4]))
            );
            ws.send_text("pong seen").unwrap();
            ws.flush().await.unwrap();
        }
        ws.close(CloseCode::GOING_AWAY, "bye").await.unwrap();
        // The client's reply arrives although its writer half is never used.
        assert!(
            matches!(ws.recv().await.unwrap(), Recv::Closed(Some(f)) if f.code == CloseCode::GOING_AWAY)
        );
        ws.finish().await
    });
    let ws = ClientBuilder::new()
        .tls(client_tls)
        .connect(&format!("wss://127.0.0.1:{}/", addr.port()))
        .await
        .unwrap();
    let (mut reader, writer) = ws.split();
    for _ in 0..3 {
        // Pings are returned to the caller too; the pong is already queued and written.
        match reader.recv().await.unwrap() {
            Recv::Message(Message::Ping(_)) => {
                assert_eq!(
                    reader.recv().await.unwrap(),
                    Recv::Message(Message::Text("pong seen"))
                );
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        reader.recv().await.unwrap(),
        Recv::Closed(Some(CloseFrame {
            code: CloseCode::GOING_AWAY,
            reason: "bye"
        }))
    );
    reader.reunite(writer).unwrap().finish().await.unwrap();
    timeout(PATIENCE, server).await.unwrap().unwrap().unwrap();
}

#[tokio::test(flavor = "current_thread")]
async fn the_writer_sends_while_the_reader_holds_a_message_and_a_writer_started_close() {
    let (url, server, client_tls) = tls_echo_server().await;
    let ws = ClientBuilder::new()
        .tls(client_tls)
        .connect(&url)
        .await
        .unwrap();
    let (mut reader, mut writer) = ws.split();
    writer.send_text("first").unwrap();
    writer.flush().await.unwrap();
    for i in 0..10 {
        let recv = reader.recv().await.unwrap();
        let Recv::Message(Message::Text(text)) = recv else {
            panic!("{recv:?}")
        };
        // The message is still lent from the reader while the writer sends and flushes
        // (the old shared lock made this wait on itself), and the peer receives it.
        writer.send_text(&format!("again {}", i + 1)).unwrap();
        timeout(PATIENCE, writer.flush()).await.unwrap().unwrap();
        assert_eq!(
            text,
            if i == 0 {
                "first".to_owned()
            } else {
                format!("again {i}")
            }
        );
    }
    writer.close(CloseCode::NORMAL, "").await.unwrap();
    while let Recv::Message(_) = reader.recv().await.unwrap() {}
    reader.reunite(writer).unwrap().finish().await.unwrap();
    assert_eq!(timeout(PATIENCE, server).await.unwrap().unwrap(), 11);
}

/// Both halves wait for the socket at once: the writer on a full send buffer (the peer does
/// not read at first), the reader with pongs owed. Every write wake-up must reach the task
/// that waits, or this hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_halves_wait_on_a_full_socket_and_both_are_woken() {
    const COUNT: u32 = 5_000;
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tickwire_tokio::accept(tcp).await.unwrap();
        // Not reading yet: the client's writer fills its socket.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let (mut next, mut pings, mut pongs) = (0u32, 0u64, 0u64);
        while next < COUNT || pongs < pings {
            match ws.recv().await.unwrap() {
                Recv::Message(Message::Binary(bytes)) => {
                    assert_eq!(bytes, payload(next).as_slice(), "message {next}");
                    next += 1;
                    if next % 100 == 0 {
                        ws.ping(&next.to_be_bytes()).unwrap();
                        ws.flush().await.unwrap();
                        pings += 1;
                    }
                }
                Recv::Message(Message::Pong(_)) => pongs += 1,
                other => panic!("{other:?}"),
            }
        }
        ws.close(CloseCode::NORMAL, "").await.unwrap();
        while !matches!(ws.recv().await.unwrap(), Recv::Closed(_)) {}
        ws.finish().await.unwrap();
        (next, pongs)
    });
    let ws = tickwire_tokio::connect(&format!("ws://{addr}/"))
        .await
        .unwrap();
    socket2::SockRef::from(ws.stream().tcp())
        .set_send_buffer_size(8 << 10)
        .unwrap();
    let (mut reader, mut writer) = ws.split();
    let writing = tokio::spawn(async move {
        for i in 0..COUNT {
            writer
                .with_sender(|sender| sender.binary(&payload(i)))
                .unwrap();
            if i % 10 == 9 {
                writer.flush().await.unwrap();
            }
        }
        writer.flush().await.unwrap();
        writer
    });
    let reading = tokio::spawn(async move {
        let mut pings = 0u64;
        loop {
            match reader.recv().await.unwrap() {
                Recv::Message(Message::Ping(_)) => pings += 1,
                Recv::Closed(_) => break,
                other => panic!("{other:?}"),
            }
        }
        (reader, pings)
    });
    let writer = timeout(PATIENCE, writing).await.unwrap().unwrap();
    let (reader, pings) = timeout(PATIENCE, reading).await.unwrap().unwrap();
    reader.reunite(writer).unwrap().finish().await.unwrap();
    let (received, pongs) = timeout(PATIENCE, server).await.unwrap().unwrap();
    assert_eq!(received, COUNT);
    assert_eq!(pongs, pings);
    assert_eq!(pings, u64::from(COUNT / 100));
}

/// Message `i` of the backpressure test: 1 KiB that names its number.
fn payload(i: u32) -> Vec<u8> {
    let mut bytes = vec![(i % 251) as u8; 1024];
    bytes[..4].copy_from_slice(&i.to_be_bytes());
    bytes
}

/// The reader's task holds a received message across `.await`s while the writer's task
/// sends: the writer does not wait for the reader, and the peer receives what it sent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_held_in_the_reader_task_does_not_stop_the_writer_task() {
    let (listener, addr) = listen().await;
    let server = tokio::spawn(async move {
        let (tcp, _) = listener.accept().await.unwrap();
        let mut ws = tickwire_tokio::accept(tcp).await.unwrap();
        ws.send_text("held").unwrap();
        ws.flush().await.unwrap();
        let order = match ws.recv().await.unwrap() {
            Recv::Message(Message::Text(text)) => text.to_owned(),
            other => panic!("{other:?}"),
        };
        ws.close(CloseCode::NORMAL, "done").await.unwrap();
        while let Recv::Message(_) = ws.recv().await.unwrap() {}
        ws.finish().await.unwrap();
        order
    });
    let ws = tickwire_tokio::connect(&format!("ws://{addr}/"))
        .await
        .unwrap();
    let (mut reader, mut writer) = ws.split();
    let (holding_tx, holding_rx) = tokio::sync::oneshot::channel();
    let (sent_tx, sent_rx) = tokio::sync::oneshot::channel::<()>();
    let reading = tokio::spawn(async move {
        let recv = reader.recv().await.unwrap();
        holding_tx.send(()).unwrap();
        // Still borrowed from the reader while the other task sends.
        sent_rx.await.unwrap();
        assert_eq!(recv, Recv::Message(Message::Text("held")));
        let closed = reader.recv().await.unwrap();
        assert_eq!(
            closed,
            Recv::Closed(Some(CloseFrame {
                code: CloseCode::NORMAL,
                reason: "done"
            }))
        );
        reader
    });
    holding_rx.await.unwrap();
    writer.send_text("sent meanwhile").unwrap();
    timeout(PATIENCE, writer.flush()).await.unwrap().unwrap();
    sent_tx.send(()).unwrap();
    let reader = timeout(PATIENCE, reading).await.unwrap().unwrap();
    reader.reunite(writer).unwrap().finish().await.unwrap();
    assert_eq!(
        timeout(PATIENCE, server).await.unwrap().unwrap(),
        "sent meanwhile"
    );
}
