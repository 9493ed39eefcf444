//! The async HTTP client against scripted loopback servers: one test binary (one link) for
//! every module below. The scripted servers are the blocking client's `tests/http_support`,
//! included here; `http_async` adds both runtimes and a many-connection server.

mod http_async;
#[allow(
    dead_code,
    reason = "the blocking client's helpers are not all used here"
)]
#[path = "../../../tickwire-blocking/tests/http_support/mod.rs"]
mod http_support;
#[cfg(feature = "tls")]
#[allow(dead_code, reason = "the HTTP tests use the certificates only")]
#[path = "../../../tickwire-blocking/tests/tls_support/mod.rs"]
mod tls_support;

mod basic;
mod cancel;
mod failures;
#[cfg(feature = "tls")]
mod tls;
