//! What both HTTP clients share: the client itself ([`HttpClient`], [`ClientRequest`]),
//! written once over a transport's [`Exchange`]; its error ([`HttpClientError`]); its socket
//! options ([`HttpSocketOptions`]); and its builder ([`HttpClientBuilder`], generic over the
//! transport, with the options it collects, [`HttpClientOptions`]).

mod builder;
mod client;
mod error;
mod options;

pub use builder::{BuildHttpClient, HttpClientBuilder, HttpClientOptions, PooledHttpClient};
pub use client::{ClientRequest, Exchange, HttpClient};
pub use error::HttpClientError;
pub use options::HttpSocketOptions;
