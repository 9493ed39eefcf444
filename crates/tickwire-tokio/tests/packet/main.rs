//! The tokio packet transport end to end over loopback: round trips in plain TCP, TLS and
//! mutual TLS, compression, limits, pipelined answers out of order, timeouts, cancellation,
//! "busy" past the server's cap, keepalive, the pool across a server restart, and interop
//! with the blocking transport both ways. Every wait is bounded by [`support::PATIENCE`].

mod basic;
mod interop;
mod pipelined;
mod pool;
mod support;
#[cfg(all(feature = "serde-json", feature = "bincode"))]
mod typed;
