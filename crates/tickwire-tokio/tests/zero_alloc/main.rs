//! rule 6 of docs/ARCHITECTURE.md for the tokio transports: after warm-up, a WebSocket round trip (`ws`) and
//! an order POST through the async REST client (`http`) and a packet request, alone or 8
//! pipelined (`packet`), and data messages on a redundant feed (`feed_zero_alloc`, user and
//! kernel timestamps) allocate nothing on the thread that
//! runs them. Its own `main` (no libtest threads around) and one counting allocator,
//! tickwire-test-support's, which counts only the thread that asks.

use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::per_thread();

#[path = "../../../tickwire-blocking/tests/feed_support/mod.rs"]
#[expect(dead_code, reason = "the suite's cases are run by tests/feed.rs")]
mod feed_support;
#[path = "../feed_tokio/mod.rs"]
mod feed_tokio;
#[path = "../../../tickwire-blocking/tests/feed_support/zero_alloc.rs"]
mod feed_zero_alloc;
mod http;
mod packet;
mod ws;

fn main() {
    ws::run();
    http::run();
    packet::run();
    for timestamps in [
        tickwire_tokio::feed::Timestamps::Kernel,
        tickwire_tokio::feed::Timestamps::User,
    ] {
        feed_zero_alloc::steady_state_allocates_nothing::<feed_tokio::OnTokio>(&ALLOC, timestamps);
    }
}
