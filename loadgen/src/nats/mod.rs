//! The NATS suite's processes and load: a node ([`node`], run as `tickwire-bench nats-node`),
//! nats-server and the feed publishing through it ([`feed`]), and the subscribers' thread
//! ([`subscribers`]).
//!
//! Owns the processes and the sockets; the schedule and the tables are the bench's
//! (`server_suite::nats`).

pub mod feed;
pub mod node;
pub mod subscribers;

pub use node::{NodeOptions, nats_node};
