//! The options fixed when a client is built, as every connection and the pool read them.

use std::time::Duration;

use tickwire_codec::http::Limits;
use tickwire_core::http::{HttpClientOptions, HttpSocketOptions};

/// Options fixed at build time, shared by every handle and connection: the blocking client's
/// socket options, and what the pool and each connection add.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    pub(crate) socket: HttpSocketOptions,
    pub(crate) limits: Limits,
    #[cfg(feature = "deflate")]
    pub(crate) gzip: bool,
    pub(crate) read_buffer: usize,
    pub(crate) probe_after: Duration,
    pub(crate) max_connections: usize,
    pub(crate) idle_timeout: Duration,
}

impl From<HttpClientOptions> for Options {
    fn from(options: HttpClientOptions) -> Self {
        Self {
            #[cfg(feature = "deflate")]
            gzip: options.gzip(),
            socket: options.socket,
            limits: options.limits,
            read_buffer: options.read_buffer,
            probe_after: options.probe_after,
            max_connections: options.max_connections.max(1),
            idle_timeout: options.idle_timeout,
        }
    }
}
