//! Instruction counts from `valgrind --tool=callgrind`: a figure that does not move with
//! machine noise. Placeholder until the callgrind runner lands.

use crate::Ctx;
use crate::report::Table;

/// Runs the callgrind comparisons.
pub fn run(_ctx: &Ctx) -> Vec<Table> {
    Vec::new()
}

/// Runs one workload loop `iterations` times (the process callgrind measures).
pub fn run_target(_workload: &str, _library: &str, _iterations: u64) -> Result<(), String> {
    Err("not yet".into())
}
