//! Inline SVG charts for the demo's report, drawn here so that the page needs nothing from
//! the network and no script: line charts (one `<path>` per series) and bar charts (one
//! `<rect>` per bar), on linear or logarithmic axes with tick labels.
//!
//! Owns geometry and markup only; what is plotted is [`super::report`]'s choice.

use std::fmt::Write as _;

/// Width and height of every chart, in SVG user units (the page scales them to fit).
pub(crate) const WIDTH: f64 = 1040.0;
pub(crate) const HEIGHT: f64 = 300.0;
/// Room for the axis labels: left, right, top, bottom.
const MARGIN: (f64, f64, f64, f64) = (78.0, 40.0, 34.0, 46.0);

/// An axis: the range of values it shows, linear or logarithmic (base 10, positive values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scale {
    Linear { min: f64, max: f64 },
    Log { min: f64, max: f64 },
}

impl Scale {
    /// Where `value` falls on `0.0..=1.0` of the axis (clamped to it).
    pub(crate) fn fraction(self, value: f64) -> f64 {
        let f = match self {
            Self::Linear { min, max } => (value - min) / (max - min),
            Self::Log { min, max } => {
                (value.max(min).log10() - min.log10()) / (max.log10() - min.log10())
            }
        };
        if f.is_finite() {
            f.clamp(0.0, 1.0)
        } else {
            0.0
        }
    }

    /// Tick values: about five round numbers (1, 2 or 5 times a power of ten) for a linear
    /// axis, the powers of ten (and their 2 and 5 multiples when there are few) for a log one.
    pub(crate) fn ticks(self) -> Vec<f64> {
        match self {
            Self::Linear { min, max } => {
                let step = nice_step((max - min) / 5.0);
                let mut ticks = Vec::new();
                let mut value = (min / step).ceil() * step;
                while value <= max + step * 1e-9 {
                    ticks.push(value);
                    value += step;
                }
                ticks
            }
            Self::Log { min, max } => {
                let (low, high) = (min.log10().floor() as i32, max.log10().ceil() as i32);
                let multiples: &[f64] = if high - low <= 2 {
                    &[1.0, 2.0, 5.0]
                } else {
                    &[1.0]
                };
                (low..=high)
                    .flat_map(|e| multiples.iter().map(move |m| m * 10f64.powi(e)))
                    .filter(|v| *v >= min * (1.0 - 1e-9) && *v <= max * (1.0 + 1e-9))
                    .collect()
            }
        }
    }
}

/// 1, 2 or 5 times a power of ten, at least `rough`.
fn nice_step(rough: f64) -> f64 {
    if !(rough.is_finite() && rough > 0.0) {
        return 1.0;
    }
    let power = 10f64.powf(rough.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|step| *step >= rough * (1.0 - 1e-9))
        .unwrap_or(10.0 * power)
}

/// A chart's frame: title, axes and how their values read.
pub(crate) struct Frame<'a> {
    /// `data-chart` of the `<svg>` (what the report check looks for).
    pub(crate) id: &'a str,
    pub(crate) title: &'a str,
    pub(crate) x_label: &'a str,
    pub(crate) y_label: &'a str,
    pub(crate) x: Scale,
    pub(crate) y: Scale,
    pub(crate) x_format: fn(f64) -> String,
    pub(crate) y_format: fn(f64) -> String,
}

/// One line of a line chart.
pub(crate) struct Series<'a> {
    pub(crate) name: &'a str,
    pub(crate) color: &'a str,
    pub(crate) points: Vec<(f64, f64)>,
}

impl<'a> Series<'a> {
    pub(crate) fn new(name: &'a str, color: &'a str, points: Vec<(f64, f64)>) -> Self {
        Self {
            name,
            color,
            points,
        }
    }
}

impl Frame<'_> {
    fn plot_x(&self, value: f64) -> f64 {
        MARGIN.0 + self.x.fraction(value) * (WIDTH - MARGIN.0 - MARGIN.1)
    }

    fn plot_y(&self, value: f64) -> f64 {
        HEIGHT - MARGIN.3 - self.y.fraction(value) * (HEIGHT - MARGIN.2 - MARGIN.3)
    }

    /// `<svg>`, title, grid, ticks and axis labels (the caller adds the data and `</svg>`).
    fn open(&self, out: &mut String) {
        let _ = write!(
            out,
            r#"<svg class="chart" data-chart="{id}" viewBox="0 0 {WIDTH} {HEIGHT}" xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{title}">"#,
            id = escape(self.id),
            title = escape(self.title),
        );
        let _ = write!(
            out,
            r#"<text class="title" x="{}" y="20">{}</text>"#,
            MARGIN.0,
            escape(self.title)
        );
        let (left, right) = (MARGIN.0, WIDTH - MARGIN.1);
        let (top, bottom) = (MARGIN.2, HEIGHT - MARGIN.3);
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
            HEIGHT - 8.0,
            escape(self.x_label),
            (top + bottom) / 2.0,
            escape(self.y_label),
        );
    }

    /// A line chart: one path per series, a legend at the top right.
    pub(crate) fn lines(&self, series: &[Series<'_>]) -> String {
        let mut out = String::new();
        self.open(&mut out);
        for (i, line) in series.iter().enumerate() {
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
            let x = WIDTH - MARGIN.1 - 150.0 * (series.len() - i) as f64;
            let _ = write!(
                out,
                r#"<rect x="{x:.1}" y="11" width="14" height="4" fill="{}"/><text class="legend" x="{:.1}" y="17">{}</text>"#,
                escape(line.color),
                x + 20.0,
                escape(line.name)
            );
        }
        out.push_str("</svg>");
        out
    }

    /// A bar chart: each bar spans `x0..x1` and rises to `y`.
    pub(crate) fn bars(&self, bars: &[(f64, f64, f64)], color: &str) -> String {
        let mut out = String::new();
        self.open(&mut out);
        let floor = HEIGHT - MARGIN.3;
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
}

/// SVG path data through `points` (already in SVG coordinates): `M x y L x y ...`.
pub(crate) fn path_data(points: &[(f64, f64)]) -> String {
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
pub(crate) fn escape(text: &str) -> String {
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
    fn scales_map_values_to_the_axis() {
        let linear = Scale::Linear {
            min: 0.0,
            max: 200.0,
        };
        assert_eq!(linear.fraction(50.0), 0.25);
        assert_eq!(linear.fraction(-5.0), 0.0);
        assert_eq!(linear.fraction(500.0), 1.0);
        let log = Scale::Log { min: 1e3, max: 1e6 };
        assert!((log.fraction(1e4) - 1.0 / 3.0).abs() < 1e-12);
        // Zero and below sit on the axis' floor rather than breaking the path.
        assert_eq!(log.fraction(0.0), 0.0);
        let flat = Scale::Linear { min: 1.0, max: 1.0 };
        assert_eq!(flat.fraction(1.0), 0.0);
    }

    #[test]
    fn ticks_are_round_numbers_inside_the_range() {
        let ticks = Scale::Linear {
            min: 0.0,
            max: 60.0,
        }
        .ticks();
        assert_eq!(ticks, vec![0.0, 20.0, 40.0, 60.0]);
        let ticks = Scale::Linear {
            min: 0.0,
            max: 437_000.0,
        }
        .ticks();
        assert_eq!(ticks.first(), Some(&0.0));
        assert_eq!(ticks[1], 100_000.0);
        assert!(ticks.iter().all(|t| *t <= 437_000.0));
        let ticks = Scale::Log { min: 1e3, max: 1e7 }.ticks();
        assert_eq!(ticks, vec![1e3, 1e4, 1e5, 1e6, 1e7]);
        let ticks = Scale::Log {
            min: 10.0,
            max: 500.0,
        }
        .ticks();
        assert_eq!(ticks, vec![10.0, 20.0, 50.0, 100.0, 200.0, 500.0]);
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
}
