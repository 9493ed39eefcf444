//! The loopback servers: each accepts exactly one connection on an ephemeral 127.0.0.1 port,
//! on its own thread pinned to the peer core, serves it until the client goes away, and ends.
//!
//! Owns the server half of every workload. The server is the same for every WebSocket client
//! (tickwire's blocking server), so a difference between rows is a difference between clients.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::mpsc::Receiver;
use std::thread::{self, JoinHandle};
use std::time::Duration;

use tickwire_blocking::{Message, ServerTlsConfig, TlsStream};
use tickwire_codec::deflate::DeflateConfig;

use crate::harness;
use crate::ws_tls::pki;

/// How long a server waits for its client to speak (or to signal) before giving up, so a
/// client that failed cannot leave a server thread behind forever.
const IDLE_LIMIT: Duration = Duration::from_secs(30);

/// A server thread serving one connection; `T` is what it reports when it ends.
pub(crate) struct Server<T = ()> {
    addr: SocketAddr,
    thread: JoinHandle<T>,
}

impl<T> Server<T> {
    /// Where the client connects.
    pub(crate) fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Waits for the server thread to end: call after the client connection is dropped (the
    /// server ends on the client's EOF). Panics if the server thread panicked.
    pub(crate) fn join(self) -> T {
        self.thread
            .join()
            .expect("a loopback server thread panicked")
    }
}

/// A tickwire server that echoes every text and binary message back, one flush per message,
/// until the client closes, disconnects or stays silent for [`IDLE_LIMIT`].
pub(crate) fn tickwire_echo(peer_core: usize) -> Server {
    spawn("tickwire-echo", peer_core, |stream| {
        let ws = tickwire_blocking::ServerBuilder::new()
            .nodelay(true)
            .read_timeout(Some(IDLE_LIMIT))
            .accept(stream)
            .expect("tickwire echo server: handshake");
        echo(ws);
    })
}

/// [`tickwire_echo`] behind TLS: the same server and echo loop over `accept_tls` with `tls`
/// (the wss workloads' fairness rule: every client talks to it, so only the client differs).
/// Panics unless the handshake settled on [`pki::CIPHER_SUITE`].
pub(crate) fn tickwire_echo_tls(peer_core: usize, tls: ServerTlsConfig) -> Server {
    spawn("tickwire-echo-tls", peer_core, move |stream| {
        let ws = tickwire_blocking::ServerBuilder::new()
            .nodelay(true)
            .read_timeout(Some(IDLE_LIMIT))
            .accept_tls(stream, &tls)
            .expect("tickwire wss echo server: handshake");
        check_suite(ws.stream());
        echo(ws);
    })
}

/// The echo loop of [`tickwire_echo`] and [`tickwire_echo_tls`].
fn echo<S: tickwire_blocking::Transport>(mut ws: tickwire_blocking::WebSocket<S>) {
    // Bounded by the client: it ends with the client's EOF (an error here), its close or
    // the idle limit (`Recv::Timeout`).
    while let Ok((tickwire_blocking::Recv::Message(message), mut sender)) = ws.recv_with_sender() {
        // Reply from the borrowed message: no copy, the library's own echo path.
        let queued = match message {
            Message::Text(text) => sender.text(text),
            Message::Binary(bytes) => sender.binary(bytes),
            Message::Close(_) | Message::Ping(_) | Message::Pong(_) => Ok(()),
        };
        if queued.is_err() || ws.flush().is_err() {
            break;
        }
    }
    // Complete the close handshake (or give up within the close timeout) before the socket
    // goes: dropping a WebSocket never does.
    let _ = ws.finish();
}

/// Panics unless the TLS handshake settled on [`pki::CIPHER_SUITE`] (the server offers no
/// other, so this guards the configuration).
fn check_suite(tls: &TlsStream<TcpStream>) {
    assert_eq!(
        tls.codec().cipher_suite().as_deref(),
        Some(pki::CIPHER_SUITE),
        "wss server: negotiated another cipher suite"
    );
}

/// A raw TCP server writing back every byte it reads, until EOF or [`IDLE_LIMIT`] of silence.
pub(super) fn byte_echo(peer_core: usize) -> Server {
    spawn("byte-echo", peer_core, |mut stream| {
        let mut buffer = [0u8; 4096];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if stream.write_all(&buffer[..n]).is_err() {
                        break;
                    }
                }
            }
        }
    })
}

/// A server that, once `go` fires, writes `bytes` (pre-encoded frames) in large writes, then
/// waits for the client to hang up. With `handshake`, tickwire's server does the opening
/// handshake first and the bytes go straight to its socket, bypassing its encoder; without, it
/// is a plain TCP sender for the raw floor.
///
/// The client signals `go` once its own setup is done, so the stream starts on a client that
/// is already waiting and no frame byte can arrive inside a library's handshake read.
pub(crate) fn stream_sender(
    peer_core: usize,
    bytes: Arc<[u8]>,
    handshake: bool,
    go: Receiver<()>,
) -> Server {
    spawn("stream-sender", peer_core, move |stream| {
        // Whichever owns the socket lives here for the whole stream; the writes borrow it.
        let mut ws = None;
        let mut raw = None;
        let socket: &mut TcpStream = if handshake {
            let upgraded = tickwire_blocking::ServerBuilder::new()
                .nodelay(true)
                .accept(stream)
                .expect("stream server: handshake");
            ws.insert(upgraded).stream_mut()
        } else {
            raw.insert(stream)
        };
        if go.recv_timeout(IDLE_LIMIT).is_err() {
            return;
        }
        // write_all issues writes as large as the socket takes; a failure means the client
        // gave up, which its own side reports.
        if socket.write_all(&bytes).is_err() {
            return;
        }
        // Stay connected until the client is done, so closing here never races its reads.
        let _ = socket.set_read_timeout(Some(IDLE_LIMIT));
        let mut sink = [0u8; 1024];
        while matches!(socket.read(&mut sink), Ok(n) if n > 0) {}
    })
}

/// [`stream_sender`] with the opening handshake behind TLS: once `go` fires, `bytes` (the
/// same pre-encoded frames) go out in 16 KiB records (rustls's largest); then it waits for
/// the client to hang up. With [`Encrypt::AsItGoes`] the server's TLS stream encrypts them as
/// it takes them, 64 KiB per write (the rate is then the pipeline's); with
/// [`Encrypt::Ahead`] they are encrypted before `go` and written as raw ciphertext, so the
/// sender outruns any client and the rate is the client's. Panics unless the handshake
/// settled on [`pki::CIPHER_SUITE`].
pub(crate) fn stream_sender_tls(
    peer_core: usize,
    bytes: Arc<[u8]>,
    tls: ServerTlsConfig,
    encrypt: Encrypt,
    go: Receiver<()>,
) -> Server {
    spawn("stream-sender-tls", peer_core, move |stream| {
        let mut ws = tickwire_blocking::ServerBuilder::new()
            .nodelay(true)
            .accept_tls(stream, &tls)
            .expect("wss stream server: handshake");
        check_suite(ws.stream());
        let socket = ws.stream_mut();
        let ciphertext = match encrypt {
            Encrypt::Ahead => Some(encrypt_all(socket.codec_mut(), &bytes)),
            Encrypt::AsItGoes => None,
        };
        if go.recv_timeout(IDLE_LIMIT).is_err() {
            return;
        }
        // A failure means the client gave up, which its own side reports.
        let sent = match &ciphertext {
            Some(ciphertext) => socket.get_mut().write_all(ciphertext),
            None => socket.write_all(&bytes).and_then(|()| socket.flush()),
        };
        if sent.is_err() {
            return;
        }
        // Stay connected until the client is done (EOF or close_notify ends the read).
        let _ = socket.get_mut().set_read_timeout(Some(IDLE_LIMIT));
        let mut sink = [0u8; 1024];
        while matches!(socket.read(&mut sink), Ok(n) if n > 0) {}
    })
}

/// When a TLS stream sender encrypts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Encrypt {
    /// Through the TLS stream while sending.
    AsItGoes,
    /// All of it before the start signal.
    Ahead,
}

/// `plaintext` as the TLS records `codec` would write for it (16 KiB each), in order.
fn encrypt_all(codec: &mut tickwire_tls::TlsCodec, plaintext: &[u8]) -> Vec<u8> {
    let mut ciphertext = Vec::with_capacity(plaintext.len() + plaintext.len() / 256 + 4096);
    let mut rest = plaintext;
    while !rest.is_empty() {
        let taken = codec
            .write_plaintext(rest)
            .expect("wss stream server: encrypt");
        rest = &rest[taken..];
        while codec.wants_write() {
            codec
                .write_tls_to(&mut ciphertext)
                .expect("wss stream server: records into memory");
        }
    }
    ciphertext
}

/// Bytes a feed server queues before it writes them: large writes, as a publisher that keeps
/// up with its socket makes, the same for plain and compressed messages.
const FEED_FLUSH_AT: usize = 64 << 10;

/// A tickwire server that, once `go` fires, sends `count` text messages, cycling through
/// `messages`, through its own send path (`send_text`, compressing when `deflate` is given and
/// the client accepted it), writing whenever [`FEED_FLUSH_AT`] bytes are queued; then waits
/// for the client to hang up. Reports the bytes it wrote after the handshake.
pub(super) fn tickwire_feed(
    peer_core: usize,
    messages: Arc<[String]>,
    count: usize,
    deflate: Option<DeflateConfig>,
    go: Receiver<()>,
) -> Server<u64> {
    spawn("tickwire-feed", peer_core, move |stream| {
        let mut builder = tickwire_blocking::ServerBuilder::new().nodelay(true);
        if let Some(config) = deflate.clone() {
            builder = builder.deflate(config);
        }
        let mut ws = builder.accept(stream).expect("feed server: handshake");
        assert_eq!(
            ws.deflate().is_some(),
            deflate.is_some(),
            "feed server: permessage-deflate negotiated other than asked"
        );
        if go.recv_timeout(IDLE_LIMIT).is_err() {
            return 0;
        }
        let mut written = 0u64;
        for text in messages.iter().cycle().take(count) {
            // A failure means the client gave up, which its own side reports.
            if ws.send_text(text).is_err() {
                return written;
            }
            let queued = ws.sender().queued();
            if queued >= FEED_FLUSH_AT {
                if ws.flush().is_err() {
                    return written;
                }
                written += queued as u64;
            }
        }
        let queued = ws.sender().queued();
        if ws.flush().is_err() {
            return written;
        }
        written += queued as u64;
        // Stay connected until the client is done, so closing here never races its reads.
        let socket = ws.stream_mut();
        let _ = socket.set_read_timeout(Some(IDLE_LIMIT));
        let mut sink = [0u8; 1024];
        while matches!(socket.read(&mut sink), Ok(n) if n > 0) {}
        written
    })
}

/// Binds 127.0.0.1:0 and runs `serve` on the one accepted connection (TCP_NODELAY on), on a
/// thread pinned to `peer_core`.
pub(crate) fn spawn<T: Send + 'static>(
    name: &str,
    peer_core: usize,
    serve: impl FnOnce(TcpStream) -> T + Send + 'static,
) -> Server<T> {
    let listener =
        TcpListener::bind("127.0.0.1:0").expect("bind a loopback listener on 127.0.0.1:0");
    let addr = listener
        .local_addr()
        .expect("read the loopback listener's address");
    let thread = thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            harness::pin_to(peer_core);
            let (stream, _) = listener
                .accept()
                .expect("accept the benchmark client on the loopback listener");
            stream
                .set_nodelay(true)
                .expect("set TCP_NODELAY on the server socket");
            serve(stream)
        })
        .expect("spawn a loopback server thread");
    Server { addr, thread }
}
