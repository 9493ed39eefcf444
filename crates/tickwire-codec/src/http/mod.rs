//! HTTP/1.1 message codecs (RFC 9110, RFC 9112), sans-IO, both directions.
//!
//! - [`ResponseReader`] and [`RequestReader`] parse heads with `httparse` and frame bodies per
//!   RFC 9112 §6.3 (Content-Length, chunked with trailers, read-until-close for responses, no
//!   body for 1xx / 204 / 304 / HEAD), borrowing headers and body from the caller's
//!   [`ReadBuf`](crate::buf::ReadBuf). Chunked bodies are decoded in place.
//! - The writers put request and response heads and chunked bodies into a
//!   [`WriteBuf`](crate::buf::WriteBuf), rejecting CR, LF and NUL in anything they write.
//!
//! - The client's exchange rules, for every transport: [`ClientSession`] (when a connection
//!   may carry a request or be resent on, and what each write and read outcome of an exchange
//!   means) and [`IdleProbe`] (what a liveness check of an idle connection found).
//!
//! Time and I/O belong to the transport; every limit is a field of [`Limits`].

pub(crate) mod ascii;
mod chunked;
mod error;
mod exchange;
#[cfg(test)]
mod exchange_tests;
mod headers;
mod limits;
mod probe;
mod reader;
mod retry;
mod session;
mod types;
mod write;

#[cfg(test)]
mod tests;

pub use chunked::{ChunkedDecoder, Decoded};
pub use error::HttpError;
pub use exchange::{AwaitResponse, ReadOutcome, WriteVerdict};
pub use headers::{HeaderIter, Headers};
pub use limits::Limits;
pub use probe::{IdleProbe, ProbeStep};
pub use reader::{Parsed, Request, RequestReader, Response, ResponseReader};
pub use retry::{RetryBudget, Sending};
pub use session::{ClientSession, Failure, Probe, Reuse};
pub use types::{Method, StatusCode, Version};
pub use write::{
    ChunkedEncoder, HeadWriter, WriteError, validate_header_name, validate_header_value,
};
