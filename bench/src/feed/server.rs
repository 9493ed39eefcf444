//! The feed suite's server: an exchange-like WebSocket feed of pre-built 128 B sequenced JSON
//! messages, a thread per connection, pinned to the peer core.
//!
//! Owns the server half of every feed workload, not what a client does with the messages.
//! A connection is upgraded by tickwire's blocking server, waits for the client's first text
//! message (its subscription), then writes frames straight to the socket: in [`Mode::Stream`]
//! as fast as the socket takes them, each connection numbering from the same first number (two
//! connections carry the same (key, number) pairs, as redundant exchange connections do); in
//! [`Mode::Cut`] a short burst numbered where the previous connection stopped, then a reset.
//!
//! Why an in-bench server and not `tickwire exchange-sim`: the simulator formats and records
//! every message and paces by its rate (it waits up to 2 ms before a write), so it cannot keep
//! a client's socket full, and its record grows with every message. Here the frames are built
//! once and only the 12 digits of the number change per message, so the client is always the
//! bottleneck and a row's cost is its own.

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use tickwire_codec::feed::leading_u64;

use crate::harness;
use crate::wire;

/// The message payload's length: the issue's 128 B.
pub const PAYLOAD_LEN: usize = 128;

/// The first sequence number: twelve digits from here on, so a message's length never changes
/// as its number grows (JSON has no leading zeros).
const FIRST_SEQ: u64 = 100_000_000_000;

/// Digits of every sequence number.
const SEQ_DIGITS: usize = 12;

/// Frames per write in [`Mode::Stream`] (about 67 KiB).
const CHUNK: usize = 512;

/// Messages a connection delivers in [`Mode::Cut`] before it is reset.
pub const BURST: usize = 4;

/// How long a [`Mode::Cut`] connection stays up after its burst before the reset, so the
/// client has read the burst and waits on an idle socket when the cut comes.
const HOLD_BEFORE_CUT: Duration = Duration::from_millis(2);

/// How long a connection waits for the client's subscription before giving up.
const IDLE_LIMIT: Duration = Duration::from_secs(30);

/// What each connection does once subscribed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Writes messages as fast as the socket takes them, numbered from the first number on
    /// every connection, until the client goes away.
    Stream,
    /// Writes [`BURST`] messages numbered on from the previous connection, waits
    /// [`HOLD_BEFORE_CUT`], reports the cut's rdtsc reading, and resets (RST).
    Cut,
}

/// A running feed server; dropping it stops accepting and joins the listener.
pub struct FeedServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    listener: Option<JoinHandle<()>>,
    cuts: Receiver<u64>,
}

impl FeedServer {
    /// Listens on 127.0.0.1 (any port); connections are served on threads pinned to
    /// `peer_core`.
    pub fn start(mode: Mode, peer_core: usize) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("feed server: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("feed server: local address");
        let stop = Arc::new(AtomicBool::new(false));
        let (cut_tx, cuts) = channel();
        let stopping = Arc::clone(&stop);
        let thread = thread::Builder::new()
            .name("feed-server".to_owned())
            .spawn(move || accept_loop(&listener, mode, peer_core, &stopping, &cut_tx))
            .expect("feed server: spawn the listener");
        Self {
            addr,
            stop,
            listener: Some(thread),
            cuts,
        }
    }

    /// The feed's `ws://` URL.
    pub fn url(&self) -> String {
        format!("ws://{}/", self.addr)
    }

    /// The rdtsc reading taken right before the next reset in [`Mode::Cut`] (waits for it).
    pub fn next_cut(&self) -> u64 {
        self.cuts
            .recv_timeout(IDLE_LIMIT)
            .expect("feed server: no cut reported")
    }
}

impl Drop for FeedServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocking accept; the listener sees `stop` and returns.
        let _ = TcpStream::connect(self.addr);
        if let Some(thread) = self.listener.take() {
            let _ = thread.join();
        }
    }
}

/// The process form of [`Mode::Stream`] for the callgrind counts (the counted client must
/// not count the server's instructions): prints the port on the first line, serves until
/// killed.
pub fn serve_process(core: Option<usize>) -> Result<(), String> {
    let server = FeedServer::start(Mode::Stream, core.unwrap_or(1));
    println!("{}", server.addr.port());
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    // Bounded by the parent, which kills this process when its counts are taken.
    loop {
        thread::park();
    }
}

/// The payload of message `seq`: `{"key":"BTC-USD","seq":N,"px":117.17,"pad":"..."}`, padded
/// to [`PAYLOAD_LEN`] bytes.
pub fn payload(seq: u64) -> Vec<u8> {
    let head = format!(r#"{{"key":"BTC-USD","seq":{seq},"px":117.17,"pad":""#);
    let pad = PAYLOAD_LEN - head.len() - 2;
    let mut text = head.into_bytes();
    text.extend(std::iter::repeat_n(b'x', pad));
    text.extend_from_slice(b"\"}");
    text
}

/// The sequence extractor every row that extracts uses (the peers' loops included), as a
/// user writes one for a known message shape: the key between `{"key":"` and the next
/// quote, the number after `,"seq":` read with the library's [`leading_u64`].
pub fn sequence(message: &[u8]) -> Option<(&[u8], u64)> {
    let rest = message.strip_prefix(b"{\"key\":\"")?;
    let end = rest.iter().position(|&b| b == b'"')?;
    let (key, rest) = rest.split_at(end);
    let (seq, _) = leading_u64(rest.strip_prefix(b"\",\"seq\":")?)?;
    Some((key, seq))
}

fn accept_loop(
    listener: &TcpListener,
    mode: Mode,
    peer_core: usize,
    stop: &AtomicBool,
    cuts: &Sender<u64>,
) {
    harness::pin_to(peer_core);
    // Cut mode numbers on across connections, so each new connection continues the feed.
    let next_seq = Arc::new(AtomicU64::new(FIRST_SEQ));
    let mut connections = Vec::new();
    for stream in listener.incoming() {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = stream else { continue };
        match mode {
            // One at a time: the client reconnects only after the cut.
            Mode::Cut => serve_cut(stream, &next_seq, cuts),
            Mode::Stream => connections.push(
                thread::Builder::new()
                    .name("feed-conn".to_owned())
                    .spawn(move || {
                        harness::pin_to(peer_core);
                        serve_stream(stream);
                    })
                    .expect("feed server: spawn a connection"),
            ),
        }
        connections.retain(|c: &JoinHandle<()>| !c.is_finished());
    }
    for connection in connections {
        let _ = connection.join();
    }
}

/// Upgrades `stream` and waits for the client's subscription; `None` when the client went
/// away first.
fn subscribed(stream: TcpStream) -> Option<tickwire_blocking::WebSocket<TcpStream>> {
    stream.set_nodelay(true).ok()?;
    let mut ws = tickwire_blocking::ServerBuilder::new()
        .nodelay(true)
        .read_timeout(Some(IDLE_LIMIT))
        .accept(stream)
        .ok()?;
    match ws.recv() {
        Ok(tickwire_blocking::Recv::Message(tickwire_blocking::Message::Text(_))) => Some(ws),
        _ => None,
    }
}

fn serve_stream(stream: TcpStream) {
    let Some(mut ws) = subscribed(stream) else {
        return;
    };
    let mut frames = Frames::new(CHUNK, FIRST_SEQ);
    let socket = ws.stream_mut();
    // Bounded by the client: a write fails once it has gone away.
    while socket.write_all(frames.next_chunk()).is_ok() {}
}

fn serve_cut(stream: TcpStream, next_seq: &AtomicU64, cuts: &Sender<u64>) {
    let Some(mut ws) = subscribed(stream) else {
        return;
    };
    let first = next_seq.fetch_add(BURST as u64, Ordering::SeqCst);
    let mut frames = Frames::new(BURST, first);
    let socket = ws.stream_mut();
    if socket.write_all(frames.next_chunk()).is_err() {
        return;
    }
    thread::sleep(HOLD_BEFORE_CUT);
    let _ = socket2::SockRef::from(&*socket).set_linger(Some(Duration::ZERO));
    let _ = cuts.send(harness::ticks_start());
    // Dropping the socket with SO_LINGER 0 sends the RST.
}

/// `count` pre-built frames whose numbers advance by `count` per chunk.
struct Frames {
    bytes: Vec<u8>,
    frame_len: usize,
    /// Where the digits start within a frame.
    digits_at: usize,
    next: u64,
    count: usize,
}

impl Frames {
    fn new(count: usize, first: u64) -> Self {
        let template = payload(first);
        let digits_at_payload = template
            .windows(6)
            .position(|w| w == b"\"seq\":")
            .expect("the payload has a seq field")
            + 6;
        let frame = wire::frame(true, 0x1, &template, None);
        let header = frame.len() - template.len();
        Self {
            bytes: frame.repeat(count),
            frame_len: frame.len(),
            digits_at: header + digits_at_payload,
            next: first,
            count,
        }
    }

    /// The next `count` messages, numbered on from the last chunk.
    fn next_chunk(&mut self) -> &[u8] {
        for i in 0..self.count {
            let at = i * self.frame_len + self.digits_at;
            write_digits(&mut self.bytes[at..at + SEQ_DIGITS], self.next);
            self.next += 1;
        }
        &self.bytes
    }
}

fn write_digits(out: &mut [u8], mut value: u64) {
    for digit in out.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_128_bytes_and_the_extractor_reads_them() {
        let message = payload(FIRST_SEQ + 41);
        assert_eq!(message.len(), PAYLOAD_LEN);
        assert_eq!(sequence(&message), Some((&b"BTC-USD"[..], FIRST_SEQ + 41)));
        let mut frames = Frames::new(3, FIRST_SEQ);
        frames.next_chunk();
        let second = frames.next_chunk().to_vec();
        let payload_at = frames.frame_len - PAYLOAD_LEN;
        let last = &second[2 * frames.frame_len + payload_at..];
        assert_eq!(sequence(last), Some((&b"BTC-USD"[..], FIRST_SEQ + 5)));
    }
}
