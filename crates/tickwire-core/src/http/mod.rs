//! What both HTTP clients share: their error ([`HttpClientError`]) and socket options
//! ([`HttpSocketOptions`]), and the builders' setters.

mod error;
mod options;

pub use error::HttpClientError;
pub use options::HttpSocketOptions;
