//! The minimal local HTTP/1.1 keep-alive server every loopback client talks to: `std::net`
//! and `httparse`, one thread per connection, each request checked (method, target and body
//! must be the order POST) and answered with the fixed Content-Length JSON response of
//! [`fixtures::response`] in one `write_all`.
//!
//! It runs two ways: as threads of the benchmark process pinned to the peer core (the timed
//! loopback workloads, [`spawn`]), and as a separate process, the hidden `http-server`
//! subcommand ([`ServerProcess`]), so that callgrind counting a client never counts a server
//! instruction. Owns the server side only; the clients are in `clients.rs`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use super::fixtures::{self, ORDER_JSON, PATH, REJECTION};
use crate::harness;

/// How long a connection may stay silent before its server thread gives up, so a client
/// that failed cannot leave a thread behind forever.
const IDLE_LIMIT: Duration = Duration::from_secs(30);

/// What a server thread saw, reported when it is stopped.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Served {
    /// Connections accepted (1 for a client that keeps its connection alive).
    pub(crate) connections: u64,
    /// Requests answered, rejected ones included.
    pub(crate) requests: u64,
    /// Requests answered with 400 (wrong method, target or body).
    pub(crate) rejected: u64,
}

/// An in-process server: an accept loop and one handler thread per connection, all pinned to
/// the peer core.
pub(crate) struct Server {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Served>,
}

/// Starts a server on an ephemeral 127.0.0.1 port, its threads pinned to `peer_core`.
pub(crate) fn spawn(peer_core: usize) -> Server {
    let listener =
        TcpListener::bind("127.0.0.1:0").expect("bind a loopback listener on 127.0.0.1:0");
    let addr = listener.local_addr().expect("the listener's address");
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let thread = thread::Builder::new()
        .name("http-accept".to_owned())
        .spawn(move || {
            harness::pin_to(peer_core);
            let response: Arc<[u8]> = fixtures::response().into();
            let mut handlers = Vec::new();
            for stream in listener.incoming() {
                if stopping.load(Ordering::Acquire) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let response = Arc::clone(&response);
                handlers.push(
                    thread::Builder::new()
                        .name("http-serve".to_owned())
                        .spawn(move || {
                            harness::pin_to(peer_core);
                            serve(stream, &response)
                        })
                        .expect("spawn an HTTP server thread"),
                );
            }
            let mut served = Served::default();
            for handler in handlers {
                let one = handler.join().expect("an HTTP server thread panicked");
                served.connections += 1;
                served.requests += one.requests;
                served.rejected += one.rejected;
            }
            served
        })
        .expect("spawn the HTTP accept thread");
    Server { addr, stop, thread }
}

impl Server {
    /// Where clients connect.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting, waits for every connection to end (call after the client and its
    /// runtime are dropped, which closes its connections) and reports what was served.
    pub(crate) fn finish(self) -> Served {
        self.stop.store(true, Ordering::Release);
        // Wakes the accept loop, which sees the flag and ends.
        let _ = TcpStream::connect(self.addr);
        self.thread.join().expect("the HTTP accept thread panicked")
    }
}

/// Serves one connection until the client closes it (or stays silent for [`IDLE_LIMIT`]):
/// every complete request in the buffer is checked and answered, pipelined ones included.
fn serve(mut stream: TcpStream, response: &[u8]) -> Served {
    let _ = stream.set_nodelay(true);
    let _ = stream.set_read_timeout(Some(IDLE_LIMIT));
    let mut served = Served {
        connections: 1,
        ..Served::default()
    };
    let mut buf = vec![0u8; 16 << 10];
    let (mut start, mut end) = (0, 0);
    loop {
        // Answer every complete request buffered.
        while start < end {
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut request = httparse::Request::new(&mut headers);
            let head = match request.parse(&buf[start..end]) {
                Ok(httparse::Status::Complete(head)) => head,
                Ok(httparse::Status::Partial) => break,
                Err(_) => {
                    let _ = stream.write_all(REJECTION);
                    served.rejected += 1;
                    return served;
                }
            };
            let length = request
                .headers
                .iter()
                .find(|h| h.name.eq_ignore_ascii_case("content-length"))
                .and_then(|h| {
                    std::str::from_utf8(h.value)
                        .ok()?
                        .trim()
                        .parse::<usize>()
                        .ok()
                })
                .unwrap_or(0);
            if end - start < head + length {
                break;
            }
            let body = &buf[start + head..start + head + length];
            let valid =
                request.method == Some("POST") && request.path == Some(PATH) && body == ORDER_JSON;
            let answer = if valid { response } else { REJECTION };
            served.requests += 1;
            served.rejected += u64::from(!valid);
            if stream.write_all(answer).is_err() {
                return served;
            }
            start += head + length;
        }
        if start == end {
            (start, end) = (0, 0);
        } else if end == buf.len() {
            buf.copy_within(start..end, 0);
            (start, end) = (0, end - start);
            if end == buf.len() {
                // A head larger than the buffer: not one of ours.
                let _ = stream.write_all(REJECTION);
                served.rejected += 1;
                return served;
            }
        }
        match stream.read(&mut buf[end..]) {
            Ok(0) | Err(_) => return served,
            Ok(n) => end += n,
        }
    }
}

/// The hidden `http-server` subcommand: binds 127.0.0.1:`port` (0: any), prints the port on
/// the first line of stdout, serves every connection on its own thread (pinned to `core`
/// when given) and exits when stdin closes, which it does when the parent ends.
pub fn run_process(port: u16, core: Option<usize>) -> Result<(), String> {
    if let Some(core) = core {
        harness::pin_to(core);
    }
    let listener = TcpListener::bind(("127.0.0.1", port)).map_err(|e| format!("bind: {e}"))?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let mut stdout = std::io::stdout();
    writeln!(stdout, "{port}")
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("report the port: {e}"))?;
    thread::spawn(|| {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
        std::process::exit(0);
    });
    let response: Arc<[u8]> = fixtures::response().into();
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let response = Arc::clone(&response);
        thread::spawn(move || {
            if let Some(core) = core {
                harness::pin_to(core);
            }
            serve(stream, &response)
        });
    }
    Ok(())
}

/// The server of the instruction counts: this benchmark binary re-executed as
/// `http-server`, a process of its own, so that valgrind (which runs only the client's
/// process) never counts a server instruction. Ends when dropped.
pub(super) struct ServerProcess {
    child: Child,
    stdin: Option<ChildStdin>,
    port: u16,
}

impl ServerProcess {
    /// Starts `exe http-server --port 0 --core peer_core` and reads its port.
    pub(super) fn start(exe: &Path, peer_core: usize) -> Result<Self, String> {
        let mut child = Command::new(exe)
            .args([
                "http-server",
                "--port",
                "0",
                "--core",
                &peer_core.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("start the HTTP server process: {e}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("piped stdout");
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| format!("read the server's port: {e}"))?;
        let port = line
            .trim()
            .parse()
            .map_err(|_| format!("the server printed {line:?}, not a port"))?;
        Ok(Self { child, stdin, port })
    }

    /// The port it listens on (127.0.0.1).
    pub(super) fn port(&self) -> u16 {
        self.port
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        // Closing its stdin ends it; if it has not ended within a second, kill this child (by
        // its own handle, nothing else).
        drop(self.stdin.take());
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
