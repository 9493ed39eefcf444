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

    /// Begins, answers, cancels and time only, no connection loss: long runs that reuse
    /// every slot past the 64-generation late window.
    #[test]
    fn long_runs_reuse_slots_past_the_late_window(
        ops in proptest::collection::vec((0u8..8, any::<u8>()), 0..1500)
    ) {
        let bytes: Vec<u8> = ops.iter().flat_map(|&(op, arg)| [op, arg]).collect();
        Model::run(&bytes);
    }
}

/// The operation encoding reaches every outcome: a fixed set of pseudo-random runs, summed,
/// shows completions, late answers, timeouts, cancels, failures and "busy" refusals (the
/// property tests above then cover them with checked results, not by luck).
#[test]
fn the_operation_encoding_reaches_every_outcome() {
    let mut x: u64 = 0x9e37_79b9;
    let (mut completed, mut late, mut timed_out, mut cancelled, mut failed, mut busy) =
        (0, 0, 0, 0, 0, 0);
    for _ in 0..64 {
        let ops: Vec<u8> = (0..800)
            .map(|_| {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                (x >> 56) as u8
            })
            .collect();
        let (client, server) = Model::run(&ops);
        completed += client.completed;
        late += client.late;
        timed_out += client.timed_out;
        cancelled += client.cancelled;
        failed += client.failed;
        busy += server.busy;
    }
    let counts = [completed, late, timed_out, cancelled, failed, busy];
    assert!(
        counts.iter().all(|&n| n > 0),
        "completed, late, timed out, cancelled, failed, busy: {counts:?}"
    );
}
