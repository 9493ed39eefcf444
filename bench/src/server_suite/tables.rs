//! The server suite's tables: one per load point (a row per server, medians over rounds) and
//! the memory table. Owns presentation and the ratios; the numbers come from `mod.rs`'s
//! sessions.

use tickwire_loadgen::generator::Measured;
use tickwire_loadgen::servers::{Launch, Library};

use super::{IDLE, Point, idle_memory};
use crate::Ctx;
use crate::harness::Clock;
use crate::report::{self, Figures, Row, Table};

/// One point's table: a row per server, medians over its rounds.
pub(super) fn point_table(
    ctx: &Ctx,
    launch: &Launch,
    point: &Point,
    count: usize,
    libraries: &[Library],
    results: &[Vec<Result<Measured, String>>],
    clock: &Clock,
) -> Table {
    let load = point.load;
    let title = format!(
        "Echo server, {} B binary, {count} connection(s) x {} in flight",
        load.payload_len, load.depth
    );
    let mut columns = vec!["messages/s (median)", "range /s", "p50 µs", "p99 µs"];
    columns.extend(LOAD_COLUMNS);
    let mut table = Table::with_columns(&point.id, &title, &columns, "");
    let names: Vec<&str> = libraries.iter().map(|l| l.name()).collect();
    let (rows, notes, paired) = measured_rows(&names, results, clock, &[0.5, 0.99]);
    table.rows = rows;
    let mut note = format!(
        "{count} WebSocket connection(s) over 127.0.0.1, each keeping {} masked {} B binary \
         frames in flight (one pre-encoded frame, written again for every echo received, one \
         write per wake-up); round trip = rdtsc at the read that completed the echo minus \
         rdtsc at its send. Server on core {}, load generator on core {}; {:.1} s warm-up, \
         {:.1} s measured, then drained (every echo checked: binary, {} B; received = sent). \
         A fresh server per (server, N) session, these connections shared by its points; \
         {} round(s), servers interleaved, medians over rounds; {CPU_NOTE}",
        load.depth,
        load.payload_len,
        ctx.core,
        ctx.peer_core,
        load.warmup.as_secs_f64(),
        load.measure.as_secs_f64(),
        load.payload_len,
        ctx.rounds,
    );
    note.push_str(&paired);
    if launch.tickwire_runtime != "reactor" {
        note.push_str(&format!(
            " tickwire ran with --runtime {} (not the reactor).",
            launch.tickwire_runtime
        ));
    }
    for line in notes {
        note.push_str(&format!(" {line}."));
    }
    table.note = note;
    table
}

/// What the CPU columns of [`LOAD_COLUMNS`] mean, for the tables' notes.
pub(super) const CPU_NOTE: &str = "gen cpu / server cpu: the generator thread's and the \
    server process's CPU time (user + system) over the measured window, % of one core; \
    loopback's softirq work is charged to the core, not to either task, so gen core idle % \
    (idle jiffies of the generator's core over the window) is the test of headroom: above 0, \
    the generator waited for the server; server core idle % the same for the server's core.";

/// The columns after the rate and latency ones, in both suites' load tables.
pub(super) const LOAD_COLUMNS: [&str; 5] = [
    "gen cpu %",
    "gen core idle %",
    "server cpu %",
    "server core idle %",
    "tickwire ÷ this",
];

/// A row per server of a load table (`names[i]`'s rounds in `results[i]`, the row named
/// `tickwire` the baseline of the ratio column): the median rate, the range over rounds, the
/// median over rounds of each latency quantile in µs, then [`LOAD_COLUMNS`]. Also the notes
/// of failed rounds and the paired-by-round comparison of tickwire with each other row.
pub(super) fn measured_rows(
    names: &[&str],
    results: &[Vec<Result<Measured, String>>],
    clock: &Clock,
    quantiles: &[f64],
) -> (Vec<Row>, Vec<String>, String) {
    let rates = |i: usize| -> Vec<f64> {
        results[i]
            .iter()
            .filter_map(|r| r.as_ref().ok().map(|m| m.rate))
            .collect()
    };
    let tickwire = names.iter().position(|&n| n == "tickwire");
    let tickwire_rate = tickwire.and_then(|i| median(rates(i)));
    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for (i, name) in names.iter().enumerate() {
        let ok: Vec<&Measured> = results[i].iter().filter_map(|r| r.as_ref().ok()).collect();
        for why in results[i].iter().filter_map(|r| r.as_ref().err()) {
            let note = format!("{name}: {why}");
            if !notes.contains(&note) {
                notes.push(note);
            }
        }
        let cells = match median(rates(i)) {
            None => vec!["skipped".to_owned(); 2 + quantiles.len() + LOAD_COLUMNS.len()],
            Some(rate) => {
                let mut sorted = rates(i);
                sorted.sort_by(f64::total_cmp);
                let micros = |q: f64| {
                    median(
                        ok.iter()
                            .map(|m| m.latency.value_at_quantile(q) as f64)
                            .collect(),
                    )
                    .map_or("-".to_owned(), |t| {
                        format!("{:.1}", clock.ns(t as u64) / 1e3)
                    })
                };
                let percent = |f: fn(&Measured) -> Option<f64>| {
                    median(ok.iter().filter_map(|m| f(m)).collect())
                        .map_or("-".to_owned(), |c| format!("{:.0}", c * 100.0))
                };
                let mut cells = vec![
                    report::human(rate),
                    format!(
                        "{} - {}",
                        report::human(sorted[0]),
                        report::human(sorted[sorted.len() - 1])
                    ),
                ];
                cells.extend(quantiles.iter().map(|&q| micros(q)));
                cells.extend([
                    percent(|m| m.generator_cpu),
                    percent(|m| m.generator_core_idle),
                    percent(|m| m.server_cpu),
                    percent(|m| m.server_core_idle),
                    tickwire_rate.map_or("-".to_owned(), |t| format!("{:.2}x", t / rate)),
                ]);
                cells
            }
        };
        rows.push(Row {
            library: (*name).to_owned(),
            figures: Figures::Cells(cells),
        });
    }
    let mut paired = String::new();
    if let Some(tickwire) = tickwire {
        let tickwire_rounds = round_rates(&results[tickwire]);
        for (i, name) in names.iter().enumerate().filter(|(i, _)| *i != tickwire) {
            if let (Some(a), Some(b)) = (&tickwire_rounds, round_rates(&results[i])) {
                paired.push_str(&report::paired_rates("tickwire", a, name, &b));
            }
        }
    }
    (rows, notes, paired)
}

/// Every round's rate, when every round succeeded.
fn round_rates(results: &[Result<Measured, String>]) -> Option<Vec<f64>> {
    results
        .iter()
        .map(|r| r.as_ref().ok().map(|m| m.rate))
        .collect()
}

/// Resident memory per idle connection, one fresh server per (server, N).
pub(super) fn memory_table(
    ctx: &Ctx,
    launch: &Launch,
    libraries: &[Library],
    counts: &[usize],
    clock: &Clock,
) -> Table {
    let mut columns = vec!["RSS, 0 connections".to_owned()];
    for n in counts {
        columns.push(format!("RSS, {n} idle"));
        columns.push(format!("per connection at {n}"));
    }
    columns.push(format!(
        "tickwire ÷ this (per connection at {})",
        counts[counts.len() - 1]
    ));
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut table = Table::with_columns(
        "server_memory",
        "Echo server memory per idle connection (VmRSS)",
        &columns,
        "",
    );
    let mut per_connection: Vec<Vec<Option<f64>>> = Vec::new();
    let mut baselines: Vec<Option<u64>> = Vec::new();
    let mut notes = Vec::new();
    let mut cells: Vec<Vec<String>> = Vec::new();
    for &library in libraries {
        let mut row = Vec::new();
        let mut figures = Vec::new();
        let mut baseline = None;
        for &n in counts {
            ctx.step(&format!("server memory: {} n={n}", library.name()));
            match idle_memory(ctx, launch, library, n, clock) {
                Ok((empty, full)) => {
                    baseline.get_or_insert(empty);
                    let bytes = (full as f64 - empty as f64) / n as f64;
                    row.push(format!("{:.1} MiB", full as f64 / 1048576.0));
                    row.push(format!("{bytes:.0} B ({:.2} KiB)", bytes / 1024.0));
                    figures.push(Some(bytes));
                }
                Err(why) => {
                    notes.push(format!("{} at {n}: {why}", library.name()));
                    row.push("-".to_owned());
                    row.push("skipped".to_owned());
                    figures.push(None);
                }
            }
        }
        baselines.push(baseline);
        per_connection.push(figures);
        cells.push(row);
    }
    let tickwire = libraries
        .iter()
        .position(|&l| l == Library::Tickwire)
        .and_then(|i| per_connection[i].last().copied().flatten());
    for (i, library) in libraries.iter().enumerate() {
        let mut row = vec![baselines[i].map_or("-".to_owned(), |b| {
            format!("{:.1} MiB", b as f64 / 1048576.0)
        })];
        row.extend(cells[i].iter().cloned());
        let mine = per_connection[i].last().copied().flatten();
        row.push(match (tickwire, mine) {
            (Some(t), Some(m)) if m > 0.0 => format!("{:.2}x", t / m),
            _ => "-".to_owned(),
        });
        table.rows.push(Row {
            library: library.name().to_owned(),
            figures: Figures::Cells(row),
        });
    }
    let mut note = format!(
        "A fresh server per (server, N): one connection opens, echoes one message and closes; \
         then VmRSS (/proc/PID/status) is read (0 connections); then N connections open, each \
         does its upgrade and one 16 B echo, and sit idle {} s before VmRSS is read again. Per \
         connection = (RSS_N - RSS_0) / N. Server on core {}.",
        IDLE.as_secs(),
        ctx.core
    );
    if launch.tickwire_runtime != "reactor" {
        note.push_str(&format!(
            " tickwire ran with --runtime {}.",
            launch.tickwire_runtime
        ));
    }
    for line in notes {
        note.push_str(&format!(" {line}."));
    }
    table.note = note;
    table
}

pub(super) fn median(mut values: Vec<f64>) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    values.sort_by(f64::total_cmp);
    Some(values[values.len() / 2])
}
