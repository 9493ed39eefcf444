//! The pub/sub suite's load: one generator thread holding N connections to one topic,
//! connection 0 publishing stamped messages with a window outstanding ([`generator`],
//! [`window`]), and the frames it reads and writes ([`wire`]).
//!
//! Owns the sockets and the stamps; the schedule and the tables are the bench's
//! (`server_suite::pubsub`).

pub mod generator;
pub mod window;
pub mod wire;
