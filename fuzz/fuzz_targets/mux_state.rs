//! A mux::Client and a mux::Server over one simulated connection, driven by arbitrary
//! operation sequences (two bytes an operation): requests begun with and without timeouts,
//! answered in any order, cancelled, timed out, forged and replayed responses, duplicate and
//! reserved request ids, oversized payloads, lost connections. Oracle: the model of
//! crates/tickwire-codec/tests/support/mux_model.rs, the same one the property test uses:
//! every begun request finishes exactly once with its own token, no response reaches another
//! request, every error is the documented one, the caps hold. Never a panic.
#![no_main]

#[path = "../../crates/tickwire-codec/tests/support/mux_model.rs"]
mod mux_model;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|ops: &[u8]| {
    mux_model::Model::run(ops);
});
