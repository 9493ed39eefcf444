//! What the HTTP client tests share (the blocking client's here, and the async client's in
//! `tickwire-tokio`, which includes this file): a scripted loopback server (a listener on 127.0.0.1 and a
//! thread running the test's script), a minimal request reader for its side, and canned
//! responses.
//!
//! The server side parses requests by hand (head to the blank line, then Content-Length
//! bytes) instead of with the codec under test, so a codec bug cannot hide itself. Every wait
//! is bounded by [`PATIENCE`]: a broken client fails a test instead of hanging it.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

#[cfg(feature = "deflate")]
use flate2::Compression;
#[cfg(feature = "deflate")]
use flate2::write::GzEncoder;
use tickwire_blocking::{HttpClient, HttpClientBuilder, HttpClientError};

/// The bound on every wait unless a test sets a shorter one on purpose.
pub(crate) const PATIENCE: Duration = Duration::from_secs(10);

/// A client for the server on `port`, its connect and reads bounded by [`PATIENCE`].
pub(crate) fn client(port: u16) -> HttpClientBuilder {
    HttpClient::builder(&format!("http://127.0.0.1:{port}"))
        .connect_timeout(Some(PATIENCE))
        .read_timeout(Some(PATIENCE))
}

/// A scripted server: a listener on 127.0.0.1 and the thread running the script on it.
pub(crate) struct Server<T> {
    port: u16,
    handle: JoinHandle<T>,
}

/// Starts `script` on a thread with a fresh listener.
pub(crate) fn server<T: Send + 'static>(
    script: impl FnOnce(Listener) -> T + Send + 'static,
) -> Server<T> {
    let inner = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = inner.local_addr().unwrap().port();
    inner.set_nonblocking(true).unwrap();
    let handle = thread::spawn(move || script(Listener { inner, accepted: 0 }));
    Server { port, handle }
}

impl<T> Server<T> {
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Waits for the script; a panic in it fails the test with its message.
    pub(crate) fn join(self) -> T {
        match self.handle.join() {
            Ok(value) => value,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    }
}

/// The server's listener, counting the connections it accepted.
pub(crate) struct Listener {
    inner: TcpListener,
    accepted: usize,
}

impl Listener {
    /// The next connection, with bounded reads and writes; panics after [`PATIENCE`].
    pub(crate) fn accept(&mut self) -> Conn {
        Conn::new(self.accept_tcp())
    }

    /// The next connection as a bare socket (to wrap in TLS).
    pub(crate) fn accept_tcp(&mut self) -> TcpStream {
        let deadline = Instant::now() + PATIENCE;
        loop {
            match self.inner.accept() {
                Ok((stream, _)) => {
                    stream.set_nonblocking(false).unwrap();
                    stream.set_nodelay(true).unwrap();
                    stream.set_read_timeout(Some(PATIENCE)).unwrap();
                    stream.set_write_timeout(Some(PATIENCE)).unwrap();
                    self.accepted += 1;
                    return stream;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(1));
                }
                Err(e) => panic!(
                    "no connection {} within {PATIENCE:?}: {e}",
                    self.accepted + 1
                ),
            }
        }
    }

    /// Connections accepted so far plus those waiting to be: call once the client is done
    /// (dropped), when every connection it opened is in one set or the other.
    pub(crate) fn connections(&self) -> usize {
        let mut waiting = 0;
        while self.inner.accept().is_ok() {
            waiting += 1;
        }
        self.accepted + waiting
    }
}

/// One server-side connection: plain TCP, or TLS over it.
pub(crate) struct Conn<S = TcpStream> {
    stream: S,
    /// Bytes read past the last request.
    pending: Vec<u8>,
}

/// A request as it arrived on the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Received {
    /// The head (request line to blank line) and the body, exactly as sent.
    pub(crate) raw: Vec<u8>,
    /// Length of the head inside `raw`.
    head_len: usize,
}

impl Received {
    /// The head as text.
    pub(crate) fn head(&self) -> &str {
        std::str::from_utf8(&self.raw[..self.head_len]).expect("an ASCII head")
    }

    pub(crate) fn body(&self) -> &[u8] {
        &self.raw[self.head_len..]
    }

    pub(crate) fn method(&self) -> &str {
        self.head().split(' ').next().unwrap()
    }

    pub(crate) fn target(&self) -> &str {
        self.head().split(' ').nth(1).unwrap()
    }

    /// The first value of a header, compared case-insensitively.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        header_value(self.head(), name)
    }
}

fn header_value<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (field, value) = line.split_once(':')?;
        field.eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

impl<S: Read + Write> Conn<S> {
    pub(crate) fn new(stream: S) -> Self {
        Self {
            stream,
            pending: Vec::new(),
        }
    }

    /// The next request, head and Content-Length body; `None` when the client closed (or
    /// reset) the connection before sending a byte of one. Panics on a request cut short, on
    /// a request without CRLF line endings, and when nothing arrives within the socket's read
    /// timeout.
    pub(crate) fn read_request(&mut self) -> Option<Received> {
        let head_len = loop {
            if let Some(at) = find(&self.pending, b"\r\n\r\n") {
                break at + 4;
            }
            if !self.fill() {
                assert!(
                    self.pending.is_empty(),
                    "the client closed inside a head: {:?}",
                    String::from_utf8_lossy(&self.pending)
                );
                return None;
            }
        };
        let head = std::str::from_utf8(&self.pending[..head_len]).expect("an ASCII head");
        let body_len: usize =
            header_value(head, "content-length").map_or(0, |v| v.parse().unwrap());
        while self.pending.len() < head_len + body_len {
            assert!(self.fill(), "the client closed inside a body");
        }
        let raw: Vec<u8> = self.pending.drain(..head_len + body_len).collect();
        Some(Received { raw, head_len })
    }

    /// Asserts the client closed the connection without sending anything more.
    pub(crate) fn expect_close(&mut self) {
        if let Some(request) = self.read_request() {
            panic!("expected the client to close, got {:?}", request.head());
        }
    }

    /// Answers every request with what `answer` returns until the client closes; returns
    /// the requests.
    pub(crate) fn serve_until_close(
        &mut self,
        mut answer: impl FnMut(&Received) -> Vec<u8>,
    ) -> Vec<Received> {
        let mut requests = Vec::new();
        while let Some(request) = self.read_request() {
            self.send(&answer(&request));
            requests.push(request);
        }
        requests
    }

    /// Reads one request and answers it with its own target as the body; returns it.
    pub(crate) fn serve_one(&mut self) -> Received {
        let request = self.read_request().expect("a request");
        self.send(&ok(request.target().as_bytes()));
        request
    }

    /// Writes `bytes` and flushes.
    pub(crate) fn send(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).unwrap();
        self.stream.flush().unwrap();
    }

    /// Writes `bytes` one at a time, flushing each (one segment each with TCP_NODELAY).
    pub(crate) fn send_bytewise(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.send(std::slice::from_ref(byte));
        }
    }

    /// Writes `bytes` and flushes; false when the client has closed the connection.
    pub(crate) fn try_send(&mut self, bytes: &[u8]) -> bool {
        self.stream
            .write_all(bytes)
            .and_then(|()| self.stream.flush())
            .is_ok()
    }

    /// Writes `bytes` one at a time, `gap` apart, until they are all sent or a write fails
    /// (the client gave up and closed); returns how many were sent.
    pub(crate) fn trickle(&mut self, bytes: &[u8], gap: Duration) -> usize {
        for (sent, byte) in bytes.iter().enumerate() {
            if !self.try_send(std::slice::from_ref(byte)) {
                return sent;
            }
            thread::sleep(gap);
        }
        bytes.len()
    }

    /// Reads more bytes into `pending`; false at EOF or reset.
    fn fill(&mut self) -> bool {
        let mut chunk = [0u8; 4096];
        loop {
            match self.stream.read(&mut chunk) {
                Ok(0) => return false,
                Ok(n) => {
                    self.pending.extend_from_slice(&chunk[..n]);
                    return true;
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::ConnectionReset => return false,
                Err(e) => panic!("server read failed (the client sent nothing?): {e}"),
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// A response: `head` is the status line and header lines, each ending in CRLF; the blank
/// line and `body` are appended.
pub(crate) fn response(head: &str, body: &[u8]) -> Vec<u8> {
    let mut bytes = format!("{head}\r\n").into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// `200 OK` with `body` and its Content-Length.
pub(crate) fn ok(body: &[u8]) -> Vec<u8> {
    response(
        &format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n", body.len()),
        body,
    )
}

/// `200 OK` with `body` sent chunked in pieces of `piece` bytes.
pub(crate) fn chunked(body: &[u8], piece: usize) -> Vec<u8> {
    let mut bytes = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
    for data in body.chunks(piece) {
        bytes.extend_from_slice(format!("{:x}\r\n", data.len()).as_bytes());
        bytes.extend_from_slice(data);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"0\r\n\r\n");
    bytes
}

/// A response head announcing a 100 000-byte body, and the body: far more than a trickling
/// server can send within a test's deadline.
pub(crate) fn endless_response() -> Vec<u8> {
    let mut bytes = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".to_vec();
    bytes.resize(bytes.len() + 100_000, b'x');
    bytes
}

/// `data` compressed as one gzip member.
#[cfg(feature = "deflate")]
pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

/// A body of `len` bytes that differs from one request to the next (`seed`).
pub(crate) fn varied_body(seed: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| b"abcdefghijklmnopqrstuvwxyz0123456789"[(i * 7 + seed) % 36])
        .collect()
}

/// The error a call that must fail returned.
pub(crate) fn the_error<T>(result: Result<T, HttpClientError>) -> HttpClientError {
    match result {
        Ok(_) => panic!("expected an error, the call succeeded"),
        Err(e) => e,
    }
}

/// An HTTPS server for one request on one connection with `config`: serves it as
/// [`Conn::serve_one`] does and returns it with the name the client's TLS asked for (SNI).
#[cfg(feature = "tls")]
pub(crate) fn https_once(
    config: tickwire_blocking::ServerTlsConfig,
) -> Server<(Received, Option<String>)> {
    server(move |mut listener| {
        let codec = tickwire_blocking::tls::TlsCodec::server(&config).unwrap();
        let mut stream = tickwire_blocking::TlsStream::new(listener.accept_tcp(), codec);
        stream.handshake(Instant::now() + PATIENCE).unwrap();
        let sni = stream.codec().server_name().map(str::to_owned);
        (Conn::new(stream).serve_one(), sni)
    })
}
