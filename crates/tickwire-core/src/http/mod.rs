//! What both HTTP clients share: their error ([`HttpClientError`]), their socket options
//! ([`HttpSocketOptions`]), and their builder ([`HttpClientBuilder`], generic over the
//! transport, with the options it collects, [`HttpClientOptions`]), and the request surface
//! ([`Requests`], [`ClientRequest`]) written once over a transport's [`Exchange`].

mod builder;
mod error;
mod options;
mod request;

pub use builder::{BuildHttpClient, HttpClientBuilder, HttpClientOptions, PooledHttpClient};
pub use error::HttpClientError;
pub use options::HttpSocketOptions;
pub use request::{ClientRequest, Exchange, Requests};
