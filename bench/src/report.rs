//! The report: markdown tables on stdout and in `target/bench-report/`, one SVG percentile plot
//! per latency table, and an `index.html` that shows them together.
//!
//! It owns presentation and the choice of the representative round (the median of the rounds
//! by p50), not measurement ([`crate::harness`]) nor workloads.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use hdrhistogram::Histogram;
use plotters::prelude::*;

use crate::harness::Clock;

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

    /// Plots the percentile curves (x: percentile on a "nines" scale, y: ticks, log) as SVG.
    /// Non-latency tables have no plot.
    pub fn plot(&self, path: &Path) -> io::Result<bool> {
        let curves: Vec<(&str, Vec<(f64, f64)>)> = self
            .rows
            .iter()
            .filter_map(|row| match &row.figures {
                Figures::Latency(h) => Some((row.library.as_str(), curve(h))),
                _ => None,
            })
            .collect();
        if curves.is_empty() {
            return Ok(false);
        }
        let y_max = curves
            .iter()
            .flat_map(|(_, c)| c.iter().map(|&(_, y)| y))
            .fold(1.0f64, f64::max);
        let y_min = curves
            .iter()
            .flat_map(|(_, c)| c.iter().map(|&(_, y)| y))
            .fold(f64::MAX, f64::min)
            .max(1.0);
        let root = SVGBackend::new(path, (900, 520)).into_drawing_area();
        let draw = || -> Result<(), Box<dyn std::error::Error>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(&self.title, ("sans-serif", 18))
                .margin(12)
                .x_label_area_size(40)
                .y_label_area_size(70)
                .build_cartesian_2d(0.0f64..4.0f64, (y_min * 0.8..y_max * 1.25).log_scale())?;
            chart
                .configure_mesh()
                .x_desc("percentile")
                .y_desc("ticks per op (log)")
                .x_labels(5)
                .x_label_formatter(&|x| nines_label(*x))
                .y_labels(8)
                .y_label_formatter(&|y| format!("{y:.0}"))
                .light_line_style(WHITE)
                .draw()?;
            for (i, (library, points)) in curves.iter().enumerate() {
                let color = Palette99::pick(i).to_rgba();
                chart
                    .draw_series(LineSeries::new(
                        points.iter().copied(),
                        color.stroke_width(2),
                    ))?
                    .label(*library)
                    .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], color));
            }
            chart
                .configure_series_labels()
                .border_style(BLACK)
                .background_style(WHITE.mix(0.9))
                .position(SeriesLabelPosition::UpperLeft)
                .draw()?;
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| io::Error::other(e.to_string()))?;
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

/// Percentile curve points (x on the nines scale, y ticks) from p0 to p99.99.
fn curve(h: &Histogram<u64>) -> Vec<(f64, f64)> {
    let mut points = Vec::new();
    let mut x = 0.0;
    while x <= 4.0 + 1e-9 {
        let quantile = 1.0 - 10f64.powf(-x);
        points.push((x, h.value_at_quantile(quantile).max(1) as f64));
        x += 0.05;
    }
    points
}

fn nines_label(x: f64) -> String {
    if (x - x.round()).abs() > 1e-6 {
        return String::new();
    }
    match x.round() as i32 {
        0 => "p0".into(),
        1 => "p90".into(),
        2 => "p99".into(),
        3 => "p99.9".into(),
        _ => "p99.99".into(),
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

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
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
