//! Model check of the request multiplexer (tests/support/mux_model.rs): arbitrary sequences of
//! begin, out-of-order answers, cancels, timeouts, forged and replayed responses, duplicate
//! requests and lost connections. Every begun request finishes exactly once with its own
//! token; no response reaches another request; every error is the promised one; caps hold.

#[path = "support/mux_model.rs"]
mod mux_model;

use mux_model::Model;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_request_finishes_once_with_its_own_response(
        ops in proptest::collection::vec(any::<u8>(), 0..1200)
    ) {
        Model::run(&ops);
    }

    /// Mostly begins and answers, few connection losses: long runs that wrap every slot's
    /// generation past the 64-generation late window.
    #[test]
    fn long_runs_reuse_slots_past_the_late_window(
        ops in proptest::collection::vec((0u8..6, any::<u8>()), 0..1500)
    ) {
        let bytes: Vec<u8> = ops.iter().flat_map(|&(op, arg)| [op, arg]).collect();
        Model::run(&bytes);
    }
}
