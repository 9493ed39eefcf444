//! tickwire-tokio: async (tokio) transports on the tickwire sans-IO codecs.
//!
//! # Layers
//!
//! Internal modules depend one way (`a <- b`: `b` uses `a`): `tls <- stream <- net` (the
//! transport base: TCP connect with a timeout, TLS over [`tickwire_tls::TlsCodec`] driven by
//! this crate, and `MaybeTls`, plain or TLS as one `AsyncRead + AsyncWrite`), then the
//! protocols above it: `net <- http` ([`HttpClient`], the async HTTP/1.1 client with a pool of
//! keep-alive connections per origin). Protocol logic is [`tickwire_codec`]'s.
#![forbid(unsafe_code)]

mod http;

#[expect(
    dead_code,
    reason = "the transport base: its users land in the next commits"
)]
mod net;
#[expect(
    dead_code,
    reason = "the transport base: its users land in the next commits"
)]
mod stream;
#[cfg(feature = "tls")]
mod tls;

pub use http::{ClientRequest, ClientResponse, HttpClient, HttpClientBuilder};
pub use tickwire::HttpClientError;
