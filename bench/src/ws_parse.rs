//! In-memory parse workloads: bytes arrive from a stream, messages come out, UTF-8 validated
//! and fragments assembled, for tickwire and each peer on the same pre-encoded bytes.
//!
//! Fairness: every library reads from the same [`MemStream`] through the path its own
//! blocking transport uses (tickwire `spare`/`filled`, nexus-web `read_from`, tungstenite and
//! fastwebsockets their stream-owning `read`/`read_frame`), so each pays exactly one copy of
//! the bytes into its buffer, as a socket read would. Each returns a message whose text is
//! validated UTF-8 (fastwebsockets through its `FragmentCollector`, the only API of it that
//! validates and assembles). The timed region covers the reads and the parses.

use std::cell::RefCell;
use std::hint::black_box;
use std::io;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::Ctx;
use crate::harness::{self, Plan};
use crate::report::{self, Row, Table};
use crate::wire;

/// Progress steps per round: libraries times latency workloads, plus throughput.
pub const STEPS: u64 = 4 * 8 + 4 * 2 + 4;

/// Frames per read in the "many frames per read" workloads.
const FRAMES_PER_READ: usize = 64;

/// The libraries, in table order.
pub const LIBRARIES: [&str; 4] = ["tickwire", "nexus-web", "tungstenite", "fastwebsockets"];

/// One latency workload: `wire` holds `messages` messages; each read returns at most
/// `read_size` bytes.
struct Workload {
    id: &'static str,
    title: &'static str,
    server_role: bool,
    wire: &'static [u8],
    messages: usize,
    read_size: usize,
    payload_len: usize,
}

/// Runs every parse workload selected in `ctx`.
pub fn run(ctx: &Ctx) -> Vec<Table> {
    let mut tables = Vec::new();
    for workload in workloads() {
        if !ctx.selected(workload.id) {
            continue;
        }
        let mut rounds: Vec<Vec<_>> = vec![Vec::new(); LIBRARIES.len()];
        for _ in 0..ctx.rounds {
            for (i, library) in LIBRARIES.iter().enumerate() {
                ctx.step(&format!("{} / {library}", workload.id));
                rounds[i].push(measure(library, &workload, ctx.plan));
            }
        }
        let mut table = Table::new(workload.id, workload.title, "tickwire", &note(&workload));
        for (library, hists) in LIBRARIES.iter().zip(rounds) {
            table.rows.push(Row::median_round(library, hists));
        }
        tables.push(table);
    }
    for (id, len) in [("parse_stream_text_40", 40), ("parse_stream_text_512", 512)] {
        if ctx.selected(id) {
            tables.push(stream_latency(ctx, id, len));
        }
    }
    if ctx.selected("parse_throughput") {
        tables.push(throughput(ctx));
    }
    tables
}

/// Bytes per read in the stream workloads: a socket read of one page.
pub const STREAM_READ: usize = 4096;

/// Per-message latency over an endless stream of `len`-byte text frames read 4 KiB at a time,
/// so frames straddle reads and a partial frame waits in the buffer for the next read: one
/// sample per message, no batching, so the message that pays for a read shows in the tail.
fn stream_latency(ctx: &Ctx, id: &str, len: usize) -> Table {
    let payload = wire::json_payload(len);
    // 256 KiB or more of frames; the stream starts over at the end.
    let frame = wire::frame(true, 0x1, &payload, None);
    let stream = frame.repeat((256 << 10) / frame.len() + 1);
    let mut rounds: Vec<Vec<_>> = vec![Vec::new(); LIBRARIES.len()];
    for round in 1..=ctx.rounds {
        let wire_bytes = at_page_offset(&stream, source_phase(round));
        for i in report::round_order(LIBRARIES.len(), round) {
            let library = LIBRARIES[i];
            ctx.step(&format!("{id} / {library}"));
            let mut parser = new_parser(library, false);
            parser.load(wire_bytes, STREAM_READ, true);
            for _ in 0..1000 {
                assert_eq!(parser.next(), len, "{library} parsed {id} wrongly");
            }
            rounds[i].push(harness::sample_each(ctx.plan, || {
                black_box(parser.next());
            }));
        }
    }
    let mut table = Table::new(
        id,
        &format!("Parse: {len} B text, a stream read 4 KiB at a time (client role)"),
        "tickwire",
        &format!(
            "Ticks per message, one message per sample (no batching; the rdtsc pair, about 30 \
             ticks, is included), reads included: every {STREAM_READ}-byte read ends inside a \
             frame, so the parser keeps a partial frame across reads, and roughly one message \
             in {} pays for a read. The tail (p99, p99.9) is the message that pays for it.",
            STREAM_READ / frame.len().max(1)
        ),
    );
    if ctx.rounds > 1 {
        for q in [0.99, 0.999] {
            table.note.push_str(&report::paired_quantile(
                "tickwire",
                &rounds[0],
                "nexus-web",
                &rounds[1],
                q,
            ));
        }
    }
    for (library, hists) in LIBRARIES.iter().zip(rounds) {
        table.rows.push(Row::median_round(library, hists));
    }
    table
}

/// Where the stream's first byte sits in its 4 KiB page in round `round`: spread over the
/// page (a golden-ratio sequence, starting at 16, where a large allocation from malloc lands).
///
/// A read's copy slows about tenfold when its destination sits a few bytes past its source
/// modulo 4 KiB (see `tickwire_codec::buf::ALIAS_PERIOD`). Where each library's buffer sits
/// relative to the stream is allocator luck, and a library whose reads keep one relation for
/// a whole round is either lucky or unlucky for all of it; moving the source every round
/// spreads that luck evenly over the libraries instead of letting it decide the tail.
fn source_phase(round: usize) -> usize {
    (16 + (round - 1) * 2531) % 4096
}

/// A leaked copy of `bytes` whose first byte is `phase` bytes into a 4 KiB page.
fn at_page_offset(bytes: &[u8], phase: usize) -> &'static [u8] {
    let mut storage = vec![0u8; bytes.len() + 2 * 4096];
    let skip = (phase + 4096 - storage.as_ptr().addr() % 4096) % 4096;
    storage[skip..skip + bytes.len()].copy_from_slice(bytes);
    let storage: &'static [u8] = leak(storage);
    &storage[skip..skip + bytes.len()]
}

fn workloads() -> Vec<Workload> {
    let mut list = Vec::new();
    let batch = |payload: &[u8], opcode: u8, mask: Option<[u8; 4]>| -> &'static [u8] {
        let one = wire::frame(true, opcode, payload, mask);
        leak(one.repeat(FRAMES_PER_READ))
    };
    for (id, title, len) in [
        (
            "parse_text_40",
            "Parse: 40 B text, 64 frames per read (client role)",
            40,
        ),
        (
            "parse_text_128",
            "Parse: 128 B text, 64 frames per read (client role)",
            128,
        ),
        (
            "parse_text_512",
            "Parse: 512 B text, 64 frames per read (client role)",
            512,
        ),
        (
            "parse_text_2048",
            "Parse: 2048 B text, 64 frames per read (client role)",
            2048,
        ),
    ] {
        let payload = wire::json_payload(len);
        list.push(Workload {
            id,
            title,
            server_role: false,
            wire: batch(&payload, 0x1, None),
            messages: FRAMES_PER_READ,
            read_size: usize::MAX,
            payload_len: len,
        });
    }
    let payload = wire::json_payload(128);
    let one_frame = wire::frame(true, 0x1, &payload, None).len();
    list.push(Workload {
        id: "parse_text_128_one_per_read",
        title: "Parse: 128 B text, one frame per read (client role)",
        server_role: false,
        wire: batch(&payload, 0x1, None),
        messages: FRAMES_PER_READ,
        read_size: one_frame,
        payload_len: 128,
    });
    list.push(Workload {
        id: "parse_masked_text_128",
        title: "Parse: 128 B masked text, 64 frames per read (server role)",
        server_role: true,
        wire: batch(&payload, 0x1, Some(wire::MASK_KEY)),
        messages: FRAMES_PER_READ,
        read_size: usize::MAX,
        payload_len: 128,
    });
    list.push(Workload {
        id: "parse_binary_128",
        title: "Parse: 128 B binary, 64 frames per read (client role)",
        server_role: false,
        wire: batch(&payload, 0x2, None),
        messages: FRAMES_PER_READ,
        read_size: usize::MAX,
        payload_len: 128,
    });
    let big = wire::json_payload(4096);
    let fragmented = wire::fragmented_text(&big, 3, None);
    list.push(Workload {
        id: "parse_fragmented_4k",
        title: "Parse: 4 KiB text in 3 fragments, 16 messages per read (client role)",
        server_role: false,
        wire: leak(fragmented.repeat(16)),
        messages: 16,
        read_size: usize::MAX,
        payload_len: 4096,
    });
    list
}

fn note(workload: &Workload) -> String {
    let reads = if workload.read_size == usize::MAX {
        format!("all {} messages arrive in one read", workload.messages)
    } else {
        "each read returns exactly one frame".to_owned()
    };
    format!(
        "Ticks per message, reads included; {reads}. Every library reads the same bytes from the \
         same in-memory stream through its own transport read path and returns validated text."
    )
}

fn measure(library: &str, workload: &Workload, plan: Plan) -> hdrhistogram::Histogram<u64> {
    let mut parser = new_parser(library, workload.server_role);
    let expect = workload.payload_len;
    // Check once, outside timing, that the library really parses these bytes.
    parser.load(workload.wire, workload.read_size, false);
    for _ in 0..workload.messages {
        assert_eq!(
            parser.next(),
            expect,
            "{library} parsed {} wrongly",
            workload.id
        );
    }
    let messages = workload.messages as u64;
    harness::sample_per_op(
        plan,
        messages,
        &mut parser,
        |parser| parser.load(workload.wire, workload.read_size, false),
        |parser| {
            for _ in 0..messages {
                black_box(parser.next());
            }
        },
    )
}

/// ~100 MB of 128 B text frames read in 64 KiB reads: messages per second.
fn throughput(ctx: &Ctx) -> Table {
    const FRAMES: usize = 8192;
    const PASSES: usize = 94; // 8192 * 130 B * 94 ≈ 100 MB
    let payload = wire::json_payload(128);
    let wire_bytes: &'static [u8] = leak(wire::frame(true, 0x1, &payload, None).repeat(FRAMES));
    let mut rates = vec![Vec::new(); LIBRARIES.len()];
    let passes = if ctx.rounds == 1 && ctx.plan.samples < Plan::FULL.samples {
        PASSES / 10
    } else {
        PASSES
    };
    for _ in 0..ctx.rounds {
        for (i, library) in LIBRARIES.iter().enumerate() {
            ctx.step(&format!("parse_throughput / {library}"));
            let mut parser = new_parser(library, false);
            let start = std::time::Instant::now();
            let mut total = 0usize;
            for _ in 0..passes {
                parser.load(wire_bytes, 64 << 10, false);
                for _ in 0..FRAMES {
                    total += parser.next();
                }
            }
            let seconds = start.elapsed().as_secs_f64();
            assert_eq!(total, 128 * FRAMES * passes, "{library} lost messages");
            rates[i].push((FRAMES * passes) as f64 / seconds);
        }
    }
    let mut table = Table::new(
        "parse_throughput",
        "Parse throughput: ~100 MB of 128 B text frames in 64 KiB reads (client role)",
        "tickwire",
        "Messages per second over the whole stream (frames straddle read boundaries), median and \
         range of the rounds. Same stream and read path as the latency workloads.",
    );
    for (library, r) in LIBRARIES.iter().zip(rates) {
        table.rows.push(Row::rate(library, r));
    }
    table
}

/// Leaks a pre-encoded buffer so the streams can hold `&'static` slices (a benchmark
/// process builds a few MB of these once).
fn leak(bytes: Vec<u8>) -> &'static [u8] {
    Box::leak(bytes.into_boxed_slice())
}

/// A library under test, pulling from a [`MemStream`].
pub trait Parser {
    /// Makes `wire` the bytes the stream delivers next, at most `read_size` per read; with
    /// `cycle`, the stream starts over at the end (`wire` must end on a frame boundary).
    fn load(&mut self, wire: &'static [u8], read_size: usize, cycle: bool);
    /// Reads as needed and parses the next message; returns its payload length. There must be
    /// a complete message left in the stream.
    fn next(&mut self) -> usize;
}

/// A new parser of `library` for the client role, or the server role (masked input).
pub fn new_parser(library: &str, server_role: bool) -> Box<dyn Parser> {
    match library {
        "tickwire" => Box::new(Tickwire::new(server_role)),
        "nexus-web" => Box::new(Nexus::new(server_role)),
        "tungstenite" => Box::new(Tungstenite::new(server_role)),
        "fastwebsockets" => Box::new(FastWebSockets::new(server_role)),
        other => panic!("unknown library {other}"),
    }
}

/// A socket stand-in: serves `data` in reads of at most `read_size` bytes. Reading past the
/// end is a bug in the workload (WouldBlock for the sync peers, Pending for the async one).
pub struct MemStream {
    data: &'static [u8],
    at: usize,
    read_size: usize,
    cycle: bool,
}

impl MemStream {
    fn new() -> Self {
        Self {
            data: &[],
            at: 0,
            read_size: usize::MAX,
            cycle: false,
        }
    }

    fn load(&mut self, data: &'static [u8], read_size: usize, cycle: bool) {
        self.data = data;
        self.at = 0;
        self.read_size = read_size;
        self.cycle = cycle;
    }

    #[inline]
    fn fill(&mut self, buf: &mut [u8]) -> usize {
        if self.cycle && self.at == self.data.len() {
            self.at = 0;
        }
        let n = (self.data.len() - self.at)
            .min(self.read_size)
            .min(buf.len());
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        n
    }
}

impl io::Read for MemStream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.data.len() && !self.cycle {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(self.fill(buf))
    }
}

impl io::Write for MemStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl tokio::io::AsyncRead for MemStream {
    fn poll_read(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at == this.data.len() && !this.cycle {
            return Poll::Pending;
        }
        let n = this.fill(buf.initialize_unfilled());
        buf.advance(n);
        Poll::Ready(Ok(()))
    }
}

/// tickwire: `FrameReader::poll` until `NeedMore`, then one read into `spare()` (the path of
/// its blocking transport).
struct Tickwire {
    reader: tickwire_codec::ws::FrameReader,
    buf: tickwire_codec::buf::ReadBuf,
    stream: MemStream,
}

impl Tickwire {
    fn new(server_role: bool) -> Self {
        use tickwire_codec::ws::{FrameReader, Limits, Role};
        let (role, limits) = if server_role {
            (Role::Server, Limits::server())
        } else {
            (Role::Client, Limits::client())
        };
        Self {
            reader: FrameReader::new(role, limits),
            buf: tickwire_codec::buf::ReadBuf::with_capacity(1 << 20),
            stream: MemStream::new(),
        }
    }
}

impl Parser for Tickwire {
    fn load(&mut self, wire: &'static [u8], read_size: usize, cycle: bool) {
        self.stream.load(wire, read_size, cycle);
    }

    #[inline]
    fn next(&mut self) -> usize {
        use tickwire_codec::ws::{Message, ReadEvent};
        loop {
            match self.reader.poll(&mut self.buf).expect("tickwire parse") {
                ReadEvent::Message(Message::Text(t)) => return black_box(t).len(),
                ReadEvent::Message(Message::Binary(b)) => return black_box(b).len(),
                ReadEvent::Message(_) => continue,
                ReadEvent::NeedMore => {
                    let n = self.stream.fill(self.reader.spare(&mut self.buf));
                    assert!(n > 0, "tickwire: stream exhausted");
                    self.buf.filled(n);
                }
            }
        }
    }
}

/// nexus-web: `FrameReader::poll`/`next`, then `read_from` (the path of its `Client::recv`).
struct Nexus {
    reader: nexus_web::ws::FrameReader,
    stream: MemStream,
}

impl Nexus {
    fn new(server_role: bool) -> Self {
        use nexus_web::ws::{FrameReader, Role};
        let role = if server_role {
            Role::Server
        } else {
            Role::Client
        };
        Self {
            reader: FrameReader::builder()
                .role(role)
                .buffer_capacity(1 << 20)
                .build(),
            stream: MemStream::new(),
        }
    }
}

impl Parser for Nexus {
    fn load(&mut self, wire: &'static [u8], read_size: usize, cycle: bool) {
        self.stream.load(wire, read_size, cycle);
    }

    #[inline]
    fn next(&mut self) -> usize {
        use nexus_web::ws::Message;
        loop {
            if self.reader.poll().expect("nexus-web parse") {
                match self.reader.next().expect("nexus-web parse") {
                    Some(Message::Text(t)) => return black_box(t).len(),
                    Some(Message::Binary(b)) => return black_box(b).len(),
                    _ => continue,
                }
            }
            let n = self
                .reader
                .read_from(&mut self.stream)
                .expect("nexus-web read");
            assert!(n > 0, "nexus-web: stream exhausted");
        }
    }
}

/// tungstenite: `WebSocket::read` over the stream (it reads as it needs).
struct Tungstenite {
    ws: tungstenite::WebSocket<MemStream>,
}

impl Tungstenite {
    fn new(server_role: bool) -> Self {
        use tungstenite::protocol::{Role, WebSocketConfig};
        let role = if server_role {
            Role::Server
        } else {
            Role::Client
        };
        let config = WebSocketConfig::default()
            .max_message_size(Some(64 << 20))
            .max_frame_size(Some(16 << 20));
        Self {
            ws: tungstenite::WebSocket::from_raw_socket(MemStream::new(), role, Some(config)),
        }
    }
}

impl Parser for Tungstenite {
    fn load(&mut self, wire: &'static [u8], read_size: usize, cycle: bool) {
        self.ws.get_mut().load(wire, read_size, cycle);
    }

    #[inline]
    fn next(&mut self) -> usize {
        use tungstenite::Message;
        loop {
            match self.ws.read().expect("tungstenite parse") {
                Message::Text(t) => return black_box(t.as_str()).len(),
                Message::Binary(b) => return black_box(&b[..]).len(),
                _ => continue,
            }
        }
    }
}

/// fastwebsockets: `FragmentCollector::read_frame` (assembles and validates text), polled
/// to completion on the spot: the stream is in memory, so the future is ready at once.
struct FastWebSockets {
    ws: fastwebsockets::FragmentCollector<SharedStream>,
    stream: Rc<RefCell<MemStream>>,
}

impl FastWebSockets {
    fn new(server_role: bool) -> Self {
        use fastwebsockets::{Role, WebSocket};
        let role = if server_role {
            Role::Server
        } else {
            Role::Client
        };
        let stream = Rc::new(RefCell::new(MemStream::new()));
        let mut ws = WebSocket::after_handshake(SharedStream(Rc::clone(&stream)), role);
        ws.set_max_message_size(64 << 20);
        Self {
            ws: fastwebsockets::FragmentCollector::new(ws),
            stream,
        }
    }
}

impl Parser for FastWebSockets {
    fn load(&mut self, wire: &'static [u8], read_size: usize, cycle: bool) {
        self.stream.borrow_mut().load(wire, read_size, cycle);
    }

    #[inline]
    fn next(&mut self) -> usize {
        use fastwebsockets::OpCode;
        loop {
            let frame = ready(self.ws.read_frame()).expect("fastwebsockets parse");
            match frame.opcode {
                OpCode::Text | OpCode::Binary => return black_box(&frame.payload[..]).len(),
                _ => continue,
            }
        }
    }
}

/// The collector owns its stream and offers no accessor, so the workload keeps a second
/// handle to load the next bytes (one `RefCell` borrow per read, not per message).
struct SharedStream(Rc<RefCell<MemStream>>);

impl tokio::io::AsyncRead for SharedStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut *self.0.borrow_mut()).poll_read(cx, buf)
    }
}

impl tokio::io::AsyncWrite for SharedStream {
    fn poll_write(
        self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Poll::Ready(Ok(buf.len()))
    }
    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Polls `future` once; the in-memory stream makes every read ready at once.
fn ready<F: std::future::Future>(future: F) -> F::Output {
    let mut future = std::pin::pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("an in-memory read was not ready: the workload is miscounted"),
    }
}
