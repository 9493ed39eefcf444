//! SPSC workloads: ping-pong round trip and one-way throughput of `u64`s between two pinned
//! threads, for the tickwire queue and channel and each peer, capacity 1024.
//!
//! Fairness: queues (non-blocking) are driven with a busy-poll loop on both sides, channels
//! through their blocking `send`/`recv`, each with its default waiting policy. On this VM the
//! two vCPUs move between near and far physical cores, so the same binary varies severalfold
//! between runs: libraries are interleaved within each round and the median of the rounds is
//! reported with the range of the p50s (latency) or rates (throughput).

use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use hdrhistogram::Histogram;

use crate::Ctx;
use crate::harness::{self, Plan};
use crate::report::{Row, Table};

/// Progress steps per round: 4 queues and 4 channels round trip, 8 throughputs, 2 same-core.
pub const STEPS: u64 = 8 + 8 + 2;

/// Queue capacity in every workload.
const CAPACITY: usize = 1024;

/// Runs the SPSC workloads selected in `ctx`.
pub fn run(ctx: &Ctx) -> Vec<Table> {
    let rounds = ctx.rounds;
    let plan = Plan {
        warmup: ctx.plan.warmup,
        samples: ctx.plan.samples,
    };
    let messages: u64 = if ctx.plan.samples < Plan::FULL.samples {
        1_000_000
    } else {
        10_000_000
    };
    let (core, peer) = (ctx.core, ctx.peer_core);
    let mut tables = Vec::new();
    type Rtt = fn(Plan, usize, usize) -> Histogram<u64>;
    type Rate = fn(u64, usize, usize) -> f64;
    let queues: [(&str, Rtt, Rate); 4] = [
        (
            "tickwire queue",
            round_trip::<TickwireQueue>,
            throughput::<TickwireQueue>,
        ),
        ("rtrb", round_trip::<Rtrb>, throughput::<Rtrb>),
        (
            "nexus-queue",
            round_trip::<NexusQueue>,
            throughput::<NexusQueue>,
        ),
        (
            "crossbeam ArrayQueue",
            round_trip::<ArrayQueue>,
            throughput::<ArrayQueue>,
        ),
    ];
    let channels: [(&str, Rtt, Rate); 4] = [
        (
            "tickwire channel",
            round_trip::<TickwireChannel>,
            throughput::<TickwireChannel>,
        ),
        (
            "nexus-channel",
            round_trip::<NexusChannel>,
            throughput::<NexusChannel>,
        ),
        (
            "crossbeam-channel",
            round_trip::<Crossbeam>,
            throughput::<Crossbeam>,
        ),
        (
            "std sync_channel",
            round_trip::<StdSync>,
            throughput::<StdSync>,
        ),
    ];
    for (id, title, baseline, libs) in [
        (
            "spsc_queue_rtt",
            "SPSC queue ping-pong round trip, u64, cores",
            "tickwire queue",
            &queues,
        ),
        (
            "spsc_channel_rtt",
            "SPSC channel ping-pong round trip, u64, cores",
            "tickwire channel",
            &channels,
        ),
    ] {
        if !ctx.selected(id) {
            continue;
        }
        let mut hists = vec![Vec::new(); libs.len()];
        for _ in 0..rounds {
            for (i, (name, rtt, _)) in libs.iter().enumerate() {
                ctx.step(&format!("{id} / {name}"));
                hists[i].push(rtt(plan, core, peer));
            }
        }
        let mut table = latency_table(
            id,
            &format!("{title} {core} and {peer}"),
            baseline,
            libs.iter().map(|l| l.0).zip(hists).collect(),
        );
        if id == "spsc_channel_rtt" {
            table.note.push_str(&nexus_note());
        }
        tables.push(table);
    }
    if ctx.selected("spsc_throughput") {
        let mut rates = vec![Vec::new(); 8];
        for _ in 0..rounds {
            for (i, (name, _, rate)) in queues.iter().chain(&channels).enumerate() {
                ctx.step(&format!("spsc_throughput / {name}"));
                rates[i].push(rate(messages, core, peer));
            }
        }
        let mut table = Table::new(
            "spsc_throughput",
            &format!(
                "SPSC one-way throughput, {messages} u64, capacity {CAPACITY}, cores {core} and {peer}"
            ),
            "tickwire queue",
            "Messages per second, consumer-side from the first to the last message (order \
             checked); median and range of the rounds.",
        );
        let per_lib: Vec<(&str, Vec<f64>)> = queues
            .iter()
            .chain(&channels)
            .map(|l| l.0)
            .zip(rates)
            .collect();
        // Queues against the tickwire queue, channels against the tickwire channel.
        table.note.push_str(&paired_note("rate", &per_lib[..4]));
        table.note.push_str(&paired_note("rate", &per_lib[4..]));
        for (name, r) in per_lib {
            table.rows.push(Row::rate(name, r));
        }
        table.note.push_str(&nexus_note());
        tables.push(table);
    }
    if ctx.selected("spsc_same_core") {
        let same_plan = Plan {
            warmup: plan.warmup.min(2_000),
            samples: plan.samples.min(20_000),
        };
        let picks = [&channels[0], &channels[2]];
        let mut hists = vec![Vec::new(); picks.len()];
        for _ in 0..rounds {
            for (i, (name, rtt, _)) in picks.iter().enumerate() {
                ctx.step(&format!("spsc_same_core / {name}"));
                hists[i].push(rtt(same_plan, core, core));
            }
        }
        let mut table = latency_table(
            "spsc_same_core",
            &format!("SPSC channel round trip, both threads on core {core}"),
            "tickwire channel",
            picks.iter().map(|l| l.0).zip(hists).collect(),
        );
        table.note.push_str(&format!(
            " Both threads pinned to one core, where spinning only delays the other side; {} \
             warm-up and {} samples.",
            same_plan.warmup, same_plan.samples
        ));
        tables.push(table);
    }
    tables
}

/// Says how nexus-channel was driven and how many wake-ups it lost since the last note.
fn nexus_note() -> String {
    let lost = NEXUS_LOST_WAKEUPS.swap(0, Ordering::Relaxed);
    format!(
        " nexus-channel: sends spin on try_send (its blocking send can lose a wake-up and has \
         no timeout); receives use try_recv, then recv_timeout({} s) in a loop: {lost} \
         receive(s) in these rounds sat parked for the whole timeout with a value waiting (a \
         lost wake-up; without the timeout the run hangs, as it did once here).",
        NEXUS_STALL.as_secs()
    )
}

fn latency_table(
    id: &str,
    title: &str,
    baseline: &str,
    rows: Vec<(&str, Vec<Histogram<u64>>)>,
) -> Table {
    let mut ranges = Vec::new();
    let mut table = Table::new(id, title, baseline, "");
    let rounds = rows.first().map_or(0, |(_, h)| h.len());
    let mut per_round = Vec::new();
    for (name, hists) in rows {
        let p50s: Vec<u64> = hists.iter().map(|h| h.value_at_quantile(0.5)).collect();
        let (lo, hi) = (p50s.iter().min().copied(), p50s.iter().max().copied());
        ranges.push(format!("{name} {}-{}", lo.unwrap_or(0), hi.unwrap_or(0)));
        per_round.push((name, p50s.iter().map(|&p| p as f64).collect()));
        table.rows.push(Row::median_round(name, hists));
    }
    table.note = format!(
        "Ticks per round trip (one sample each), the median round by p50 of {} round(s); p50 \
         range over the rounds: {}.{}",
        rounds,
        ranges.join(", "),
        paired_note("p50", &per_round)
    );
    table
}

/// The same-round comparison: each library's figure divided by the first row's (the baseline)
/// in the same round, then the median and range of those ratios over the rounds. The vCPUs
/// move between near and far physical cores from one round to the next, which moves every
/// library's figure together; a ratio taken within a round cancels most of that.
fn paired_note(figure: &str, per_round: &[(&str, Vec<f64>)]) -> String {
    let Some(((baseline, base), peers)) = per_round.split_first() else {
        return String::new();
    };
    let ratios: Vec<String> = peers
        .iter()
        .map(|(name, values)| {
            let mut r: Vec<f64> = values.iter().zip(base).map(|(v, b)| v / b).collect();
            r.sort_by(f64::total_cmp);
            let (lo, mid, hi) = (r[0], r[r.len() / 2], r[r.len() - 1]);
            format!("{name} {mid:.2}x ({lo:.2}-{hi:.2})")
        })
        .collect();
    format!(
        " Same-round {figure} ratios to {baseline} (median, range): {}.",
        ratios.join(", ")
    )
}

/// Ticks per round trip: this thread (pinned to `core`) sends `i` and waits for it back from
/// an echo thread pinned to `peer`.
fn round_trip<L: Lib>(plan: Plan, core: usize, peer: usize) -> Histogram<u64> {
    let (mut to_echo, mut from_me) = L::make(CAPACITY);
    let (mut to_me, mut from_echo) = L::make(CAPACITY);
    let total = (plan.warmup + plan.samples) as u64;
    let echo = std::thread::spawn(move || {
        harness::pin_to(peer);
        for _ in 0..total {
            let value = L::recv(&mut from_me);
            L::send(&mut to_me, value);
        }
    });
    harness::pin_to(core);
    let mut next = 0u64;
    let histogram = harness::sample_each(plan, || {
        L::send(&mut to_echo, next);
        let back = L::recv(&mut from_echo);
        debug_assert_eq!(back, next);
        next = black_box(back) + 1;
    });
    echo.join().expect("echo thread");
    assert_eq!(next, total, "round trips lost or duplicated");
    histogram
}

/// Messages per second: a producer pinned to `peer` sends `0..messages`; this thread, pinned
/// to `core`, receives and checks the order.
fn throughput<L: Lib>(messages: u64, core: usize, peer: usize) -> f64 {
    let (mut tx, mut rx) = L::make(CAPACITY);
    harness::pin_to(core);
    let producer = std::thread::spawn(move || {
        harness::pin_to(peer);
        for i in 0..messages {
            L::send(&mut tx, i);
        }
    });
    let first = L::recv(&mut rx);
    assert_eq!(first, 0);
    let start = std::time::Instant::now();
    for expected in 1..messages {
        let got = L::recv(&mut rx);
        assert_eq!(got, expected, "out of order");
    }
    let seconds = start.elapsed().as_secs_f64();
    producer.join().expect("producer thread");
    (messages - 1) as f64 / seconds
}

/// One library: how to make a pair of ends and move a `u64` through it.
trait Lib: 'static {
    type Tx: Send + 'static;
    type Rx: Send + 'static;
    fn make(capacity: usize) -> (Self::Tx, Self::Rx);
    fn send(tx: &mut Self::Tx, value: u64);
    fn recv(rx: &mut Self::Rx) -> u64;
}

/// Busy-polls a non-blocking push until it succeeds.
#[inline(always)]
fn spin_push<E>(
    mut push: impl FnMut(u64) -> Result<(), E>,
    mut value: u64,
    back: impl Fn(E) -> u64,
) {
    loop {
        match push(value) {
            Ok(()) => return,
            Err(e) => value = back(e),
        }
        std::hint::spin_loop();
    }
}

/// Busy-polls a non-blocking pop until it yields.
#[inline(always)]
fn spin_pop(mut pop: impl FnMut() -> Option<u64>) -> u64 {
    loop {
        if let Some(v) = pop() {
            return v;
        }
        std::hint::spin_loop();
    }
}

struct TickwireQueue;
impl Lib for TickwireQueue {
    type Tx = tickwire_spsc::Producer<u64>;
    type Rx = tickwire_spsc::Consumer<u64>;
    fn make(capacity: usize) -> (Self::Tx, Self::Rx) {
        tickwire_spsc::queue(capacity)
    }
    #[inline]
    fn send(tx: &mut Self::Tx, value: u64) {
        spin_push(|v| tx.push(v), value, |v| v);
    }
    #[inline]
    fn recv(rx: &mut Self::Rx) -> u64 {
        spin_pop(|| rx.pop())
    }
}

struct Rtrb;
impl Lib for Rtrb {
    type Tx = rtrb::Producer<u64>;
    type Rx = rtrb::Consumer<u64>;
    fn make(capacity: usize) -> (Self::Tx, Self::Rx) {
        rtrb::RingBuffer::new(capacity)
    }
    #[inline]
    fn send(tx: &mut Self::Tx, value: u64) {
        spin_push(|v| tx.push(v), value, |rtrb::PushError::Full(v)| v);
    }
    #[inline]
    fn recv(rx: &mut Self::Rx) -> u64 {
        spin_pop(|| rx.pop().ok())
    }
}

struct NexusQueue;
impl Lib for NexusQueue {
    type Tx = nexus_queue::spsc::Producer<u64>;
    type Rx = nexus_queue::spsc::Consumer<u64>;
    fn make(capacity: usize) -> (Self::Tx, Self::Rx) {
        nexus_queue::spsc::ring_buffer(capacity)
    }
    #[inline]
    fn send(tx: &mut Self::Tx, value: u64) {
        spin_push(|v| tx.push(v), value, |full| full.into_inner());
    }
    #[inline]
    fn recv(rx: &mut Self::Rx) -> u64 {
        spin_pop(|| rx.pop())
    }
}

struct ArrayQueue;
impl Lib for ArrayQueue {
    type Tx = Arc<crossbeam_queue::ArrayQueue<u64>>;
    type Rx = Arc<crossbeam_queue::ArrayQueue<u64>>;
    fn make(capacity: usize) -> (Self::Tx, Self::Rx) {
        let queue = Arc::new(crossbeam_queue::ArrayQueue::new(capacity));
        (Arc::clone(&queue), queue)
    }
    #[inline]
    fn send(tx: &mut Self::Tx, value: u64) {
        spin_push(|v| tx.push(v), value, |v| v);
    }
    #[inline]
    fn recv(rx: &mut Self::Rx) -> u64 {
        spin_pop(|| rx.pop())
    }
}

struct TickwireChannel;
impl Lib for TickwireChannel {
    type Tx = tickwire_spsc::Sender<u64>;
    type Rx = tickwire_spsc::Receiver<u64>;
    fn make(capacity: usize) -> (Self::Tx, Self::Rx) {
        tickwire_spsc::channel(capacity)
    }
    #[inline]
    fn send(tx: &mut Self::Tx, value: u64) {
        tx.send(value).expect("receiver alive");
    }
    #[inline]
    fn recv(rx: &mut Self::Rx) -> u64 {
        rx.recv().expect("sender alive")
    }
}

/// Receives that nexus-channel left parked for [`NEXUS_STALL`] although a value was waiting:
/// lost wake-ups (its parking handshake has no SeqCst fence between the store of one side's
/// state and the load of the other's). Without the timeout both ends stay parked for ever.
pub static NEXUS_LOST_WAKEUPS: AtomicU64 = AtomicU64::new(0);

/// How long a nexus-channel receive may park before it counts as a lost wake-up. No round
/// trip here legitimately takes a fraction of this.
const NEXUS_STALL: Duration = Duration::from_secs(1);

struct NexusChannel;
impl Lib for NexusChannel {
    type Tx = nexus_channel::Sender<u64>;
    type Rx = nexus_channel::Receiver<u64>;
    fn make(capacity: usize) -> (Self::Tx, Self::Rx) {
        nexus_channel::channel(capacity)
    }
    #[inline]
    fn send(tx: &mut Self::Tx, value: u64) {
        // Its blocking send can lose a wake-up too and has no timed form: spin on try_send
        // instead, which never parks (this can only flatter it).
        spin_push(
            |v| tx.try_send(v),
            value,
            |e| match e {
                nexus_channel::TrySendError::Full(v) => v,
                other => panic!("nexus-channel send: {other:?}"),
            },
        );
    }
    #[inline]
    fn recv(rx: &mut Self::Rx) -> u64 {
        // Its recv's own fast path, then its blocking path, bounded so a lost wake-up is
        // counted instead of hanging the run.
        if let Ok(v) = rx.try_recv() {
            return v;
        }
        loop {
            match rx.recv_timeout(NEXUS_STALL) {
                Ok(v) => return v,
                Err(nexus_channel::RecvTimeoutError::Timeout) => {
                    NEXUS_LOST_WAKEUPS.fetch_add(1, Ordering::Relaxed);
                }
                Err(e) => panic!("nexus-channel recv: {e:?}"),
            }
        }
    }
}

struct Crossbeam;
impl Lib for Crossbeam {
    type Tx = crossbeam_channel::Sender<u64>;
    type Rx = crossbeam_channel::Receiver<u64>;
    fn make(capacity: usize) -> (Self::Tx, Self::Rx) {
        crossbeam_channel::bounded(capacity)
    }
    #[inline]
    fn send(tx: &mut Self::Tx, value: u64) {
        tx.send(value).expect("receiver alive");
    }
    #[inline]
    fn recv(rx: &mut Self::Rx) -> u64 {
        rx.recv().expect("sender alive")
    }
}

struct StdSync;
impl Lib for StdSync {
    type Tx = std::sync::mpsc::SyncSender<u64>;
    type Rx = std::sync::mpsc::Receiver<u64>;
    fn make(capacity: usize) -> (Self::Tx, Self::Rx) {
        std::sync::mpsc::sync_channel(capacity)
    }
    #[inline]
    fn send(tx: &mut Self::Tx, value: u64) {
        tx.send(value).expect("receiver alive");
    }
    #[inline]
    fn recv(rx: &mut Self::Rx) -> u64 {
        rx.recv().expect("sender alive")
    }
}
