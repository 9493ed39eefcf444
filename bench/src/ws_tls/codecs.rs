//! The three receive paths the in-memory TLS workload compares, each ending in the same
//! tickwire [`Connection`] parse: plaintext frames copied into the connection's spare buffer
//! (no TLS), tickwire's [`TlsCodec`] decrypting into it, and a bare rustls
//! [`ClientConnection`](rustls::ClientConnection) decrypting into it (the floor under tickwire's codec).
//!
//! Owns the setup of each path (an in-memory TLS 1.3 handshake with a server [`TlsCodec`],
//! built exactly alike for the timed run and for callgrind), the server side that encrypts the
//! input, and one receive operation. It does not time anything.

use std::hint::black_box;
use std::io::Read;
use std::time::Instant;

use rustls::pki_types::ServerName;
use tickwire_codec::ws::{Buffers, Config, Connection, Event, MaskSource, Message, Role};
use tickwire_tls::{Plaintext, TlsCodec};

use super::pki;
use crate::wire;

/// Payload of every message: a 128 B JSON text.
pub const PAYLOAD_LEN: usize = 128;

/// TLS 1.3 record overhead with AES-128-GCM: the 5-byte header, the inner content type byte
/// and the 16-byte tag (RFC 8446 §5.2).
const RECORD_OVERHEAD: usize = 5 + 1 + 16;

/// The frame every path receives: one unmasked text frame of [`PAYLOAD_LEN`] B of JSON.
pub fn frame() -> Vec<u8> {
    wire::frame(true, 0x1, &wire::json_payload(PAYLOAD_LEN), None)
}

/// The TLS record carrying a frame of `frame_len` bytes.
pub fn record_len(frame_len: usize) -> usize {
    frame_len + RECORD_OVERHEAD
}

/// A receive path under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    /// The frame copied into the connection's spare buffer, as a `ws://` socket read does.
    Plaintext,
    /// tickwire's TLS codec: `read_tls` of one record, `read_plaintext` into the spare buffer.
    Tickwire,
    /// A bare rustls `ClientConnection`: `read_tls`, `process_new_packets`, `reader().read`
    /// into the spare buffer.
    Rustls,
}

impl Variant {
    /// Table order: the plaintext baseline, tickwire, the floor.
    pub const ALL: [Self; 3] = [Self::Plaintext, Self::Tickwire, Self::Rustls];

    /// The row labels, in [`Variant::ALL`] order (also the callgrind library names).
    pub const NAMES: [&'static str; 3] = [
        "tickwire ws (no TLS)",
        "tickwire TlsCodec",
        "bare rustls ClientConnection",
    ];

    /// The row label.
    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// The variant labelled `name`.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.name() == name)
    }
}

/// The client side of one path: a tickwire connection fed by one of the three paths, and the
/// server that encrypts its input.
pub struct Receiver {
    conn: Connection,
    bufs: Buffers,
    /// The time passed to the connection with every read: taken once (sans-IO, time comes
    /// in from the caller; a clock read per record would be the same for every row).
    now: Instant,
    tls: Tls,
    /// The encrypting side (`None` for plaintext).
    server: Option<TlsCodec>,
    frame: Vec<u8>,
    /// What the next calls receive: frames or records, each `stride` bytes.
    input: Vec<u8>,
    stride: usize,
    at: usize,
}

/// The client's TLS side; neither variant is boxed, so the two TLS rows reach their state
/// alike.
enum Tls {
    None,
    Tickwire(TlsCodec),
    Rustls(rustls::ClientConnection),
}

impl Receiver {
    /// A connected receiver of `variant`: for the TLS paths, the handshake is done and the
    /// server's session tickets are processed, so only application data follows. Panics
    /// when the handshake fails or negotiates another suite than [`pki::CIPHER_SUITE`].
    pub fn new(variant: Variant) -> Self {
        let now = Instant::now();
        let frame = frame();
        let (tls, server, stride) = match variant {
            Variant::Plaintext => (Tls::None, None, frame.len()),
            Variant::Tickwire | Variant::Rustls => {
                let mut server = TlsCodec::server(&pki::server_config()).expect("server codec");
                let mut tls = if variant == Variant::Tickwire {
                    let config = pki::tickwire_client_config();
                    Tls::Tickwire(TlsCodec::client(&config, pki::HOST).expect("client codec"))
                } else {
                    let name = ServerName::try_from(pki::HOST).expect("an IP address");
                    let conn = rustls::ClientConnection::new(pki::rustls_client_config(), name)
                        .expect("rustls client");
                    Tls::Rustls(conn)
                };
                handshake(&mut server, &mut tls);
                assert_eq!(
                    server.cipher_suite().as_deref(),
                    Some(pki::CIPHER_SUITE),
                    "{}: negotiated another cipher suite",
                    variant.name()
                );
                // No limit on queued ciphertext: callgrind encrypts all its records at once.
                server.set_buffer_limit(None);
                (tls, Some(server), record_len(frame.len()))
            }
        };
        Self {
            conn: Connection::new(Role::Client, Config::client(), MaskSource::random(), now),
            bufs: Buffers::new(&Config::client()),
            now,
            tls,
            server,
            frame,
            input: Vec::new(),
            stride,
            at: 0,
        }
    }

    /// Makes the next `messages` calls of [`next`](Self::next) receive one message each:
    /// for TLS, the server encrypts `messages` frames, one `write_plaintext` (one record)
    /// each, and the records are queued back to back. Outside any timed region.
    pub fn load(&mut self, messages: usize) {
        self.at = 0;
        self.input.resize(messages * self.stride, 0);
        match &mut self.server {
            None => {
                for slot in self.input.chunks_exact_mut(self.stride) {
                    slot.copy_from_slice(&self.frame);
                }
            }
            Some(server) => {
                for _ in 0..messages {
                    let taken = server.write_plaintext(&self.frame).expect("server encrypt");
                    assert_eq!(taken, self.frame.len(), "server: frame not taken whole");
                }
                let written = server.write_tls(&mut self.input);
                assert!(
                    written == self.input.len() && !server.wants_write(),
                    "server: {written} bytes of ciphertext for {messages} records of {} bytes",
                    self.stride
                );
            }
        }
    }

    /// Receives one message: polls the connection, and when it needs bytes feeds it the next
    /// record (or frame) through this path; returns the text's length.
    #[inline]
    pub fn next(&mut self) -> usize {
        self.receive(|text| black_box(text).len())
    }

    /// Receives one message and hands its text to `inspect` (the check before timing uses
    /// it to compare the whole text; the timed path takes the length).
    #[inline]
    pub fn receive<R>(&mut self, inspect: impl FnOnce(&str) -> R) -> R {
        loop {
            match self.conn.poll(&mut self.bufs).expect("tickwire parse") {
                Event::Message(Message::Text(text)) => return inspect(text),
                Event::NeedMore => self.feed_one(),
                other => panic!("expected a text message, got {other:?}"),
            }
        }
    }

    /// The next record (or frame) into the connection's spare buffer.
    #[inline]
    fn feed_one(&mut self) {
        let record = &self.input[self.at..self.at + self.stride];
        self.at += self.stride;
        let n = match &mut self.tls {
            Tls::None => {
                self.conn.spare(&mut self.bufs)[..record.len()].copy_from_slice(record);
                record.len()
            }
            Tls::Tickwire(codec) => {
                codec.read_tls(record).expect("tickwire: read_tls");
                match codec.read_plaintext(self.conn.spare(&mut self.bufs)) {
                    Ok(Plaintext::Data(n)) => n,
                    other => panic!("tickwire: read_plaintext: {other:?}"),
                }
            }
            Tls::Rustls(conn) => {
                conn.read_tls(&mut &record[..]).expect("rustls: read_tls");
                conn.process_new_packets().expect("rustls: process");
                conn.reader()
                    .read(self.conn.spare(&mut self.bufs))
                    .expect("rustls: read")
            }
        };
        self.conn.filled(&mut self.bufs, n, self.now);
    }
}

impl Tls {
    /// Moves queued ciphertext into `out`; returns the bytes written.
    fn write_out(&mut self, out: &mut [u8]) -> usize {
        match self {
            Self::None => 0,
            Self::Tickwire(codec) => codec.write_tls(out),
            Self::Rustls(conn) => {
                let capacity = out.len();
                let mut rest = &mut out[..];
                while conn.wants_write() {
                    conn.write_tls(&mut rest).expect("rustls: write_tls");
                }
                capacity - rest.len()
            }
        }
    }

    /// Feeds `bytes` of ciphertext and processes them.
    fn feed(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            let taken = match self {
                Self::None => return,
                Self::Tickwire(codec) => codec.read_tls(bytes).expect("tickwire: handshake"),
                Self::Rustls(conn) => {
                    let taken = conn.read_tls(&mut &bytes[..]).expect("rustls: read_tls");
                    conn.process_new_packets().expect("rustls: handshake");
                    taken
                }
            };
            assert!(taken > 0, "the client took no handshake bytes");
            bytes = &bytes[taken..];
        }
    }

    fn is_handshaking(&self) -> bool {
        match self {
            Self::None => false,
            Self::Tickwire(codec) => codec.is_handshaking(),
            Self::Rustls(conn) => conn.is_handshaking(),
        }
    }
}

/// Runs the handshake between `server` and `client` in memory until neither has anything to
/// send, so the server's session tickets have reached the client too.
fn handshake(server: &mut TlsCodec, client: &mut Tls) {
    let mut buffer = vec![0u8; 64 << 10];
    for _ in 0..16 {
        let to_server = client.write_out(&mut buffer);
        let mut rest = &buffer[..to_server];
        while !rest.is_empty() {
            let taken = server.read_tls(rest).expect("server: handshake");
            assert!(taken > 0, "the server took no handshake bytes");
            rest = &rest[taken..];
        }
        let to_client = server.write_tls(&mut buffer);
        client.feed(&buffer[..to_client]);
        if to_server == 0 && to_client == 0 && !client.is_handshaking() && !server.is_handshaking()
        {
            return;
        }
    }
    panic!("the in-memory TLS handshake did not finish");
}
