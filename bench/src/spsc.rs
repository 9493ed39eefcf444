//! SPSC queue and channel workloads (filled in separately).

use crate::Ctx;
use crate::report::Table;

/// Progress steps per round.
pub const STEPS: u64 = 0;

/// Runs the SPSC workloads.
pub fn run(_ctx: &Ctx) -> Vec<Table> {
    Vec::new()
}
