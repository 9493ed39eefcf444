//! The echo load generator: one thread, every connection a non-blocking socket on one mio
//! `Poll` (epoll, edge-triggered), opened by `dial.rs`. It runs points on them: each
//! connection keeps `depth` frames in flight, and every echo completed is timed (rdtsc at the
//! read that completed it minus rdtsc at its send, FIFO per connection) and replaced by one
//! more frame, written once per wake-up for all the echoes that wake-up completed.
//!
//! Cheap by construction: one shared read buffer, frames pre-encoded once per point, no
//! allocation per message. Owns the echo event loop, and the measured window's figures both
//! generators report ([`Measured`], [`Snapshot`]); the per-connection state and the wire bytes
//! are in `connection.rs`, what the numbers mean in the bench (`server_suite`).

use std::io::{self, Read};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mio::{Events, Interest, Poll, Token};

use crate::connection::{self, Connection, MAX_DEPTH};
use crate::dial::Dial;
use crate::servers;
use crate::timing;

/// How long the echoes still in flight may take to come back once a point stops sending.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// The shared read buffer.
const READ_BUFFER: usize = 64 << 10;

/// One point's load.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Bytes of payload per message.
    pub payload_len: usize,
    /// Messages in flight per connection (at most [`MAX_DEPTH`]).
    pub depth: usize,
    /// Run this long before measuring.
    pub warmup: Duration,
    /// Then measure this long.
    pub measure: Duration,
    /// Busy-wait this long after every event handled: a handicap for the headroom test (if
    /// the rate holds with the generator slowed down, the generator was not what limited it).
    pub handicap: Duration,
    /// A wake-up's writes go in one io_uring submission (where the kernel allows it).
    pub batched: bool,
}

/// What one point measured.
#[derive(Debug, Clone)]
pub struct Measured {
    /// Messages received per second in the measured window (echoes; pub/sub deliveries).
    pub rate: f64,
    /// Latency of every message received in the window, in TSC ticks (echo: the round trip;
    /// pub/sub: publish to receive).
    pub latency: Histogram<u64>,
    /// The generator thread's CPU use over the window, in cores (1.0 = saturated).
    pub generator_cpu: Option<f64>,
    /// The server process's CPU use over the window, in cores.
    pub server_cpu: Option<f64>,
    /// The share of the window the generator's core was idle (no task, no softirq): CPU the
    /// generator could have had and did not need. Task CPU times leave out the softirq time
    /// loopback TCP spends on each core, so this is the direct test of a saturated generator.
    pub generator_core_idle: Option<f64>,
    /// The same for the server's core: above 0, the server waited for the generator.
    pub server_core_idle: Option<f64>,
}

impl Measured {
    /// The figures of the window between two snapshots, with the latencies recorded in it.
    pub fn between(first: Snapshot, last: Snapshot, latency: Histogram<u64>) -> Self {
        let seconds = last.wall.duration_since(first.wall).as_secs_f64();
        let per_second = |a: Option<f64>, b: Option<f64>| Some((b? - a?) / seconds);
        Self {
            rate: (last.received - first.received) as f64 / seconds,
            latency,
            generator_cpu: per_second(first.generator_cpu, last.generator_cpu),
            server_cpu: per_second(first.server_cpu, last.server_cpu),
            generator_core_idle: idle_share(first.core, last.core),
            server_core_idle: idle_share(first.server_core, last.server_core),
        }
    }
}

/// Where the figures of a window are read: the server's process and the generator's core.
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    /// The server process.
    pub server_pid: u32,
    /// The core the generator thread is pinned to.
    pub generator_core: usize,
    /// The core the server is pinned to.
    pub server_core: usize,
}

/// N open connections to one server, driven from the thread that made them.
pub struct Generator {
    poll: Poll,
    events: Events,
    connections: Vec<Connection>,
    read_buffer: Box<[u8]>,
    ticks_per_ns: f64,
}

impl Generator {
    /// Opens `count` WebSocket connections to `server` (HTTP upgrade checked: 101 and the
    /// RFC's accept key; `dial.rs`). Err when they are not all open within `budget`, a
    /// connection fails repeatedly, or the server refuses the upgrade.
    pub fn connect(
        server: SocketAddr,
        count: usize,
        budget: Duration,
        ticks_per_ns: f64,
    ) -> Result<Self, String> {
        let request = connection::upgrade_request(server, None);
        let dialed = Dial {
            server,
            count,
            budget,
            request: &request,
            accept: &connection::upgrade_response,
        }
        .open()?;
        Ok(Self {
            poll: dialed.poll,
            events: Events::with_capacity(1024),
            connections: dialed.streams.into_iter().map(Connection::new).collect(),
            read_buffer: vec![0; READ_BUFFER].into_boxed_slice(),
            ticks_per_ns,
        })
    }

    /// Runs one point on every connection: warm-up, the measured window, then a drain until
    /// every frame sent has come back. Err (the point failed) when an echo is wrong, a
    /// connection closes, or the drain takes longer than `DRAIN_LIMIT`.
    ///
    /// Longer than most functions here on purpose: the phases, the counters they snapshot and
    /// the hot loop stay in one place, where received = sent can be checked by eye.
    pub fn run(&mut self, load: Load, probe: Probe) -> Result<Measured, String> {
        assert!(
            (1..=MAX_DEPTH).contains(&load.depth),
            "depth 1..={MAX_DEPTH}"
        );
        let frame = connection::client_frame(load.payload_len);
        let frame_len = frame.len();
        let frames = frame.repeat(load.depth);
        let payload_len = load.payload_len as u64;
        let ticks = |d: Duration| (d.as_nanos() as f64 * self.ticks_per_ns) as u64;
        let mut histogram = timing::new_histogram();
        let (mut sent, mut received) = (0u64, 0u64);
        let start = timing::ticks_start();
        for (index, connection) in self.connections.iter_mut().enumerate() {
            connection.queue(load.depth, frame_len, start);
            connection
                .flush(&frames, frame_len)
                .map_err(|e| format!("write: {e}"))?;
            watch_writes(&self.poll, connection, index)?;
            sent += load.depth as u64;
        }
        let warmup_end = start + ticks(load.warmup);
        let measure_end = warmup_end + ticks(load.measure);
        let drain_end = measure_end + ticks(DRAIN_LIMIT);
        let handicap = ticks(load.handicap);
        #[cfg(target_os = "linux")]
        let mut batch = if load.batched {
            crate::uring::Sends::new().map(|sends| Batch {
                sends,
                pending: Vec::with_capacity(self.connections.len()),
                results: Vec::new(),
            })
        } else {
            None
        };
        let mut phase = Phase::WarmUp;
        let mut window_start: Option<Snapshot> = None;
        let mut window_end: Option<Snapshot> = None;
        loop {
            let now = timing::ticks_start();
            if phase == Phase::WarmUp && now >= warmup_end {
                phase = Phase::Measuring;
                window_start = Some(Snapshot::take(received, probe));
            }
            if phase == Phase::Measuring && now >= measure_end {
                phase = Phase::Draining;
                window_end = Some(Snapshot::take(received, probe));
            }
            if phase == Phase::Draining {
                if received == sent {
                    break;
                }
                if now >= drain_end {
                    return Err(format!(
                        "{} of {sent} messages not echoed {} s after the point stopped sending",
                        sent - received,
                        DRAIN_LIMIT.as_secs()
                    ));
                }
            }
            match self
                .poll
                .poll(&mut self.events, Some(Duration::from_millis(1)))
            {
                Ok(()) => {}
                // A signal, or io_uring's task work for the batched sends (which can end an
                // epoll_wait early): poll again.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(format!("epoll_wait: {e}")),
            }
            for event in &self.events {
                let index = event.token().0;
                let connection = &mut self.connections[index];
                let mut completed = 0;
                let readable = event.is_readable() || event.is_read_closed() || event.is_error();
                if readable {
                    let measuring = phase == Phase::Measuring;
                    completed = read_echoes(
                        connection,
                        &mut self.read_buffer,
                        payload_len,
                        |sent_at, at| {
                            if measuring {
                                histogram.saturating_record(at.saturating_sub(sent_at).max(1));
                            }
                        },
                    )
                    .map_err(|why| format!("connection {index}: {why}"))?;
                }
                received += completed as u64;
                if phase != Phase::Draining && completed > 0 {
                    connection.queue(completed, frame_len, timing::ticks_start());
                    sent += completed as u64;
                }
                #[cfg(target_os = "linux")]
                let batched = batch.as_mut().map(|batch| {
                    // Written with the wake-up's other writes, after the events.
                    if connection.unwritten() > 0 {
                        batch.pending.push(index);
                    }
                });
                #[cfg(not(target_os = "linux"))]
                let batched: Option<()> = None;
                if batched.is_none() {
                    connection
                        .flush(&frames, frame_len)
                        .map_err(|e| format!("write on connection {index}: {e}"))?;
                    watch_writes(&self.poll, connection, index)?;
                }
                if handicap > 0 {
                    let until = timing::ticks_start() + handicap;
                    while timing::ticks_start() < until {
                        std::hint::spin_loop();
                    }
                }
            }
            #[cfg(target_os = "linux")]
            if let Some(batch) = batch.as_mut() {
                batch.write(&self.poll, &mut self.connections, &frames, frame_len)?;
            }
        }
        let in_flight: usize = self.connections.iter().map(Connection::in_flight).sum();
        if in_flight != 0 || received != sent {
            return Err(format!(
                "sent {sent} and received {received} with {in_flight} still in flight"
            ));
        }
        let (Some(first), Some(last)) = (window_start, window_end) else {
            unreachable!("the loop ends only after the window closed");
        };
        Ok(Measured::between(first, last, histogram))
    }
}

/// Reads everything the server has sent on `connection`, calling `echoed(sent_at, read_at)`
/// for every echo completed; returns how many were. Err when the server closed the
/// connection or sent a wrong frame.
/// The wake-up's writes, sent together.
#[cfg(target_os = "linux")]
struct Batch {
    sends: crate::uring::Sends,
    /// Connections with bytes to write, each once.
    pending: Vec<usize>,
    results: Vec<i32>,
}

#[cfg(target_os = "linux")]
impl Batch {
    /// Sends what each pending connection has unwritten in one submission, and records what
    /// each socket took (a full one waits for its writable event, as after a short write).
    fn write(
        &mut self,
        poll: &Poll,
        connections: &mut [Connection],
        frames: &[u8],
        frame_len: usize,
    ) -> Result<(), String> {
        if self.pending.is_empty() {
            return Ok(());
        }
        {
            use std::os::fd::AsRawFd;
            let entries: Vec<(std::os::fd::RawFd, &[u8])> = self
                .pending
                .iter()
                .map(|&index| {
                    let connection = &connections[index];
                    (
                        connection.stream.as_raw_fd(),
                        connection.unwritten_bytes(frames, frame_len),
                    )
                })
                .collect();
            self.sends
                .send(&entries, &mut self.results)
                .map_err(|e| format!("io_uring_enter: {e}"))?;
        }
        for (&index, &result) in self.pending.iter().zip(&self.results) {
            let connection = &mut connections[index];
            match result {
                n if n > 0 => connection.written(n as usize),
                n if n == -libc::EAGAIN => {}
                0 => return Err(format!("write on connection {index}: wrote zero bytes")),
                errno => {
                    let error = io::Error::from_raw_os_error(-errno);
                    return Err(format!("write on connection {index}: {error}"));
                }
            }
            watch_writes(poll, connection, index)?;
        }
        self.pending.clear();
        Ok(())
    }
}

fn read_echoes(
    connection: &mut Connection,
    buffer: &mut [u8],
    payload_len: u64,
    mut echoed: impl FnMut(u64, u64),
) -> Result<usize, String> {
    let mut completed = 0;
    loop {
        match connection.stream.read(buffer) {
            Ok(0) => return Err("the server closed the connection".to_owned()),
            Ok(n) => {
                let at = timing::ticks_start();
                completed += connection.receive(&buffer[..n], payload_len, |sent_at| {
                    echoed(sent_at, at);
                })?;
                // A read shorter than the buffer emptied the socket: with edge-triggered
                // epoll, bytes arriving later raise a new event, so the read that would only
                // say WouldBlock is skipped (tokio clears readiness on a short read the same
                // way). It saves one syscall in three per wake-up.
                if n < buffer.len() {
                    return Ok(completed);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(completed),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

/// Registers `connection` for writable events while it has bytes waiting for room, and for
/// readable events alone otherwise (each ACK of a quiet socket would otherwise be an event).
fn watch_writes(poll: &Poll, connection: &mut Connection, index: usize) -> Result<(), String> {
    let waiting = connection.unwritten() > 0;
    if waiting != connection.watching_writes {
        let interest = if waiting {
            Interest::READABLE | Interest::WRITABLE
        } else {
            Interest::READABLE
        };
        poll.registry()
            .reregister(&mut connection.stream, Token(index), interest)
            .map_err(|e| format!("epoll_ctl: {e}"))?;
        connection.watching_writes = waiting;
    }
    Ok(())
}

/// Where a point stands: before, in and after its measured window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Load runs, nothing is recorded.
    WarmUp,
    /// Load runs and is recorded.
    Measuring,
    /// No new load; what is in flight comes back.
    Draining,
}

/// The counters at one edge of the measured window.
#[derive(Clone, Copy)]
pub struct Snapshot {
    wall: Instant,
    received: u64,
    generator_cpu: Option<f64>,
    server_cpu: Option<f64>,
    /// (idle, total) jiffies of the generator's core.
    core: Option<(u64, u64)>,
    /// The same for the server's core.
    server_core: Option<(u64, u64)>,
}

impl Snapshot {
    /// The counters now, `received` being the messages received so far.
    pub fn take(received: u64, probe: Probe) -> Self {
        Self {
            wall: Instant::now(),
            received,
            generator_cpu: servers::thread_cpu_seconds(),
            server_cpu: servers::process_cpu_seconds(probe.server_pid),
            core: servers::core_jiffies(probe.generator_core),
            server_core: servers::core_jiffies(probe.server_core),
        }
    }
}

/// The idle share of a core between two (idle, total) jiffy readings.
pub fn idle_share(first: Option<(u64, u64)>, last: Option<(u64, u64)>) -> Option<f64> {
    let ((idle_a, total_a), (idle_b, total_b)) = (first?, last?);
    let total = total_b.checked_sub(total_a).filter(|t| *t > 0)?;
    Some(idle_b.saturating_sub(idle_a) as f64 / total as f64)
}
