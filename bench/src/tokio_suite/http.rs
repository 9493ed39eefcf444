//! The tokio suite's async REST tables: the HTTP suite's order POST against its keep-alive
//! server (`http::server`), with 1 and with 8 requests in flight, for tickwire-tokio's
//! `HttpClient`, reqwest (async) and nexus-async-web's `ClientPool`.
//!
//! Concurrency `c` is `c` futures joined on one current-thread runtime (no spawn), each a
//! handle of the library's pool making requests back to back: tickwire-tokio one
//! `HttpClient` clone per future (clones share the pool, default cap 8 connections), reqwest
//! one `Client` clone per future (shared pool), nexus-async-web one `ClientPool` of `c`
//! connections and `acquire().await` per request. Latency is each request's own round trip
//! as its future saw it; requests/s is all recorded requests over their wall time.

use std::net::SocketAddr;
use std::time::Instant;

use futures_util::future::join_all;
use hdrhistogram::Histogram;
use nexus_async_web::rest::{ClientPool, ClientSlot};
use tickwire_tokio::HttpClient;

use super::{allocations_sentence, runtime};
use crate::Ctx;
use crate::harness::{self, Plan};
use crate::http::clients::Reqwest;
use crate::http::fixtures::{self, HEADERS, ORDER_JSON, PATH};
use crate::http::server;
use crate::report::{self, Row, Table};

/// Progress steps per round: every client at each concurrency.
pub(super) const STEPS: u64 = (CONCURRENCY.len() * Client::ALL.len()) as u64;

/// Requests in flight.
const CONCURRENCY: [usize; 2] = [1, 8];

/// An async HTTP client under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    TickwireTokio,
    Reqwest,
    NexusAsyncWeb,
}

impl Client {
    const ALL: [Self; 3] = [Self::TickwireTokio, Self::Reqwest, Self::NexusAsyncWeb];

    fn name(self) -> &'static str {
        match self {
            Self::TickwireTokio => "tickwire-tokio HttpClient",
            Self::Reqwest => "reqwest",
            Self::NexusAsyncWeb => "nexus-async-web ClientPool",
        }
    }
}

/// What one connection set measured.
struct Sampled {
    histogram: Histogram<u64>,
    per_second: f64,
    allocations: f64,
}

/// The selected tables: `tokio_http_c{1,8}_rtt` and `_rate`.
pub(super) fn tables(ctx: &Ctx) -> Vec<Table> {
    let clients: Vec<Client> = Client::ALL
        .into_iter()
        .filter(|c| *c == Client::TickwireTokio || ctx.client_selected(c.name()))
        .collect();
    let mut tables = Vec::new();
    for concurrency in CONCURRENCY {
        let id = format!("tokio_http_c{concurrency}");
        if ctx.selected(&format!("{id}_rtt")) || ctx.selected(&format!("{id}_rate")) {
            tables.extend(pair(ctx, &clients, concurrency, &id));
        }
    }
    tables
}

/// The round-trip and rate tables at `concurrency`.
fn pair(ctx: &Ctx, clients: &[Client], concurrency: usize, id: &str) -> [Table; 2] {
    let mut latencies: Vec<Vec<Histogram<u64>>> = vec![Vec::new(); clients.len()];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); clients.len()];
    let mut allocations: Vec<Vec<f64>> = vec![Vec::new(); clients.len()];
    for round in 1..=ctx.rounds {
        for i in report::round_order(clients.len(), round) {
            ctx.step(&format!(
                "{id}: {} (round {round}/{})",
                clients[i].name(),
                ctx.rounds
            ));
            let sampled = measure(clients[i], ctx.plan, ctx.peer_core, concurrency);
            latencies[i].push(sampled.histogram);
            rates[i].push(sampled.per_second);
            allocations[i].push(sampled.allocations);
        }
    }
    let setup = format!(
        "POST {PATH} with four headers and the {} B JSON body to the HTTP suite's keep-alive \
         server (std::net + httparse, a thread per connection on core {}), which checks each \
         request and answers the fixed {} B response; every response's status and whole body \
         checked. {concurrency} request(s) in flight: {concurrency} future(s) joined on one \
         tokio current-thread runtime (I/O and time drivers) on the pinned measuring thread \
         (core {}), each a handle on its library's pool; the server counts at most \
         {concurrency} connection(s) per client and round. {} warm-up + {} recorded requests \
         per client and round, split evenly over the futures. tickwire-tokio with its \
         defaults (a 60 s total deadline per request, a timer each); reqwest with no proxy, \
         TCP_NODELAY; nexus-async-web's ClientPool with {concurrency} connection(s), Nagle \
         off. Clients interleaved, order rotating each round.",
        ORDER_JSON.len(),
        ctx.peer_core,
        fixtures::response().len(),
        ctx.core,
        ctx.plan.warmup,
        ctx.plan.samples,
    );
    let tokio = clients.iter().position(|&c| c == Client::TickwireTokio);
    let mut rtt_note = format!("{setup} One rdtsc sample per request; median round by p50.");
    let mut rate_note = format!(
        "{setup} Recorded requests over their wall time; median of {} round(s), range over \
         rounds.",
        ctx.rounds
    );
    if let Some(tokio) = tokio {
        for (i, other) in clients.iter().enumerate().filter(|(i, _)| *i != tokio) {
            for q in [0.5, 0.99, 0.999] {
                rtt_note.push_str(&report::paired_quantile(
                    Client::TickwireTokio.name(),
                    &latencies[tokio],
                    other.name(),
                    &latencies[i],
                    q,
                ));
            }
            rate_note.push_str(&report::paired_rates(
                Client::TickwireTokio.name(),
                &rates[tokio],
                other.name(),
                &rates[i],
            ));
        }
    }
    let named: Vec<(&str, Vec<f64>)> = clients.iter().map(|c| c.name()).zip(allocations).collect();
    let allocs = allocations_sentence("request", &named);
    rtt_note.push_str(&allocs);
    rate_note.push_str(&allocs);
    let baseline = Client::TickwireTokio.name();
    let mut rtt = Table::new(
        &format!("{id}_rtt"),
        &format!(
            "tokio: async REST round trip, POST 106 B JSON, 228 B JSON response, {concurrency} in flight"
        ),
        baseline,
        &rtt_note,
    );
    let mut rate = Table::new(
        &format!("{id}_rate"),
        &format!("tokio: async REST requests per second, {concurrency} in flight"),
        baseline,
        &rate_note,
    );
    for ((client, histograms), per_second) in clients.iter().zip(latencies).zip(rates) {
        rtt.rows.push(Row::median_round(client.name(), histograms));
        rate.rows.push(Row::rate(client.name(), per_second));
    }
    [rtt, rate]
}

/// One client at `concurrency` against a fresh server on `peer_core`. Panics unless the server
/// answered every request, rejected none, and saw at most `concurrency` connections.
fn measure(client: Client, plan: Plan, peer_core: usize, concurrency: usize) -> Sampled {
    let server = server::spawn(peer_core);
    let addr = server.addr();
    let sampled = runtime().block_on(drive_client(client, addr, plan, concurrency));
    let served = server.finish();
    let name = client.name();
    assert_eq!(served.rejected, 0, "{name}: the server rejected requests");
    assert!(
        (1..=concurrency as u64).contains(&served.connections),
        "{name}: {} connections for {concurrency} in flight",
        served.connections
    );
    let per_future = |n: usize| n.div_ceil(concurrency) * concurrency;
    assert_eq!(
        served.requests,
        (per_future(plan.warmup) + per_future(plan.samples)) as u64,
        "{name}: the server counted another number of requests"
    );
    sampled
}

/// Connects `client`'s handles and drives them (inside the caller's `block_on`).
async fn drive_client(client: Client, addr: SocketAddr, plan: Plan, concurrency: usize) -> Sampled {
    let [(n0, v0), (n1, v1), (n2, v2), (n3, v3)] = HEADERS;
    match client {
        Client::TickwireTokio => {
            let first = HttpClient::new(&format!("http://{addr}"))
                .unwrap_or_else(|e| panic!("tickwire-tokio: client: {e}"));
            first
                .connect()
                .await
                .unwrap_or_else(|e| panic!("tickwire-tokio: connect: {e}"));
            let mut handles: Vec<HttpClient> = (0..concurrency).map(|_| first.clone()).collect();
            drive(&mut handles, plan, async |client: &mut HttpClient| {
                let response = client
                    .post(PATH)
                    .header(n0, v0)
                    .header(n1, v1)
                    .header(n2, v2)
                    .header(n3, v3)
                    .send_body(ORDER_JSON)
                    .await
                    .unwrap_or_else(|e| panic!("tickwire-tokio: send: {e}"));
                fixtures::check("tickwire-tokio", response.status().0, response.body());
            })
            .await
        }
        Client::Reqwest => {
            let first = Reqwest::connect(addr);
            let mut handles: Vec<Reqwest> = (0..concurrency).map(|_| first.clone()).collect();
            drive(&mut handles, plan, async |client: &mut Reqwest| {
                client.request().await;
            })
            .await
        }
        Client::NexusAsyncWeb => {
            let pool = ClientPool::builder()
                .url(&format!("http://{addr}"))
                .connections(concurrency)
                .disable_nagle()
                .build()
                .await
                .unwrap_or_else(|e| panic!("nexus-async-web: pool: {e}"));
            let mut handles: Vec<&ClientPool> = vec![&pool; concurrency];
            drive(&mut handles, plan, async |pool: &mut &ClientPool| {
                let mut guard = pool
                    .acquire()
                    .await
                    .unwrap_or_else(|e| panic!("nexus-async-web: acquire: {e}"));
                let slot: &mut ClientSlot = &mut guard;
                let request = slot
                    .writer
                    .post(PATH)
                    .header(n0, v0)
                    .header(n1, v1)
                    .header(n2, v2)
                    .header(n3, v3)
                    .body(ORDER_JSON)
                    .finish()
                    .unwrap_or_else(|e| panic!("nexus-async-web: build the request: {e}"));
                let conn = slot
                    .conn
                    .as_mut()
                    .expect("nexus-async-web: a healthy connection");
                let response = conn
                    .send(request, &mut slot.reader)
                    .await
                    .unwrap_or_else(|e| panic!("nexus-async-web: send: {e}"));
                fixtures::check("nexus-async-web", response.status(), response.body());
            })
            .await
        }
    }
}

/// Runs every handle's requests concurrently: the warm-up (`plan.warmup` split over the
/// handles), then the recorded requests, each timed, with allocations counted on this thread.
async fn drive<H>(handles: &mut [H], plan: Plan, request: impl AsyncFn(&mut H)) -> Sampled {
    let futures = handles.len();
    let warmup = plan.warmup.div_ceil(futures);
    let samples = plan.samples.div_ceil(futures);
    join_all(handles.iter_mut().map(|handle| async {
        for _ in 0..warmup {
            request(handle).await;
        }
    }))
    .await;
    // Made before counting: only the requests' allocations are counted.
    let mut histograms: Vec<Histogram<u64>> =
        (0..futures).map(|_| harness::new_histogram()).collect();
    let counting = crate::alloc_count::start();
    let wall = Instant::now();
    join_all(
        handles
            .iter_mut()
            .zip(&mut histograms)
            .map(|(handle, histogram)| async {
                for _ in 0..samples {
                    let start = harness::ticks_start();
                    request(handle).await;
                    let ticks = harness::ticks_end() - start;
                    histogram.saturating_record(ticks.max(1));
                }
            }),
    )
    .await;
    let elapsed = wall.elapsed();
    let total = (samples * futures) as u64;
    let allocations = crate::alloc_count::stop_per_op(counting, total);
    let mut histogram = harness::new_histogram();
    for one in &histograms {
        histogram.add(one).expect("histograms with the same bounds");
    }
    Sampled {
        histogram,
        per_second: total as f64 / elapsed.as_secs_f64(),
        allocations,
    }
}
