//! TLS for tickwire through rustls: [`ClientTlsConfig`] and [`ServerTlsConfig`] builders, and
//! [`TlsCodec`], a sans-IO TLS connection that the transports drive.
//!
//! The crypto provider is ring by default (feature `ring`); the `aws-lc-rs` feature selects
//! aws-lc-rs instead. Client roots are Mozilla's set compiled in (webpki-roots) plus any PEM
//! roots added.
#![forbid(unsafe_code)]

mod codec;
mod config;
mod error;

pub use codec::{PLAINTEXT_ON_TLS_PORT, Plaintext, TlsCodec, TlsVersion};
pub use config::{
    ClientTlsBuilder, ClientTlsConfig, DangerousClientTls, ServerTlsBuilder, ServerTlsConfig,
    certificates_from_pem, private_key_from_pem, provider,
};
pub use error::{AlertDescription, TlsError};
pub use rustls;
