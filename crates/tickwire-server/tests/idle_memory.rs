//! DESIGN rule 11 on the real reactor: an idle connection owns no buffer. 2,048 clients
//! connect, each sends a message and reads its echo, then sits idle; the heap the server
//! holds for them, divided by their number, is its cost per idle connection (the slot with
//! the codec state, the wheel entry of its handshake timer, the shared configuration's
//! reference). The clients are raw sockets: they hold no heap of their own.

use std::alloc::System;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tickwire_server::{Conn, Decision, Handler, Message, OpCode, Request, ServerBuilder};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

struct Echo;

impl Handler for Echo {
    type State = ();
    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<()> {
        Decision::accept(request, ())
    }
    fn on_message(&mut self, conn: &mut Conn<'_, ()>, message: Message<'_>) {
        if let Message::Text(text) = message {
            conn.send(OpCode::Text, text.as_bytes()).unwrap();
        }
    }
}

/// Upgrades, sends "ping-me" in one masked frame and reads the echo.
fn idle_client(addr: SocketAddr, out: &mut Vec<TcpStream>) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut request =
        *b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n\
\x81\x87\x01\x02\x03\x04ping-me";
    let start = request.len() - 7;
    for (i, byte) in request[start..].iter_mut().enumerate() {
        *byte ^= [1, 2, 3, 4][i % 4];
    }
    stream.write_all(&request).unwrap();
    // 101 head, then the 9-byte echo frame.
    let mut seen = [0u8; 512];
    let mut len = 0;
    loop {
        let n = stream.read(&mut seen[len..]).unwrap();
        assert!(n > 0, "server closed");
        len += n;
        if seen[..len].ends_with(b"\x81\x07ping-me") {
            break;
        }
    }
    out.push(stream);
}

fn main() {
    const CLIENTS: usize = 2048;
    let server = ServerBuilder::new().workers(1).bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr();
    let running = server.start(|_| Echo).unwrap();
    let mut clients = Vec::with_capacity(CLIENTS + 1);
    // Warm-up: the worker's scratch buffers, event list and first slot exist.
    idle_client(addr, &mut clients);
    drop(clients.pop());
    std::thread::sleep(Duration::from_millis(100));

    let region = Region::new(GLOBAL);
    for _ in 0..CLIENTS {
        idle_client(addr, &mut clients);
    }
    std::thread::sleep(Duration::from_millis(100));
    let change = region.change();
    let held = change.bytes_allocated as i64 - change.bytes_deallocated as i64;
    let per_connection = held as f64 / CLIENTS as f64;
    println!(
        "idle_memory: {CLIENTS} idle connections hold {held} bytes of server heap: {per_connection:.0} bytes each"
    );
    // uWebSockets' figure is about 0.3 KiB of user memory per idle connection.
    assert!(
        per_connection <= 320.0,
        "an idle connection costs {per_connection:.0} bytes of heap"
    );
    drop(clients);
    running.shutdown(Duration::from_secs(2)).unwrap();
    println!("idle_memory: ok");
}
