//! The HTTP suite (`tickwire-bench http`): tickwire's REST client against nexus-web, reqwest,
//! ureq and hyper, with a raw `std::net` + `httparse` client as the floor, in one run.
//!
//! Three kinds of table:
//! - `http_memory` (`memory.rs`): build + write the order POST and parse the canned response
//!   in memory, rdtsc ticks per request (tickwire's REST codec, nexus-web's, the raw floor);
//! - `http_rtt` and `http_rate` (`loopback.rs`): round trip and requests per second of every
//!   client against the same minimal keep-alive server (`server.rs`) on 127.0.0.1;
//! - with `--callgrind` (`instructions.rs`): instructions per in-memory request, and
//!   client-side instructions per loopback request with the server in a process of its own.
//!
//! The bytes are in `fixtures.rs`, the floor's halves in `raw.rs`, the peers' clients in
//! `clients.rs` and tickwire's rows in `tickwire.rs`. Timing primitives are the harness's,
//! presentation the report's.

pub(crate) mod clients;
pub(crate) mod fixtures;
mod instructions;
mod loopback;
mod memory;
mod raw;
pub(crate) mod server;
mod tickwire;

pub use server::run_process as serve;

use crate::Ctx;
use crate::report::{Figures, Table};

/// Progress steps per round: every in-memory row and every loopback client.
pub const STEPS: u64 = (memory::LIBRARIES.len() + Client::ALL.len()) as u64;

/// Runs the selected HTTP workloads (`--only http_memory`, `http_rtt`, `callgrind`, ...)
/// and returns their tables. `loopback: false` skips the loopback tables; `callgrind` adds
/// the instruction counts.
pub fn run(ctx: &Ctx, callgrind: bool, loopback: bool) -> Vec<Table> {
    let memory_rows = memory::available();
    let mut clients = Client::available();
    clients.retain(|c| *c == Client::Raw || ctx.client_selected(c.name()));
    let mut tables = Vec::new();
    if ctx.selected(memory::ID) {
        tables.push(memory::table(ctx, &memory_rows));
    }
    if loopback && (ctx.selected("http_rtt") || ctx.selected("http_rate")) {
        tables.extend(loopback::tables(ctx, &clients));
    }
    if callgrind {
        tables.extend(instructions::tables(ctx, &memory_rows, &clients));
    }
    tables
}

/// The hidden `http-callgrind-target` subcommand: `memory LIBRARY N` runs N in-memory
/// requests; `client CLIENT N --port P` connects to the server on 127.0.0.1:P and makes
/// [`loopback::COUNT_WARMUP`] + N requests.
pub fn callgrind_target(
    workload: &str,
    library: &str,
    iterations: u64,
    port: Option<u16>,
) -> Result<(), String> {
    match workload {
        "memory" => memory::count(library, iterations),
        "client" => {
            let client =
                Client::from_name(library).ok_or_else(|| format!("unknown client {library}"))?;
            let port = port.ok_or("client targets need --port")?;
            let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
            loopback::drive(client, addr, loopback::Mode::Count(iterations));
            Ok(())
        }
        other => Err(format!("unknown HTTP workload {other}")),
    }
}

/// A client of the loopback workloads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Client {
    /// std::net + httparse: the floor.
    Raw,
    /// tickwire's blocking `HttpClient`.
    Tickwire,
    /// nexus-web's blocking `rest::Client`.
    NexusWeb,
    /// reqwest's async client on a current-thread runtime.
    Reqwest,
    /// reqwest's blocking client.
    ReqwestBlocking,
    /// ureq 3's `Agent`.
    Ureq,
    /// hyper 1.x's `client::conn::http1` on a current-thread runtime.
    Hyper,
}

impl Client {
    /// Table order: the floor, tickwire, then the peers.
    const ALL: [Self; 7] = [
        Self::Raw,
        Self::Tickwire,
        Self::NexusWeb,
        Self::Reqwest,
        Self::ReqwestBlocking,
        Self::Ureq,
        Self::Hyper,
    ];

    /// The row label (also the argument of the callgrind target).
    fn name(self) -> &'static str {
        match self {
            Self::Raw => "raw floor (std::net + httparse)",
            Self::Tickwire => "tickwire",
            Self::NexusWeb => "nexus-web",
            Self::Reqwest => "reqwest",
            Self::ReqwestBlocking => "reqwest (blocking)",
            Self::Ureq => "ureq",
            Self::Hyper => "hyper (conn::http1)",
        }
    }

    fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// Every client that can run (tickwire's is skipped, with the reason printed, until its
    /// `HttpClient` exists).
    fn available() -> Vec<Self> {
        Self::ALL
            .into_iter()
            .filter(|client| match client {
                Self::Tickwire => match tickwire::available() {
                    Ok(()) => true,
                    Err(why) => {
                        eprintln!("http loopback: tickwire skipped: {why}");
                        false
                    }
                },
                _ => true,
            })
            .collect()
    }
}

/// The headline figure of `library` in `table` (p50 ticks, median rate or instructions).
fn headline(table: &Table, library: &str) -> Option<f64> {
    table.row(library).map(|row| match &row.figures {
        Figures::Latency(h) => h.value_at_quantile(0.5) as f64,
        Figures::Rate(r) => r[r.len() / 2],
        Figures::Instructions(i) => *i,
        Figures::Cells(_) => f64::NAN,
    })
}

/// The round-trip targets, as a sentence for the table's note: tickwire's p50 within 5% of
/// the raw floor's and below every peer's.
fn targets_rtt(table: &Table) -> String {
    let (Some(tickwire), Some(floor)) = (
        headline(table, Client::Tickwire.name()),
        headline(table, Client::Raw.name()),
    ) else {
        return String::new();
    };
    let peers: Vec<(&str, f64)> = table
        .rows
        .iter()
        .map(|row| row.library.as_str())
        .filter(|name| *name != Client::Tickwire.name() && *name != Client::Raw.name())
        .filter_map(|name| Some((name, headline(table, name)?)))
        .collect();
    let behind: Vec<&str> = peers
        .iter()
        .filter(|(_, p50)| *p50 <= tickwire)
        .map(|(name, _)| *name)
        .collect();
    format!(
        " Targets: tickwire p50 / raw floor p50 = {:.3} (at most 1.05: {}); ahead of every \
         peer at p50: {}.",
        tickwire / floor,
        if tickwire / floor <= 1.05 {
            "met"
        } else {
            "missed"
        },
        if behind.is_empty() {
            "met".to_owned()
        } else {
            format!("missed (not ahead of {})", behind.join(", "))
        }
    )
}
