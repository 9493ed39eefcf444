//! Instruction counts for the HTTP suite (`--callgrind`), by the mechanism of
//! [`crate::callgrind`]: this binary re-run under `valgrind --tool=callgrind` through the hidden
//! `http-callgrind-target` subcommand, once with 0 and once with N operations, the same setup
//! in both; (Ir at N - Ir at 0) / N is the cost of one operation.
//!
//! For the loopback clients the server is this binary re-executed as `http-server`, a
//! separate process that valgrind does not run, so the count is the client's alone: build,
//! write (the user-space side of the syscalls), wait, read and parse, the client library's
//! runtime included. Owns the two instruction tables and their target lines.

use std::path::Path;

use super::fixtures::ORDER_JSON;
use super::loopback::COUNT_WARMUP;
use super::server::ServerProcess;
use super::{Client, headline, memory, tickwire};
use crate::Ctx;
use crate::callgrind;
use crate::harness::Plan;
use crate::report::{Figures, Row, Table};

/// In-memory requests counted per run (a full run; a quick run counts a tenth).
const MEMORY_ITERATIONS: u64 = 20_000;

/// Loopback requests counted per run (a full run; a quick run counts a tenth). Each costs a
/// round trip through a client slowed down by valgrind, about 0.1 to 1 ms.
const CLIENT_ITERATIONS: u64 = 5_000;

/// The instruction tables: in memory for `memory_rows`, and client-side per loopback request
/// for `clients`. A table with only a note when valgrind is missing.
pub(super) fn tables(ctx: &Ctx, memory_rows: &[&str], clients: &[Client]) -> Vec<Table> {
    if !callgrind::valgrind_available() {
        return vec![Table::new(
            "http_callgrind",
            "HTTP instructions (callgrind)",
            "tickwire",
            "valgrind is not installed (apt-get install valgrind): no instruction counts.",
        )];
    }
    let exe = std::env::current_exe().expect("path of this benchmark binary");
    let quick = ctx.plan.samples < Plan::FULL.samples;
    let scale = if quick { 10 } else { 1 };
    let mut tables = Vec::new();
    if ctx.selected(memory::ID) || ctx.selected("callgrind") {
        tables.push(memory_table(
            ctx,
            &exe,
            memory_rows,
            MEMORY_ITERATIONS / scale,
        ));
    }
    if ctx.selected("http_rtt") || ctx.selected("callgrind") {
        tables.push(client_table(ctx, &exe, clients, CLIENT_ITERATIONS / scale));
    }
    tables
}

fn memory_table(ctx: &Ctx, exe: &Path, libraries: &[&str], iterations: u64) -> Table {
    let mut table = Table::new(
        "http_memory_callgrind",
        "Instructions: HTTP in memory, build + write the POST and parse the response",
        memory::baseline(libraries),
        &format!(
            "valgrind --tool=callgrind, (Ir at {iterations} requests - Ir at 0) / \
             {iterations}; the same adapters, bytes and checks as the timed in-memory \
             workload. glibc's memcpy and memset run their vector loops."
        ),
    );
    for library in libraries {
        ctx.progress
            .set_message(format!("callgrind http memory / {library}"));
        match per_operation(exe, &["memory", library], None, iterations) {
            Ok(count) => table.rows.push(Row {
                library: (*library).to_owned(),
                figures: Figures::Instructions(count),
            }),
            Err(e) => eprintln!("callgrind http memory / {library}: {e}"),
        }
    }
    for (ours, peer) in [
        (tickwire::MEMORY, "nexus-web"),
        (tickwire::MEMORY_SERDE, "nexus-web body_writer(serde_json)"),
    ] {
        if let Some(line) = ratio_line(&table, ours, peer, 0.8) {
            table.note.push_str(&line);
        }
    }
    table
}

fn client_table(ctx: &Ctx, exe: &Path, clients: &[Client], iterations: u64) -> Table {
    let mut table = Table::new(
        "http_client_callgrind",
        "Client-side instructions per request (build + write + parse), loopback",
        if clients.contains(&Client::Tickwire) {
            Client::Tickwire.name()
        } else {
            Client::Raw.name()
        },
        &format!(
            "valgrind --tool=callgrind on the client process only: (Ir at {COUNT_WARMUP} + \
             {iterations} requests - Ir at {COUNT_WARMUP}) / {iterations}, one keep-alive \
             connection to the loopback server, which runs as a separate process \
             (`http-server`, not under valgrind). The same clients, request ({} B JSON body) \
             and checks as the timed round trip; user-space instructions only (the kernel's \
             share of each syscall is not counted; the async clients' runtimes and \
             reqwest (blocking)'s runtime thread are).",
            ORDER_JSON.len()
        ),
    );
    let server = match ServerProcess::start(exe, ctx.peer_core) {
        Ok(server) => server,
        Err(e) => {
            table.note.push_str(&format!(" Not counted: {e}."));
            return table;
        }
    };
    for client in clients {
        let name = client.name();
        ctx.progress
            .set_message(format!("callgrind http client / {name}"));
        match per_operation(exe, &["client", name], Some(server.port()), iterations) {
            Ok(count) => table.rows.push(Row {
                library: name.to_owned(),
                figures: Figures::Instructions(count),
            }),
            Err(e) => eprintln!("callgrind http client / {name}: {e}"),
        }
    }
    drop(server);
    let tickwire = Client::Tickwire.name();
    for (peer, target) in [
        (Client::Reqwest.name(), 1.0 / 3.0),
        (Client::ReqwestBlocking.name(), 1.0 / 3.0),
        (Client::NexusWeb.name(), 0.8),
    ] {
        if let Some(line) = ratio_line(&table, tickwire, peer, target) {
            table.note.push_str(&line);
        }
    }
    table
}

/// " ours / peer = R (target at most T: met|missed)." when both rows exist.
fn ratio_line(table: &Table, ours: &str, peer: &str, target: f64) -> Option<String> {
    let ratio = headline(table, ours)? / headline(table, peer)?;
    Some(format!(
        " {ours} / {peer} = {ratio:.3} (target at most {target:.2}: {}).",
        if ratio <= target { "met" } else { "missed" }
    ))
}

/// (Ir with `iterations` operations - Ir with none) / `iterations`.
fn per_operation(
    exe: &Path,
    target: &[&str; 2],
    port: Option<u16>,
    iterations: u64,
) -> Result<f64, String> {
    let count = |n: u64| {
        let n = n.to_string();
        let port = port.map(|p| p.to_string());
        let mut args = vec!["http-callgrind-target", target[0], target[1], n.as_str()];
        if let Some(port) = &port {
            args.extend(["--port", port.as_str()]);
        }
        callgrind::total_instructions(exe, &args, &format!("http-{}-{}-{n}", target[0], target[1]))
    };
    let base = count(0)?;
    let loaded = count(iterations)?;
    Ok(loaded.saturating_sub(base) as f64 / iterations as f64)
}
