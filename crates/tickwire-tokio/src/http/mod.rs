//! The async HTTP/1.1 client: keep-alive connections to one origin (`http://` or `https://`),
//! pooled for concurrent requests, on the same sans-IO codecs as the blocking
//! `tickwire_blocking::HttpClient`.
//!
//! This module owns the I/O: connecting (through the crate's `net`, TLS included), writing a
//! request, reading its response under the per-read timeouts and the request's total deadline,
//! and the pool of warm connections. Every protocol decision is the codec's: requests are built
//! by [`RequestWriter`](tickwire_codec::rest::RequestWriter) straight into the handle's write
//! buffer, responses parsed by [`ResponseReader`](tickwire_codec::http::ResponseReader) in the
//! connection's read buffer, gzip bodies inflated by
//! [`GzipBody`](tickwire_codec::rest::GzipBody), and when a connection may be reused, must be
//! checked, or a failed request may be sent again is
//! [`ClientSession`](tickwire_codec::http::ClientSession)'s answer. Errors are the blocking
//! client's [`HttpClientError`](tickwire_core::http::HttpClientError): one set of variants for both.
//!
//! What a user needs (the pool, and what dropping each future leaves) is documented on
//! [`HttpClient`], which is public; this module is not.
//!
//! Modules depend one way (`a <- b`: b uses a): `alarm, options <- conn <- pool <- response
//! <- exchange <- request <- client`. `options` holds what the builder fixed, `conn` one
//! connection's I/O, `pool` which connection a request gets, `exchange` one request on the
//! pool (the resend included, as the named future `send` returns), `client` the handle and the builder's marker.

mod alarm;
mod client;
mod conn;
mod exchange;
mod options;
mod pool;
mod request;
mod response;

pub use client::{HttpClient, HttpClientBuilder};
pub use exchange::{HttpPool, ResponseFuture};
pub use request::ClientRequest;
pub use response::ClientResponse;
