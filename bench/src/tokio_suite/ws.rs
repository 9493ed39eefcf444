//! The tokio suite's WebSocket tables: round trip and one-way stream over loopback, 128 B and
//! 4 KiB text, plain and TLS, every client against the same tickwire blocking server.
//!
//! Owns the tables (rounds, pairing, notes) and the list of clients; the client loops are in
//! `ws_clients.rs`, the servers in `ws_loopback`.

use std::sync::Arc;

use hdrhistogram::Histogram;
use tickwire_blocking::ServerTlsConfig;

use super::{allocations_sentence, ws_clients};
use crate::Ctx;
use crate::harness::Plan;
use crate::report::{self, Row, Table};
use crate::wire;
use crate::ws_loopback::stream::encoded_stream;
use crate::ws_tls::pki;

/// Progress steps per round: every client in each of the eight tables.
pub(super) const STEPS: u64 = 8 * Client::ALL.len() as u64;

/// Payload sizes measured, in bytes.
const SIZES: [usize; 2] = [128, 4096];

/// Bytes per one-way stream in a full run (a quick run streams a tenth): 200,000 messages of
/// 128 B as in `loopback_stream`, 20,000 of 4 KiB.
const STREAM_MESSAGES: [(usize, usize); 2] = [(128, 200_000), (4096, 20_000)];

/// A WebSocket client under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Client {
    TickwireTokio,
    /// tickwire's blocking transport: the reference.
    Tickwire,
    TokioTungstenite,
    Fastwebsockets,
    NexusAsyncWeb,
}

impl Client {
    /// Table order: tickwire-tokio, the blocking reference, then the peers.
    pub(super) const ALL: [Self; 5] = [
        Self::TickwireTokio,
        Self::Tickwire,
        Self::TokioTungstenite,
        Self::Fastwebsockets,
        Self::NexusAsyncWeb,
    ];

    /// The row label (and the `--clients` name).
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::TickwireTokio => "tickwire-tokio",
            Self::Tickwire => "tickwire (blocking)",
            Self::TokioTungstenite => "tokio-tungstenite",
            Self::Fastwebsockets => "fastwebsockets",
            Self::NexusAsyncWeb => "nexus-async-web",
        }
    }
}

/// The selected WebSocket tables.
pub(super) fn tables(ctx: &Ctx) -> Vec<Table> {
    let clients: Vec<Client> = Client::ALL
        .into_iter()
        .filter(|c| {
            matches!(c, Client::TickwireTokio | Client::Tickwire) || ctx.client_selected(c.name())
        })
        .collect();
    let tls = pki::server_config();
    let mut tables = Vec::new();
    for kind in ["rtt", "stream"] {
        for secure in [false, true] {
            for len in SIZES {
                let workload = Workload {
                    kind,
                    tls: secure.then_some(&tls),
                    len,
                };
                if ctx.selected(&workload.id()) {
                    tables.push(workload.table(ctx, &clients));
                }
            }
        }
    }
    tables
}

/// One table's workload.
struct Workload<'a> {
    /// `rtt` or `stream`.
    kind: &'static str,
    tls: Option<&'a ServerTlsConfig>,
    len: usize,
}

impl Workload<'_> {
    fn id(&self) -> String {
        let transport = if self.tls.is_some() { "tls" } else { "plain" };
        format!("tokio_ws_{}_{transport}_{}", self.kind, self.len)
    }

    fn scheme(&self) -> &'static str {
        if self.tls.is_some() {
            "wss (TLS 1.3)"
        } else {
            "ws"
        }
    }

    fn table(&self, ctx: &Ctx, clients: &[Client]) -> Table {
        if self.kind == "rtt" {
            self.round_trip_table(ctx, clients)
        } else {
            self.stream_table(ctx, clients)
        }
    }

    fn round_trip_table(&self, ctx: &Ctx, clients: &[Client]) -> Table {
        let payload = wire::json_payload(self.len);
        let mut histograms: Vec<Vec<Histogram<u64>>> = vec![Vec::new(); clients.len()];
        let mut allocations: Vec<Vec<f64>> = vec![Vec::new(); clients.len()];
        for round in 1..=ctx.rounds {
            for i in report::round_order(clients.len(), round) {
                ctx.step(&format!(
                    "{}: {} (round {round}/{})",
                    self.id(),
                    clients[i].name(),
                    ctx.rounds
                ));
                let (histogram, per_op) =
                    ws_clients::round_trip(clients[i], self.tls, ctx.plan, ctx.peer_core, &payload);
                histograms[i].push(histogram);
                allocations[i].push(per_op);
            }
        }
        let mut note = format!(
            "{} over 127.0.0.1, one connection per client and round, TCP_NODELAY on every \
             socket; the client sends one {} B text message and waits for its echo, one \
             unbatched sample per round trip ({} warm-up + {} recorded), client on core {}, \
             server on core {}. Every client talks to the same tickwire blocking echo server \
             (recv_with_sender, sender.text, flush){}. Async clients on a tokio current-thread \
             runtime (I/O and time drivers) on the pinned measuring thread; tickwire \
             (blocking) on the same thread. Clients interleaved, order rotating each round; \
             median round by p50.",
            self.scheme(),
            self.len,
            ctx.plan.warmup,
            ctx.plan.samples,
            ctx.core,
            ctx.peer_core,
            self.tls_note(),
        );
        let at = |c: Client| clients.iter().position(|&x| x == c);
        if let Some(tokio) = at(Client::TickwireTokio) {
            for (i, other) in clients.iter().enumerate().filter(|(i, _)| *i != tokio) {
                for q in [0.5, 0.99, 0.999] {
                    note.push_str(&report::paired_quantile(
                        Client::TickwireTokio.name(),
                        &histograms[tokio],
                        other.name(),
                        &histograms[i],
                        q,
                    ));
                }
            }
            note.push_str(&targets(
                clients,
                |a, b| {
                    paired_median(&histograms[a], &histograms[b], |h| {
                        h.value_at_quantile(0.5) as f64
                    })
                },
                false,
            ));
        }
        let rows = clients
            .iter()
            .zip(histograms)
            .map(|(client, rounds)| Row::median_round(client.name(), rounds));
        self.finish(
            "round trip",
            "",
            note,
            (
                "round trip (one message sent, one received)",
                named(clients, allocations),
            ),
            rows,
        )
    }

    fn stream_table(&self, ctx: &Ctx, clients: &[Client]) -> Table {
        let payload = wire::json_payload(self.len);
        let full = STREAM_MESSAGES
            .iter()
            .find(|(len, _)| *len == self.len)
            .map_or(20_000, |(_, n)| *n);
        // A quick run (the smoke's plan or smaller) streams a tenth as many messages.
        let messages = if ctx.plan.samples <= Plan::QUICK.samples {
            full / 10
        } else {
            full
        };
        let bytes: Arc<[u8]> = encoded_stream(&payload, messages);
        let mut rates: Vec<Vec<f64>> = vec![Vec::new(); clients.len()];
        let mut allocations: Vec<Vec<f64>> = vec![Vec::new(); clients.len()];
        let mut cpu: Vec<Vec<f64>> = vec![Vec::new(); clients.len()];
        for round in 1..=ctx.rounds {
            for i in report::round_order(clients.len(), round) {
                ctx.step(&format!(
                    "{}: {} (round {round}/{})",
                    self.id(),
                    clients[i].name(),
                    ctx.rounds
                ));
                let (elapsed, per_message, cpu_ns) = ws_clients::stream(
                    clients[i],
                    self.tls,
                    &bytes,
                    (messages, self.len),
                    ctx.peer_core,
                );
                rates[i].push(messages as f64 / elapsed.as_secs_f64().max(f64::MIN_POSITIVE));
                allocations[i].push(per_message);
                cpu[i].push(cpu_ns);
            }
        }
        let mut note = format!(
            "{} over 127.0.0.1, one connection per client and round, TCP_NODELAY on. After \
             tickwire's server handshake the server thread (core {}) writes {messages} \
             pre-encoded unmasked {} B text frames ({} bytes) in one write_all{}; the client \
             (core {}) receives every message with its library's message API and default \
             buffers, checking the count and the last message's length. Timed on the client \
             from the first byte readable on the TCP socket to the last message. Async \
             clients on a tokio current-thread runtime on the pinned measuring thread. Median \
             of {} round(s), range over rounds; order rotating each round.",
            self.scheme(),
            ctx.peer_core,
            self.len,
            bytes.len(),
            if self.tls.is_some() {
                " as 16 KiB TLS records, encrypted by tickwire's server TLS stream before the \
                 start (a sender encrypting as it goes runs at the client's decryption speed, \
                 and the figure would be whichever side the scheduler slowed)"
            } else {
                ""
            },
            ctx.core,
            ctx.rounds,
        );
        let at = |c: Client| clients.iter().position(|&x| x == c);
        if let Some(tokio) = at(Client::TickwireTokio) {
            for (i, other) in clients.iter().enumerate().filter(|(i, _)| *i != tokio) {
                note.push_str(&report::paired_rates(
                    Client::TickwireTokio.name(),
                    &rates[tokio],
                    other.name(),
                    &rates[i],
                ));
            }
            note.push_str(&targets(
                clients,
                |a, b| paired_median(&rates[a], &rates[b], |r| *r),
                true,
            ));
            note.push_str(&cpu_sentence(clients, tokio, &cpu));
        }
        let rows = clients
            .iter()
            .zip(rates)
            .map(|(client, rounds)| Row::rate(client.name(), rounds));
        self.finish(
            "one-way stream",
            ", messages per second",
            note,
            ("message", named(clients, allocations)),
            rows,
        )
    }

    /// The table: `what` and `unit` make the title, the allocation figures end the note.
    fn finish(
        &self,
        what: &str,
        unit: &str,
        mut note: String,
        (per, allocations): (&str, Vec<(&'static str, Vec<f64>)>),
        rows: impl Iterator<Item = Row>,
    ) -> Table {
        note.push_str(&allocations_sentence(per, &allocations));
        let mut table = Table::new(
            &self.id(),
            &format!(
                "tokio: WebSocket {what} over loopback, {}, {} B text{unit}",
                self.scheme(),
                self.len
            ),
            Client::Tickwire.name(),
            &note,
        );
        table.rows.extend(rows);
        table
    }

    fn tls_note(&self) -> &'static str {
        if self.tls.is_some() {
            " behind accept_tls: TLS 1.3, TLS13_AES_128_GCM_SHA256 only, ring for every \
             client, the bench CA trusted through each client's own configuration API \
             (fastwebsockets, which has no TLS, over a tokio-rustls stream the bench wraps)"
        } else {
            ""
        }
    }
}

/// The median over rounds of `figure(a[r]) / figure(b[r])`.
fn paired_median<T>(a: &[T], b: &[T], figure: impl Fn(&T) -> f64) -> f64 {
    report::median(&paired_ratios(a, b, figure))
}

/// `figure(a[r]) / figure(b[r])` for each round whose `b` figure is positive.
fn paired_ratios<T>(a: &[T], b: &[T], figure: impl Fn(&T) -> f64) -> Vec<f64> {
    a.iter()
        .zip(b)
        .map(|(a, b)| (figure(a), figure(b)))
        .filter(|(_, b)| *b > 0.0)
        .map(|(a, b)| a / b)
        .collect()
}

/// The targets as a sentence: tickwire-tokio within 10% of the blocking reference and
/// ahead of every peer, from the paired medians `ratio(tokio, other)` (p50 ratios, lower is
/// better, or rate ratios with `higher_is_better`).
fn targets(
    clients: &[Client],
    ratio: impl Fn(usize, usize) -> f64,
    higher_is_better: bool,
) -> String {
    let at = |c: Client| clients.iter().position(|&x| x == c);
    let (Some(tokio), Some(blocking)) = (at(Client::TickwireTokio), at(Client::Tickwire)) else {
        return String::new();
    };
    let reference = ratio(tokio, blocking);
    let within = if higher_is_better {
        reference >= 0.9
    } else {
        reference <= 1.1
    };
    let behind: Vec<&str> = clients
        .iter()
        .enumerate()
        .filter(|(i, _)| {
            *i != tokio && *i != blocking && {
                let r = ratio(tokio, *i);
                if higher_is_better { r <= 1.0 } else { r >= 1.0 }
            }
        })
        .map(|(_, c)| c.name())
        .collect();
    format!(
        " Targets (paired medians): tickwire-tokio / tickwire (blocking) = {reference:.3} \
         (within 10%: {}); ahead of every peer: {}.",
        if within { "met" } else { "missed" },
        if behind.is_empty() {
            "met".to_owned()
        } else {
            format!("missed (not ahead of {})", behind.join(", "))
        }
    )
}

/// The measuring thread's CPU per message (user and kernel; waiting costs none), median over
/// rounds per client, and tickwire-tokio's over each other client's paired by round (lower
/// is cheaper). Unlike the rate, it does not move with how fast the sender and the loopback
/// deliver, which on a two-core machine is often what sets the rate.
fn cpu_sentence(clients: &[Client], tokio: usize, cpu: &[Vec<f64>]) -> String {
    let figures: Vec<String> = clients
        .iter()
        .zip(cpu)
        .map(|(c, v)| format!("{} {:.0} ns", c.name(), report::median(v)))
        .collect();
    let ratios: Vec<String> = clients
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != tokio)
        .map(|(i, c)| {
            let paired = paired_ratios(&cpu[tokio], &cpu[i], |ns| *ns);
            let cheaper = paired.iter().filter(|r| **r <= 1.0).count();
            format!(
                "{:.3} against {} (cheaper in {cheaper} of {})",
                report::median(&paired),
                c.name(),
                paired.len()
            )
        })
        .collect();
    format!(
        " CPU of the measuring thread per message while receiving (user and kernel, \
         CLOCK_THREAD_CPUTIME_ID, median over rounds): {}; {} per message, paired by round: {}.",
        figures.join(", "),
        Client::TickwireTokio.name(),
        ratios.join(", ")
    )
}

/// Pairs each client's name with its per-round figures.
fn named(clients: &[Client], figures: Vec<Vec<f64>>) -> Vec<(&'static str, Vec<f64>)> {
    clients.iter().map(|c| c.name()).zip(figures).collect()
}
