//! rule 6 of docs/ARCHITECTURE.md for the tokio transports: after warm-up, a WebSocket round trip (`ws`) and
//! an order POST through the async REST client (`http`) and a packet request, alone or 8
//! pipelined (`packet`), allocate nothing on the thread that
//! runs them. Its own `main` (no libtest threads around) and one counting allocator,
//! tickwire-test-support's, which counts only the thread that asks.

use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::per_thread();

mod http;
mod packet;
mod ws;

fn main() {
    ws::run();
    http::run();
    packet::run();
}
