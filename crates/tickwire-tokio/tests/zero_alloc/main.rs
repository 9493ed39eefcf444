//! rule 6 of docs/ARCHITECTURE.md for the tokio transports: after warm-up, a WebSocket round trip (`ws`) and
//! an order POST through the async REST client (`http`) and a packet request, alone or 8
//! pipelined (`packet`), allocate nothing on the thread that
//! runs them. Its own `main` (no libtest threads around) and one counting allocator, the
//! blocking client's `tests/zero_alloc_support`, which counts only the thread that asks.

#[path = "../../../tickwire-blocking/tests/zero_alloc_support/mod.rs"]
mod zero_alloc_support;

mod http;
mod packet;
mod ws;

fn main() {
    ws::run();
    http::run();
    packet::run();
}
