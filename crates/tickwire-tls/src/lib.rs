//! TLS for tickwire through rustls: [`ClientTlsConfig`] and [`ServerTlsConfig`] builders, and
//! [`TlsCodec`], a sans-IO TLS connection that the transports drive, and what a failed one
//! owes its peer ([`Owed`], [`TlsCodec::owed_to_peer`]).
//!
//! The crypto provider is ring by default (feature `ring`); the `aws-lc-rs` feature selects
//! aws-lc-rs instead. Client roots are Mozilla's set compiled in (webpki-roots) plus any PEM
//! roots added.
//!
//! # Receive throughput on AMD hosts
//!
//! rustls 0.23 copies each received record's plaintext (up to 16 KiB) into a buffer it
//! allocates for it. Where glibc copies blocks of 2 KiB and more with `rep movsb` (glibc
//! 2.36, for example), the AMD EPYC this project measures on runs that copy about 25 times
//! slower when the new buffer's offset within its 4 KiB page is 1 to 15 bytes past the
//! record's, and whether it is depends on where the allocator places the buffer: a stream of
//! 4 KiB messages then costs about 2.5 times the CPU per message, for the whole connection.
//! Starting the process with `GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=4294967295`
//! makes glibc copy with its vector loop, which runs at full speed at every offset
//! (measurements in the repository's `bench/results/issue-16.md`).
#![forbid(unsafe_code)]

mod codec;
mod config;
mod error;
mod owed;

pub use codec::{PLAINTEXT_ON_TLS_PORT, Plaintext, TlsCodec, TlsVersion};
pub use config::{
    ClientTlsBuilder, ClientTlsConfig, DangerousClientTls, ServerTlsBuilder, ServerTlsConfig,
    certificates_from_pem, private_key_from_pem, provider,
};
pub use error::{AlertDescription, TlsError};
pub use owed::Owed;
pub use rustls;
