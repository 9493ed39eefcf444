//! The rpc suite (`tickwire-bench rpc`, issue 49's "Bench, same run"): order entry's request
//! round trip at 1, 8 and 64 in flight against jsonrpsee's WebSocket client and a
//! hand-written id-matching loop over tokio-tungstenite, with allocations per request, and
//! the matcher's own cost per response.
//!
//! Tables:
//! - `rpc_rtt_d1`, `rpc_rtt_d8`, `rpc_rtt_d64`: ticks from a request's submission to its
//!   response, `depth` requests kept in flight, loopback ws://, one connection; the notes
//!   give each row's allocations per request;
//! - `rpc_match_64`: what the session spends on one response with 64 in flight (its id read
//!   from the text, the request found and resolved, the event built), in-process, no socket.
//!
//! Every client runs on the measuring thread (tokio rows on a current-thread runtime built
//! there, jsonrpsee's background task included), the server's threads on `--peer-core`.
//! Rows are interleaved in each round, their order rotating by one each round.

mod clients;
mod server;

use std::hint::black_box;
use std::io::Write as _;
use std::time::Instant;

use hdrhistogram::Histogram;
use tickwire_codec::feed::{self, ConnId, Delivery, RecvStamp};
use tickwire_codec::rpc::{Event, Outcome, Request, RpcConfig, RpcSession, Ticket};

use crate::Ctx;
use crate::harness::{self, Clock, Plan};
use crate::report::{self, Figures, Row, Table};
use clients::Client;
use server::RpcServer;

/// The depths measured.
const DEPTHS: [usize; 3] = [1, 8, 64];

/// Progress steps per round: every client at every depth, and the matcher.
pub const STEPS: u64 = (Client::ALL.len() * DEPTHS.len()) as u64 + 1;

/// Requests per row and round in a full run, and in a quick one.
const REQUESTS: u64 = 20_000;
const QUICK_REQUESTS: u64 = 2_000;

/// One row's rounds: a histogram and an allocation figure per round.
type Rounds = (Vec<Histogram<u64>>, Vec<f64>);

/// Runs the suite (`--only` matches table ids).
pub fn run(ctx: &Ctx, clock: &Clock) -> Vec<Table> {
    harness::pin_to(ctx.core);
    let runtime = crate::tokio_suite::runtime();
    let quick = ctx.plan.samples < Plan::FULL.samples && ctx.rounds == 1;
    let requests = if quick { QUICK_REQUESTS } else { REQUESTS };
    let server = RpcServer::start(ctx.peer_core);
    let url = server.url();
    // Per depth, per client.
    let mut measured: Vec<Vec<Rounds>> = DEPTHS
        .iter()
        .map(|_| Client::ALL.iter().map(|_| Default::default()).collect())
        .collect();
    let mut matcher = Vec::new();
    for round in 1..=ctx.rounds {
        for (d, depth) in DEPTHS.iter().enumerate() {
            if !ctx.selected(&format!("rpc_rtt_d{depth}")) {
                continue;
            }
            for i in report::round_order(Client::ALL.len(), round) {
                let client = Client::ALL[i];
                if !ctx.client_selected(client.name()) {
                    continue;
                }
                ctx.step(&format!("rpc, {depth} in flight / {}", client.name()));
                let run = clients::run(&runtime, client, &url, *depth, requests / 10, requests);
                measured[d][i].0.push(run.histogram);
                measured[d][i].1.push(run.allocations);
            }
        }
        if ctx.selected("rpc_match_64") {
            ctx.step("rpc matcher, 64 in flight");
            matcher.push(match_cost(ctx.plan));
        }
    }
    let mut tables = Vec::new();
    for (d, depth) in DEPTHS.iter().enumerate() {
        if measured[d].iter().all(|(rounds, _)| rounds.is_empty()) {
            continue;
        }
        tables.push(rtt_table(*depth, &measured[d], clock, requests));
    }
    if !matcher.is_empty() {
        tables.push(match_table(matcher, clock));
    }
    tables
}

fn rtt_table(depth: usize, measured: &[Rounds], clock: &Clock, requests: u64) -> Table {
    let mut table = Table::new(
        &format!("rpc_rtt_d{depth}"),
        &format!(
            "Order entry: request to response, {depth} in flight, loopback ws:// (ticks per request)"
        ),
        Client::ALL[0].name(),
        &format!(
            "{requests} timed requests per row and round after {} warm-up ones; a 160 B \
             JSON-RPC order, answered at once with its id by one server (the peer core). Each \
             sample runs from the submission to the response's hand-over.",
            requests / 10
        ),
    );
    for (client, (histograms, _)) in Client::ALL.iter().zip(measured) {
        if !histograms.is_empty() {
            table
                .rows
                .push(Row::median_round(client.name(), histograms.clone()));
        }
    }
    // With `--clients`, the first row measured is the baseline.
    table.baseline.clone_from(&table.rows[0].library);
    for row in &table.rows {
        if let Figures::Latency(h) = &row.figures {
            table.note.push_str(&format!(
                " {}: p50 {:.1} us, p99 {:.1} us.",
                row.library,
                clock.ns(h.value_at_quantile(0.5)) / 1e3,
                clock.ns(h.value_at_quantile(0.99)) / 1e3
            ));
        }
    }
    let allocations: Vec<String> = Client::ALL
        .iter()
        .zip(measured)
        .filter(|(_, (_, rounds))| !rounds.is_empty())
        .map(|(client, (_, rounds))| format!("{} {:.2}", client.name(), report::median(rounds)))
        .collect();
    table.note.push_str(&format!(
        " Allocations per request (median over rounds): {}.",
        allocations.join(", ")
    ));
    table
}

fn match_table(rounds: Vec<Histogram<u64>>, clock: &Clock) -> Table {
    let mut table = Table::new(
        "rpc_match_64",
        "Order entry: the session's cost per response, 64 in flight (ticks per response)",
        "tickwire RpcSession::absorb",
        "In-process, no socket: 64 requests submitted and written, then their 64 responses \
         (70 B each, answered last first) given to the session; each sample is one response, \
         the mean over the 64: its id read from the text, its request found and resolved, the \
         event built. Target under 50 ns.",
    );
    let row = Row::median_round("tickwire RpcSession::absorb", rounds);
    if let Figures::Latency(h) = &row.figures {
        table.note.push_str(&format!(
            " p50 {:.1} ns per response.",
            clock.ns(h.value_at_quantile(0.5))
        ));
    }
    table.rows.push(row);
    table
}

/// Ticks per response of [`RpcSession::absorb`] with 64 requests in flight.
fn match_cost(plan: Plan) -> Histogram<u64> {
    const IN_FLIGHT: usize = 64;
    struct State {
        rpc: RpcSession,
        tickets: [Ticket; IN_FLIGHT],
        responses: Vec<Vec<u8>>,
        now: Instant,
    }
    let mut state = State {
        rpc: RpcSession::new(RpcConfig::new().with_max_in_flight(IN_FLIGHT)),
        tickets: [Ticket(0); IN_FLIGHT],
        responses: (0..IN_FLIGHT).map(|_| Vec::with_capacity(128)).collect(),
        now: Instant::now(),
    };
    let open = feed::Event::Connected {
        conn: ConnId(0),
        attempt: 1,
        endpoint: 0,
    };
    state.rpc.absorb(&open, state.now);
    while state.rpc.poll_event().is_some() {}
    let setup = |state: &mut State| {
        for (ticket, response) in state.tickets.iter_mut().zip(&mut state.responses) {
            *ticket = state
                .rpc
                .submit(clients::REQUEST, Request::new(), state.now)
                .expect("room");
            response.clear();
            let _ = write!(
                response,
                r#"{{"jsonrpc":"2.0","id":{},"result":{{"orderId":28,"status":"NEW"}}}}"#,
                ticket.0
            );
        }
        while state.rpc.poll_transmit(state.now, |_, _| Ok(())).is_some() {}
    };
    let batch = |state: &mut State| {
        for response in state.responses.iter().rev() {
            let message = feed::Event::Message(Delivery {
                conn: ConnId(0),
                key: None,
                seq: None,
                stamp: RecvStamp::default(),
                payload: response,
            });
            let absorbed = state.rpc.absorb(&message, state.now).expect("a response");
            let event = RpcSession::event(absorbed, response);
            debug_assert!(matches!(
                event,
                Event::Resolved {
                    outcome: Outcome::Response(_),
                    ..
                }
            ));
            black_box(event);
        }
    };
    harness::sample_per_op(
        Plan {
            warmup: plan.warmup / 10,
            samples: plan.samples / 10,
        },
        IN_FLIGHT as u64,
        &mut state,
        setup,
        batch,
    )
}
