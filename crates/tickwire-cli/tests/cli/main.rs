//! The `tickwire` binary as a user at a terminal runs it: `http`, `serve` and `connect` over
//! TLS, `--runtime tokio`, and `demo`. One test binary (one link) for all the modules.

mod connect_path;
mod demo;
mod echo;
mod exsim;
mod exsim_styles;
mod exsim_support;
mod feed;
mod feed_faults;
mod feed_faults_rig;
mod feed_faults_support;
mod feed_support;
mod liveness;
mod support;
mod toxiproxy;
// The certificates (`Ca`): the library's TLS test helpers, included.
#[allow(dead_code, reason = "the CLI tests use the certificates only")]
#[path = "../../../tickwire-blocking/tests/tls_support/mod.rs"]
mod tls_support;

mod fleet;
// nats-server for the fleet test: the NATS bridge's own test helpers, included.
#[path = "../../../tickwire-nats/tests/support/mod.rs"]
mod nats_support;

mod http;
mod packet;
mod rpc;
mod tls;
mod tokio_runtime;
