//! The report: markdown tables on stdout and in `target/bench-report/`, one SVG percentile plot
//! per latency table, and an `index.html` that shows them together.
//!
//! It owns presentation and the choice of the representative round (the median of the rounds
//! by p50), not measurement ([`crate::harness`]) nor workloads.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use hdrhistogram::Histogram;
use tickwire_charts::{
    Frame, Legend, PALETTE, Scale, Series, Size, escape, percentile_axis, percentile_curve,
    percentile_tick,
};

use crate::harness::Clock;

/// How far the percentile plots reach: 99.99 %.
const NINES: u32 = 4;

/// The percentiles every latency table shows.
const PERCENTILES: [(f64, &str); 4] =
    [(50.0, "p50"), (90.0, "p90"), (99.0, "p99"), (99.9, "p99.9")];

/// A sentence comparing two libraries round by round: the median over rounds of
/// `a`'s rate divided by `b`'s in the same round, its interquartile range, and in how many
/// rounds `a` was at least as fast. Pairing rounds cancels the drift of a shared machine that
/// the ranges of separate medians keep. `a` and `b` hold one rate per round, in round order.
pub fn paired_rates(a_name: &str, a: &[f64], b_name: &str, b: &[f64]) -> String {
    let mut ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .filter(|(_, b)| **b > 0.0)
        .map(|(a, b)| a / b)
        .collect();
    if ratios.is_empty() {
        return String::new();
    }
    ratios.sort_by(f64::total_cmp);
    let at = |q: f64| ratios[((ratios.len() - 1) as f64 * q).round() as usize];
    let ahead = ratios.iter().filter(|r| **r >= 1.0).count();
    format!(
        " Paired by round, {a_name} / {b_name}: median {:.3} (quartiles {:.3}-{:.3}), \
         {a_name} at least as fast in {ahead} of {} rounds.",
        at(0.5),
        at(0.25),
        at(0.75),
        ratios.len()
    )
}

/// The same pairing for a latency quantile (lower is better): the median over rounds of `a`'s
/// value at quantile `q` divided by `b`'s in the same round, its interquartile range, and in
/// how many rounds `a` was no slower.
pub fn paired_quantile(
    a_name: &str,
    a: &[Histogram<u64>],
    b_name: &str,
    b: &[Histogram<u64>],
    q: f64,
) -> String {
    let mut ratios: Vec<f64> = a
        .iter()
        .zip(b)
        .map(|(a, b)| (a.value_at_quantile(q) as f64, b.value_at_quantile(q) as f64))
        .filter(|(_, b)| *b > 0.0)
        .map(|(a, b)| a / b)
        .collect();
    if ratios.is_empty() {
        return String::new();
    }
    ratios.sort_by(f64::total_cmp);
    let at = |x: f64| ratios[((ratios.len() - 1) as f64 * x).round() as usize];
    let no_slower = ratios.iter().filter(|r| **r <= 1.0).count();
    format!(
        " p{} paired by round, {a_name} / {b_name}: median {:.3} (quartiles {:.3}-{:.3}), \
         {a_name} no slower in {no_slower} of {} rounds.",
        q * 100.0,
        at(0.5),
        at(0.25),
        at(0.75),
        ratios.len()
    )
}

/// The median of per-round figures (the upper middle one of an even count; NaN for none).
pub fn median(rounds: &[f64]) -> f64 {
    let mut sorted = rounds.to_vec();
    sorted.sort_by(f64::total_cmp);
    sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
}

/// The order to run `n` libraries in round `round` (1-based): rotated by one each round, so
/// no library always runs first or right after the same neighbour.
pub fn round_order(n: usize, round: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |i| (i + round) % n)
}

/// What one library measured in one workload.
#[derive(Debug, Clone)]
pub enum Figures {
    /// Ticks per operation, the median round's histogram.
    Latency(Histogram<u64>),
    /// Operations per second, the median of the rounds, with every round kept for the range.
    Rate(Vec<f64>),
    /// Instructions per operation under callgrind.
    Instructions(f64),
    /// Cells already formatted by the suite, one per entry of [`Table::columns`] (for tables
    /// whose rows carry several figures, like the server suite's rate, latency and CPU).
    Cells(Vec<String>),
}

/// One library's line in a table.
#[derive(Debug, Clone)]
pub struct Row {
    /// The library (and API) measured.
    pub library: String,
    /// Its figures.
    pub figures: Figures,
}

impl Row {
    /// The row for `library` from several rounds of the same workload: the round whose p50 is
    /// the median of the rounds' p50s (its whole histogram, so percentiles stay consistent).
    pub fn median_round(library: &str, mut rounds: Vec<Histogram<u64>>) -> Self {
        rounds.sort_by_key(|h| h.value_at_quantile(0.5));
        let median = rounds.swap_remove(rounds.len() / 2);
        Self {
            library: library.to_owned(),
            figures: Figures::Latency(median),
        }
    }

    /// A throughput row from per-round rates (operations per second).
    pub fn rate(library: &str, mut rounds: Vec<f64>) -> Self {
        rounds.sort_by(f64::total_cmp);
        Self {
            library: library.to_owned(),
            figures: Figures::Rate(rounds),
        }
    }

    /// The figure ratios are computed from: p50 ticks, the median rate, or instructions.
    fn headline(&self) -> f64 {
        match &self.figures {
            Figures::Latency(h) => h.value_at_quantile(0.5) as f64,
            Figures::Rate(r) => r[r.len() / 2],
            Figures::Instructions(i) => *i,
            Figures::Cells(_) => f64::NAN,
        }
    }
}

/// One workload, every library measured on the same bytes.
#[derive(Debug, Clone)]
pub struct Table {
    /// File-name-safe identifier (the SVG is `ID.svg`).
    pub id: String,
    /// Heading.
    pub title: String,
    /// How the workload runs and why the comparison is fair, printed under the table.
    pub note: String,
    /// The row whose figure every ratio divides (tickwire, or the raw floor for loopback).
    pub baseline: String,
    /// One row per library.
    pub rows: Vec<Row>,
    /// The column headings after `library` for rows of [`Figures::Cells`] (unused otherwise).
    pub columns: Vec<String>,
}

impl Table {
    /// An empty table.
    pub fn new(id: &str, title: &str, baseline: &str, note: &str) -> Self {
        Self {
            id: id.to_owned(),
            title: title.to_owned(),
            note: note.to_owned(),
            baseline: baseline.to_owned(),
            rows: Vec::new(),
            columns: Vec::new(),
        }
    }

    /// An empty table of [`Figures::Cells`] rows under these column headings.
    pub fn with_columns(id: &str, title: &str, columns: &[&str], note: &str) -> Self {
        Self {
            columns: columns.iter().map(|c| (*c).to_owned()).collect(),
            ..Self::new(id, title, "", note)
        }
    }

    /// The row of `library`, if measured.
    pub fn row(&self, library: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.library == library)
    }

    /// The table as markdown. Latency: ticks per percentile, p50 in ns, ratio of p50 to the
    /// baseline's. Rate: median and range, ratio of medians. Instructions: count and ratio.
    pub fn markdown(&self, clock: &Clock) -> String {
        let mut out = format!("### {}\n\n", self.title);
        let base = self.row(&self.baseline).map(Row::headline);
        let ratio = |row: &Row| match base {
            Some(b) if b > 0.0 => format!("{:.2}x", row.headline() / b),
            _ => "-".to_owned(),
        };
        let Some(first) = self.rows.first() else {
            return out;
        };
        match first.figures {
            Figures::Latency(_) => {
                out.push_str("| library | p50 ticks | p90 | p99 | p99.9 | max | p50 ns | p50 vs ");
                let _ = writeln!(out, "{} |", self.baseline);
                out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|\n");
                for row in &self.rows {
                    let Figures::Latency(h) = &row.figures else {
                        continue;
                    };
                    let _ = write!(out, "| {} ", row.library);
                    for (p, _) in PERCENTILES {
                        let _ = write!(out, "| {} ", h.value_at_percentile(p));
                    }
                    let _ = writeln!(
                        out,
                        "| {} | {:.1} | {} |",
                        h.max(),
                        clock.ns(h.value_at_quantile(0.5)),
                        ratio(row)
                    );
                }
            }
            Figures::Rate(_) => {
                let _ = writeln!(
                    out,
                    "| library | median /s | range /s | vs {} |\n|---|---:|---:|---:|",
                    self.baseline
                );
                for row in &self.rows {
                    let Figures::Rate(r) = &row.figures else {
                        continue;
                    };
                    let _ = writeln!(
                        out,
                        "| {} | {} | {} - {} | {} |",
                        row.library,
                        human(r[r.len() / 2]),
                        human(r[0]),
                        human(r[r.len() - 1]),
                        ratio(row)
                    );
                }
            }
            Figures::Instructions(_) => {
                let _ = writeln!(
                    out,
                    "| library | instructions / op | vs {} |\n|---|---:|---:|",
                    self.baseline
                );
                for row in &self.rows {
                    let Figures::Instructions(i) = row.figures else {
                        continue;
                    };
                    let _ = writeln!(out, "| {} | {:.1} | {} |", row.library, i, ratio(row));
                }
            }
            Figures::Cells(_) => {
                let _ = writeln!(
                    out,
                    "| library | {} |\n|---|{}",
                    self.columns.join(" | "),
                    "---:|".repeat(self.columns.len())
                );
                for row in &self.rows {
                    let Figures::Cells(cells) = &row.figures else {
                        continue;
                    };
                    let _ = writeln!(out, "| {} | {} |", row.library, cells.join(" | "));
                }
            }
        }
        if !self.note.is_empty() {
            let _ = writeln!(out, "\n{}", self.note);
        }
        out
    }

    /// Plots the percentile curves (across: percentile, one decade per nine up to 99.99 %;
    /// up: ticks, log) as SVG, drawn by tickwire-charts like the demo's report. Non-latency
    /// tables have no plot.
    pub fn plot(&self, path: &Path) -> io::Result<bool> {
        let curves: Vec<(&str, Vec<(f64, f64)>)> = self
            .rows
            .iter()
            .filter_map(|row| match &row.figures {
                // The whole curve to 99.99 % whatever the sample count: flat at the maximum
                // past what a quick run's samples support.
                Figures::Latency(h) => {
                    Some((row.library.as_str(), percentile_curve(h, NINES, false)))
                }
                _ => None,
            })
            .collect();
        if curves.is_empty() {
            return Ok(false);
        }
        let values = || {
            curves
                .iter()
                .flat_map(|(_, c)| c.iter().map(|&(_, y)| y.max(1.0)))
        };
        let y_max = values().fold(1.0f64, f64::max);
        let y_min = values().fold(f64::MAX, f64::min);
        let series: Vec<Series<'_>> = curves
            .into_iter()
            .zip(PALETTE.iter().cycle())
            .map(|((library, points), color)| Series::new(library, color, points))
            .collect();
        let frame = Frame {
            id: &self.id,
            title: &self.title,
            x_label: "percentile",
            y_label: "ticks per op (log)",
            x: percentile_axis(NINES),
            y: Scale::Log {
                min: y_min * 0.8,
                max: y_max * 1.25,
            },
            x_format: percentile_tick,
            y_format: compact_count,
            size: Size {
                width: 900.0,
                height: 520.0,
            },
            legend: Legend::Box,
        };
        std::fs::write(path, frame.document(&frame.lines(&series)))?;
        Ok(true)
    }
}

/// Everything one run measured, with the facts needed to reproduce it.
#[derive(Debug)]
pub struct Report {
    /// Calibration used for every ns figure.
    pub clock: Clock,
    /// Lines printed above the tables: machine, date, pinning, command.
    pub preamble: Vec<String>,
    /// The tables, in the order measured.
    pub tables: Vec<Table>,
}

impl Report {
    /// The whole report as markdown.
    pub fn markdown(&self) -> String {
        let mut out = String::from("# tickwire benchmark report\n\n");
        for line in &self.preamble {
            let _ = writeln!(out, "- {line}");
        }
        out.push('\n');
        for table in &self.tables {
            out.push_str(&table.markdown(&self.clock));
            out.push('\n');
        }
        out
    }

    /// Writes `report.md`, one SVG per latency table and `index.html` into `dir`.
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        std::fs::write(dir.join("report.md"), self.markdown())?;
        let mut html = String::from(
            "<!doctype html><meta charset=utf-8><title>tickwire benchmarks</title>\
             <style>body{font-family:sans-serif;max-width:980px;margin:auto}\
             table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;\
             text-align:right}td:first-child{text-align:left}</style>\
             <h1>tickwire benchmark report</h1><ul>",
        );
        for line in &self.preamble {
            let _ = write!(html, "<li>{}</li>", escape(line));
        }
        html.push_str("</ul>");
        for table in &self.tables {
            let _ = write!(html, "<h2>{}</h2>", escape(&table.title));
            html.push_str(&markdown_table_to_html(&table.markdown(&self.clock)));
            let svg = format!("{}.svg", table.id);
            if table.plot(&dir.join(&svg))? {
                let _ = write!(
                    html,
                    "<p><img src=\"{svg}\" alt=\"{}\"></p>",
                    escape(&table.title)
                );
            }
        }
        std::fs::write(dir.join("index.html"), html)
    }
}

/// 12345678.0 as "12.35 M".
pub fn human(value: f64) -> String {
    if value >= 1e9 {
        format!("{:.2} G", value / 1e9)
    } else if value >= 1e6 {
        format!("{:.2} M", value / 1e6)
    } else if value >= 1e3 {
        format!("{:.2} k", value / 1e3)
    } else {
        format!("{value:.1}")
    }
}

/// A round tick value as a short label: 200, 5k, 10M (the `human` units, no trailing zeros).
fn compact_count(value: f64) -> String {
    let (number, unit) = if value >= 1e9 {
        (value / 1e9, "G")
    } else if value >= 1e6 {
        (value / 1e6, "M")
    } else if value >= 1e3 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let digits = format!("{number:.2}");
    format!(
        "{}{unit}",
        digits.trim_end_matches('0').trim_end_matches('.')
    )
}

/// The pipe tables [`Table::markdown`] makes, as HTML (header row, separator skipped).
fn markdown_table_to_html(markdown: &str) -> String {
    let mut html = String::new();
    let mut in_table = false;
    for line in markdown.lines() {
        if let Some(cells) = line.strip_prefix('|') {
            if cells.starts_with("---") {
                continue;
            }
            let tag = if in_table { "td" } else { "th" };
            if !in_table {
                html.push_str("<table>");
                in_table = true;
            }
            html.push_str("<tr>");
            for cell in cells.trim_end_matches('|').split('|') {
                let _ = write!(html, "<{tag}>{}</{tag}>", escape(cell.trim()));
            }
            html.push_str("</tr>");
        } else {
            if in_table {
                html.push_str("</table>");
                in_table = false;
            }
            if !line.is_empty() && !line.starts_with('#') {
                let _ = write!(html, "<p>{}</p>", escape(line));
            }
        }
    }
    if in_table {
        html.push_str("</table>");
    }
    html
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latency(library: &str, base: u64) -> Row {
        let mut histogram = Histogram::new_with_bounds(1, 1 << 40, 3).unwrap();
        for i in 0..10_000 {
            histogram.record(base + i % 100).unwrap();
        }
        histogram.record(base * 50).unwrap();
        Row {
            library: library.to_owned(),
            figures: Figures::Latency(histogram),
        }
    }

    #[test]
    fn a_latency_table_plots_one_curve_per_library_as_a_standalone_svg() {
        let dir = std::env::temp_dir().join(format!("tickwire-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut table = Table::new("rtt", "Round trip <128 B>", "tickwire", "");
        table.rows = vec![latency("tickwire", 1_000), latency("tungstenite", 3_000)];
        let path = dir.join("rtt.svg");
        assert!(table.plot(&path).unwrap());
        let svg = std::fs::read_to_string(&path).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();

        // An <img> shows it as it is: its size, style and background are inside.
        assert!(
            svg.starts_with(r#"<svg class="chart" data-chart="rtt""#),
            "{svg}"
        );
        assert!(svg.contains(r#"width="900" height="520"><style>"#));
        assert!(svg.contains("Round trip &lt;128 B&gt;"));
        for library in ["tickwire", "tungstenite"] {
            let at = svg
                .find(&format!(r#"data-series="{library}" d=""#))
                .unwrap_or_else(|| panic!("no curve for {library}"));
            let d = &svg[at..svg[at..].find("\" stroke").unwrap() + at];
            // 20 points a decade to 99.99 %, whatever the sample count.
            assert_eq!(d.matches(['M', 'L']).count(), 81, "{d}");
        }
        assert_eq!(svg.matches(r#"class="legend""#).count(), 2);
        // 800 to 3,874 ticks: no three round log ticks inside, so round linear steps.
        for tick in ["0%", "90%", "99.99%", "1k", "2k", "3k"] {
            assert!(
                svg.contains(&format!(">{tick}</text>")),
                "tick {tick}: {svg}"
            );
        }
    }

    #[test]
    fn tables_without_latency_have_no_plot() {
        let mut table = Table::new("rate", "Rate", "tickwire", "");
        table.rows = vec![Row::rate("tickwire", vec![1e6, 2e6])];
        let path = std::env::temp_dir().join("tickwire-report-no-plot.svg");
        assert!(!table.plot(&path).unwrap());
        assert!(!path.exists());
    }

    #[test]
    fn compact_counts_drop_trailing_zeros() {
        assert_eq!(compact_count(200.0), "200");
        assert_eq!(compact_count(5_000.0), "5k");
        assert_eq!(compact_count(1.5e6), "1.5M");
        assert_eq!(compact_count(1e7), "10M");
        assert_eq!(compact_count(2e9), "2G");
    }
}
