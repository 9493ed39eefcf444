//! The NATS suite's tables: latency (in-process against NATS) and throughput (1 node against
//! several), a row per path, medians over rounds, and every message lost counted in the
//! table. Owns presentation and the ratios; the numbers come from `mod.rs`'s sessions.

use hdrhistogram::Histogram;

use super::{Outcome, Point};
use crate::Ctx;
use crate::report::{self, Figures, Row, Table};
use crate::server_suite::tables::median;

/// The quantiles of the latency tables, and their column names.
const QUANTILES: [(f64, &str); 3] = [(0.5, "p50"), (0.99, "p99"), (0.999, "p99.9")];

/// Publish-to-receive latency at a fixed rate below saturation: a row per path, ratios to
/// the first row (in-process).
pub(super) fn latency_table(
    ctx: &Ctx,
    id: &str,
    point: Point,
    names: &[String],
    results: &[Vec<Result<Outcome, String>>],
) -> Table {
    let title = format!(
        "NATS against in-process: publish-to-receive, 100 B binary at {} msg/s, {} subscribers",
        report::human(point.rate),
        point.subscribers
    );
    let mut columns: Vec<String> = QUANTILES.iter().map(|(_, q)| format!("{q} µs")).collect();
    columns.extend(QUANTILES.iter().map(|(_, q)| format!("{q} ÷ in-process")));
    columns.extend(
        [
            "deliveries/s",
            "lost",
            "subscriber core idle %",
            "node core idle %",
        ]
        .map(str::to_owned),
    );
    let columns: Vec<&str> = columns.iter().map(String::as_str).collect();
    let mut table = Table::with_columns(id, &title, &columns, "");
    let baseline: Vec<Option<f64>> = QUANTILES
        .iter()
        .map(|&(q, _)| quantile_median(&histograms(&results[0]), q))
        .collect();
    for (name, rounds) in names.iter().zip(results) {
        let ok = successes(rounds);
        let cells = if ok.is_empty() {
            vec!["skipped".to_owned(); columns.len()]
        } else {
            let quantiles: Vec<Option<f64>> = QUANTILES
                .iter()
                .map(|&(q, _)| quantile_median(&histograms(rounds), q))
                .collect();
            let mut cells: Vec<String> = quantiles.iter().map(|&ns| micros(ns)).collect();
            cells.extend(quantiles.iter().zip(&baseline).map(|(&v, &b)| ratio(v, b)));
            cells.push(report::human(
                median(ok.iter().map(|o| o.seen.rate).collect()).unwrap_or(0.0),
            ));
            cells.push(lost(&ok));
            cells.push(idle_percent(&ok, |o| o.seen.subscriber_core_idle));
            cells.push(idle_percent(&ok, |o| o.seen.node_core_idle));
            cells
        };
        table.rows.push(Row {
            library: name.clone(),
            figures: Figures::Cells(cells),
        });
    }
    table.note = format!(
        "{} WebSocket subscribers over 127.0.0.1 on one node (tickwire-server, 1 worker, topic \
         policy drop-oldest, 256 KiB send budget). in-process: the node publishes 100 B binary \
         messages itself through ServerHandle::publish. NATS, 1 node: nats-server (core NATS) \
         and a node whose tickwire-nats bridge relays subject tw.t; the feed is tickwire-nats's \
         Publisher in the bench process. Both publish at {} msg/s on an open-loop schedule \
         (what is due is sent back to back), the send time (CLOCK_MONOTONIC ns) taken as each \
         message is made; latency = CLOCK_MONOTONIC after the subscriber's read minus it, every \
         delivery of the measured window. The rate is {} deliveries/s divided by the \
         subscribers, well below what a node delivers, so that the latency is the path's, not a \
         queue's; core idle % (idle jiffies of the core over the window) shows the headroom \
         left. {}{}",
        point.subscribers,
        report::human(point.rate),
        report::human(point.rate * point.subscribers as f64),
        common_note(ctx, point),
        failures(names, results),
    );
    table
}

/// Deliveries per second with the feed offered more than a node delivers: a row per path,
/// the ratio to `NATS, 1 node`.
pub(super) fn throughput_table(
    ctx: &Ctx,
    id: &str,
    point: Point,
    names: &[String],
    results: &[Vec<Result<Outcome, String>>],
) -> Table {
    let title = format!(
        "NATS, 1 node against several: deliveries/s, 100 B binary offered at {} msg/s, {} \
         subscribers",
        report::human(point.rate),
        point.subscribers
    );
    let columns = [
        "published msg/s",
        "deliveries/s (median)",
        "range /s",
        "delivered %",
        "lost",
        "p50 ms",
        "p99 ms",
        "subscriber core idle %",
        "node core idle %",
        "÷ NATS, 1 node",
    ];
    let mut table = Table::with_columns(id, &title, &columns, "");
    let rate = |rounds: &[Result<Outcome, String>]| {
        median(successes(rounds).iter().map(|o| o.seen.rate).collect())
    };
    let one_node = names
        .iter()
        .position(|n| n == "NATS, 1 node")
        .and_then(|i| rate(&results[i]));
    for (name, rounds) in names.iter().zip(results) {
        let ok = successes(rounds);
        let cells = match rate(rounds) {
            None => vec!["skipped".to_owned(); columns.len()],
            Some(median_rate) => {
                let mut rates: Vec<f64> = ok.iter().map(|o| o.seen.rate).collect();
                rates.sort_by(f64::total_cmp);
                let millis = |q: f64| {
                    quantile_median(&histograms(rounds), q)
                        .map_or("-".to_owned(), |ns| format!("{:.2}", ns / 1e6))
                };
                let expected: u64 = ok.iter().map(|o| o.last() * o.seen.subscribers).sum();
                let delivered: u64 = ok.iter().map(|o| o.seen.delivered).sum();
                vec![
                    report::human(
                        median(ok.iter().map(|o| o.publish_rate()).collect()).unwrap_or(0.0),
                    ),
                    report::human(median_rate),
                    format!(
                        "{} - {}",
                        report::human(rates[0]),
                        report::human(rates[rates.len() - 1])
                    ),
                    format!("{:.1}", 100.0 * delivered as f64 / expected.max(1) as f64),
                    lost(&ok),
                    millis(0.5),
                    millis(0.99),
                    idle_percent(&ok, |o| o.seen.subscriber_core_idle),
                    idle_percent(&ok, |o| o.seen.node_core_idle),
                    ratio(Some(median_rate), one_node),
                ]
            }
        };
        table.rows.push(Row {
            library: name.clone(),
            figures: Figures::Cells(cells),
        });
    }
    table.note = format!(
        "{} WebSocket subscribers over 127.0.0.1, spread evenly over the nodes (tickwire-server, \
         1 worker each, topic policy drop-oldest, 256 KiB send budget). The feed is offered at \
         {} msg/s ({} deliveries/s), more than a node delivers, so each row runs at the rate \
         its path sustains: published msg/s is what the feed achieved (in-process: the highest \
         number received over the feed's time), deliveries/s what the subscribers received in \
         the measured window, delivered % = deliveries / (subscribers x messages published) \
         over the whole point, lost = the messages subscribers did not get (drop-oldest for a \
         subscriber past its send budget, or NATS dropping for the bridge as a slow consumer), \
         with how many of them the node reported (gap notices, Handler::on_gap). Latency at \
         saturation is queueing, shown for completeness. ON THIS 2-vCPU MACHINE THE NODES \
         SHARE ONE CORE (with nats-server and the feed): several nodes against one measures \
         what the bus path costs when the same work is split, not scale-out; \
         docs/SCALING.md's capacity model extrapolates. {}{}",
        point.subscribers,
        report::human(point.rate),
        report::human(point.rate * point.subscribers as f64),
        common_note(ctx, point),
        failures(names, results),
    );
    table
}

/// The method sentences both tables share.
fn common_note(ctx: &Ctx, point: Point) -> String {
    format!(
        "Every message checked: 100 B, the feed's filler, numbers rising per subscriber. \
         nats-server, nodes and feed on core {}, the subscriber thread on core {}; the window \
         starts at the first delivery: {:.1} s warm-up, {:.1} s measured, then read until \
         quiet. A fresh nats-server and fresh nodes per (row, round); {} round(s), rows \
         interleaved, medians over rounds; lost summed over rounds.",
        ctx.core,
        ctx.peer_core,
        point.window.warmup.as_secs_f64(),
        point.window.measure.as_secs_f64(),
        ctx.rounds,
    )
}

/// The rounds that succeeded.
fn successes(rounds: &[Result<Outcome, String>]) -> Vec<&Outcome> {
    rounds.iter().filter_map(|r| r.as_ref().ok()).collect()
}

fn histograms(rounds: &[Result<Outcome, String>]) -> Vec<&Histogram<u64>> {
    successes(rounds).iter().map(|o| &o.seen.latency).collect()
}

/// Messages lost over the successful rounds, with how many the nodes reported and how many
/// arrived out of order; "0" when none.
fn lost(ok: &[&Outcome]) -> String {
    let missed: u64 = ok.iter().map(|o| o.missed()).sum();
    let reported: u64 = ok.iter().map(|o| o.seen.reported).sum();
    let out_of_order: u64 = ok.iter().map(|o| o.seen.out_of_order).sum();
    let mut cell = if missed == 0 && reported == 0 {
        "0".to_owned()
    } else {
        format!(
            "{} (reported {})",
            report::human(missed as f64),
            report::human(reported as f64)
        )
    };
    if out_of_order > 0 {
        cell.push_str(&format!(", {out_of_order} out of order"));
    }
    cell
}

/// The median over rounds of a core's idle share, in %.
fn idle_percent(ok: &[&Outcome], share: fn(&Outcome) -> Option<f64>) -> String {
    median(ok.iter().filter_map(|o| share(o)).collect())
        .map_or("-".to_owned(), |share| format!("{:.0}", share * 100.0))
}

/// The failed rounds, one sentence each.
fn failures(names: &[String], results: &[Vec<Result<Outcome, String>>]) -> String {
    let mut out = String::new();
    for (name, rounds) in names.iter().zip(results) {
        for why in rounds.iter().filter_map(|r| r.as_ref().err()) {
            out.push_str(&format!(" {name}: {why}."));
        }
    }
    out
}

/// The median over rounds of each round's value at quantile `q`; None without rounds.
fn quantile_median(rounds: &[&Histogram<u64>], q: f64) -> Option<f64> {
    median(
        rounds
            .iter()
            .map(|h| h.value_at_quantile(q) as f64)
            .collect(),
    )
}

/// `value` ÷ `base` as "1.23x"; "-" when either is missing or the base is zero.
fn ratio(value: Option<f64>, base: Option<f64>) -> String {
    match (value, base) {
        (Some(v), Some(b)) if b > 0.0 => format!("{:.2}x", v / b),
        _ => "-".to_owned(),
    }
}

fn micros(ns: Option<f64>) -> String {
    ns.map_or("-".to_owned(), |ns| format!("{:.1}", ns / 1e3))
}

#[cfg(test)]
mod tests {
    use super::{quantile_median, ratio};
    use crate::harness;

    #[test]
    fn the_quantile_of_a_row_is_the_median_of_its_rounds() {
        let rounds: Vec<_> = [[10, 20, 1_000], [30, 40, 50], [60, 70, 80]]
            .iter()
            .map(|values| {
                let mut histogram = harness::new_histogram();
                for &v in values {
                    histogram.record(v).expect("in range");
                }
                histogram
            })
            .collect();
        let rounds: Vec<_> = rounds.iter().collect();
        // Per-round maxima 1,000 / 50 / 80: the median round's, not the pooled maximum.
        assert_eq!(quantile_median(&rounds, 1.0), Some(80.0));
        assert_eq!(quantile_median(&rounds, 0.0), Some(30.0));
        assert_eq!(quantile_median(&[], 0.5), None);
    }

    #[test]
    fn a_ratio_needs_both_figures_and_a_base_above_zero() {
        assert_eq!(ratio(Some(300.0), Some(100.0)), "3.00x");
        assert_eq!(ratio(Some(300.0), Some(0.0)), "-");
        assert_eq!(ratio(None, Some(100.0)), "-");
    }
}
