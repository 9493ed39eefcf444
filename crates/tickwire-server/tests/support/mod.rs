//! Shared by the tests: a recording handler and raw-socket clients (a test that checks the
//! bytes on the wire, or that must not answer pings, speaks WebSocket by hand).
#![allow(dead_code, unreachable_pub)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use tickwire_server::{
    CloseCode, Conn, ConnId, Decision, Disconnect, Handler, HandshakeFailure, Message, OpCode,
    Request, ServerHandle,
};

/// What the recording handler saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seen {
    Open(ConnId),
    /// The connection's id, how it ended and how many messages it had received.
    Close(ConnId, Disconnect, u32),
    /// A handshake failed: the failure's text.
    Failed(String),
}

/// Accepts every path but `/reject` (403) and `/panic` (the hook panics: 500); echoes every
/// message except `panic` (the callback panics), `close` (closes with 1000 "bye"), `count`
/// (answers with the messages received so far) and `via-handle` (answers "direct", then
/// sends through the server handle). Records the largest output queue it
/// saw after a reply.
pub struct Recorder {
    pub handle: ServerHandle,
    pub worker: usize,
    pub seen: mpsc::Sender<Seen>,
    pub max_queued: Arc<AtomicUsize>,
}

impl Handler for Recorder {
    type State = u32;

    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<u32> {
        match request.path() {
            "/reject" => Decision::reject(403),
            "/panic" => panic!("upgrade hook panics (test)"),
            _ => Decision::accept(request, 0),
        }
    }

    fn on_open(&mut self, conn: &mut Conn<'_, u32>) {
        let _ = self.seen.send(Seen::Open(conn.id()));
    }

    fn on_message(&mut self, conn: &mut Conn<'_, u32>, message: Message<'_>) {
        *conn.state() += 1;
        match message {
            Message::Text("panic") => panic!("on_message panics (test)"),
            Message::Text("close") => conn.close(CloseCode::NORMAL, "bye").unwrap(),
            Message::Text("via-handle") => {
                // Through the worker's own queue: arrives after this callback's replies.
                let text = format!("from the handle of worker {}", self.worker);
                self.handle.send_text(conn.id(), &text).unwrap();
                conn.send_text("direct").unwrap();
            }
            Message::Text("count") => {
                let count = *conn.state();
                conn.send_text(&count.to_string()).unwrap();
            }
            Message::Text(text) => conn.send(OpCode::Text, text.as_bytes()).unwrap(),
            Message::Binary(data) => conn.send(OpCode::Binary, data).unwrap(),
            _ => unreachable!("only data messages reach on_message"),
        }
        self.max_queued.fetch_max(conn.queued(), Ordering::Relaxed);
    }

    fn on_close(&mut self, id: ConnId, state: u32, disconnect: Disconnect) {
        let _ = self.seen.send(Seen::Close(id, disconnect, state));
    }

    fn on_handshake_error(&mut self, _peer: Option<SocketAddr>, failure: HandshakeFailure) {
        let _ = self.seen.send(Seen::Failed(failure.to_string()));
    }
}

/// A running recording server.
pub struct Fixture {
    pub addr: SocketAddr,
    pub handle: ServerHandle,
    pub seen: Mutex<mpsc::Receiver<Seen>>,
    pub max_queued: Arc<AtomicUsize>,
    pub running: Option<tickwire_server::Running>,
}

impl Fixture {
    pub fn start(builder: tickwire_server::ServerBuilder) -> Self {
        let server = builder.bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr();
        let (tx, rx) = mpsc::channel();
        let max_queued = Arc::new(AtomicUsize::new(0));
        let max = Arc::clone(&max_queued);
        let tx = Mutex::new(tx);
        let running = server
            .start(move |context| Recorder {
                handle: context.handle.clone(),
                worker: context.index,
                seen: tx.lock().unwrap().clone(),
                max_queued: Arc::clone(&max),
            })
            .unwrap();
        Self {
            addr,
            handle: running.handle().clone(),
            seen: Mutex::new(rx),
            max_queued,
            running: Some(running),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }

    /// The next event, within 5 s.
    pub fn next(&self) -> Seen {
        self.seen
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(5))
            .expect("an event within 5 s")
    }

    /// The next handshake failure's text, skipping other events.
    pub fn next_failure(&self) -> String {
        loop {
            if let Seen::Failed(text) = self.next() {
                return text;
            }
        }
    }

    /// The next close event, skipping opens.
    pub fn next_close(&self) -> (ConnId, Disconnect, u32) {
        loop {
            if let Seen::Close(id, disconnect, count) = self.next() {
                return (id, disconnect, count);
            }
        }
    }

    pub fn stop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown(Duration::from_secs(2)).unwrap();
        }
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A raw client that did the opening handshake (fixed key) and holds the socket.
pub fn raw_upgrade(addr: SocketAddr, path: &str) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
    .unwrap();
    let head = read_head(&mut stream);
    assert!(head.starts_with("HTTP/1.1 101 "), "{head}");
    stream
}

/// Reads an HTTP response head byte by byte (so no frame byte after it is consumed).
pub fn read_head(stream: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0];
    while !head.ends_with(b"\r\n\r\n") {
        if stream.read(&mut byte).unwrap() == 0 {
            break;
        }
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// A masked client frame.
pub fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mask = [0x12, 0x34, 0x56, 0x78];
    let mut frame = vec![0x80 | opcode];
    match payload.len() {
        n if n < 126 => frame.push(0x80 | n as u8),
        n if n <= 0xffff => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

/// Reads one unmasked server frame: (first byte, payload).
pub fn read_frame(stream: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut head = [0u8; 2];
    stream.read_exact(&mut head).unwrap();
    assert_eq!(head[1] & 0x80, 0, "server frames are not masked");
    let len = match head[1] & 0x7f {
        126 => {
            let mut n = [0u8; 2];
            stream.read_exact(&mut n).unwrap();
            u64::from(u16::from_be_bytes(n))
        }
        127 => {
            let mut n = [0u8; 8];
            stream.read_exact(&mut n).unwrap();
            u64::from_be_bytes(n)
        }
        n => u64::from(n),
    };
    let mut payload = vec![0; len as usize];
    stream.read_exact(&mut payload).unwrap();
    (head[0], payload)
}

/// True when the server closed the socket (end of stream or reset) within the read timeout;
/// then closes ours, as a client does once the server has closed.
pub fn closed_by_server(mut stream: TcpStream) -> bool {
    let mut buf = [0u8; 256];
    loop {
        match stream.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(_) => return false,
        }
    }
}
