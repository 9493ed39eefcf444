//! What tickwire's tests and its bench share, so that no crate reaches into another's `tests/`
//! directory: [`alloc`], the counting global allocator behind every zero-allocation and
//! memory-bound test and the bench's allocations-per-operation figures, [`connect`], a black
//! hole beside a live listener, a recording resolver and a network namespace of its own for the
//! connect tests, [`proxies`], real HTTP CONNECT and
//! SOCKS5 proxies to tunnel through, and [`rest`], the
//! loopback server and order the zero-allocation REST tests of both transports send.
//!
//! Not published. The published crates name it as a path-only dev-dependency, which
//! `cargo package` drops.

#![deny(unsafe_code)]

pub mod alloc;
pub mod connect;
pub mod proxies;
pub mod rest;
