//! A hashed timer wheel per worker: one entry per armed connection, O(1) to arm, and a
//! deadline that moves later (every message received moves the idle and keepalive deadlines)
//! costs nothing until the old entry comes due and is re-armed.
//!
//! Time is counted in ticks of [`TICK`] from the worker's start. A connection records the
//! tick its live entry is for (`armed`); an entry whose tick no longer matches is stale and is
//! dropped when its slot comes round. Entries further away than one revolution stay in their
//! slot until their tick.

use std::time::{Duration, Instant};

/// Timer resolution: deadlines fire up to this late, never early.
pub(crate) const TICK: Duration = Duration::from_millis(8);

/// Slots in the wheel (one revolution is `SLOTS * TICK`, about 2 s).
const SLOTS: usize = 256;

/// "No entry armed".
pub(crate) const UNARMED: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry {
    pub(crate) slot: u32,
    pub(crate) tick: u32,
}

#[derive(Debug)]
pub(crate) struct Wheel {
    epoch: Instant,
    slots: Vec<Vec<Entry>>,
    /// One bit per non-empty slot.
    occupied: [u64; SLOTS / 64],
    /// The next tick to process.
    next: u32,
    /// Entries in all slots (stale ones included).
    len: usize,
}

impl Wheel {
    pub(crate) fn new(epoch: Instant) -> Self {
        Self {
            epoch,
            slots: (0..SLOTS).map(|_| Vec::new()).collect(),
            occupied: [0; SLOTS / 64],
            next: 0,
            len: 0,
        }
    }

    /// The tick at which a deadline of `at` fires (rounded up, never before `next`).
    pub(crate) fn tick_of(&self, at: Instant) -> u32 {
        let since = at.saturating_duration_since(self.epoch);
        let tick = since.as_nanos().div_ceil(TICK.as_nanos());
        u32::try_from(tick).unwrap_or(UNARMED - 1).max(self.next)
    }

    /// Adds an entry for connection `slot` at `tick` (from [`tick_of`](Self::tick_of)).
    pub(crate) fn insert(&mut self, slot: u32, tick: u32) {
        let index = tick as usize % SLOTS;
        self.slots[index].push(Entry { slot, tick });
        self.occupied[index / 64] |= 1 << (index % 64);
        self.len += 1;
    }

    /// How long the worker may sleep before the next slot with an entry is due; `None` when
    /// the wheel is empty (sleep until an event).
    pub(crate) fn timeout(&self, now: Instant) -> Option<Duration> {
        if self.len == 0 {
            return None;
        }
        // The nearest occupied slot at or after `next`, within one revolution.
        let start = self.next as usize % SLOTS;
        let mut ahead = SLOTS;
        let mut step = 0;
        while step < SLOTS {
            let index = (start + step) % SLOTS;
            let bits = self.occupied[index / 64] >> (index % 64);
            if bits != 0 {
                ahead = (step + bits.trailing_zeros() as usize).min(SLOTS);
                break;
            }
            step += 64 - index % 64;
        }
        let due = self.epoch + TICK * (self.next + ahead as u32);
        Some(due.saturating_duration_since(now))
    }

    /// Takes the entries due by `now`, slot by slot, into `due` (stale ones included: the
    /// caller checks each against the connection's `armed` tick). Entries of a later
    /// revolution stay.
    pub(crate) fn expire(&mut self, now: Instant, due: &mut Vec<Entry>) {
        let now_tick = self.tick_floor(now);
        while self.next <= now_tick {
            let index = self.next as usize % SLOTS;
            if self.occupied[index / 64] & (1 << (index % 64)) != 0 {
                let list = &mut self.slots[index];
                let before = list.len();
                let next = self.next;
                list.retain(|entry| {
                    if entry.tick <= next {
                        due.push(*entry);
                        false
                    } else {
                        true
                    }
                });
                self.len -= before - list.len();
                if list.is_empty() {
                    self.occupied[index / 64] &= !(1 << (index % 64));
                    if list.capacity() > 64 {
                        list.shrink_to(16);
                    }
                }
            }
            self.next += 1;
            if self.len == 0 {
                // Nothing left: jump straight to now.
                self.next = self.next.max(now_tick + 1);
                break;
            }
        }
    }

    fn tick_floor(&self, now: Instant) -> u32 {
        let since = now.saturating_duration_since(self.epoch);
        u32::try_from(since.as_nanos() / TICK.as_nanos()).unwrap_or(UNARMED - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_at_its_tick_and_not_before() {
        let epoch = Instant::now();
        let mut wheel = Wheel::new(epoch);
        let at = epoch + Duration::from_millis(100);
        let tick = wheel.tick_of(at);
        wheel.insert(7, tick);
        let mut due = Vec::new();
        wheel.expire(epoch + Duration::from_millis(90), &mut due);
        assert!(due.is_empty());
        let wait = wheel.timeout(epoch + Duration::from_millis(90)).unwrap();
        assert!(wait <= Duration::from_millis(10 + 8), "{wait:?}");
        wheel.expire(at + TICK, &mut due);
        assert_eq!(due.len(), 1);
        assert_eq!(due[0].slot, 7);
        assert_eq!(wheel.timeout(at), None);
    }

    #[test]
    fn an_entry_beyond_one_revolution_waits_for_its_tick() {
        let epoch = Instant::now();
        let mut wheel = Wheel::new(epoch);
        let far = epoch + TICK * (SLOTS as u32 * 3 + 5);
        wheel.insert(1, wheel.tick_of(far));
        let mut due = Vec::new();
        wheel.expire(epoch + TICK * (SLOTS as u32 + 10), &mut due);
        assert!(due.is_empty());
        wheel.expire(far, &mut due);
        assert_eq!(due.len(), 1);
    }
}
