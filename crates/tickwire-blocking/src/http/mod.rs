//! The blocking HTTP/1.1 client: one keep-alive connection to one origin, `http://` or
//! `https://`.
//!
//! Requests are built straight into the connection's write buffer by the codec's
//! [`RequestWriter`](tickwire_codec::rest::RequestWriter) (no allocation), and responses are
//! parsed by [`ResponseReader`](tickwire_codec::http::ResponseReader) and borrowed from the
//! read buffer: a Content-Length or chunked body is one slice of it.
//!
//! ```no_run
//! use tickwire_blocking::HttpClient;
//!
//! let mut client = HttpClient::builder("https://api.example.com/api/v3")
//!     .default_header("X-API-Key", "secret")
//!     .build()?;
//! let response = client.get("/ticker").query("symbol", "BTC-USD").send()?;
//! assert!(response.status().is_success());
//! println!("{}", String::from_utf8_lossy(response.body()));
//! # Ok::<(), tickwire_blocking::HttpClientError>(())
//! ```

mod client;
mod gunzip;
mod request;
mod response;
mod session;

pub use client::{HttpClient, HttpClientBuilder};
pub use request::ClientRequest;
pub use response::ClientResponse;
pub use session::HttpConnection;
pub use tickwire_core::http::{HttpClientError, HttpSocketOptions};
