//! The host's large-copy routine, checked before anything is measured.
//!
//! glibc copies blocks from about 2 KiB up with `rep movsb` on CPUs that advertise fast string
//! moves. On the AMD EPYC VM this project measures on (glibc 2.36), that instruction runs a
//! 16 KiB copy about 25 times slower when the destination's offset within its 4 KiB page is
//! 1 to 15 bytes past the source's (3.5 GB/s against 80-100 GB/s; glibc's vector loop runs
//! 80-100 GB/s at every offset). Whether a library's copy lands there is decided by where the
//! allocator happened to put two buffers. rustls 0.23 copies each received record's plaintext
//! out of its record buffer into a fresh 16 KiB allocation; in the rounds where that
//! allocation sat right after the record buffer (16 bytes of allocator header past a 4 KiB
//! multiple, source 5 bytes into its buffer: 11 bytes apart), that one copy took a wss stream
//! of 4 KiB messages from about 1.2 to 3.4 µs per message, for whichever client it hit. The
//! TLS rows then measure a draw, not the clients.
//!
//! So the bench times that case first and, when it is more than [`PENALTY_LIMIT`] times the
//! aligned copy, says so on stderr and in the report, with the setting that fixes it: glibc's
//! vector loop at every size, `GLIBC_TUNABLES=glibc.cpu.x86_rep_movsb_threshold=4294967295`
//! in the bench's environment, which every library in the process and every peer process the
//! bench starts inherits (docs/BENCHMARKS.md, "Machine and method"). The bench does not set
//! it for itself: glibc reads tunables only at startup, so that would mean running itself
//! again, and a tunable the user sets is one they can see. `--host-memcpy` acknowledges the
//! host's routine and drops the advice.

use std::time::{Duration, Instant};

/// A penalty above this (the misplaced copy's time over the aligned one's) is the defect.
pub const PENALTY_LIMIT: f64 = 4.0;

/// glibc's vector loop at every size: `rep movsb` only past 4 GiB.
const TUNABLE: &str = "glibc.cpu.x86_rep_movsb_threshold=4294967295";

const PAGE: usize = 4096;
const LEN: usize = 16 * 1024;

/// What the check found, for the report.
pub enum HostCopy {
    /// The penalty is below the limit: the host's routine runs.
    Fine { penalty: f64 },
    /// The penalty was over the limit and `--host-memcpy` kept the host's routine.
    Kept { penalty: f64 },
    /// The penalty is over the limit: the user is told which tunable to set.
    Slow { penalty: f64 },
}

/// Measures the penalty; when it is over the limit and `keep_host` is false, prints on
/// stderr the environment variable to set and run again with.
pub fn check(keep_host: bool) -> HostCopy {
    let penalty = penalty();
    if penalty <= PENALTY_LIMIT {
        return HostCopy::Fine { penalty };
    }
    if keep_host {
        return HostCopy::Kept { penalty };
    }
    eprintln!(
        "host memcpy: `rep movsb` is {penalty:.1}x slower on misplaced 16 KiB copies here; \
         for comparable figures run again with GLIBC_TUNABLES={TUNABLE} \
         (docs/BENCHMARKS.md, \"Machine and method\"), or pass --host-memcpy to keep it"
    );
    HostCopy::Slow { penalty }
}

impl HostCopy {
    /// One line for the report's preamble.
    pub fn describe(&self) -> String {
        const CASE: &str = "a 16 KiB copy whose destination sits 11 bytes past its source \
                            modulo 4 KiB, against the same copy aligned";
        match self {
            Self::Fine { penalty } => {
                format!("host memcpy: {CASE}: {penalty:.1}x; the host's routine runs")
            }
            Self::Kept { penalty } => format!(
                "host memcpy: {CASE}: {penalty:.1}x, the host's `rep movsb` defect; kept by \
                 --host-memcpy, so where each library's allocations fall can slow its large \
                 copies about 25-fold (see bench/src/host_copy.rs)"
            ),
            Self::Slow { penalty } => format!(
                "host memcpy: {CASE}: {penalty:.1}x, the host's `rep movsb` defect; set \
                 GLIBC_TUNABLES={TUNABLE} (glibc's vector loop at every size, for every \
                 library and peer process) and run again, or pass --host-memcpy to keep the \
                 host's routine"
            ),
        }
    }
}

/// The misplaced copy's best time over the aligned copy's.
fn penalty() -> f64 {
    let mut src = vec![1u8; LEN + 2 * PAGE];
    let mut dst = vec![0u8; LEN + 2 * PAGE];
    let src_page = page_start(&src);
    let dst_page = page_start(&dst);
    let aligned = best_time(&mut src, &mut dst, (src_page, dst_page));
    // Source 5 bytes into a page (a TLS record's payload after its header), destination 16
    // (an allocation right after a 4 KiB multiple): 11 bytes apart.
    let misplaced = best_time(&mut src, &mut dst, (src_page + 5, dst_page + 16));
    misplaced.as_secs_f64() / aligned.as_secs_f64().max(1e-9)
}

/// The index of the first 4 KiB-aligned byte of `buf`.
fn page_start(buf: &[u8]) -> usize {
    buf.as_ptr().addr().wrapping_neg() & (PAGE - 1)
}

/// The best of 30 timings of 32 copies of `LEN` bytes from `src[at.0..]` to `dst[at.1..]`.
fn best_time(src: &mut [u8], dst: &mut [u8], at: (usize, usize)) -> Duration {
    let mut best = Duration::MAX;
    for _ in 0..30 {
        let start = Instant::now();
        for _ in 0..32 {
            let from = std::hint::black_box(&src[at.0..at.0 + LEN]);
            let to = std::hint::black_box(&mut dst[at.1..at.1 + LEN]);
            to.copy_from_slice(from);
            std::hint::black_box(&mut *to);
        }
        best = best.min(start.elapsed());
        src[at.0] = src[at.0].wrapping_add(1);
    }
    best
}
