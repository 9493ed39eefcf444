//! The percentile plot both reports draw, the classic HDR one: across, `1 / (1 - quantile)`
//! on a log axis (1 is the curve's left end, 10 is 90 %, 100 is 99 % ...), so each decade is
//! one more nine; up, the value at that quantile. Owns the points and the axis' labels; the
//! value axis and its units are the caller's.

use hdrhistogram::Histogram;

use crate::Scale;

/// Points of the curve, 20 per decade from quantile 0 up to `nines` nines (`3`: 99.9 %).
/// With `supported_only` the curve stops at the last quantile the histogram's count supports
/// (`1 - 1 / count`: 1,000 values say nothing about 99.99 %); without, it runs to `nines`,
/// flat at the maximum past that point. Empty for an empty histogram.
pub fn percentile_curve(
    histogram: &Histogram<u64>,
    nines: u32,
    supported_only: bool,
) -> Vec<(f64, f64)> {
    if histogram.is_empty() {
        return Vec::new();
    }
    let supported = 1.0 - 1.0 / histogram.len() as f64;
    (0..=nines * 20)
        .map(|step| 1.0 - 10f64.powf(-f64::from(step) / 20.0))
        .take_while(|q| !supported_only || *q <= supported || *q == 0.0)
        .map(|q| (1.0 / (1.0 - q), histogram.value_at_quantile(q) as f64))
        .collect()
}

/// The across axis of a curve up to `nines` nines.
pub fn percentile_axis(nines: u32) -> Scale {
    Scale::Log {
        min: 1.0,
        max: 10f64.powi(nines as i32),
    }
}

/// The label of a tick on [`percentile_axis`]: `0%` at its start, then `90%`, `99%`,
/// `99.9%` ... one nine per decade.
pub fn percentile_tick(x: f64) -> String {
    let nines = x.log10().round().max(0.0) as usize;
    match nines {
        0 => "0%".to_owned(),
        1 => "90%".to_owned(),
        n => format!("99{}{}%", if n > 2 { "." } else { "" }, "9".repeat(n - 2)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn histogram(values: impl Iterator<Item = u64>) -> Histogram<u64> {
        let mut histogram = Histogram::new_with_bounds(1, 60_000_000_000, 3).unwrap();
        for value in values {
            histogram.record(value).unwrap();
        }
        histogram
    }

    #[test]
    fn a_supported_curve_stops_where_the_data_does() {
        let h = histogram((1..=1_000u64).map(|i| i * 1_000));
        let points = percentile_curve(&h, 5, true);
        assert_eq!(points[0].0, 1.0);
        // 1,000 values support quantiles up to 99.9 %: x up to 1,000.
        let last = points.last().unwrap();
        assert!(last.0 <= 1_000.0 + 1e-6 && last.0 > 500.0, "{last:?}");
        assert!(
            points.windows(2).all(|w| w[0].1 <= w[1].1),
            "non-decreasing"
        );
        assert!(percentile_curve(&histogram(std::iter::empty()), 5, true).is_empty());
    }

    #[test]
    fn an_unclipped_curve_runs_to_its_nines_at_twenty_points_a_decade() {
        let h = histogram((1..=1_000u64).map(|i| i * 10));
        let points = percentile_curve(&h, 4, false);
        assert_eq!(points.len(), 81);
        let last = points.last().unwrap();
        assert!((last.0 - 1e4).abs() < 1e-6, "{last:?}");
        assert_eq!(last.1, h.value_at_quantile(0.9999) as f64);
        // Point 20 is one decade across: the 90th percentile.
        assert!((points[20].0 - 10.0).abs() < 1e-9);
        assert_eq!(points[20].1, h.value_at_quantile(0.9) as f64);
    }

    #[test]
    fn ticks_count_nines() {
        let ticks: Vec<String> = percentile_axis(5)
            .ticks()
            .into_iter()
            .map(percentile_tick)
            .collect();
        assert_eq!(ticks, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
    }
}
