//! The rpc suite's clients: each keeps `depth` requests in flight against the
//! [`RpcServer`](super::server::RpcServer) and times every request from its submission to its
//! response, as its users write it.
//!
//! - tickwire (blocking and tokio): `Rpc::submit`, then `next_event` until the response's
//!   `Resolved` event; ids written and matched by the session.
//! - jsonrpsee 0.26's WebSocket client: `ClientT::request` futures, `depth` of them at once.
//! - a tokio-tungstenite loop as users write one: a counter for ids, the request formatted,
//!   each answer parsed with `serde_json` and looked up in a `HashMap` of waiting ids.

use std::collections::HashMap;

use futures_util::stream::FuturesUnordered;
use futures_util::{SinkExt, StreamExt};
use hdrhistogram::Histogram;
use jsonrpsee_core::client::ClientT;
use jsonrpsee_core::params::ObjectParams;
use tickwire_blocking::codec::feed::FeedConfig;
use tickwire_blocking::codec::rpc::{Event, Outcome, Request, RpcConfig};
use tickwire_core::feed::FeedIo;
use tickwire_core::rpc::Rpc;

use crate::alloc_count;
use crate::harness::{self, ticks_end, ticks_start};

/// The request every row sends (the library adds `"id"`).
pub const REQUEST: &str = r#"{"jsonrpc":"2.0","method":"order.place","params":{"symbol":"BTCUSDT","side":"BUY","type":"LIMIT","quantity":"0.001","price":"50000.00"}}"#;

/// A client measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// tickwire's blocking `Rpc`.
    Blocking,
    /// tickwire-tokio's `Rpc`.
    Tokio,
    /// jsonrpsee's WebSocket client.
    Jsonrpsee,
    /// A hand-written id-matching loop over tokio-tungstenite.
    TungsteniteLoop,
}

impl Client {
    pub const ALL: [Self; 4] = [
        Self::Tokio,
        Self::Blocking,
        Self::Jsonrpsee,
        Self::TungsteniteLoop,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Blocking => "tickwire rpc (blocking)",
            Self::Tokio => "tickwire-tokio rpc",
            Self::Jsonrpsee => "jsonrpsee 0.26 ws client",
            Self::TungsteniteLoop => "tokio-tungstenite id loop",
        }
    }
}

/// What one run measured: round trips (ticks) and allocations per request.
pub struct Measured {
    pub histogram: Histogram<u64>,
    pub allocations: f64,
}

/// Times `samples` requests after `warmup`, `depth` in flight, with `client` against `url`.
pub fn run(
    runtime: &tokio::runtime::Runtime,
    client: Client,
    url: &str,
    depth: usize,
    warmup: u64,
    samples: u64,
) -> Measured {
    let mut meter = Meter::new(warmup, samples);
    match client {
        Client::Blocking => blocking(url, depth, &mut meter),
        Client::Tokio => runtime.block_on(tokio_rpc(url, depth, &mut meter)),
        Client::Jsonrpsee => runtime.block_on(jsonrpsee(url, depth, &mut meter)),
        Client::TungsteniteLoop => runtime.block_on(tungstenite(url, depth, &mut meter)),
    }
    meter.finish()
}

/// Counts requests, records the timed ones, counts allocations over the timed part.
struct Meter {
    warmup: u64,
    total: u64,
    submitted: u64,
    done: u64,
    histogram: Histogram<u64>,
    counting: Option<alloc_count::Counting>,
    allocations: f64,
}

impl Meter {
    fn new(warmup: u64, samples: u64) -> Self {
        Self {
            warmup,
            total: warmup + samples,
            submitted: 0,
            done: 0,
            histogram: harness::new_histogram(),
            counting: None,
            allocations: 0.0,
        }
    }

    /// Whether another request may be submitted.
    fn more(&mut self) -> bool {
        let more = self.submitted < self.total;
        self.submitted += u64::from(more);
        more
    }

    /// A request that started at `started` resolved.
    fn resolved(&mut self, started: u64) {
        let rtt = ticks_end().saturating_sub(started);
        self.done += 1;
        if self.done > self.warmup {
            self.histogram.saturating_record(rtt.max(1));
        }
        if self.done == self.warmup {
            self.counting = Some(alloc_count::start());
        }
        if self.done == self.total
            && let Some(counting) = self.counting.take()
        {
            self.allocations = alloc_count::stop_per_op(counting, self.total - self.warmup);
        }
    }

    fn finished(&self) -> bool {
        self.done >= self.total
    }

    fn finish(self) -> Measured {
        Measured {
            histogram: self.histogram,
            allocations: self.allocations,
        }
    }
}

/// Submission times by ticket: ids grow from 1 and at most `depth` are out.
const STARTED: usize = 4096;

fn blocking(url: &str, depth: usize, meter: &mut Meter) {
    let config = RpcConfig::new().with_max_in_flight(depth);
    let mut rpc = tickwire_blocking::rpc::Rpc::new(
        FeedConfig::new(url),
        config,
        tickwire_blocking::ClientBuilder::new(),
    )
    .expect("rpc config");
    let mut waiting = Waiting::new(depth);
    while !meter.finished() {
        waiting.top_up(&mut rpc, meter);
        let event = rpc.next_event().expect("poll");
        waiting.settle(event, meter);
    }
}

async fn tokio_rpc(url: &str, depth: usize, meter: &mut Meter) {
    let config = RpcConfig::new().with_max_in_flight(depth);
    let mut rpc = tickwire_tokio::rpc::Rpc::new(
        FeedConfig::new(url),
        config,
        tickwire_tokio::ClientBuilder::new(),
    )
    .expect("rpc config");
    let mut waiting = Waiting::new(depth);
    while !meter.finished() {
        waiting.top_up(&mut rpc, meter);
        let event = rpc.next_event().await;
        waiting.settle(event, meter);
    }
}

/// A tickwire row's requests out: their submission times by ticket.
struct Waiting {
    depth: usize,
    out: usize,
    started: Vec<u64>,
}

impl Waiting {
    fn new(depth: usize) -> Self {
        Self {
            depth,
            out: 0,
            started: vec![0; STARTED],
        }
    }

    /// Submits requests until `depth` are out (or the run has all it needs).
    fn top_up<X: FeedIo>(&mut self, rpc: &mut Rpc<X>, meter: &mut Meter) {
        while self.out < self.depth && meter.more() {
            let at = ticks_start();
            let ticket = rpc.submit(REQUEST, Request::new()).expect("submitted");
            self.started[ticket.0 as usize % STARTED] = at;
            self.out += 1;
        }
    }

    /// Takes one event: a response resolves its request; any other outcome is a failure.
    fn settle(&mut self, event: Option<Event<'_>>, meter: &mut Meter) {
        match event {
            Some(Event::Resolved {
                ticket,
                outcome: Outcome::Response(_),
                ..
            }) => {
                self.out -= 1;
                meter.resolved(self.started[ticket.0 as usize % STARTED]);
            }
            Some(Event::Resolved { outcome, .. }) => panic!("tickwire rpc: {outcome:?}"),
            Some(_) => {}
            None => panic!("tickwire rpc ended"),
        }
    }
}

/// The order's parameters, as a jsonrpsee user passes them.
fn params() -> ObjectParams {
    let mut params = ObjectParams::new();
    for (name, value) in [
        ("symbol", "BTCUSDT"),
        ("side", "BUY"),
        ("type", "LIMIT"),
        ("quantity", "0.001"),
        ("price", "50000.00"),
    ] {
        params.insert(name, value).expect("a string serialises");
    }
    params
}

async fn jsonrpsee(url: &str, depth: usize, meter: &mut Meter) {
    let client = jsonrpsee_ws_client::WsClientBuilder::default()
        .max_concurrent_requests(depth.max(1))
        .build(url)
        .await
        .expect("jsonrpsee: connect");
    let client = &client;
    let request = || async move {
        let at = ticks_start();
        let answer: Result<serde_json::Value, _> = client.request("order.place", params()).await;
        answer.expect("jsonrpsee: a response");
        at
    };
    let mut out = FuturesUnordered::new();
    while !meter.finished() {
        while out.len() < depth && meter.more() {
            out.push(request());
        }
        let Some(started) = out.next().await else {
            break;
        };
        meter.resolved(started);
    }
}

async fn tungstenite(url: &str, depth: usize, meter: &mut Meter) {
    use tokio_tungstenite::tungstenite::Message;
    let (mut ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("tokio-tungstenite: connect");
    let mut waiting: HashMap<u64, u64> = HashMap::with_capacity(depth * 2);
    let mut next_id = 1u64;
    while !meter.finished() {
        while waiting.len() < depth && meter.more() {
            let id = next_id;
            next_id += 1;
            // As users write it: the id spliced into the request text.
            let text = format!(r#"{{"id":{id},{}"#, &REQUEST[1..]);
            waiting.insert(id, ticks_start());
            ws.send(Message::text(text)).await.expect("send");
        }
        let message = ws.next().await.expect("open").expect("a message");
        let Message::Text(text) = message else {
            continue;
        };
        let answer: serde_json::Value = serde_json::from_str(&text).expect("JSON");
        if let Some(started) = answer["id"].as_u64().and_then(|id| waiting.remove(&id)) {
            meter.resolved(started);
        }
    }
}
