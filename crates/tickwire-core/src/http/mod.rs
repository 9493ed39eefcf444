//! What both HTTP clients share: their error ([`HttpClientError`]), their socket options
//! ([`HttpSocketOptions`]), and their builder ([`HttpClientBuilder`], generic over the
//! transport, with the options it collects, [`HttpClientOptions`]).

mod builder;
mod error;
mod options;

pub use builder::{BuildHttpClient, HttpClientBuilder, HttpClientOptions, PooledHttpClient};
pub use error::HttpClientError;
pub use options::HttpSocketOptions;
