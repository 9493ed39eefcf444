//! Cancel safety, as a user of `tokio::select!` would see it: `recv()` and `flush()` raced
//! against a short timer, over TLS with permessage-deflate and fragmented messages, through a
//! relay that cuts the stream into small pieces and pauses, so futures are dropped in the
//! middle of TLS records and WebSocket frames. Every message must arrive exactly once, whole
//! and in order.

use std::time::Duration;

use crate::support::{self, FAST, PATIENCE, Pace, listen, message_text, relay, tls_pair};
use tickwire_tokio::{
    ClientBuilder, Config, DeflateConfig, MaybeTlsStream, Message, Recv, ServerBuilder, WebSocket,
};
use tokio::time::{sleep, timeout};

const MESSAGES: u32 = 100_000;

/// Fragments of at most 48 bytes: most messages take several frames. The close timeout
/// covers the slow relay draining the whole stream before the close frame.
fn fragmenting(mut config: Config) -> Config {
    config.fragment_size = Some(48);
    config.close_timeout = PATIENCE;
    config
}

/// A pace that cuts into small pieces and pauses longer than the racing timer.
const CHOPPY: Pace = Pace {
    max_piece: 700,
    pause_every: 3,
    pause: Duration::from_millis(1),
};

/// A peer that reads in pieces with pauses: the sender's socket fills and flushes wait.
const SLOW_READER: Pace = Pace {
    max_piece: 4096,
    pause_every: 4,
    pause: Duration::from_millis(1),
};

/// The server side: TLS, permessage-deflate, fragmenting.
async fn accept_one(
    listener: tokio::net::TcpListener,
    tls: tickwire_tokio::ServerTlsConfig,
) -> WebSocket<MaybeTlsStream> {
    let builder = ServerBuilder::new()
        .config(fragmenting(Config::server()))
        .deflate(DeflateConfig::default());
    let ws = support::accept_tls(&listener, builder, &tls).await;
    assert!(ws.deflate().is_some());
    ws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recv_raced_against_a_timer_loses_no_message() {
    let (server_tls, client_tls) = tls_pair();
    let (listener, server_addr) = listen().await;
    let server = tokio::spawn(async move {
        let mut ws = accept_one(listener, server_tls).await;
        assert!(ws.deflate().is_some());
        for i in 0..MESSAGES {
            ws.send_text(&message_text(i)).unwrap();
            // Large writes: TLS records (16 KiB at most) end in the middle of frames.
            if i % 1024 == 1023 {
                ws.flush().await.unwrap();
            }
        }
        ws.flush().await.unwrap();
        ws.finish().await
    });
    let addr = relay(server_addr, FAST, CHOPPY).await;
    let mut ws = ClientBuilder::new()
        .tls(client_tls)
        .deflate(DeflateConfig::default())
        .connect(&format!("wss://127.0.0.1:{}/", addr.port()))
        .await
        .unwrap();
    assert!(ws.deflate().is_some());
    let (mut next, mut cancelled, mut mid_frame) = (0u32, 0u64, 0u64);
    let deadline = tokio::time::Instant::now() + PATIENCE * 4;
    while next < MESSAGES {
        assert!(
            tokio::time::Instant::now() < deadline,
            "stuck at message {next}"
        );
        tokio::select! {
            received = ws.recv() => match received.unwrap() {
                Recv::Message(Message::Text(text)) => {
                    assert_eq!(text, message_text(next), "message {next}");
                    next += 1;
                }
                other => panic!("message {next}: {other:?}"),
            },
            () = sleep(Duration::from_micros(200)) => {
                cancelled += 1;
                // Part of a frame was read and waits in the connection's buffer.
                if !ws.buffers().read.is_empty() {
                    mid_frame += 1;
                }
            }
        }
    }
    // Nothing more than what was sent: the server's close comes next.
    assert!(matches!(ws.recv().await.unwrap(), Recv::Closed(Some(_))));
    ws.finish().await.unwrap();
    timeout(PATIENCE, server).await.unwrap().unwrap().unwrap();
    assert!(
        cancelled > 0 && mid_frame > 0,
        "{cancelled} cancelled, {mid_frame} mid-frame"
    );
    println!("recv: {cancelled} futures dropped, {mid_frame} with part of a frame read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flush_raced_against_a_timer_sends_every_message_whole() {
    let (server_tls, client_tls) = tls_pair();
    let (listener, server_addr) = listen().await;
    let server = tokio::spawn(async move {
        let mut ws = accept_one(listener, server_tls).await;
        let mut next = 0u32;
        loop {
            match ws.recv().await.unwrap() {
                Recv::Message(Message::Text(text)) => {
                    assert_eq!(text, message_text(next), "message {next}");
                    next += 1;
                }
                Recv::Closed(_) => break,
                other => panic!("message {next}: {other:?}"),
            }
        }
        ws.finish().await.unwrap();
        next
    });
    let addr = relay(server_addr, SLOW_READER, FAST).await;
    let mut ws = ClientBuilder::new()
        .tls(client_tls)
        .deflate(DeflateConfig::default())
        .config(fragmenting(Config::client()))
        .connect(&format!("wss://127.0.0.1:{}/", addr.port()))
        .await
        .unwrap();
    // A few KiB in the kernel: the socket is soon full and flushes wait on the relay.
    socket2::SockRef::from(ws.stream().tcp())
        .set_send_buffer_size(8 << 10)
        .unwrap();
    let mut cancelled = 0u64;
    for i in 0..MESSAGES {
        ws.send_text(&message_text(i)).unwrap();
        tokio::select! {
            flushed = ws.flush() => flushed.unwrap(),
            () = sleep(Duration::from_micros(200)) => cancelled += 1,
        }
    }
    timeout(PATIENCE * 4, ws.flush()).await.unwrap().unwrap();
    ws.finish().await.unwrap();
    assert_eq!(timeout(PATIENCE, server).await.unwrap().unwrap(), MESSAGES);
    assert!(cancelled > 0, "no flush was cancelled");
    println!("flush: {cancelled} futures dropped");
}
