//! A feed::FeedSession driven by arbitrary event sequences (two bytes an operation):
//! connects that open or fail with handshake statuses, resets and closes, messages with
//! arbitrary keys and numbers on up to three redundant connections, acknowledgements,
//! heartbeat replies, server pings, time passing, subscriptions changed, rotations, sends
//! against the quota, the end. Oracle: the model of
//! crates/tickwire-codec/tests/support/feed_model.rs, the one the property test uses: per
//! key numbers delivered at most once and in increasing order, never inside a gap, gaps
//! disjoint; back-off delays within their bounds; the connect budget and the send quota never
//! exceeded; the hold within its bound; nothing after the end. Never a panic.
#![no_main]

#[path = "../../crates/tickwire-codec/tests/support/feed_model.rs"]
#[expect(dead_code, reason = "`merge` is the property test's; the fuzz target runs `run_ops` only")]
mod feed_model;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|ops: &[u8]| {
    feed_model::run_ops(ops);
});
