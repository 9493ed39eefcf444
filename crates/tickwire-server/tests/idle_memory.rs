//! rule 11 of docs/ARCHITECTURE.md on the real reactor: an idle connection owns no buffer. 2,048 clients
//! connect, each sends a message and reads its echo, then sits idle; the heap the server
//! holds for them, divided by their number, is its cost per idle connection: plain, with
//! permessage-deflate (no context takeover) and over TLS. The clients run in a child process
//! (this binary, re-run with `--clients`), so the counting allocator sees the server alone.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tickwire_blocking::{ClientBuilder, ClientTlsConfig, Message, Recv};
use tickwire_server::{
    Conn, Decision, DeflateConfig, Handler, OpCode, Request, ServerBuilder, ServerTlsConfig,
};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

const CLIENTS: usize = 2048;

struct Echo;

impl Handler for Echo {
    type State = ();
    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<()> {
        Decision::accept(request, ())
    }
    fn on_message(&mut self, conn: &mut Conn<'_, ()>, message: tickwire_server::Message<'_>) {
        if let tickwire_server::Message::Text(text) = message {
            conn.send(OpCode::Text, text.as_bytes()).unwrap();
        }
    }
}

/// Upgrades by hand, sends "ping-me" in one masked frame and reads the echo.
fn raw_client(addr: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
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
    let mut seen = [0u8; 512];
    let mut len = 0;
    while !seen[..len].ends_with(b"\x81\x07ping-me") {
        let n = stream.read(&mut seen[len..]).unwrap();
        assert!(n > 0, "server closed");
        len += n;
    }
    stream
}

/// Child mode: opens `count` connections of `mode`, each echoing once, says "ready", and
/// holds them until stdin ends.
fn clients(mode: &str, addr: &str, count: usize) {
    let mut raw = Vec::new();
    let mut sockets = Vec::new();
    for _ in 0..count {
        if mode == "plain" {
            raw.push(raw_client(addr));
            continue;
        }
        let mut builder = ClientBuilder::new();
        let url = if mode == "tls" {
            let ca = std::env::var("IDLE_MEMORY_CA").unwrap();
            let tls = ClientTlsConfig::builder()
                .webpki_roots(false)
                .add_root_pem(ca.as_bytes())
                .unwrap()
                .build()
                .unwrap();
            builder = builder.tls(tls);
            format!("wss://{addr}/")
        } else {
            builder = builder.deflate(DeflateConfig::default());
            format!("ws://{addr}/")
        };
        let mut ws = builder.connect(&url).unwrap();
        ws.send_text_now("ping-me").unwrap();
        assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("ping-me")));
        sockets.push(ws);
    }
    println!("ready");
    let _ = std::io::stdout().flush();
    let mut rest = String::new();
    let _ = std::io::stdin().read_line(&mut rest);
}

fn spawn_clients(mode: &str, addr: SocketAddr, count: usize, ca: &str) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--clients", mode, &addr.to_string(), &count.to_string()])
        .env("IDLE_MEMORY_CA", ca)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready", "the client process failed");
    child
}

fn end_clients(mut child: Child) {
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
}

/// Heap bytes the server holds per idle connection of `mode`.
fn measure(mode: &str) -> f64 {
    let cert = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).unwrap();
    let ca = cert.cert.pem();
    let mut builder = ServerBuilder::new().workers(1);
    match mode {
        "tls" => {
            let key = cert.signing_key.serialize_pem();
            let config = ServerTlsConfig::builder(ca.as_bytes(), key.as_bytes())
                .unwrap()
                .build()
                .unwrap();
            builder = builder.tls(config);
        }
        "deflate" => {
            let mut deflate = DeflateConfig::default();
            deflate.server_no_context_takeover = true;
            deflate.client_no_context_takeover = true;
            builder = builder.deflate(deflate);
        }
        _ => {}
    }
    let server = builder.bind("127.0.0.1:0").unwrap();
    let addr = server.local_addr();
    let running = server.start(|_| Echo).unwrap();
    // Warm-up: the worker's scratch buffers, event list and first slot exist.
    end_clients(spawn_clients(mode, addr, 1, &ca));
    std::thread::sleep(Duration::from_millis(200));
    let region = ALLOC.heap_region();
    let child = spawn_clients(mode, addr, CLIENTS, &ca);
    std::thread::sleep(Duration::from_millis(200));
    let change = region.change();
    end_clients(child);
    running.shutdown(Duration::from_secs(2)).unwrap();
    let held = change.held();
    let per_connection = held as f64 / CLIENTS as f64;
    println!(
        "idle_memory: {mode}: {CLIENTS} idle connections hold {held} bytes of server heap: {per_connection:.0} bytes each"
    );
    per_connection
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--clients") {
        return clients(&args[2], &args[3], args[4].parse().unwrap());
    }
    let plain = measure("plain");
    // uWebSockets' figure is about 0.3 KiB of user memory per idle connection.
    assert!(
        plain <= 320.0,
        "an idle plain connection costs {plain:.0} bytes of heap"
    );
    measure("deflate");
    measure("tls");
    println!("idle_memory: ok");
}
