//! The client's request deadlines: an indexed binary min-heap over slot indices.
//!
//! Why a heap and not a timer wheel: the transport asks for the earliest deadline on every turn
//! of its loop ([`Client::poll_timeout`](super::Client::poll_timeout)), which a heap answers
//! by looking at its root, while a hashed wheel must scan buckets. Arming and disarming cost
//! O(log n) over at most `max_in_flight` entries (10 levels for the default 1 024), and both
//! arrays are allocated once, at the cap, so nothing allocates afterwards. Timeouts may differ
//! per request, which rules out a plain FIFO.

use std::time::Instant;

/// Position of a slot that has no deadline armed.
const UNARMED: u32 = u32::MAX;

/// At most one deadline per slot index in `0..capacity`.
#[derive(Debug)]
pub(crate) struct Deadlines {
    /// The heap, ordered by deadline: `heap[0]` is the earliest.
    heap: Vec<(Instant, u32)>,
    /// `position[slot]`: where the slot's entry is in `heap`, or `UNARMED`.
    position: Box<[u32]>,
}

impl Deadlines {
    /// Room for one deadline per slot index below `capacity`, allocated now.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            heap: Vec::with_capacity(capacity),
            position: vec![UNARMED; capacity].into_boxed_slice(),
        }
    }

    /// Arms `slot` to expire at `at`. The slot must not be armed already.
    pub(crate) fn insert(&mut self, slot: u32, at: Instant) {
        debug_assert_eq!(self.position[slot as usize], UNARMED, "slot armed twice");
        let index = self.heap.len();
        self.heap.push((at, slot));
        self.position[slot as usize] = index as u32;
        self.sift_up(index);
    }

    /// Disarms `slot`; nothing happens when it is not armed.
    pub(crate) fn remove(&mut self, slot: u32) {
        let index = self.position[slot as usize];
        if index == UNARMED {
            return;
        }
        self.position[slot as usize] = UNARMED;
        let index = index as usize;
        let last = self.heap.len() - 1;
        self.heap.swap_remove(index);
        if index < last {
            self.position[self.heap[index].1 as usize] = index as u32;
            // The moved entry may belong above or below its new place.
            self.sift_up(index);
            self.sift_down(index);
        }
    }

    /// The earliest deadline, if any is armed.
    pub(crate) fn earliest(&self) -> Option<Instant> {
        self.heap.first().map(|&(at, _)| at)
    }

    /// Disarms and returns the slot with the earliest deadline when that deadline is at or
    /// before `now`.
    pub(crate) fn pop_due(&mut self, now: Instant) -> Option<u32> {
        let &(at, slot) = self.heap.first()?;
        if at > now {
            return None;
        }
        self.remove(slot);
        Some(slot)
    }

    /// Disarms every slot.
    pub(crate) fn clear(&mut self) {
        for &(_, slot) in &self.heap {
            self.position[slot as usize] = UNARMED;
        }
        self.heap.clear();
    }

    /// Number of armed deadlines.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.heap.len()
    }

    /// Allocated room of the heap, to show it never grows.
    #[cfg(test)]
    pub(crate) fn capacity(&self) -> usize {
        self.heap.capacity()
    }

    fn sift_up(&mut self, mut index: usize) {
        while index > 0 {
            let parent = (index - 1) / 2;
            if self.heap[parent].0 <= self.heap[index].0 {
                break;
            }
            self.swap(parent, index);
            index = parent;
        }
    }

    fn sift_down(&mut self, mut index: usize) {
        loop {
            let left = 2 * index + 1;
            if left >= self.heap.len() {
                break;
            }
            let right = left + 1;
            let child = if right < self.heap.len() && self.heap[right].0 < self.heap[left].0 {
                right
            } else {
                left
            };
            if self.heap[index].0 <= self.heap[child].0 {
                break;
            }
            self.swap(index, child);
            index = child;
        }
    }

    fn swap(&mut self, a: usize, b: usize) {
        self.heap.swap(a, b);
        self.position[self.heap[a].1 as usize] = a as u32;
        self.position[self.heap[b].1 as usize] = b as u32;
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn pops_in_deadline_order_after_removals() {
        let t0 = Instant::now();
        let mut deadlines = Deadlines::new(8);
        for (slot, ms) in [(0, 50), (1, 10), (2, 40), (3, 30), (4, 20), (5, 60)] {
            deadlines.insert(slot, t0 + Duration::from_millis(ms));
        }
        deadlines.remove(3);
        deadlines.remove(7); // never armed: no effect
        assert_eq!(deadlines.earliest(), Some(t0 + Duration::from_millis(10)));
        assert_eq!(deadlines.pop_due(t0 + Duration::from_millis(5)), None);
        let mut order = Vec::new();
        while let Some(slot) = deadlines.pop_due(t0 + Duration::from_millis(100)) {
            order.push(slot);
        }
        assert_eq!(order, [1, 4, 2, 0, 5]);
        assert_eq!(deadlines.len(), 0);
        deadlines.insert(3, t0);
        assert_eq!(
            deadlines.pop_due(t0),
            Some(3),
            "a removed slot can be armed again"
        );
    }

    #[test]
    fn clear_disarms_everything() {
        let t0 = Instant::now();
        let mut deadlines = Deadlines::new(4);
        deadlines.insert(0, t0);
        deadlines.insert(2, t0);
        deadlines.clear();
        assert_eq!(deadlines.earliest(), None);
        deadlines.insert(2, t0 + Duration::from_secs(1));
        assert_eq!(deadlines.len(), 1);
        assert_eq!(deadlines.capacity(), 4);
    }
}
