//! Instruction counts from `valgrind --tool=callgrind`: a figure that does not move with
//! machine noise or with the other core's load.
//!
//! Each (workload, library) pair runs this binary twice under callgrind through the hidden
//! `callgrind-target` subcommand: once with zero iterations and once with [`ITERATIONS`] (or
//! [`DEFLATE_ITERATIONS`]). Setup is identical in both, so the difference divided by the
//! iterations is the cost of one operation, reads and parse included, exactly as in the timed
//! workloads.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use crate::Ctx;
use crate::harness::Plan;
use crate::report::{Figures, Row, Table};
use crate::ws_deflate::{self, Compressor, Decompressor, Variant};
use crate::{wire, ws_encode, ws_parse, ws_tls};

/// Operations counted per run (enough that one-off costs vanish in the division).
const ITERATIONS: u64 = 20_000;

/// Operations per run for the deflate workloads: each costs 10 to 100 times a parse, and
/// their one-off costs (state allocation, the priming pass) are done before the loop, in
/// both runs alike, so fewer operations divide just as exactly.
const DEFLATE_ITERATIONS: u64 = 1_000;

/// Deflate variants a quick run counts: the context-takeover rows, tickwire and its floor
/// (the no_context_takeover rows are counted in full runs).
const DEFLATE_QUICK: usize = 2;

/// glibc copies and fills large blocks with `rep movsb` / `rep stosb`, which callgrind counts
/// once per byte: an 8 KiB read would count as 8 000 instructions, and a deflate reset's 128 KiB
/// hash-table clear as 131 000. Raising both thresholds makes glibc use its vector loops,
/// counted as the instructions they really execute. Every workload runs with it: before
/// 2026-11-23 only copies were set, and the per-read buffer zeroing of tungstenite and
/// fastwebsockets was counted per byte (one frame per read: 66 837 and 4 446 instructions,
/// 4 478 and 810 with the vector loop).
const TUNABLES: &str = "glibc.cpu.x86_rep_movsb_threshold=4294967295:\
                        glibc.cpu.x86_rep_stosb_threshold=4294967295";

/// One counted workload.
struct Counted {
    id: &'static str,
    title: &'static str,
    libraries: &'static [&'static str],
    /// How many of `libraries`, from the first, a quick run counts: each one costs two
    /// valgrind runs of about a second, and the CI smoke run has a budget.
    quick: usize,
    /// The row every ratio divides.
    baseline: &'static str,
    iterations: u64,
}

/// The workloads counted.
const WORKLOADS: [Counted; 12] = [
    Counted {
        id: "parse_text_128",
        title: "Instructions: parse 128 B text, 64 frames per read (client role)",
        libraries: &ws_parse::LIBRARIES,
        quick: usize::MAX,
        baseline: "tickwire",
        iterations: ITERATIONS,
    },
    Counted {
        id: "parse_text_128_one_per_read",
        title: "Instructions: parse 128 B text, one frame per read (client role)",
        libraries: &ws_parse::LIBRARIES,
        quick: usize::MAX,
        baseline: "tickwire",
        iterations: ITERATIONS,
    },
    Counted {
        id: "encode_text_128_server",
        title: "Instructions: encode 128 B text, server role",
        libraries: &ws_encode::LIBRARIES,
        quick: usize::MAX,
        baseline: "tickwire",
        iterations: ITERATIONS,
    },
    Counted {
        id: "encode_text_128_client",
        title: "Instructions: encode 128 B text, client role (masked, fresh key)",
        libraries: &ws_encode::LIBRARIES,
        quick: usize::MAX,
        baseline: "tickwire",
        iterations: ITERATIONS,
    },
    Counted {
        id: "apply_mask_128",
        title: "Instructions: apply_mask 128 B",
        libraries: &ws_encode::MASKERS,
        quick: usize::MAX,
        baseline: "tickwire",
        iterations: ITERATIONS,
    },
    Counted {
        id: "apply_mask_512",
        title: "Instructions: apply_mask 512 B",
        libraries: &ws_encode::MASKERS,
        quick: usize::MAX,
        baseline: "tickwire",
        iterations: ITERATIONS,
    },
    Counted {
        id: "apply_mask_4096",
        title: "Instructions: apply_mask 4096 B",
        libraries: &ws_encode::MASKERS,
        quick: usize::MAX,
        baseline: "tickwire",
        iterations: ITERATIONS,
    },
    Counted {
        id: "deflate_compress_128",
        title: "Instructions: permessage-deflate compress 128 B JSON",
        libraries: &Variant::NAMES,
        quick: DEFLATE_QUICK,
        baseline: Variant::NAMES[1],
        iterations: DEFLATE_ITERATIONS,
    },
    Counted {
        id: "deflate_decompress_128",
        title: "Instructions: permessage-deflate decompress 128 B JSON",
        libraries: &Variant::NAMES,
        quick: DEFLATE_QUICK,
        baseline: Variant::NAMES[1],
        iterations: DEFLATE_ITERATIONS,
    },
    Counted {
        id: "deflate_compress_4k",
        title: "Instructions: permessage-deflate compress 4096 B JSON",
        libraries: &Variant::NAMES,
        quick: DEFLATE_QUICK,
        baseline: Variant::NAMES[1],
        iterations: DEFLATE_ITERATIONS,
    },
    Counted {
        id: "deflate_decompress_4k",
        title: "Instructions: permessage-deflate decompress 4096 B JSON",
        libraries: &Variant::NAMES,
        quick: DEFLATE_QUICK,
        baseline: Variant::NAMES[1],
        iterations: DEFLATE_ITERATIONS,
    },
    Counted {
        id: ws_tls::ID,
        title: "Instructions: TLS 1.3 receive, decrypt and parse 128 B text, one record per frame",
        libraries: &ws_tls::Variant::NAMES,
        quick: usize::MAX,
        baseline: ws_tls::Variant::NAMES[0],
        iterations: ITERATIONS,
    },
];

/// Counts instructions per operation for every workload and library; tables say why when
/// valgrind is missing.
pub fn run(ctx: &Ctx) -> Vec<Table> {
    if !valgrind_available() {
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
    for workload in &WORKLOADS {
        let id = workload.id;
        if !ctx.selected(id) && !ctx.selected("callgrind") {
            continue;
        }
        let iterations = workload.iterations;
        let mut table = Table::new(
            &format!("callgrind_{id}"),
            workload.title,
            workload.baseline,
            &format!(
                "valgrind --tool=callgrind, (Ir at {iterations} operations - Ir at 0) / \
                 {iterations}; same bytes and code path as the timed workload."
            ),
        );
        table.note.push_str(
            " glibc's memcpy and memset run their vector loops (rep movsb / rep stosb \
             thresholds raised), so large copies and fills count the instructions they execute.",
        );
        if id == ws_tls::ID {
            table.note.push_str(ws_tls::CALLGRIND_NOTE);
        }
        let quick = ctx.plan.samples < Plan::FULL.samples;
        let counted = if quick {
            &workload.libraries[..workload.quick.min(workload.libraries.len())]
        } else {
            workload.libraries
        };
        if counted.len() < workload.libraries.len() {
            table.note.push_str(&format!(
                " A quick run counts the first {} rows; a full run counts all {}.",
                counted.len(),
                workload.libraries.len()
            ));
        }
        for library in counted {
            ctx.progress
                .set_message(format!("callgrind {id} / {library}"));
            match per_operation(&exe, workload, library) {
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

fn per_operation(exe: &Path, workload: &Counted, library: &str) -> Result<f64, String> {
    let base = instructions(exe, workload, library, 0)?;
    let loaded = instructions(exe, workload, library, workload.iterations)?;
    Ok(loaded.saturating_sub(base) as f64 / workload.iterations as f64)
}

/// Total instructions (Ir) of one `callgrind-target` run.
fn instructions(
    exe: &Path,
    workload: &Counted,
    library: &str,
    iterations: u64,
) -> Result<u64, String> {
    let id = workload.id;
    let iterations = iterations.to_string();
    total_instructions(
        exe,
        &["callgrind-target", id, library, &iterations],
        &format!("{id}-{library}-{iterations}"),
    )
}

/// True when `valgrind` can be run.
pub fn valgrind_available() -> bool {
    Command::new("valgrind").arg("--version").output().is_ok()
}

/// Total instructions (Ir) of this benchmark binary run under callgrind with `args` (a hidden
/// target subcommand), with [`TUNABLES`] set; `tag` names the output file. Only the process
/// valgrind starts is counted: children it spawns and other processes are not.
pub fn total_instructions(exe: &Path, args: &[&str], tag: &str) -> Result<u64, String> {
    let dir = std::env::temp_dir().join(format!("tickwire-callgrind-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    // Library names may hold spaces and parentheses; the file name does not.
    let file: String = format!("{tag}.out")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let out = dir.join(file);
    // Set for the valgrind child only, a documented setting of the counted process (docs/
    // BENCHMARKS.md, "Instruction counts") that makes its counts reproducible; the bench never
    // runs itself again under a tunable (`host_copy.rs` only advises one).
    let status = Command::new("valgrind")
        .env("GLIBC_TUNABLES", TUNABLES)
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", out.display()))
        .arg(exe)
        .args(args)
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
                    parser.load(batch, read_size, false);
                }
                black_box(parser.next());
            }
        }
        "parse_stream_text_40" | "parse_stream_text_512" => {
            let len: usize = workload["parse_stream_text_".len()..]
                .parse()
                .map_err(|_| format!("unknown workload {workload}"))?;
            let frame = wire::frame(true, 0x1, &wire::json_payload(len), None);
            let stream: &'static [u8] = Box::leak(
                frame
                    .repeat((256 << 10) / frame.len() + 1)
                    .into_boxed_slice(),
            );
            let mut parser = ws_parse::new_parser(library, false);
            parser.load(stream, ws_parse::STREAM_READ, true);
            for _ in 0..1000 + iterations {
                black_box(parser.next());
            }
        }
        "encode_text_128_server" => {
            let mut encoder = ws_encode::Encoder::new(library, false);
            for _ in 0..iterations {
                black_box(encoder.encode());
            }
        }
        "encode_text_128_client" => {
            let mut encoder = ws_encode::Encoder::new(library, true);
            for _ in 0..iterations {
                black_box(encoder.encode());
            }
        }
        "apply_mask_128" | "apply_mask_512" | "apply_mask_4096" => {
            let size: usize = workload["apply_mask_".len()..]
                .parse()
                .map_err(|_| format!("unknown workload {workload}"))?;
            let mut data = wire::json_payload(size);
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
        ws_tls::ID => return ws_tls::callgrind_target(library, iterations),
        deflate => return deflate_target(deflate, library, iterations),
    }
    Ok(())
}

/// The deflate workloads of [`run_target`]: the compressor primed, or the decompressor primed
/// on the recorded first pass, exactly as `ws_deflate` sets them up before timing.
fn deflate_target(workload: &str, library: &str, iterations: u64) -> Result<(), String> {
    let variant =
        Variant::from_name(library).ok_or_else(|| format!("unknown deflate variant {library}"))?;
    let (direction, tag) = workload
        .strip_prefix("deflate_")
        .and_then(|rest| rest.split_once('_'))
        .ok_or_else(|| format!("unknown workload {workload}"))?;
    let len = ws_deflate::SIZES
        .iter()
        .find_map(|&(len, t)| (t == tag).then_some(len))
        .ok_or_else(|| format!("unknown workload {workload}"))?;
    let messages = ws_deflate::messages(len);
    match direction {
        "compress" => {
            let mut compressor = Compressor::primed(variant, &messages);
            for _ in 0..iterations {
                black_box(compressor.compress());
            }
        }
        "decompress" => {
            let (prime, steady) = ws_deflate::record(variant, &messages);
            let (mut decompressor, _) = Decompressor::new(variant, &prime, steady);
            for _ in 0..iterations {
                black_box(decompressor.decompress());
            }
        }
        _ => return Err(format!("unknown workload {workload}")),
    }
    Ok(())
}
