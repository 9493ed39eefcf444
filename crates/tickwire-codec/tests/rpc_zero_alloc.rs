//! Proves that an RPC session allocates nothing per request once warmed up (rule 6 of
//! docs/ARCHITECTURE.md): 200 000 requests, 64 in flight, submitted, written, answered out of
//! order (each window of 64 answered back to front), with a weighted rate limit charged per
//! request and pushed messages in between, under a counting global allocator, for this test
//! binary only.

use std::io::Write;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tickwire_codec::feed::{self, ConnId, Delivery, RecvStamp};
use tickwire_codec::rpc::{Event, Outcome, RateLimits, Request, RpcConfig, RpcSession, Ticket};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

const IN_FLIGHT: usize = 64;
const REQUEST: &str = r#"{"method":"order.place","params":{"symbol":"BTCUSDT","side":"BUY","quantity":"0.001","price":"50000.00","newClientOrderId":"x-0000000001"}}"#;

/// Runs `rounds` windows of 64 requests; returns how many resolved with a response.
fn run(
    rpc: &mut RpcSession,
    now: &mut Instant,
    rounds: usize,
    request: Request,
    responses: &mut [Vec<u8>; IN_FLIGHT],
) -> u64 {
    let conn = ConnId(0);
    let stamp = RecvStamp::default();
    let pushed = br#"{"e":"executionReport","s":"BTCUSDT","X":"NEW"}"#;
    let mut answered = 0;
    let mut tickets = [Ticket(0); IN_FLIGHT];
    for _ in 0..rounds {
        for ticket in tickets.iter_mut() {
            *ticket = rpc.submit(REQUEST, request, *now).expect("room");
        }
        let mut written = 0;
        while let Some(out) = rpc.poll_transmit(*now, |_, _| Ok(())) {
            assert!(out.text.len() > REQUEST.len());
            written += 1;
        }
        assert_eq!(written, IN_FLIGHT);
        *now += Duration::from_micros(50);
        for (index, ticket) in tickets.iter().enumerate().rev() {
            // The response carries the id back, last first (rewritten in place).
            let response = &mut responses[index];
            response.clear();
            // `write!` into a Vec with room formats without allocating.
            write!(response, r#"{{"id":{}"#, ticket.0).expect("a Vec takes it");
            response.extend_from_slice(br#","status":200,"result":{"orderId":28,"status":"NEW"}}"#);
            for payload in [&response[..], &pushed[..]] {
                let event = feed::Event::Message(Delivery {
                    conn,
                    key: None,
                    seq: None,
                    stamp,
                    payload,
                });
                let absorbed = rpc.absorb(&event, *now).expect("not a login");
                match RpcSession::event(absorbed, payload) {
                    Event::Resolved {
                        ticket: got,
                        outcome: Outcome::Response(_),
                        ..
                    } => {
                        assert_eq!(got, *ticket);
                        answered += 1;
                    }
                    Event::Pushed { .. } => {}
                    other => panic!("unexpected {other:?}"),
                }
            }
        }
        rpc.handle_timeout(*now);
        assert!(rpc.poll_event().is_none());
    }
    answered
}

fn main() {
    let mut limits = RateLimits::new();
    let weight = limits.window("weight", u64::MAX / 2, Duration::from_secs(60));
    let orders = limits.window("orders", u64::MAX / 2, Duration::from_secs(10));
    let place = limits.kind(&[(weight, 1), (orders, 1)]);
    let config = RpcConfig::new()
        .with_max_in_flight(IN_FLIGHT)
        .with_limits(Some(Arc::new(limits)));
    let mut rpc = RpcSession::new(config);
    let mut now = Instant::now();
    let open = feed::Event::Connected {
        conn: ConnId(0),
        attempt: 1,
        endpoint: 0,
    };
    rpc.absorb(&open, now);
    while rpc.poll_event().is_some() {}
    let request = Request::new().with_kind(Some(place));
    let mut responses: [Vec<u8>; IN_FLIGHT] = core::array::from_fn(|_| Vec::with_capacity(128));

    // Warm-up: every slot's text buffer grown to a request's size (ids spread over the
    // whole table as they grow).
    let table = (IN_FLIGHT + 1_024 + 8) * 2;
    run(
        &mut rpc,
        &mut now,
        table.next_power_of_two() / IN_FLIGHT * 2,
        request,
        &mut responses,
    );

    const ROUNDS: usize = 200_000 / IN_FLIGHT;
    let region = ALLOC.heap_region();
    let answered = run(&mut rpc, &mut now, ROUNDS, request, &mut responses);
    let stats = region.change();
    assert_eq!(answered, (ROUNDS * IN_FLIGHT) as u64);
    assert_eq!(
        (stats.allocations, stats.reallocations),
        (0, 0),
        "{answered} requests allocated: {stats:?}"
    );
    println!("rpc session: {answered} requests, {IN_FLIGHT} in flight, 0 allocations");
}
