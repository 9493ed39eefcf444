//! `tickwire-loadgen` (not published): the load generators and their orchestration that
//! `tickwire-bench`'s process suites (`server`, `pubsub`, `nats`) drive.
//!
//! - [`generator`]: the echo load generator, one thread of non-blocking sockets on mio
//!   ([`dial`] opens them, [`connection`] holds one, its frame parser included), its writes
//!   batched through io_uring where the kernel has it;
//! - [`pubsub`]: the pub/sub generator (a publisher and N subscribers, the stamp its
//!   messages carry and the frame reader that decodes them);
//! - [`nats`]: a NATS node (`tickwire-bench nats-node`), nats-server and the feed publishing
//!   through it, and the subscribers' thread;
//! - [`servers`]: the servers under test as processes (start, port, /proc readings, stop)
//!   and [`echo`], the Rust peers' echo servers the bench runs as hidden subcommands;
//! - [`timing`] and [`payload`]: the readings and bytes these share with the benchmarks.
//!
//! It owns how load is offered and observed, not what a run measures, in which order, nor
//! the tables and the report: those stay in `bench/` (`server_suite`).

pub mod connection;
pub mod dial;
pub mod echo;
pub mod generator;
pub mod nats;
pub mod payload;
pub mod pubsub;
pub mod servers;
pub mod timing;
mod uring;
