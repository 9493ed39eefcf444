//! Proves that the request multiplexer allocates nothing per request once built (rule 6
//! of docs/ARCHITECTURE.md): a client and a server carry 100 000 requests with out-of-order answers, cancels, late
//! answers, timeouts and lost connections under a counting global allocator, for this test
//! binary only.

use std::time::{Duration, Instant};

use tickwire_codec::mux::{
    Client, ClientConfig, Disconnect, Outcome, RequestId, Response, Server, ServerConfig,
};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

const CAP: usize = 64;

/// One burst: fill the client, answer in reverse order with every fifth cancelled first (its
/// answer is late), time out a few, and every 16th round lose the connection. Returns the
/// requests finished.
fn round(client: &mut Client<u64>, server: &mut Server, now: &mut Instant, n: u64) -> u64 {
    let mut ids = [RequestId::RESERVED; CAP];
    for (i, slot) in ids.iter_mut().enumerate() {
        let timeout = (i % 7 == 0).then_some(Duration::from_millis(5));
        *slot = client
            .begin(*now, 512, timeout, n + i as u64)
            .expect("room");
        server.on_request(*slot, 512).expect("room");
    }
    let mut finished = 0;
    if (n / CAP as u64) % 16 == 15 {
        for _ in client.fail_all(Disconnect::ConnectionLost) {
            finished += 1;
        }
        server.reset();
        return finished;
    }
    *now += Duration::from_millis(10);
    for done in client.handle_timeout(*now) {
        assert_eq!(done.outcome, Outcome::TimedOut);
        finished += 1;
    }
    for (i, &id) in ids.iter().enumerate().rev() {
        if i % 5 == 1 && client.cancel(id).is_ok() {
            finished += 1;
        }
        server.respond(id).expect("held");
        match client.on_response(id, 128, *now).expect("known id") {
            Response::Completed(done) => assert_eq!(done.token, n + i as u64),
            Response::Late(_) => continue,
            _ => unreachable!(),
        }
        finished += 1;
    }
    finished
}

fn main() {
    let mut client = Client::new(ClientConfig::new().with_max_in_flight(CAP));
    let mut server = Server::new(ServerConfig::new().with_max_in_flight(CAP));
    let mut now = Instant::now();
    for n in 0..100 {
        round(&mut client, &mut server, &mut now, n * CAP as u64);
    }
    let region = ALLOC.heap_region();
    let mut finished = 0;
    let rounds = 100_000 / CAP as u64;
    for n in 100..100 + rounds {
        finished += round(&mut client, &mut server, &mut now, n * CAP as u64);
    }
    let change = region.change();
    assert_eq!(finished, rounds * CAP as u64, "every request finished once");
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "steady-state multiplexing allocated"
    );
    let stats = client.stats();
    assert!(stats.late > 0 && stats.timed_out > 0 && stats.cancelled > 0 && stats.failed > 0);
    println!(
        "mux_zero_alloc: {finished} requests (late {}, timed out {}, cancelled {}, failed {}), 0 allocations",
        stats.late, stats.timed_out, stats.cancelled, stats.failed
    );
}
