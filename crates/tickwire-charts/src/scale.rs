//! Axes: where a value falls on one ([`Scale::fraction`]) and which round values it labels
//! ([`Scale::ticks`]). Owns no markup.

/// An axis: the range of values it shows, linear or logarithmic (base 10, positive values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scale {
    /// Evenly spaced values from `min` to `max`.
    Linear {
        /// The value at the axis' start.
        min: f64,
        /// The value at its end.
        max: f64,
    },
    /// Evenly spaced powers of ten from `min` to `max` (both positive).
    Log {
        /// The value at the axis' start.
        min: f64,
        /// The value at its end.
        max: f64,
    },
}

impl Scale {
    /// Where `value` falls on `0.0..=1.0` of the axis (clamped to it; zero and below sit at the
    /// start of a log axis).
    pub fn fraction(self, value: f64) -> f64 {
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
    /// axis; for a log one the powers of ten, with their 2 and 5 multiples when it spans two
    /// decades or less or when the powers alone are fewer than three, and round linear steps
    /// when even those give fewer than three ticks (a range inside one decade).
    pub fn ticks(self) -> Vec<f64> {
        match self {
            Self::Linear { min, max } => linear_ticks(min, max),
            Self::Log { min, max } => {
                let (low, high) = (min.log10().floor() as i32, max.log10().ceil() as i32);
                let decades = |multiples: &[f64]| -> Vec<f64> {
                    (low..=high)
                        .flat_map(|e| multiples.iter().map(move |m| m * 10f64.powi(e)))
                        .filter(|v| *v >= min * (1.0 - 1e-9) && *v <= max * (1.0 + 1e-9))
                        .collect()
                };
                let powers = decades(&[1.0]);
                if high - low > 2 && powers.len() >= 3 {
                    return powers;
                }
                let ticks = decades(&[1.0, 2.0, 5.0]);
                if ticks.len() >= 3 {
                    return ticks;
                }
                linear_ticks(min, max)
                    .into_iter()
                    .filter(|v| *v > 0.0)
                    .collect()
            }
        }
    }
}

fn linear_ticks(min: f64, max: f64) -> Vec<f64> {
    let step = nice_step((max - min) / 5.0);
    let mut ticks = Vec::new();
    let mut value = (min / step).ceil() * step;
    while value <= max + step * 1e-9 {
        ticks.push(value);
        value += step;
    }
    ticks
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn a_log_axis_inside_one_decade_still_has_ticks() {
        // A bench table whose rows all sit between 110 and 180 ticks per operation: no power
        // of ten nor 2 or 5 multiple inside, so round linear steps label it.
        let ticks = Scale::Log {
            min: 110.0,
            max: 180.0,
        }
        .ticks();
        assert_eq!(ticks, vec![120.0, 140.0, 160.0, 180.0]);
        // 40..120 holds 50 and 100 only: still too few, linear steps again.
        let ticks = Scale::Log {
            min: 40.0,
            max: 120.0,
        }
        .ticks();
        assert_eq!(ticks, vec![40.0, 60.0, 80.0, 100.0, 120.0]);
        // Three decades but only two powers of ten inside: their 2 and 5 multiples join them.
        let ticks = Scale::Log {
            min: 32.0,
            max: 6_000.0,
        }
        .ticks();
        assert_eq!(ticks, vec![50.0, 100.0, 200.0, 500.0, 1e3, 2e3, 5e3]);
    }
}
