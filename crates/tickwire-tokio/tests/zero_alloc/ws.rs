//! Proves rule 6 of docs/ARCHITECTURE.md for the tokio WebSocket: after warm-up, a round trip (queue a text
//! message, flush, receive the echo lent from the read buffer) allocates nothing on the
//! runtime's thread, plain and split. The echo peer is the blocking transport on its own
//! thread, which is not counted.

use std::net::TcpListener;

use tickwire_tokio::{Message, Recv};

use crate::ALLOC;

const ROUND_TRIPS: usize = 2_000;

/// A blocking echo server for `connections` connections, one after the other.
fn echo_server(connections: usize) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for _ in 0..connections {
            let (tcp, _) = listener.accept().unwrap();
            let mut ws = tickwire_blocking::accept(tcp).unwrap();
            while let (Recv::Message(message), mut sender) = ws.recv_with_sender().unwrap() {
                if let Message::Text(text) = message {
                    sender.text(text).unwrap();
                }
                ws.flush().unwrap();
            }
            ws.finish().unwrap();
        }
    });
    port
}

/// Allocations on this thread while `work` runs.
fn counted(work: impl FnOnce()) -> u64 {
    let counting = ALLOC.start();
    work();
    counting.stop().allocations
}

pub(crate) fn run() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let port = echo_server(2);
    const TEXT: &str = r#"{"op":"order","id":"8c1e2f","px":"101.25","qty":"0.5"}"#;

    let mut ws = runtime
        .block_on(tickwire_tokio::connect(&format!("ws://127.0.0.1:{port}/")))
        .unwrap();
    let round_trips = |ws: &mut tickwire_tokio::WebSocket<_>, n: usize| {
        runtime.block_on(async {
            for _ in 0..n {
                ws.send_text(TEXT).unwrap();
                ws.flush().await.unwrap();
                assert_eq!(ws.recv().await.unwrap(), Recv::Message(Message::Text(TEXT)));
            }
        })
    };
    round_trips(&mut ws, 100);
    let whole = counted(|| round_trips(&mut ws, ROUND_TRIPS));
    runtime.block_on(ws.finish()).unwrap();

    let ws = runtime
        .block_on(tickwire_tokio::connect(&format!("ws://127.0.0.1:{port}/")))
        .unwrap();
    let (mut reader, mut writer) = ws.split();
    let mut split_round_trips = |n: usize| {
        runtime.block_on(async {
            for _ in 0..n {
                writer.send_text(TEXT).unwrap();
                writer.flush().await.unwrap();
                assert_eq!(
                    reader.recv().await.unwrap(),
                    Recv::Message(Message::Text(TEXT))
                );
            }
        })
    };
    split_round_trips(100);
    let split = counted(|| split_round_trips(ROUND_TRIPS));
    let mut ws = reader.reunite(writer).unwrap();
    runtime.block_on(ws.finish()).unwrap();

    println!("allocations for {ROUND_TRIPS} round trips: whole {whole}, split {split}");
    assert_eq!(whole, 0, "allocations per round trip, whole WebSocket");
    assert_eq!(split, 0, "allocations per round trip, split halves");
}
