//! Issue 18's memory bound on the real reactor: 10,000 subscribers of one topic, 1,000 of
//! which never read, and a stream of publications far larger than the send budget. What
//! the server's heap holds once the readers are done must be the silent subscribers'
//! budgets (and their buffer sets), not the stream: a queue without a bound would hold
//! every message for each of them.
//!
//! The stream is published as fast as the handle takes it, so every subscriber falls behind
//! at first and the policy (drop the oldest) acts on all of them: a reader must still see
//! its messages in order and end with the newest. The clients run in a child process (this
//! binary, re-run with `--clients`), so the counting allocator sees the server alone.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mio::{Events, Interest, Poll, Token};
use tickwire_server::{
    Conn, Decision, Handler, Message, Request, ServerBuilder, SharedFrame, SlowConsumer, Topic,
};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

const SUBSCRIBERS: usize = 10_000;
const SILENT: usize = 1_000;
const MESSAGES: usize = 2_000;
/// Payload bytes; on the wire 4 more (a 16-bit length header).
const SIZE: usize = 1_000;
const FRAME: usize = SIZE + 4;
/// Larger than what the kernel holds for a silent client (SNDBUF below, doubled, and a
/// small receive window), so the server's own queue is what the budget bounds.
const BUDGET: usize = 64 << 10;
const SNDBUF: usize = 4 << 10;

/// Subscribes every connection; answers `ready` once it is subscribed.
struct Subscribe(Topic);

impl Handler for Subscribe {
    type State = ();
    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<()> {
        Decision::accept(request, ())
    }
    fn on_open(&mut self, conn: &mut Conn<'_, ()>) {
        conn.subscribe(&self.0);
    }
    fn on_message(&mut self, conn: &mut Conn<'_, ()>, message: Message<'_>) {
        if message == Message::Text("ready") {
            conn.send_text("ready").unwrap();
        }
    }
}

/// Upgrades by hand and waits for the answer to `ready` (topic messages cannot come
/// before it: nothing is published until every client is ready).
fn connect(addr: &str, silent: bool) -> TcpStream {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    if silent {
        // A small window: the kernel holds little for a client that never reads.
        socket.set_recv_buffer_size(4096).unwrap();
    }
    let addr: SocketAddr = addr.parse().unwrap();
    socket.connect(&addr.into()).unwrap();
    let mut stream: TcpStream = socket.into();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut request =
        *b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n\
\x81\x85\x01\x02\x03\x04ready";
    let start = request.len() - 5;
    for (i, byte) in request[start..].iter_mut().enumerate() {
        *byte ^= [1, 2, 3, 4][i % 4];
    }
    stream.write_all(&request).unwrap();
    let mut seen = [0u8; 512];
    let mut len = 0;
    while !seen[..len].ends_with(b"\x81\x05ready") {
        let n = stream.read(&mut seen[len..]).unwrap();
        assert!(n > 0, "server closed");
        len += n;
    }
    stream
}

/// Child mode: connects every subscriber, says "ready", reads every reader's messages to
/// the newest (checking each one: a binary frame of SIZE bytes, sequence numbers rising),
/// then says "done" and waits for stdin to end.
fn clients(addr: &str) {
    let t0 = Instant::now();
    let mut readers = Vec::new();
    let mut silent = Vec::new();
    for i in 0..SUBSCRIBERS {
        if i % (SUBSCRIBERS / SILENT) == 0 {
            silent.push(connect(addr, true));
        } else {
            readers.push(connect(addr, false));
        }
    }
    eprintln!("child: connected in {:?}", t0.elapsed());
    println!("ready");
    let _ = std::io::stdout().flush();
    let mut poll = Poll::new().unwrap();
    let mut streams: Vec<mio::net::TcpStream> = readers
        .into_iter()
        .map(|s| {
            s.set_nonblocking(true).unwrap();
            mio::net::TcpStream::from_std(s)
        })
        .collect();
    for (i, stream) in streams.iter_mut().enumerate() {
        poll.registry()
            .register(stream, Token(i), Interest::READABLE)
            .unwrap();
    }
    let mut pending: Vec<Vec<u8>> = vec![Vec::new(); streams.len()];
    let mut last: Vec<u64> = vec![0; streams.len()];
    let mut done = 0;
    let mut events = Events::with_capacity(1024);
    let mut buf = vec![0u8; 64 << 10];
    let deadline = Instant::now() + Duration::from_secs(120);
    while done < streams.len() {
        assert!(Instant::now() < deadline, "{done} readers finished in time");
        poll.poll(&mut events, Some(Duration::from_millis(100)))
            .unwrap();
        for event in &events {
            let i = event.token().0;
            loop {
                match streams[i].read(&mut buf) {
                    Ok(0) => panic!("the server closed reader {i}"),
                    Ok(n) => pending[i].extend_from_slice(&buf[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) => panic!("reader {i}: {e}"),
                }
            }
            let whole = pending[i].len() / FRAME * FRAME;
            for frame in pending[i][..whole].chunks(FRAME) {
                let [hi, lo] = (SIZE as u16).to_be_bytes();
                assert_eq!(
                    &frame[..4],
                    &[0x82, 126, hi, lo],
                    "reader {i}: a {SIZE} B frame"
                );
                let seq = u64::from_be_bytes(frame[4..12].try_into().unwrap());
                assert!(seq > last[i], "reader {i}: in order");
                last[i] = seq;
                if seq == MESSAGES as u64 {
                    done += 1;
                }
            }
            pending[i].drain(..whole);
        }
    }
    eprintln!("child: read in {:?}", t0.elapsed());
    println!("done");
    let _ = std::io::stdout().flush();
    let mut rest = String::new();
    let _ = std::io::stdin().read_line(&mut rest);
    drop(silent);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--clients") {
        return clients(&args[2]);
    }
    let server = ServerBuilder::new()
        .workers(1)
        .send_budget(BUDGET)
        .socket_send_buffer(Some(SNDBUF))
        .bind("127.0.0.1:0")
        .unwrap();
    let addr = server.local_addr();
    let (tx, rx) = std::sync::mpsc::channel();
    let running = server
        .start(move |worker| {
            let topic = worker
                .handle
                .topic("ticks", SlowConsumer::DropOldest)
                .unwrap();
            tx.send(topic.clone()).unwrap();
            Subscribe(topic)
        })
        .unwrap();
    let topic = rx.recv().unwrap();
    let handle = running.handle().clone();
    let mut child: Child = Command::new(std::env::current_exe().unwrap())
        .args(["--clients", &addr.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    assert_eq!(
        lines.next().unwrap().unwrap(),
        "ready",
        "the clients connected"
    );
    std::thread::sleep(Duration::from_millis(200));
    let region = ALLOC.heap_region();
    for _ in 0..MESSAGES {
        handle
            .publish(&topic, 0, |seq| {
                let mut payload = [0u8; SIZE];
                payload[..8].copy_from_slice(&seq.to_be_bytes());
                SharedFrame::binary(&payload)
            })
            .unwrap();
    }
    let peak = region.change().held();
    assert_eq!(
        lines.next().unwrap().unwrap(),
        "done",
        "every reader got the newest"
    );
    std::thread::sleep(Duration::from_millis(200));
    let retained = region.change().held();
    let stats = topic.stats();
    drop(child.stdin.take());
    assert!(child.wait().unwrap().success());
    running.shutdown(Duration::from_secs(2)).unwrap();
    let per_silent = retained as f64 / SILENT as f64;
    let entry = tickwire_server::codec::ws::Buffers::SHARED_ENTRY_BYTES;
    let unbounded = (MESSAGES * entry) as f64;
    println!(
        "slow_subscribers: {SUBSCRIBERS} subscribers ({SILENT} never reading), {MESSAGES} x {SIZE} B \
         published; {} deliveries dropped; server heap at the end {retained} B \
         ({per_silent:.0} B per silent subscriber, budget {BUDGET} B; an unbounded queue would \
         hold {unbounded:.0} B of entries for each), {peak} B right after publishing",
        stats.dropped,
    );
    assert!(
        stats.dropped >= (SILENT * (MESSAGES / 2)) as u64,
        "the silent subscribers lost most of the stream: {} dropped",
        stats.dropped
    );
    assert_eq!(stats.published, MESSAGES as u64);
    // A silent subscriber keeps at most its budget's worth of queue entries (the queue's
    // capacity up to twice that) and the buffer set that holds them (two 16 KiB buffers);
    // the frames' bytes are shared by all.
    let bound = 2 * (BUDGET / (FRAME + entry)) * entry + 48 * 1024;
    assert!(
        per_silent <= bound as f64,
        "{per_silent:.0} B held per silent subscriber, bound {bound} B"
    );
    println!("slow_subscribers: ok");
}
