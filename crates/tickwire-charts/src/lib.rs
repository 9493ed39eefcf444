//! The SVG charts of tickwire's reports, one renderer for both: the demo's HTML page
//! (`tickwire demo --report`, charts inline in the page) and the bench's report (one `.svg`
//! file per latency table beside `index.html`). Line charts (one `<path>` per series) and
//! bar charts (one `<rect>` per bar), on linear or logarithmic axes with tick labels and a
//! legend; [`percentile_curve`] and its axis for the latency percentile plots both draw.
//!
//! The markup is plain SVG with a class on each part and no script, so a page that inlines it
//! fetches nothing; the look is [`STYLE`], which a page includes once and
//! [`Frame::document`] puts inside a standalone file.
//!
//! Owns geometry and markup only; what is plotted, on which axes, is each report's choice.

#![forbid(unsafe_code)]

mod percentile;
mod scale;

use std::fmt::Write as _;

pub use percentile::{percentile_axis, percentile_curve, percentile_tick};
pub use scale::Scale;

/// The CSS for the charts' classes: a page that inlines charts includes it in its `<style>`;
/// a standalone chart ([`Frame::document`]) carries it. The page sets the chart's box (width,
/// border, margins) itself.
pub const STYLE: &str = r#"svg.chart{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
svg .title{font-size:15px;font-weight:600;fill:#111827}
svg .tick{font-size:12px;fill:#4b5563}svg .label{font-size:13px;fill:#374151}svg .legend{font-size:13px;fill:#111827}
svg .grid{stroke:#e5e7eb;stroke-width:1}svg .axes{fill:none;stroke:#9ca3af;stroke-width:1}
svg .series{fill:none;stroke-width:2;stroke-linejoin:round}
svg .legend-box{fill:#fff;fill-opacity:.9;stroke:#9ca3af;stroke-width:1}
"#;

/// Series colours that stay apart from each other on white, in the order to hand them out.
pub const PALETTE: [&str; 10] = [
    "#2563eb", "#dc2626", "#16a34a", "#d97706", "#9333ea", "#0891b2", "#db2777", "#65a30d",
    "#4b5563", "#ea580c",
];

/// A chart's size in SVG user units (a page scales an inline chart to fit).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Size {
    /// Across.
    pub width: f64,
    /// Up.
    pub height: f64,
}

impl Size {
    /// A wide, short band: a page of charts one under the other (the demo's report).
    pub const BAND: Self = Self {
        width: 1040.0,
        height: 300.0,
    };
}

/// Where a line chart names its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Legend {
    /// In the title's row, right-aligned, 150 units per series: for two or three.
    TitleRow,
    /// A box in the plot's top left corner, one row per series: for many (a bench table's
    /// libraries), where the curves of a percentile plot, low at its left, rarely reach.
    Box,
}

/// Room for the axis labels: left, right, top, bottom.
const MARGIN: (f64, f64, f64, f64) = (78.0, 40.0, 34.0, 46.0);

/// A chart's frame: title, axes and how their values read.
#[derive(Debug, Clone, Copy)]
pub struct Frame<'a> {
    /// `data-chart` of the `<svg>` (what the demo's report check looks for).
    pub id: &'a str,
    /// The heading, drawn above the plot.
    pub title: &'a str,
    /// The across axis' name.
    pub x_label: &'a str,
    /// The up axis' name.
    pub y_label: &'a str,
    /// The across axis.
    pub x: Scale,
    /// The up axis.
    pub y: Scale,
    /// An across tick's label.
    pub x_format: fn(f64) -> String,
    /// An up tick's label.
    pub y_format: fn(f64) -> String,
    /// The chart's size.
    pub size: Size,
    /// Where [`lines`](Self::lines) puts the legend.
    pub legend: Legend,
}

/// One line of a line chart.
#[derive(Debug, Clone)]
pub struct Series<'a> {
    /// Its name in the legend (and `data-series` of its path).
    pub name: &'a str,
    /// Its stroke colour (see [`PALETTE`]).
    pub color: &'a str,
    /// Its points, in data units, in the order to join them.
    pub points: Vec<(f64, f64)>,
}

impl<'a> Series<'a> {
    /// A series from its parts.
    pub fn new(name: &'a str, color: &'a str, points: Vec<(f64, f64)>) -> Self {
        Self {
            name,
            color,
            points,
        }
    }
}

impl Frame<'_> {
    /// A line chart: one path per series, and the legend.
    pub fn lines(&self, series: &[Series<'_>]) -> String {
        let mut out = String::new();
        self.open(&mut out);
        for line in series {
            let points: Vec<(f64, f64)> = line
                .points
                .iter()
                .map(|&(x, y)| (self.plot_x(x), self.plot_y(y)))
                .collect();
            let _ = write!(
                out,
                r#"<path class="series" data-series="{}" d="{}" stroke="{}"/>"#,
                escape(line.name),
                path_data(&points),
                escape(line.color)
            );
        }
        match self.legend {
            Legend::TitleRow => self.title_row_legend(&mut out, series),
            Legend::Box => self.box_legend(&mut out, series),
        }
        out.push_str("</svg>");
        out
    }

    /// A bar chart: each bar spans `x0..x1` and rises to `y`.
    pub fn bars(&self, bars: &[(f64, f64, f64)], color: &str) -> String {
        let mut out = String::new();
        self.open(&mut out);
        let floor = self.size.height - MARGIN.3;
        for &(x0, x1, y) in bars {
            let (left, right) = (self.plot_x(x0), self.plot_x(x1));
            let top = self.plot_y(y);
            let _ = write!(
                out,
                r#"<rect class="bar" x="{:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{}"/>"#,
                left + 0.5,
                (right - left - 1.0).max(0.5),
                floor - top,
                escape(color)
            );
        }
        out.push_str("</svg>");
        out
    }

    /// `chart` (from [`lines`](Self::lines) or [`bars`](Self::bars) of this frame) as a
    /// standalone `.svg` file: its size in pixels, a white background and [`STYLE`] inside,
    /// for an `<img>` or an image viewer, where no page's CSS reaches.
    pub fn document(&self, chart: &str) -> String {
        // The opening tag is `open`'s, its attribute values escaped: its first `>` ends it.
        let Some(end) = chart.find('>').filter(|_| chart.starts_with("<svg ")) else {
            return chart.to_owned();
        };
        let mut out = String::with_capacity(chart.len() + STYLE.len() + 160);
        out.push_str(&chart[..end]);
        let _ = write!(
            out,
            r##" width="{}" height="{}"><style>{STYLE}</style><rect width="100%" height="100%" fill="#fff"/>"##,
            self.size.width, self.size.height
        );
        out.push_str(&chart[end + 1..]);
        out
    }

    fn plot_x(&self, value: f64) -> f64 {
        MARGIN.0 + self.x.fraction(value) * (self.size.width - MARGIN.0 - MARGIN.1)
    }

    fn plot_y(&self, value: f64) -> f64 {
        let Size { height, .. } = self.size;
        height - MARGIN.3 - self.y.fraction(value) * (height - MARGIN.2 - MARGIN.3)
    }

    /// `<svg>`, title, grid, ticks and axis labels (the caller adds the data and `</svg>`).
    fn open(&self, out: &mut String) {
        let Size { width, height } = self.size;
        let _ = write!(
            out,
            r#"<svg class="chart" data-chart="{id}" viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{title}">"#,
            id = escape(self.id),
            title = escape(self.title),
        );
        let _ = write!(
            out,
            r#"<text class="title" x="{}" y="20">{}</text>"#,
            MARGIN.0,
            escape(self.title)
        );
        let (left, right) = (MARGIN.0, width - MARGIN.1);
        let (top, bottom) = (MARGIN.2, height - MARGIN.3);
        for tick in self.y.ticks() {
            let y = self.plot_y(tick);
            let _ = write!(
                out,
                r#"<line class="grid" x1="{left}" y1="{y:.1}" x2="{right}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                left - 6.0,
                y + 4.0,
                escape(&(self.y_format)(tick))
            );
        }
        for tick in self.x.ticks() {
            let x = self.plot_x(tick);
            let _ = write!(
                out,
                r#"<line class="grid" x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{bottom}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                bottom + 16.0,
                escape(&(self.x_format)(tick))
            );
        }
        let _ = write!(
            out,
            r#"<rect class="axes" x="{left}" y="{top}" width="{}" height="{}"/><text class="label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text class="label" transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            right - left,
            bottom - top,
            (left + right) / 2.0,
            height - 8.0,
            escape(self.x_label),
            (top + bottom) / 2.0,
            escape(self.y_label),
        );
    }

    fn title_row_legend(&self, out: &mut String, series: &[Series<'_>]) {
        for (i, line) in series.iter().enumerate() {
            let x = self.size.width - MARGIN.1 - 150.0 * (series.len() - i) as f64;
            legend_entry(out, line, x, 17.0);
        }
    }

    fn box_legend(&self, out: &mut String, series: &[Series<'_>]) {
        if series.is_empty() {
            return;
        }
        // No text measuring in SVG: 7.5 units per character covers the legend's 13 px font.
        let longest = series.iter().map(|s| s.name.chars().count()).max();
        let width = 40.0 + 7.5 * longest.unwrap_or(0) as f64;
        let (x, y) = (MARGIN.0 + 10.0, MARGIN.2 + 10.0);
        let _ = write!(
            out,
            r#"<rect class="legend-box" x="{x}" y="{y}" width="{width:.1}" height="{}"/>"#,
            10.0 + 20.0 * series.len() as f64
        );
        for (i, line) in series.iter().enumerate() {
            legend_entry(out, line, x + 8.0, y + 20.0 + 20.0 * i as f64);
        }
    }
}

/// A colour swatch and the series' name, the text's baseline at `y`.
fn legend_entry(out: &mut String, line: &Series<'_>, x: f64, y: f64) {
    let _ = write!(
        out,
        r#"<rect x="{x:.1}" y="{:.1}" width="14" height="4" fill="{}"/><text class="legend" x="{:.1}" y="{y:.1}">{}</text>"#,
        y - 6.0,
        escape(line.color),
        x + 20.0,
        escape(line.name)
    );
}

/// SVG path data through `points` (already in SVG coordinates): `M x y L x y ...`.
pub fn path_data(points: &[(f64, f64)]) -> String {
    let mut d = String::with_capacity(points.len() * 16);
    for (i, (x, y)) in points.iter().enumerate() {
        let command = if i == 0 { 'M' } else { 'L' };
        if i > 0 {
            d.push(' ');
        }
        let _ = write!(d, "{command}{x:.1} {y:.1}");
    }
    d
}

/// `text` safe inside HTML or SVG text and double-quoted attributes.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame with linear axes from 0 to `x_max` and `y_max`.
    fn linear_frame(title: &str, x_max: f64, y_max: f64) -> Frame<'_> {
        Frame {
            id: "test",
            title,
            x_label: "x",
            y_label: "y",
            x: Scale::Linear {
                min: 0.0,
                max: x_max,
            },
            y: Scale::Linear {
                min: 0.0,
                max: y_max,
            },
            x_format: |v| format!("{v}"),
            y_format: |v| format!("{v}"),
            size: Size::BAND,
            legend: Legend::TitleRow,
        }
    }

    #[test]
    fn path_data_moves_then_draws_lines() {
        assert_eq!(path_data(&[]), "");
        assert_eq!(
            path_data(&[(1.0, 2.0), (3.24, 4.0), (5.0, 6.06)]),
            "M1.0 2.0 L3.2 4.0 L5.0 6.1"
        );
    }

    #[test]
    fn text_and_attributes_are_escaped() {
        assert_eq!(
            escape(r#"<b>"p99" & 'max'</b>"#),
            "&lt;b&gt;&quot;p99&quot; &amp; &#39;max&#39;&lt;/b&gt;"
        );
        let svg = linear_frame("a <script>", 1.0, 1.0).lines(&[Series {
            name: "\"quoted\"",
            color: "#123456",
            points: vec![(0.0, 0.0), (1.0, 1.0)],
        }]);
        assert!(!svg.contains("<script>"));
        assert!(svg.contains("a &lt;script&gt;"));
        assert!(svg.contains(r#"data-series="&quot;quoted&quot;""#));
        assert!(svg.contains(r#"d="M78.0 254.0 L1000.0 34.0""#), "{svg}");
        assert!(svg.ends_with("</svg>"));
    }

    #[test]
    fn bars_stand_on_the_floor() {
        let frame = linear_frame("h", 2.0, 10.0);
        let svg = frame.bars(&[(0.0, 1.0, 10.0), (1.0, 2.0, 5.0)], "red");
        assert_eq!(svg.matches(r#"class="bar""#).count(), 2);
        // Full height: from the top of the plot (34) to its floor (254).
        assert!(
            svg.contains(r#"y="34.0" width="460.0" height="220.0""#),
            "{svg}"
        );
        assert!(
            svg.contains(r#"y="144.0" width="460.0" height="110.0""#),
            "{svg}"
        );
    }

    #[test]
    fn a_box_legend_names_every_series_inside_the_plot() {
        let frame = Frame {
            legend: Legend::Box,
            size: Size {
                width: 900.0,
                height: 520.0,
            },
            ..linear_frame("many", 1.0, 1.0)
        };
        let names = ["raw TCP", "tickwire", "tungstenite", "tokio-tungstenite"];
        let series: Vec<Series<'_>> = names
            .iter()
            .zip(PALETTE)
            .map(|(name, color)| Series::new(name, color, vec![(0.0, 0.5), (1.0, 1.0)]))
            .collect();
        let svg = frame.lines(&series);
        assert_eq!(svg.matches(r#"class="series""#).count(), 4);
        assert_eq!(svg.matches(r#"class="legend""#).count(), 4);
        // One box below the title, at the plot's top left, 20 units per row; the longest name
        // (17 characters) sets its width.
        assert!(
            svg.contains(r#"<rect class="legend-box" x="88" y="44" width="167.5" height="90"/>"#),
            "{svg}"
        );
        // The last row's text sits inside the box.
        assert!(
            svg.contains(r#"x="116.0" y="124.0">tokio-tungstenite</text>"#),
            "{svg}"
        );
        // The 900 x 520 frame: the plot ends 40 units from the right, 46 from the bottom.
        assert!(svg.contains(r#"viewBox="0 0 900 520""#));
        assert!(svg.contains(r#"d="M78.0 254.0 L860.0 34.0""#), "{svg}");
    }

    #[test]
    fn a_document_carries_its_size_style_and_background() {
        let frame = linear_frame("alone", 1.0, 1.0);
        let chart = frame.bars(&[(0.0, 1.0, 1.0)], "#2563eb");
        let document = frame.document(&chart);
        assert!(document.starts_with(r#"<svg class="chart" data-chart="test" viewBox="0 0 1040 300" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="alone" width="1040" height="300"><style>svg.chart{"#), "{document}");
        assert!(document.contains(
            r##"</style><rect width="100%" height="100%" fill="#fff"/><text class="title""##
        ));
        // Everything the inline chart draws is still there, in the same order.
        assert!(document.ends_with(&chart[chart.find("<text").unwrap()..]));
        assert_eq!(document.matches("<svg").count(), 1);
    }
}
