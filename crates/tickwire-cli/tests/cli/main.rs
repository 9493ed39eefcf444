//! The `tickwire` binary as a user at a terminal runs it: `http`, `serve` and `connect` over
//! TLS, and `--runtime tokio`. One test binary (one link) for the three modules.

mod echo;
mod support;

mod http;
mod tls;
mod tokio_runtime;
