//! The multiplexed request round trip over loopback TCP: a 128 B request echoed by a server on
//! the peer core, with 1, 8 and 64 requests kept in flight on one connection; latency of each
//! request (rdtsc, from just before it is begun to when its response is matched) and
//! requests/s.
//!
//! Fairness: both clients run on one thread on the measuring core and keep exactly `depth`
//! requests in flight (a new one begins as each finishes); both servers are one blocking std
//! thread on the peer core that answers every request of a read with one write.
//!
//! - tickwire: its blocking packet transport, `tickwire_blocking::packet::PacketClient` over a
//!   `std::net::TcpStream` (`send_request` to keep `depth` in flight, `recv_response` for each
//!   answer), requests written in batches of a quarter of the window (`flush` after every
//!   `depth / 4` requests begun, and `recv_response` writes the rest before it waits), and
//!   `PacketConnection::serve` as the echo server (requests that one read brought are
//!   answered in one write). No keepalive pings and no request timeouts.
//! - tickwire-tokio: its tokio `PacketClient` on a current-thread runtime, the same loop and
//!   batches, against the same blocking echo server: the client side is what differs, so the
//!   row compares tokio client with tokio client (network-protocol's is tokio only).
//! - network-protocol: its `service::multiplex::Multiplexer` (tokio only: it spawns a send, a
//!   receive and a clean-up task) on a current-thread tokio runtime, over a `TcpStream` split
//!   into a `BufReader` and a `BufWriter` (so its frame of three writes and a flush is one
//!   `write`, and a response one `read` or fewer). Requests are `request(Vec<u8>)` futures
//!   driven together by a `FuturesUnordered`; each takes an owned `Vec` and answers with a new
//!   one. network-protocol has no multiplexed server, so its echo server is written here: it
//!   parses its `[u64 id][u32 length][payload]` frames (big-endian) and writes each complete
//!   frame back.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use hdrhistogram::Histogram;
use network_protocol::service::multiplex::{MultiplexConfig, Multiplexer};
use tickwire_blocking::packet::{PacketClientBuilder, PacketServer, RequestId};
use tokio::io::{AsyncRead, AsyncWrite, BufReader, BufWriter};

use super::{Library, payloads};
use crate::Ctx;
use crate::harness::{self, Plan};
use crate::report::{self, Row, Table, round_order};
use crate::ws_loopback::servers;

/// A client row of the round-trip tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    /// tickwire's blocking `PacketClient`.
    Tickwire,
    /// tickwire-tokio's `PacketClient` on a current-thread runtime, against the same blocking
    /// echo server.
    TickwireTokio,
    /// network-protocol's `Multiplexer`.
    NetworkProtocol,
}

impl Client {
    /// Table order; network-protocol is the baseline.
    const ALL: [Self; 3] = [Self::Tickwire, Self::TickwireTokio, Self::NetworkProtocol];

    fn name(self) -> &'static str {
        match self {
            Self::Tickwire => Library::Tickwire.name(),
            Self::TickwireTokio => "tickwire-tokio",
            Self::NetworkProtocol => Library::NetworkProtocol.name(),
        }
    }
}

/// Requests kept in flight.
pub(crate) const DEPTHS: [usize; 3] = [1, 8, 64];

/// Bytes of each request (and of its echo).
pub(crate) const REQUEST_LEN: usize = 128;

/// Progress steps per round.
pub(crate) const STEPS: u64 = (DEPTHS.len() * Client::ALL.len()) as u64;

/// network-protocol's multiplex frame header: `u64` request id and `u32` payload length.
const NP_FRAME_HEADER: usize = 12;

/// What one connection measured: per-request latency in ticks, and requests per second over
/// the recorded requests.
struct Measured {
    latency: Histogram<u64>,
    rate: f64,
}

/// Runs the round-trip workloads selected in `ctx`: per depth, a latency table and a
/// requests/s table.
pub(crate) fn run(ctx: &Ctx) -> Vec<Table> {
    let mut tables = Vec::new();
    let payload = payloads::binary_ticks(REQUEST_LEN);
    for depth in DEPTHS {
        let id = format!("packet_mux_{depth}");
        if !ctx.selected(&id) {
            continue;
        }
        let mut latencies = [Vec::new(), Vec::new(), Vec::new()];
        let mut rates = [Vec::new(), Vec::new(), Vec::new()];
        for round in 1..=ctx.rounds {
            for i in round_order(Client::ALL.len(), round) {
                let client = Client::ALL[i];
                ctx.step(&format!("{id} / {}", client.name()));
                let measured = measure(client, depth, ctx, &payload);
                latencies[i].push(measured.latency);
                rates[i].push(measured.rate);
            }
        }
        let note = format!(
            "{REQUEST_LEN} B requests echoed over loopback TCP, {depth} in flight on one \
             connection; client on core {}, server on core {}. tickwire: its blocking \
             PacketClient, and tickwire-tokio: its tokio PacketClient on a current-thread \
             runtime, both against PacketConnection::serve on std TcpStream, writing a quarter \
             of the window at a time. network-protocol: its Multiplexer, which needs tokio, on a \
             current-thread runtime over a buffered split TcpStream. Ratios: each ÷ \
             network-protocol.",
            ctx.core, ctx.peer_core
        );
        let baseline = Client::NetworkProtocol.name();
        let mut latency = Table::new(
            &format!("{id}_latency"),
            &format!("Multiplexed round trip: {depth} in flight, ticks per request"),
            baseline,
            &format!(
                "{note} Latency from just before a request is begun to its response being \
                 matched, median round by p50."
            ),
        );
        for (client, hists) in Client::ALL.iter().zip(latencies) {
            latency.rows.push(Row::median_round(client.name(), hists));
        }
        let paired: String = [Client::Tickwire, Client::TickwireTokio]
            .iter()
            .map(|&c| report::paired_rates(c.name(), &rates[c as usize], baseline, &rates[2]))
            .collect();
        let mut throughput = Table::new(
            &format!("{id}_rate"),
            &format!("Multiplexed requests/s: {depth} in flight"),
            baseline,
            &format!("{note}{paired}"),
        );
        for (client, rounds) in Client::ALL.iter().zip(rates) {
            throughput.rows.push(Row::rate(client.name(), rounds));
        }
        tables.push(latency);
        tables.push(throughput);
    }
    tables
}

/// One connection of `library` to a fresh echo server on the peer core: `ctx.plan.warmup`
/// requests, then `ctx.plan.samples` recorded ones, `depth` in flight.
fn measure(client: Client, depth: usize, ctx: &Ctx, payload: &[u8]) -> Measured {
    let measured = match client {
        Client::Tickwire | Client::TickwireTokio => {
            let server = servers::spawn("tickwire-packet-echo", ctx.peer_core, tickwire_echo);
            let measured = if client == Client::Tickwire {
                tickwire_client(server.addr(), depth, ctx.plan, payload)
            } else {
                tickwire_tokio_client(server.addr(), depth, ctx.plan, payload)
            };
            server.join();
            measured
        }
        Client::NetworkProtocol => {
            let server = servers::spawn("np-multiplex-echo", ctx.peer_core, np_echo);
            let measured = np_client(server.addr(), depth, ctx.plan, payload);
            server.join();
            measured
        }
    };
    assert_eq!(measured.latency.len(), ctx.plan.samples as u64);
    measured
}

/// Counts finished requests, records the latency of those past the warm-up, and times the
/// recorded ones.
struct Recorder {
    plan: Plan,
    finished: usize,
    latency: Histogram<u64>,
    recording_since: Option<Instant>,
}

impl Recorder {
    fn new(plan: Plan) -> Self {
        Self {
            plan,
            finished: 0,
            latency: harness::new_histogram(),
            recording_since: (plan.warmup == 0).then(Instant::now),
        }
    }

    /// Requests the run begins in all.
    fn total(&self) -> usize {
        self.plan.warmup + self.plan.samples
    }

    /// A request begun at `began` (ticks) finished at `ended`.
    fn finished(&mut self, began: u64, ended: u64) {
        self.finished += 1;
        if self.finished > self.plan.warmup {
            self.latency
                .saturating_record(ended.saturating_sub(began).max(1));
        }
        if self.finished == self.plan.warmup {
            self.recording_since = Some(Instant::now());
        }
    }

    fn done(&self) -> bool {
        self.finished == self.total()
    }

    fn measured(self) -> Measured {
        let seconds = self
            .recording_since
            .map_or(f64::NAN, |since| since.elapsed().as_secs_f64());
        Measured {
            rate: self.plan.samples as f64 / seconds,
            latency: self.latency,
        }
    }
}

/// Requests a tickwire client writes at once (and before `recv_response` waits): a quarter of
/// the window, so several batches are in flight and both ends stay busy; with one batch of
/// the whole window the client idled while the server answered it and the other way round.
/// Measured on this VM at 8 and 64 in flight (3 rounds each, 2026-11-27): halves gave 154 k
/// and 1.08 M requests/s, quarters 206 k and 1.54 M, eighths 153 k at 8.
fn batch_len(depth: usize) -> usize {
    (depth / 4).max(1)
}

/// The books both tickwire client loops keep: the requests in flight with the tick each
/// began at, and when a batch is complete and due to be written.
struct Window {
    depth: usize,
    batch: usize,
    /// Requests queued since the last batch was written.
    unwritten: usize,
    /// (request id, ticks when begun) of the requests in flight: at most 64, so a scan.
    began: Vec<(RequestId, u64)>,
    begun: usize,
}

impl Window {
    fn new(depth: usize) -> Self {
        Self {
            depth,
            batch: batch_len(depth),
            unwritten: 0,
            began: Vec::with_capacity(depth),
            begun: 0,
        }
    }

    /// Whether another request may begin: the window has room and the run wants more.
    fn has_room(&self, recorder: &Recorder) -> bool {
        self.began.len() < self.depth && self.begun < recorder.total()
    }

    /// Request `id` was queued, begun at `at`; true when it completes a batch, which the
    /// caller then writes.
    fn sent(&mut self, id: RequestId, at: u64) -> bool {
        self.began.push((id, at));
        self.begun += 1;
        self.unwritten += 1;
        let due = self.unwritten == self.batch;
        if due {
            self.unwritten = 0;
        }
        due
    }

    /// The response to `id` arrived at `ended`.
    fn answered(&mut self, id: RequestId, ended: u64, recorder: &mut Recorder, who: &str) {
        let slot = self
            .began
            .iter()
            .position(|&(sent, _)| sent == id)
            .unwrap_or_else(|| panic!("{who}: a response to a request in flight"));
        recorder.finished(self.began.swap_remove(slot).1, ended);
    }
}

/// tickwire's client: its blocking `PacketClient` over the connected socket (no keepalive
/// pings, no request timeout: neither side arms timers the other does not).
fn tickwire_client(addr: SocketAddr, depth: usize, plan: Plan, payload: &[u8]) -> Measured {
    let mut client = PacketClientBuilder::new()
        .keepalive(None)
        .request_timeout(None)
        .client_over(connect(addr))
        .expect("tickwire: a client");
    assert_eq!(
        client
            .request(payload)
            .expect("tickwire: the first request"),
        payload,
        "tickwire: the echo differs"
    );
    let mut window = Window::new(depth);
    let mut recorder = Recorder::new(plan);
    while !recorder.done() {
        while window.has_room(&recorder) {
            let at = harness::ticks_start();
            let id = client
                .send_request(payload)
                .expect("tickwire: send a request");
            if window.sent(id, at) {
                client.flush().expect("tickwire: write a batch");
            }
        }
        // Whatever is still queued goes out before this waits.
        let (id, echo) = client.recv_response().expect("tickwire: a response");
        let ended = harness::ticks_end();
        assert_eq!(echo.len(), payload.len(), "tickwire: the echo's length");
        window.answered(id, ended, &mut recorder, "tickwire");
    }
    recorder.measured()
}

/// tickwire-tokio's client: its `PacketClient` on a current-thread runtime, the same loop
/// as [`tickwire_client`].
fn tickwire_tokio_client(addr: SocketAddr, depth: usize, plan: Plan, payload: &[u8]) -> Measured {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tickwire-tokio: a tokio runtime");
    runtime.block_on(async {
        let stream = tokio::net::TcpStream::from_std(connect_nonblocking(addr))
            .expect("tickwire-tokio: register the socket");
        let mut client = tickwire_tokio::packet::PacketClientBuilder::new()
            .keepalive(None)
            .request_timeout(None)
            .client_over(stream);
        let echo = client
            .request(payload)
            .await
            .expect("tickwire-tokio: the first request");
        assert_eq!(echo, payload, "tickwire-tokio: the echo differs");
        let mut window = Window::new(depth);
        let mut recorder = Recorder::new(plan);
        while !recorder.done() {
            while window.has_room(&recorder) {
                let at = harness::ticks_start();
                let id = client
                    .send_request(payload)
                    .expect("tickwire-tokio: send a request");
                if window.sent(id, at) {
                    client.flush().await.expect("tickwire-tokio: write a batch");
                }
            }
            let (id, echo) = client
                .recv_response()
                .await
                .expect("tickwire-tokio: a response");
            let ended = harness::ticks_end();
            assert_eq!(
                echo.len(),
                payload.len(),
                "tickwire-tokio: the echo's length"
            );
            window.answered(id, ended, &mut recorder, "tickwire-tokio");
        }
        recorder.measured()
    })
}

/// tickwire's echo server: its blocking `PacketConnection::serve`, which answers what one
/// read brought and writes the answers together before it waits again. Ends on the
/// client's EOF.
fn tickwire_echo(stream: TcpStream) {
    let mut connection = PacketServer::new()
        .connection_over(stream)
        .expect("tickwire echo: a connection");
    connection
        .serve(|_, request, responder| {
            responder
                .respond(request)
                .expect("tickwire echo: answer a request");
        })
        .expect("tickwire echo: serve until the client leaves");
}

/// network-protocol's client: its `Multiplexer` on a current-thread tokio runtime.
fn np_client(addr: SocketAddr, depth: usize, plan: Plan, payload: &[u8]) -> Measured {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("network-protocol: a tokio runtime");
    runtime.block_on(async {
        let stream = tokio::net::TcpStream::from_std(connect_nonblocking(addr))
            .expect("network-protocol: register the socket");
        let (read_half, write_half) = stream.into_split();
        let config = MultiplexConfig {
            max_in_flight: depth,
            request_timeout: Duration::from_secs(30),
            ..MultiplexConfig::default()
        };
        config.validate().expect("network-protocol: a valid config");
        let multiplexer = Multiplexer::new(
            BufReader::new(read_half),
            BufWriter::new(write_half),
            config,
        );
        let echo = multiplexer
            .request(payload.to_vec())
            .await
            .expect("network-protocol: the first request");
        assert_eq!(echo, payload, "network-protocol: the echo differs");
        let mut recorder = Recorder::new(plan);
        let mut in_flight = FuturesUnordered::new();
        let mut begun = 0;
        while !recorder.done() {
            while in_flight.len() < depth && begun < recorder.total() {
                in_flight.push(np_request(&multiplexer, payload));
                begun += 1;
            }
            let (began, ended) = in_flight
                .next()
                .await
                .expect("network-protocol: a request in flight");
            recorder.finished(began, ended);
        }
        recorder.measured()
    })
}

/// One network-protocol request: (ticks when it began, ticks when its response arrived).
async fn np_request<R, W>(multiplexer: &Multiplexer<R, W>, payload: &[u8]) -> (u64, u64)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let began = harness::ticks_start();
    let echo = multiplexer
        .request(payload.to_vec())
        .await
        .expect("network-protocol: a response");
    let ended = harness::ticks_end();
    assert_eq!(
        echo.len(),
        payload.len(),
        "network-protocol: the echo's length"
    );
    (began, ended)
}

/// network-protocol's echo server: every complete `[u64 id][u32 length][payload]` frame of a
/// read is written back as it came, in one write. Ends on the client's EOF.
fn np_echo(mut stream: TcpStream) {
    let mut pending: Vec<u8> = Vec::with_capacity(64 << 10);
    let mut chunk = vec![0u8; 64 << 10];
    loop {
        let n = stream.read(&mut chunk).expect("np echo: read");
        if n == 0 {
            return;
        }
        pending.extend_from_slice(&chunk[..n]);
        let whole = complete_frames(&pending);
        if whole > 0 {
            stream.write_all(&pending[..whole]).expect("np echo: write");
            pending.drain(..whole);
        }
    }
}

/// Bytes at the front of `bytes` that make whole network-protocol multiplex frames.
fn complete_frames(bytes: &[u8]) -> usize {
    let mut at = 0;
    while let Some(header) = bytes.get(at..at + NP_FRAME_HEADER) {
        let len = u32::from_be_bytes(header[8..].try_into().expect("4 bytes")) as usize;
        let end = at + NP_FRAME_HEADER + len;
        if end > bytes.len() {
            break;
        }
        at = end;
    }
    at
}

/// A blocking connection to `addr` with TCP_NODELAY.
fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect to the loopback echo server");
    stream.set_nodelay(true).expect("set TCP_NODELAY");
    stream
}

/// [`connect`], non-blocking, for tokio.
fn connect_nonblocking(addr: SocketAddr) -> TcpStream {
    let stream = connect(addr);
    stream
        .set_nonblocking(true)
        .expect("make the socket non-blocking");
    stream
}

#[cfg(test)]
mod tests {
    use super::*;

    fn np_frame(id: u64, payload: &[u8]) -> Vec<u8> {
        let mut frame = id.to_be_bytes().to_vec();
        frame.extend_from_slice(&(payload.len() as u32).to_be_bytes());
        frame.extend_from_slice(payload);
        frame
    }

    #[test]
    fn only_whole_network_protocol_frames_are_echoed() {
        let mut bytes = np_frame(1, b"first");
        let one = bytes.len();
        bytes.extend_from_slice(&np_frame(2, &[7; 300]));
        let two = bytes.len();
        assert_eq!(complete_frames(&bytes), two);
        assert_eq!(complete_frames(&bytes[..two - 1]), one);
        assert_eq!(complete_frames(&bytes[..NP_FRAME_HEADER - 1]), 0);
        assert_eq!(complete_frames(&np_frame(3, b"")), NP_FRAME_HEADER);
    }

    #[test]
    fn the_recorder_keeps_only_requests_past_the_warm_up() {
        let plan = Plan {
            warmup: 2,
            samples: 3,
        };
        let mut recorder = Recorder::new(plan);
        assert_eq!(recorder.total(), 5);
        for (began, ended) in [(0, 1_000), (0, 1_000), (10, 30), (10, 40), (10, 50)] {
            assert!(!recorder.done());
            recorder.finished(began, ended);
        }
        assert!(recorder.done());
        let measured = recorder.measured();
        assert_eq!(measured.latency.len(), 3);
        assert_eq!(measured.latency.max(), 40);
        assert!(measured.rate > 0.0);
    }

    #[test]
    fn the_window_writes_every_quarter_and_stays_within_its_depth() {
        let mut recorder = Recorder::new(Plan {
            warmup: 0,
            samples: 10,
        });
        let mut window = Window::new(8);
        let mut due = Vec::new();
        let mut next = 0;
        while window.has_room(&recorder) {
            next += 1;
            due.push(window.sent(RequestId(next), 100));
        }
        assert_eq!(window.began.len(), 8, "stops at the depth");
        assert_eq!(
            due,
            [false, true, false, true, false, true, false, true],
            "a batch of 2 (a quarter of 8) is due every second request"
        );
        window.answered(RequestId(3), 150, &mut recorder, "test");
        assert_eq!(recorder.finished, 1);
        assert_eq!(recorder.latency.max(), 50);
        assert!(window.began.iter().all(|&(id, _)| id != RequestId(3)));
        // Room for the last two of the run's ten, then none.
        let mut more = 0;
        while window.has_room(&recorder) {
            next += 1;
            window.sent(RequestId(next), 200);
            more += 1;
            if window.began.len() == 8 {
                window.answered(RequestId(next), 250, &mut recorder, "test");
            }
        }
        assert_eq!(more, 2, "the run begins ten requests in all");
    }
}
