//! The demo's results: the [`Summary`] of a run, printed as a table on stdout and written as
//! a self-contained HTML page (inline CSS and SVG charts; no script, nothing fetched).
//!
//! Owns judging the run (which client checks passed) and presenting it; the charts are
//! [`super::charts`]'.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use tickwire::server::{SlowConsumer, TopicStats};
use tickwire_charts::escape;

use super::charts::Charts;
use super::client::{ClientReport, Pace};
use super::stats::{Second, format_count, format_ns};
use super::{DemoArgs, Histograms, Shared, TopicId};

/// Everything the report shows.
pub(crate) struct Summary {
    params: Vec<(&'static str, String)>,
    topics: Vec<(TopicId, TopicStats)>,
    feed_seconds: f64,
    histograms: Histograms,
    timeline: Vec<Second>,
    clients: Vec<ClientReport>,
}

impl Summary {
    pub(crate) fn new(
        args: &DemoArgs,
        shared: &Shared,
        clients: Vec<ClientReport>,
        timeline: Vec<Second>,
        histograms: Histograms,
        feed_seconds: f64,
    ) -> Self {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        let params = vec![
            ("duration", format!("{} s", args.duration)),
            ("clients", format!("{} ({} slow)", args.clients, args.slow)),
            (
                "rate",
                format!(
                    "{} book updates and trades / s",
                    format_count(u64::from(args.rate))
                ),
            ),
            ("symbols", args.symbols.to_string()),
            (
                "send budget",
                format!(
                    "{} bytes per connection",
                    format_count(args.send_budget as u64)
                ),
            ),
            (
                "server workers",
                args.workers
                    .map_or_else(|| format!("{cpus} (one per CPU)"), |w| w.to_string()),
            ),
            (
                "client threads",
                args.client_threads.min(args.clients).to_string(),
            ),
            ("CPUs", cpus.to_string()),
        ];
        let topics = TopicId::ALL
            .iter()
            .map(|&t| (t, shared.topic(t).stats()))
            .collect();
        Self {
            params,
            topics,
            feed_seconds,
            histograms,
            timeline,
            clients,
        }
    }

    fn fast(&self) -> impl Iterator<Item = &ClientReport> {
        self.clients.iter().filter(|c| c.pace == Pace::Fast)
    }

    fn slow(&self) -> impl Iterator<Item = &ClientReport> {
        self.clients.iter().filter(|c| c.pace != Pace::Fast)
    }

    /// Fast clients that got every message in order with no gap, and how many there are.
    fn fast_verdict(&self) -> (usize, usize) {
        let total = self.fast().count();
        let good = self.fast().filter(|c| fast_ok(c)).count();
        (good, total)
    }

    /// True when every fast client saw every message in order with no gap, and every slow
    /// client saw its messages in order and was told about each one it missed.
    pub(crate) fn passed(&self) -> bool {
        let (good, total) = self.fast_verdict();
        good == total && self.slow().all(slow_ok)
    }

    /// Lines describing each failed client check (empty when [`passed`](Self::passed)).
    fn failures(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (i, client) in self.clients.iter().enumerate() {
            let ok = if client.pace == Pace::Fast {
                fast_ok(client)
            } else {
                slow_ok(client)
            };
            if !ok {
                lines.push(format!(
                    "client {i} ({}): {}",
                    pace_name(client.pace),
                    client
                        .failure
                        .as_deref()
                        .unwrap_or("messages missing or out of order")
                ));
            }
        }
        lines
    }

    fn latency_line(histogram: &Histogram<u64>) -> String {
        if histogram.is_empty() {
            return "no messages".to_owned();
        }
        format!(
            "p50 {}  p90 {}  p99 {}  p99.9 {}  max {}",
            format_ns(histogram.value_at_quantile(0.5)),
            format_ns(histogram.value_at_quantile(0.9)),
            format_ns(histogram.value_at_quantile(0.99)),
            format_ns(histogram.value_at_quantile(0.999)),
            format_ns(histogram.max()),
        )
    }

    /// The summary table printed on stdout.
    pub(crate) fn text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "\ntickwire demo");
        for (name, value) in &self.params {
            let _ = writeln!(out, "  {name:<15} {value}");
        }
        out.push('\n');
        text_table(&mut out, &TOPIC_COLUMNS, &self.topic_rows());
        let deliveries = self.histograms.deliveries;
        let _ = writeln!(
            out,
            "\n  deliveries      {} in {:.1} s of feed ({}/s)",
            format_count(deliveries),
            self.feed_seconds,
            format_count((deliveries as f64 / self.feed_seconds.max(1e-3)) as u64)
        );
        let _ = writeln!(
            out,
            "  latency, fast  {}",
            Self::latency_line(&self.histograms.fast)
        );
        let _ = writeln!(
            out,
            "  latency, slow  {}",
            Self::latency_line(&self.histograms.slow)
        );
        let (good, total) = self.fast_verdict();
        let _ = writeln!(
            out,
            "\n  fast clients    {good} of {total} got every message of every topic in order, with no gap"
        );
        let _ = writeln!(out, "  slow clients");
        text_table(&mut out, &SLOW_COLUMNS, &self.slow_rows());
        for line in self.failures() {
            let _ = writeln!(out, "  FAILED {line}");
        }
        let _ = writeln!(
            out,
            "  check           {}",
            if self.passed() { "passed" } else { "FAILED" }
        );
        out
    }

    /// The HTML report: one page, inline CSS and SVG.
    pub(crate) fn html(&self) -> String {
        let mut out = String::with_capacity(64 << 10);
        out.push_str(HEAD);
        out.push_str(tickwire_charts::STYLE);
        out.push_str(HEAD_END);
        let (good, total) = self.fast_verdict();
        let verdict = if self.passed() { "passed" } else { "FAILED" };
        let _ = write!(
            out,
            r#"<h1>tickwire demo</h1><p class="lead">A local market-data fan-out: tickwire-server publishing book updates and trades to {} clients, {} of them slow on purpose. Check: <b class="{}">{verdict}</b> &mdash; {good} of {total} fast clients got every message in order with no gap.</p>"#,
            self.clients.len(),
            self.slow().count(),
            if self.passed() { "ok" } else { "bad" },
        );
        out.push_str("<div class=\"grid\"><section><h2>Run</h2><table>");
        for (name, value) in &self.params {
            let _ = write!(
                out,
                "<tr><th>{}</th><td>{}</td></tr>",
                escape(name),
                escape(value)
            );
        }
        out.push_str("</table></section><section><h2>Results</h2><table>");
        let deliveries = self.histograms.deliveries;
        let rows = [
            ("deliveries", format_count(deliveries)),
            (
                "deliveries / s",
                format_count((deliveries as f64 / self.feed_seconds.max(1e-3)) as u64),
            ),
            (
                "latency, fast clients",
                Self::latency_line(&self.histograms.fast),
            ),
            (
                "latency, slow clients",
                Self::latency_line(&self.histograms.slow),
            ),
        ];
        for (name, value) in rows {
            let _ = write!(out, "<tr><th>{name}</th><td>{}</td></tr>", escape(&value));
        }
        out.push_str("</table></section></div>");
        self.topic_table(&mut out);
        let charts = Charts {
            timeline: &self.timeline,
            histograms: &self.histograms,
        };
        charts.write(&mut out);
        self.client_table(&mut out);
        out.push_str(FOOT);
        out
    }

    fn topic_table(&self, out: &mut String) {
        out.push_str("<h2>Topics</h2>");
        html_table(out, &TOPIC_COLUMNS, &self.topic_rows());
    }

    /// Per topic: name, policy, published, queued, dropped, closed.
    fn topic_rows(&self) -> Vec<[String; 6]> {
        self.topics
            .iter()
            .map(|(topic, stats)| {
                [
                    topic.name().to_owned(),
                    policy_name(topic.policy()),
                    format_count(stats.published),
                    format_count(stats.queued),
                    format_count(stats.dropped),
                    format_count(stats.closed),
                ]
            })
            .collect()
    }

    /// Per slow client: pace, received, reported dropped, policy closes, connections, and
    /// whether every message is accounted for.
    fn slow_rows(&self) -> Vec<[String; 6]> {
        self.slow()
            .map(|client| {
                [
                    pace_name(client.pace).to_owned(),
                    format_count(client.received.iter().sum()),
                    format_count(client.reported.iter().sum()),
                    client.policy_closes.to_string(),
                    client.connections.to_string(),
                    if slow_ok(client) { "yes" } else { "NO" }.to_owned(),
                ]
            })
            .collect()
    }

    fn client_table(&self, out: &mut String) {
        out.push_str("<h2>Slow clients</h2>");
        html_table(out, &SLOW_COLUMNS, &self.slow_rows());
        let failures = self.failures();
        if !failures.is_empty() {
            out.push_str("<h2>Failures</h2><ul>");
            for line in failures {
                let _ = write!(out, "<li>{}</li>", escape(&line));
            }
            out.push_str("</ul>");
        }
    }
}

/// A table's column: its heading and its width in the text table (negative: left-aligned).
type Column = (&'static str, i32);

const TOPIC_COLUMNS: [Column; 6] = [
    ("topic", -8),
    ("slow-consumer policy", -20),
    ("published", 11),
    ("queued", 12),
    ("dropped", 10),
    ("closed", 7),
];

const SLOW_COLUMNS: [Column; 6] = [
    ("pace", -10),
    ("received", 10),
    ("told dropped", 12),
    ("closed", 7),
    ("connections", 11),
    ("all accounted for", 18),
];

/// Rows under their headings, indented, columns padded to their widths.
fn text_table(out: &mut String, columns: &[Column], rows: &[[String; 6]]) {
    let headings: Vec<String> = columns.iter().map(|c| c.0.to_owned()).collect();
    for cells in std::iter::once(headings.as_slice()).chain(rows.iter().map(|r| r.as_slice())) {
        out.push_str("  ");
        for (cell, &(_, width)) in cells.iter().zip(columns) {
            let pad = width.unsigned_abs() as usize;
            let _ = if width < 0 {
                write!(out, "{cell:<pad$} ")
            } else {
                write!(out, "{cell:>pad$} ")
            };
        }
        out.truncate(out.trim_end().len());
        out.push('\n');
    }
}

/// The same as an HTML table (numbers right-aligned by the page's style).
fn html_table(out: &mut String, columns: &[Column], rows: &[[String; 6]]) {
    out.push_str("<table class=\"numbers\"><tr>");
    for (heading, _) in columns {
        let _ = write!(out, "<th>{}</th>", escape(heading));
    }
    out.push_str("</tr>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            // Numbers are right-aligned, words left.
            let class = if cell.starts_with(|c: char| c.is_ascii_digit()) {
                " class=\"n\""
            } else {
                ""
            };
            let _ = write!(out, "<td{class}>{}</td>", escape(cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
}

fn fast_ok(client: &ClientReport) -> bool {
    client.failure.is_none() && client.gapless && client.policy_closes == 0
}

fn slow_ok(client: &ClientReport) -> bool {
    client.failure.is_none() && client.out_of_order == 0 && client.complete
}

fn pace_name(pace: Pace) -> &'static str {
    match pace {
        Pace::Fast => "fast",
        Pace::Stalling => "stalling",
        Pace::Throttled => "throttled",
    }
}

fn policy_name(policy: SlowConsumer) -> String {
    match policy {
        SlowConsumer::Conflate => "conflate per symbol".to_owned(),
        SlowConsumer::DropOldest => "drop oldest".to_owned(),
        SlowConsumer::Close(code) => format!("close with {}", code.0),
        other => format!("{other:?}"),
    }
}

const HEAD: &str = r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>tickwire demo report</title>
<style>
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1f2937;background:#f8fafc;margin:0}
main{max-width:1080px;margin:0 auto;padding:24px 20px 40px}
h1{font-size:26px;margin:0 0 6px}h2{font-size:18px;margin:28px 0 8px}
.lead{margin:0 0 12px;color:#374151}.ok{color:#15803d}.bad{color:#b91c1c}
.grid{display:grid;grid-template-columns:1fr 1fr;gap:24px}
table{border-collapse:collapse;background:#fff;border:1px solid #e5e7eb;width:100%}
th,td{padding:5px 10px;border-bottom:1px solid #e5e7eb;text-align:left;vertical-align:top}
th{font-weight:600;color:#374151;background:#f3f4f6;white-space:nowrap}
td.n{text-align:right;font-variant-numeric:tabular-nums}
svg.chart{display:block;width:100%;height:auto;background:#fff;border:1px solid #e5e7eb;margin:16px 0 0}
footer{margin-top:24px;color:#6b7280;font-size:13px}
"#;

/// After the charts' own rules ([`tickwire_charts::STYLE`]).
const HEAD_END: &str = "</style></head><body><main>\n";

const FOOT: &str = r#"<footer>Generated by <code>tickwire demo</code>. Latency is measured from the feed's publish call to the client's receive, in one process on one machine (see docs/DEMO.md).</footer>
</main></body></html>
"#;
