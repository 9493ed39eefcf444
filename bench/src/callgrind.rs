//! Instruction counts from `valgrind --tool=callgrind`: a figure that does not move with
//! machine noise or with the other core's load.
//!
//! Each (workload, library) pair runs this binary twice under callgrind through the hidden
//! `callgrind-target` subcommand: once with zero iterations and once with [`ITERATIONS`]. Setup
//! is identical in both, so the difference divided by the iterations is the cost of one
//! operation, reads and parse included, exactly as in the timed workloads.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use crate::Ctx;
use crate::report::{Figures, Row, Table};
use crate::{wire, ws_encode, ws_parse};

/// Operations counted per run (enough that one-off costs vanish in the division).
const ITERATIONS: u64 = 20_000;

/// The workloads counted: (id, title, libraries).
const WORKLOADS: [(&str, &str, &[&str]); 4] = [
    (
        "parse_text_128",
        "Instructions: parse 128 B text, 64 frames per read (client role)",
        &ws_parse::LIBRARIES,
    ),
    (
        "parse_text_128_one_per_read",
        "Instructions: parse 128 B text, one frame per read (client role)",
        &ws_parse::LIBRARIES,
    ),
    (
        "encode_text_128_server",
        "Instructions: encode 128 B text, server role",
        &ws_encode::LIBRARIES,
    ),
    (
        "apply_mask_128",
        "Instructions: apply_mask 128 B",
        &ws_encode::MASKERS,
    ),
];

/// Counts instructions per operation for every workload and library; tables say why when
/// valgrind is missing.
pub fn run(ctx: &Ctx) -> Vec<Table> {
    if Command::new("valgrind").arg("--version").output().is_err() {
        let mut table = Table::new(
            "callgrind",
            "Instructions (callgrind)",
            "tickwire",
            "valgrind is not installed (apt-get install valgrind): no instruction counts.",
        );
        table.rows.clear();
        return vec![table];
    }
    let exe = std::env::current_exe().expect("path of this benchmark binary");
    let mut tables = Vec::new();
    for (id, title, libraries) in WORKLOADS {
        if !ctx.selected(id) && !ctx.selected("callgrind") {
            continue;
        }
        let mut table = Table::new(
            &format!("callgrind_{id}"),
            title,
            "tickwire",
            &format!(
                "valgrind --tool=callgrind, (Ir at {ITERATIONS} operations - Ir at 0) / \
                 {ITERATIONS}; same bytes and code path as the timed workload."
            ),
        );
        for library in libraries {
            ctx.progress
                .set_message(format!("callgrind {id} / {library}"));
            match per_operation(&exe, id, library) {
                Ok(count) => table.rows.push(Row {
                    library: (*library).to_owned(),
                    figures: Figures::Instructions(count),
                }),
                Err(e) => eprintln!("callgrind {id} / {library}: {e}"),
            }
        }
        tables.push(table);
    }
    tables
}

fn per_operation(exe: &Path, workload: &str, library: &str) -> Result<f64, String> {
    let base = instructions(exe, workload, library, 0)?;
    let loaded = instructions(exe, workload, library, ITERATIONS)?;
    Ok(loaded.saturating_sub(base) as f64 / ITERATIONS as f64)
}

/// Total instructions (Ir) of one `callgrind-target` run.
fn instructions(exe: &Path, workload: &str, library: &str, iterations: u64) -> Result<u64, String> {
    let dir = std::env::temp_dir().join(format!("tickwire-callgrind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let out = dir.join(format!("{workload}-{library}-{iterations}.out"));
    let status = Command::new("valgrind")
        // glibc copies large blocks with `rep movsb`, which callgrind counts once per byte:
        // an 8 KiB read would count as 8 000 instructions. Raising the threshold makes glibc
        // use its vector loop, counted as the instructions it really executes. Every library
        // makes the same copies, so this changes no ratio's direction, only its noise.
        .env(
            "GLIBC_TUNABLES",
            "glibc.cpu.x86_rep_movsb_threshold=4294967295",
        )
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .args([
            "callgrind-target",
            workload,
            library,
            &iterations.to_string(),
        ])
        .output()
        .map_err(|e| format!("valgrind: {e}"))?;
    if !status.status.success() {
        return Err(format!(
            "target failed: {}",
            String::from_utf8_lossy(&status.stderr)
                .lines()
                .last()
                .unwrap_or("")
        ));
    }
    let text = std::fs::read_to_string(&out).map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&out);
    text.lines()
        .find_map(|l| {
            l.strip_prefix("summary:")
                .or_else(|| l.strip_prefix("totals:"))
        })
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| "no summary line in the callgrind output".to_owned())
}

/// The measured process: set up `workload` for `library` exactly as the timed run does, then
/// do `iterations` operations.
pub fn run_target(workload: &str, library: &str, iterations: u64) -> Result<(), String> {
    match workload {
        "parse_text_128" | "parse_text_128_one_per_read" => {
            let frame = wire::frame(true, 0x1, &wire::json_payload(128), None);
            let read_size = if workload.ends_with("one_per_read") {
                frame.len()
            } else {
                usize::MAX
            };
            let batch: &'static [u8] = Box::leak(frame.repeat(64).into_boxed_slice());
            let mut parser = ws_parse::new_parser(library, false);
            for i in 0..iterations {
                if i % 64 == 0 {
                    parser.load(batch, read_size);
                }
                black_box(parser.next());
            }
        }
        "encode_text_128_server" => {
            let mut encoder = ws_encode::Encoder::new(library, false);
            for _ in 0..iterations {
                black_box(encoder.encode());
            }
        }
        "apply_mask_128" => {
            let mut data = wire::json_payload(128);
            let apply: fn(&mut [u8], [u8; 4]) = match library {
                "tickwire" => |buf, key| tickwire_codec::ws::apply_mask(buf, key, 0),
                "nexus-web" => nexus_web::ws::apply_mask,
                "fastwebsockets" => fastwebsockets::unmask,
                other => return Err(format!("unknown masker {other}")),
            };
            for _ in 0..iterations {
                apply(black_box(&mut data), wire::MASK_KEY);
            }
        }
        other => return Err(format!("unknown workload {other}")),
    }
    Ok(())
}
