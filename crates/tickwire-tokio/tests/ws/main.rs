//! The tokio WebSocket transport against itself and the blocking one over loopback: one test
//! binary (one link) for every module below, which share `support`.

mod support;

mod cancel;
mod loopback;
mod split;
#[cfg(feature = "stream")]
mod stream;
mod timers;
