//! The report's five charts, from the run's per-second timeline and its latency histograms:
//! deliveries per second, latency per second, latency by percentile, the latency histogram
//! and drops per second.
//!
//! Owns what is plotted and on which axes; drawing is tickwire-charts'.

use hdrhistogram::Histogram;
use tickwire_charts::{
    Frame, Legend, Scale, Series, Size, percentile_axis, percentile_curve, percentile_tick,
};

use super::Histograms;
use super::stats::{Second, format_count, format_ns};

/// The percentile plot's reach: 99.999 %, or as far as the run's data supports.
const NINES: u32 = 5;

/// What the charts are drawn from.
pub(crate) struct Charts<'a> {
    pub(crate) timeline: &'a [Second],
    pub(crate) histograms: &'a Histograms,
}

impl Charts<'_> {
    /// Appends the five `<svg>` charts to `out`.
    pub(crate) fn write(&self, out: &mut String) {
        for chart in [
            self.deliveries_chart(),
            self.latency_over_time_chart(),
            self.percentile_chart(),
            self.histogram_chart(),
            self.drops_chart(),
        ] {
            out.push_str(&chart);
        }
    }

    fn time_axis(&self) -> Scale {
        let end = self.timeline.last().map_or(1.0, |s| s.at).max(1.0);
        Scale::Linear { min: 0.0, max: end }
    }

    /// A frame for a count per second over the run: time across, 0 to a little above
    /// `highest` up.
    fn count_over_time<'a>(
        &self,
        id: &'a str,
        title: &'a str,
        y_label: &'a str,
        highest: f64,
    ) -> Frame<'a> {
        Frame {
            id,
            title,
            x_label: "seconds since the feed started",
            y_label,
            x: self.time_axis(),
            y: Scale::Linear {
                min: 0.0,
                max: highest.max(1.0) * 1.1,
            },
            x_format: |v| format!("{v:.0}"),
            y_format: |v| format_count(v as u64),
            size: Size::BAND,
            legend: Legend::TitleRow,
        }
    }

    fn deliveries_chart(&self) -> String {
        let points: Vec<(f64, f64)> = self
            .timeline
            .iter()
            .map(|s| (s.at, s.deliveries as f64))
            .collect();
        let highest = points.iter().map(|p| p.1).fold(0.0, f64::max);
        self.count_over_time(
            "deliveries",
            "Deliveries per second (messages received by all clients)",
            "deliveries / s",
            highest,
        )
        .lines(&[Series::new("deliveries / s", "#2563eb", points)])
    }

    fn latency_over_time_chart(&self) -> String {
        let pick = |f: fn(&Second) -> u64| -> Vec<(f64, f64)> {
            self.timeline
                .iter()
                .filter(|s| s.deliveries > 0)
                .map(|s| (s.at, f(s) as f64))
                .collect()
        };
        let (p50, p99, max) = (pick(|s| s.p50_ns), pick(|s| s.p99_ns), pick(|s| s.max_ns));
        let (low, high) = latency_range(p50.iter().chain(&max).map(|p| p.1));
        Frame {
            id: "latency-over-time",
            title: "Publish-to-receive latency per second, fast clients",
            x_label: "seconds since the feed started",
            y_label: "latency",
            x: self.time_axis(),
            y: Scale::Log {
                min: low,
                max: high,
            },
            x_format: |v| format!("{v:.0}"),
            y_format: tick_ns,
            size: Size::BAND,
            legend: Legend::TitleRow,
        }
        .lines(&[
            Series::new("p50", "#16a34a", p50),
            Series::new("p99", "#d97706", p99),
            Series::new("max", "#dc2626", max),
        ])
    }

    fn percentile_chart(&self) -> String {
        let fast = percentile_curve(&self.histograms.fast, NINES, true);
        let slow = percentile_curve(&self.histograms.slow, NINES, true);
        let (low, high) = latency_range(fast.iter().chain(&slow).map(|p| p.1));
        Frame {
            id: "percentiles",
            title: "Latency by percentile, whole run",
            x_label: "percentile",
            y_label: "latency",
            x: percentile_axis(NINES),
            y: Scale::Log {
                min: low,
                max: high,
            },
            x_format: percentile_tick,
            y_format: tick_ns,
            size: Size::BAND,
            legend: Legend::TitleRow,
        }
        .lines(&[
            Series::new("fast clients", "#2563eb", fast),
            Series::new("slow clients", "#9333ea", slow),
        ])
    }

    fn histogram_chart(&self) -> String {
        let bars = histogram_bars(&self.histograms.fast);
        let (low, high) = match (bars.first(), bars.last()) {
            (Some(first), Some(last)) => (first.0, last.1),
            _ => (1e3, 1e6),
        };
        let top = bars.iter().map(|b| b.2).fold(1.0, f64::max) * 1.1;
        Frame {
            id: "histogram",
            title: "Latency histogram, fast clients (share of messages, 10 buckets per decade)",
            x_label: "latency",
            y_label: "% of messages",
            x: Scale::Log {
                min: low,
                max: high,
            },
            y: Scale::Linear { min: 0.0, max: top },
            x_format: tick_ns,
            y_format: |v| format!("{v:.0}%"),
            size: Size::BAND,
            legend: Legend::TitleRow,
        }
        .bars(&bars, "#2563eb")
    }

    fn drops_chart(&self) -> String {
        let bars: Vec<(f64, f64, f64)> = self
            .timeline
            .iter()
            .map(|s| (s.at - 1.0, s.at, s.dropped as f64))
            .collect();
        let highest = bars.iter().map(|b| b.2).fold(0.0, f64::max);
        self.count_over_time(
            "drops",
            "Messages dropped for slow clients per second (all policies)",
            "dropped / s",
            highest,
        )
        .bars(&bars, "#d97706")
    }
}

/// A log latency axis covering `values` (nanoseconds), in whole decades.
fn latency_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (low, high) = values
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if high <= 0.0 {
        return (1e3, 1e6);
    }
    let low = 10f64.powf(low.log10().floor()).max(1e3);
    let high = 10f64.powf(high.log10().ceil()).max(low * 10.0);
    (low, high)
}

/// A latency tick label: `format_ns` without trailing zeros (`100ms`, `2.5µs`).
fn tick_ns(value: f64) -> String {
    let text = format_ns(value.round() as u64);
    let unit_at = text.find(|c: char| c.is_alphabetic()).unwrap_or(text.len());
    let (number, unit) = text.split_at(unit_at);
    let number = if number.contains('.') {
        number.trim_end_matches('0').trim_end_matches('.')
    } else {
        number
    };
    format!("{number}{unit}")
}

/// Bars of a latency histogram on a log axis: ten buckets per decade, from the decade of
/// the lowest value to the bucket of the highest; each bar's height is its share of the
/// messages in percent.
pub(crate) fn histogram_bars(histogram: &Histogram<u64>) -> Vec<(f64, f64, f64)> {
    if histogram.is_empty() {
        return Vec::new();
    }
    let bucket = |value: u64| ((value.max(1) as f64).log10() * 10.0).floor() as i64;
    let first = bucket(histogram.min()) / 10 * 10;
    let last = bucket(histogram.max());
    let mut counts = vec![0u64; (last - first + 1) as usize];
    for value in histogram.iter_recorded() {
        let index = bucket(value.value_iterated_to()).clamp(first, last) - first;
        counts[index as usize] += value.count_at_value();
    }
    let total = histogram.len() as f64;
    counts
        .iter()
        .enumerate()
        .map(|(i, &count)| {
            let b = (first + i as i64) as f64;
            (
                10f64.powf(b / 10.0),
                10f64.powf((b + 1.0) / 10.0),
                100.0 * count as f64 / total,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::stats::latency_histogram;

    #[test]
    fn histogram_bars_share_every_message_on_a_log_axis() {
        let mut histogram = latency_histogram();
        for _ in 0..75 {
            histogram.record(20_000).unwrap();
        }
        for _ in 0..25 {
            histogram.record(300_000).unwrap();
        }
        let bars = histogram_bars(&histogram);
        let total: f64 = bars.iter().map(|b| b.2).sum();
        assert!((total - 100.0).abs() < 1e-9);
        // From the decade of the lowest value (10 µs) to the bucket of the highest.
        assert!((bars[0].0 - 10_000.0).abs() < 1e-6);
        let last = bars.last().unwrap();
        assert!(last.0 <= 300_000.0 && last.1 > 300_000.0);
        let tallest = bars.iter().map(|b| b.2).fold(0.0, f64::max);
        assert_eq!(tallest, 75.0);
        assert!(
            bars.windows(2).all(|w| (w[0].1 - w[1].0).abs() < 1e-6),
            "contiguous"
        );
        assert!(histogram_bars(&latency_histogram()).is_empty());
    }

    #[test]
    fn latency_ticks_drop_trailing_zeros() {
        assert_eq!(tick_ns(1e8), "100ms");
        assert_eq!(tick_ns(2_500.0), "2.5µs");
        assert_eq!(tick_ns(1e9), "1s");
    }

    #[test]
    fn latency_axes_span_whole_decades() {
        assert_eq!(
            latency_range([25_000.0, 3_000_000.0].into_iter()),
            (1e4, 1e7)
        );
        assert_eq!(latency_range(std::iter::empty()), (1e3, 1e6));
    }
}
