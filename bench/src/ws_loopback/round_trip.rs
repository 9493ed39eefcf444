//! The round-trip workload: one text message out, its echo back, one sample per round trip.
//!
//! Owns the client loop of each library. Each connection first makes one round trip whose
//! echo is compared byte for byte with what was sent (a wrong echo fails the run), then is
//! timed; inside the timed loop only the echo's kind and length are checked, the same cheap
//! check for every library.

use std::hint::black_box;
use std::io::{Read, Write};

use fastwebsockets::{FragmentCollector, Frame, OpCode, Payload, Role};
use futures_util::{SinkExt, StreamExt};
use hdrhistogram::Histogram;

use super::{Library, connect, servers};
use crate::harness::{self, Plan};
use crate::wire;

/// One connection of `library` to a fresh loopback server, timed over `plan`; the server runs
/// on `peer_core`. Returns ticks per round trip.
pub(super) fn measure(
    library: Library,
    plan: Plan,
    peer_core: usize,
    payload: &[u8],
) -> Histogram<u64> {
    let text = std::str::from_utf8(payload).expect("the JSON payload is UTF-8");
    // The floor gets a byte echo; every WebSocket client gets the same tickwire server.
    let server = if library == Library::RawTcp {
        servers::byte_echo(peer_core)
    } else {
        servers::tickwire_echo(peer_core)
    };
    let histogram = match library {
        Library::RawTcp => raw_tcp(&server, plan, payload),
        Library::Tickwire => tickwire(&server, plan, text),
        Library::Tungstenite => tungstenite(&server, plan, text),
        Library::TokioTungstenite => tokio_tungstenite(&server, plan, text),
        Library::Fastwebsockets => fastwebsockets(&server, plan, payload),
        Library::NexusWeb => nexus_web(&server, plan, text),
    };
    // Each client function drops its connection before returning, which ends the server.
    server.join();
    histogram
}

/// The floor: the masked frame a client would send, written on a plain socket, and the same
/// number of bytes read back (`read_exact`, as the echo may come back in pieces).
fn raw_tcp(server: &servers::Server, plan: Plan, payload: &[u8]) -> Histogram<u64> {
    let frame = wire::frame(true, 0x1, payload, Some(wire::MASK_KEY));
    let mut stream = connect::raw(server.addr());
    let mut echo = vec![0u8; frame.len()];
    stream.write_all(&frame).expect("raw TCP: write");
    stream
        .read_exact(&mut echo)
        .expect("raw TCP: read the echo");
    assert_eq!(echo, frame, "raw TCP: the echo differs from what was sent");
    harness::sample_each(plan, || {
        stream.write_all(&frame).expect("raw TCP: write");
        stream
            .read_exact(&mut echo)
            .expect("raw TCP: read the echo");
    })
}

/// tickwire: `send_text_now` (encode, mask, one write) then `recv` (borrowed, validated text).
/// The blocking API a trading client uses; nothing is deferred outside the timed region.
fn tickwire(server: &servers::Server, plan: Plan, text: &str) -> Histogram<u64> {
    let mut ws = connect::tickwire(server.addr());
    tickwire_round_trips(&mut ws, plan, text, "tickwire")
}

/// The timed loop of [`tickwire_blocking`] on a connected client, over `ws://` or `wss://`;
/// `library` names it in failures.
pub(crate) fn tickwire_round_trips<S: tickwire_blocking::Transport>(
    ws: &mut tickwire_blocking::WebSocket<S>,
    plan: Plan,
    text: &str,
    library: &str,
) -> Histogram<u64> {
    ws.send_text_now(text)
        .unwrap_or_else(|e| panic!("{library}: send: {e}"));
    match ws.recv() {
        Ok(tickwire_blocking::Recv::Message(tickwire_blocking::Message::Text(echo)))
            if echo == text => {}
        other => panic!("{library}: wrong echo: {other:?}"),
    }
    harness::sample_each(plan, || {
        ws.send_text_now(text)
            .unwrap_or_else(|e| panic!("{library}: send: {e}"));
        match ws.recv() {
            Ok(tickwire_blocking::Recv::Message(tickwire_blocking::Message::Text(echo)))
                if echo.len() == text.len() =>
            {
                black_box(echo);
            }
            other => panic!("{library}: unexpected echo {other:?}"),
        }
    })
}

/// tungstenite: `send` (write into its buffer and flush, one write) then `read`. The message
/// is a refcounted `Utf8Bytes` made once, so the send clones a pointer, not the text, as a
/// tungstenite user holding the message would.
fn tungstenite(server: &servers::Server, plan: Plan, text: &str) -> Histogram<u64> {
    use tungstenite::{Message, Utf8Bytes};
    let mut ws = connect::tungstenite(server.addr());
    let message = Utf8Bytes::from(text);
    ws.send(Message::Text(message.clone()))
        .expect("tungstenite: send");
    match ws.read().expect("tungstenite: receive the echo") {
        Message::Text(echo) if echo.as_str() == text => {}
        other => panic!("tungstenite: wrong echo: {other:?}"),
    }
    harness::sample_each(plan, || {
        ws.send(Message::Text(message.clone()))
            .expect("tungstenite: send");
        match ws.read().expect("tungstenite: receive the echo") {
            Message::Text(echo) if echo.len() == text.len() => {
                black_box(echo);
            }
            other => panic!("tungstenite: unexpected echo {other:?}"),
        }
    })
}

/// tokio-tungstenite: `SinkExt::send` (ready, start_send, flush) then `StreamExt::next`, the
/// API its documentation shows. The message is a refcounted `Utf8Bytes` made once.
fn tokio_tungstenite(server: &servers::Server, plan: Plan, text: &str) -> Histogram<u64> {
    let runtime = connect::current_thread_runtime();
    runtime.block_on(async {
        let mut ws = connect::tokio_tungstenite(server.addr()).await;
        tokio_tungstenite_round_trips(&mut ws, plan, text, "tokio-tungstenite").await
    })
}

/// The timed loop of [`tokio_tungstenite`](mod@::tokio_tungstenite) on a connected client (plain or TLS stream), run
/// inside the caller's `block_on`; `library` names it in failures.
pub(crate) async fn tokio_tungstenite_round_trips<S>(
    ws: &mut tokio_tungstenite::WebSocketStream<S>,
    plan: Plan,
    text: &str,
    library: &str,
) -> Histogram<u64>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use tokio_tungstenite::tungstenite::{Message, Utf8Bytes};
    let message = Utf8Bytes::from(text);
    ws.send(Message::Text(message.clone()))
        .await
        .unwrap_or_else(|e| panic!("{library}: send: {e}"));
    match ws.next().await {
        Some(Ok(Message::Text(echo))) if echo.as_str() == text => {}
        other => panic!("{library}: wrong echo: {other:?}"),
    }
    sample_each_async(plan, async || {
        ws.send(Message::Text(message.clone()))
            .await
            .unwrap_or_else(|e| panic!("{library}: send: {e}"));
        match ws.next().await {
            Some(Ok(Message::Text(echo))) if echo.len() == text.len() => {
                black_box(echo);
            }
            other => panic!("{library}: unexpected echo {other:?}"),
        }
    })
    .await
}

/// fastwebsockets: `write_frame` then `read_frame` on a `FragmentCollector`, so it returns
/// whole messages like every other client here (its plain `WebSocket` would hand back
/// fragments). Client frames are masked in place, so the text is copied into a reused scratch
/// buffer lent as `Payload::BorrowedMut`: the cheapest way to send a message the caller keeps
/// (`Payload::Borrowed` would allocate a copy on every send).
fn fastwebsockets(server: &servers::Server, plan: Plan, payload: &[u8]) -> Histogram<u64> {
    let runtime = connect::current_thread_runtime();
    runtime.block_on(async {
        let stream = connect::fastwebsockets_upgraded(server.addr()).await;
        fastwebsockets_round_trips(stream, plan, payload, "fastwebsockets").await
    })
}

/// The timed loop of [`fastwebsockets`](mod@::fastwebsockets) on an upgraded stream (plain or
/// TLS), run inside the caller's `block_on`; `library` names it in failures.
pub(crate) async fn fastwebsockets_round_trips<S>(
    stream: S,
    plan: Plan,
    payload: &[u8],
    library: &str,
) -> Histogram<u64>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut ws = FragmentCollector::new(fastwebsockets::WebSocket::after_handshake(
        stream,
        Role::Client,
    ));
    let mut scratch = payload.to_vec();
    ws.write_frame(Frame::text(Payload::BorrowedMut(&mut scratch)))
        .await
        .unwrap_or_else(|e| panic!("{library}: send: {e}"));
    let echo = ws
        .read_frame()
        .await
        .unwrap_or_else(|e| panic!("{library}: receive the echo: {e}"));
    assert!(
        echo.opcode == OpCode::Text && &echo.payload[..] == payload,
        "{library}: wrong echo ({:?}, {} bytes)",
        echo.opcode,
        echo.payload.len()
    );
    sample_each_async(plan, async || {
        scratch.copy_from_slice(payload);
        ws.write_frame(Frame::text(Payload::BorrowedMut(&mut scratch)))
            .await
            .unwrap_or_else(|e| panic!("{library}: send: {e}"));
        let echo = ws
            .read_frame()
            .await
            .unwrap_or_else(|e| panic!("{library}: receive the echo: {e}"));
        assert!(
            echo.opcode == OpCode::Text && echo.payload.len() == payload.len(),
            "{library}: unexpected echo ({:?}, {} bytes)",
            echo.opcode,
            echo.payload.len()
        );
        black_box(echo);
    })
    .await
}

/// nexus-web: `send_text` (encode, mask, write) then `recv` (borrowed, validated text), its
/// blocking client API.
fn nexus_web(server: &servers::Server, plan: Plan, text: &str) -> Histogram<u64> {
    let mut ws = connect::nexus_web(server.addr());
    nexus_web_round_trips(&mut ws, plan, text, "nexus-web")
}

/// The timed loop of [`nexus_web`](mod@::nexus_web) on a connected client, over `ws://` or `wss://`;
/// `library` names it in failures.
pub(super) fn nexus_web_round_trips<S: Read + Write>(
    ws: &mut nexus_web::ws::Client<S>,
    plan: Plan,
    text: &str,
    library: &str,
) -> Histogram<u64> {
    use nexus_web::ws::Message;
    ws.send_text(text)
        .unwrap_or_else(|e| panic!("{library}: send: {e}"));
    match ws.recv() {
        Ok(Some(Message::Text(echo))) if echo == text => {}
        other => panic!("{library}: wrong echo: {other:?}"),
    }
    harness::sample_each(plan, || {
        ws.send_text(text)
            .unwrap_or_else(|e| panic!("{library}: send: {e}"));
        match ws.recv() {
            Ok(Some(Message::Text(echo))) if echo.len() == text.len() => {
                black_box(echo);
            }
            other => panic!("{library}: unexpected echo {other:?}"),
        }
    })
}

/// [`harness::sample_each`] for an async operation, run inside the caller's `block_on`: the
/// same warm-up, one unbatched sample per call, the same histogram, the same allocation count
/// ([`crate::alloc_count::last_per_op`]; the runtime must be a current-thread one on this
/// thread for it to see the library's allocations).
pub(crate) async fn sample_each_async(plan: Plan, mut op: impl AsyncFnMut()) -> Histogram<u64> {
    let mut histogram = harness::new_histogram();
    for _ in 0..plan.warmup {
        op().await;
    }
    let counting = crate::alloc_count::start();
    for _ in 0..plan.samples {
        let start = harness::ticks_start();
        op().await;
        let ticks = harness::ticks_end() - start;
        histogram.saturating_record(ticks.max(1));
    }
    crate::alloc_count::stop_per_op(counting, plan.samples as u64);
    histogram
}
