//! Busy polling: how long a worker keeps polling without sleeping after a wake-up.
//!
//! A sleeping thread that a packet wakes pays the scheduler's wake-up, and on a virtual
//! machine the host's too (tens of microseconds on this project's VM, more than the rest of
//! a loopback round trip). Polling again at once for a while after the work is done picks up
//! traffic that comes back within that window without it.
//!
//! The adaptive mode sizes the window from the gaps it sees, as KVM's halt polling does: a
//! gap from the end of a wake-up's work to the next event that the window missed but that
//! was shorter than the cap doubles the window; a gap longer than the cap halves it. Traffic
//! whose gaps are longer than the cap (a quiet feed, idle connections) soon gets no polling
//! at all, so the core is spent only where it buys latency.

use std::time::Duration;

/// The smallest window the adaptive mode grows to from zero.
const START: Duration = Duration::from_micros(10);

/// How a worker polls between wake-ups.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BusyPoll {
    /// Always sleep when there is nothing to do.
    Off,
    /// Poll for this long after every wake-up's work.
    Fixed(Duration),
    /// Poll for a window sized from recent gaps between wake-ups, at most `max`.
    Adaptive {
        /// The longest window (and the longest gap that still grows it).
        max: Duration,
    },
}

impl Default for BusyPoll {
    /// Adaptive, up to 200 µs (KVM's default halt-polling cap on x86).
    fn default() -> Self {
        BusyPoll::Adaptive {
            max: Duration::from_micros(200),
        }
    }
}

/// A worker's polling window.
#[derive(Debug, Clone)]
pub(super) struct Spin {
    mode: BusyPoll,
    window: Duration,
}

impl Spin {
    pub(super) fn new(mode: BusyPoll) -> Self {
        let window = match mode {
            BusyPoll::Fixed(window) => window,
            BusyPoll::Off | BusyPoll::Adaptive { .. } => Duration::ZERO,
        };
        Self { mode, window }
    }

    /// The worker times its gaps (it polls, or may come to).
    pub(super) fn active(&self) -> bool {
        match self.mode {
            BusyPoll::Off => false,
            BusyPoll::Fixed(window) => !window.is_zero(),
            BusyPoll::Adaptive { max } => !max.is_zero(),
        }
    }

    /// How long to poll after this wake-up's work.
    pub(super) fn window(&self) -> Duration {
        self.window
    }

    /// The next event came `gap` after the last wake-up's work was done.
    pub(super) fn observe(&mut self, gap: Duration) {
        let BusyPoll::Adaptive { max } = self.mode else {
            return;
        };
        if gap <= self.window {
            // Caught while polling.
        } else if gap <= max {
            // Missed, but a window within the cap would have caught it.
            self.window = (self.window * 2).max(START).min(max);
        } else {
            // Longer than any window we would poll for: poll less.
            self.window /= 2;
            if self.window < START {
                self.window = Duration::ZERO;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    fn adaptive(max: u64) -> Spin {
        Spin::new(BusyPoll::Adaptive { max: us(max) })
    }

    #[test]
    fn short_gaps_grow_the_window_until_it_catches_them() {
        let mut spin = adaptive(200);
        assert_eq!(spin.window(), Duration::ZERO);
        let mut windows = Vec::new();
        for _ in 0..6 {
            spin.observe(us(70));
            windows.push(spin.window().as_micros());
        }
        // 10, 20, 40, 80: then every 70 µs gap is caught and the window stays.
        assert_eq!(windows, [10, 20, 40, 80, 80, 80]);
    }

    #[test]
    fn the_window_never_passes_the_cap() {
        let mut spin = adaptive(50);
        for _ in 0..10 {
            spin.observe(us(49));
        }
        assert_eq!(spin.window(), us(50));
    }

    #[test]
    fn long_gaps_shrink_the_window_to_nothing() {
        let mut spin = adaptive(200);
        for _ in 0..5 {
            spin.observe(us(150));
        }
        assert_eq!(spin.window(), us(160));
        let mut windows = Vec::new();
        for _ in 0..5 {
            spin.observe(us(5_000));
            windows.push(spin.window().as_micros());
        }
        // A quiet connection soon costs no polling at all.
        assert_eq!(windows, [80, 40, 20, 10, 0]);
    }

    #[test]
    fn fixed_and_off_do_not_adapt() {
        let mut fixed = Spin::new(BusyPoll::Fixed(us(30)));
        fixed.observe(us(1));
        fixed.observe(us(10_000));
        assert_eq!(fixed.window(), us(30));
        assert!(fixed.active());
        let mut off = Spin::new(BusyPoll::Off);
        off.observe(us(5));
        assert_eq!(off.window(), Duration::ZERO);
        assert!(!off.active());
        assert!(!Spin::new(BusyPoll::Fixed(Duration::ZERO)).active());
        assert!(!adaptive(0).active());
    }
}
