//! Sans-IO protocol codecs for tickwire.
//!
//! This crate owns the byte-level protocols: [`buf`] (the caller-owned buffers), [`ws`] (RFC 6455
//! frames, messages and connection state), [`handshake`] (the HTTP/1.1 upgrade, both sides) and
//! [`deflate`] (permessage-deflate, RFC 7692, and bounded inflation of compressed payloads).
//! [`http`] holds the HTTP/1.1 message readers and writers (RFC 9110, RFC 9112); [`rest`]
//! builds whole REST requests on top of the writers, without allocating.
//! It performs no I/O, reads no clock and spawns nothing: bytes come in, events come out, and
//! time is passed in by the transport.
#![deny(unsafe_code)] // allowed in one module: ws::mask::simd (docs/UNSAFE.md)

pub mod buf;
pub mod deflate;
pub mod handshake;
pub mod http;
pub mod rest;
pub mod ws;
