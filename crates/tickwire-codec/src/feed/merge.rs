//! Sequence merging: per key, each number delivered once and in order, whichever connection
//! brought it first; duplicates dropped and counted; a hole reported once as a gap, and only
//! when no connection that is still up can fill it. Keys are interned once, up to a bound.
//!
//! The rule for a hole: a number `x` missing on the delivering connection can still come
//! from another live connection `c` while `c` has not yet passed `x` (each connection
//! delivers its numbers in increasing order; a number it skipped it has missed). Messages
//! ahead of such a hole are copied and held (into buffers that are reused, so a steady
//! state allocates nothing) until the hole fills, every live connection has passed it, or
//! they have waited `merge_wait`, or the hold is full: then the hole is a gap and they go
//! out in order.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, Instant};

use super::event::{ConnId, Delivery, Event, KeyId, MAX_CONNECTIONS, RecvStamp};

/// What the merge decided about one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Merged {
    /// Deliver it now, the next number of its key with nothing else to go out: nothing was
    /// pushed to the output (the data path's common case).
    Alone(KeyId),
    /// Deliver it now (after any gap queued before it).
    Deliver(KeyId),
    /// Copied and held.
    Held,
    /// Dropped, a duplicate.
    Duplicate,
    /// The key table is full: deliver it without a key (`true` the first time).
    Unkeyed(bool),
}

/// An entry of the merge's output, in order: the current message's place, a held message
/// (its buffer's index), a gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Output {
    Current,
    Held(usize),
    Gap { key: KeyId, from: u64, to: u64 },
}

pub(super) struct Merge {
    index: HashMap<Box<[u8]>, u32, BuildHasherDefault<KeyHasher>>,
    keys: Vec<KeyState>,
    names: Vec<Box<[u8]>>,
    /// The key the last message carried (an index into `names`; none yet while empty).
    last_key: u32,
    max_keys: usize,
    key_limit_reported: bool,
    merge_wait: Duration,
    hold: Hold,
    live: u16,
    /// Held messages not yet delivered, over all keys: the scans below run only when some are.
    waiting: usize,
    pub(super) figures: [MergeFigures; MAX_CONNECTIONS],
    pub(super) gaps: u64,
    pub(super) missing: u64,
    pub(super) duplicates: u64,
}

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct MergeFigures {
    pub(super) first_arrivals: u64,
    pub(super) duplicates: u64,
    pub(super) lag: Option<Duration>,
}

#[derive(Debug, Clone, Copy)]
struct KeyState {
    delivered: Option<u64>,
    delivered_at: Option<Instant>,
    seen: [Option<u64>; MAX_CONNECTIONS],
    held: u32,
}

/// A held message: where its bytes are and what it carried.
#[derive(Debug, Clone, Copy)]
pub(super) struct Held {
    pub(super) key: KeyId,
    pub(super) seq: u64,
    pub(super) conn: ConnId,
    pub(super) stamp: RecvStamp,
    pub(super) since: Instant,
    /// Delivered: its event is queued or lent, its buffer not yet given back.
    out: bool,
}

struct Hold {
    entries: Vec<Option<Held>>,
    buffers: Vec<Vec<u8>>,
    free: Vec<usize>,
    bytes: usize,
    max_bytes: usize,
}

impl Merge {
    pub(super) fn new(
        max_keys: usize,
        merge_wait: Duration,
        max_held: usize,
        max_held_bytes: usize,
    ) -> Self {
        Self {
            index: HashMap::with_capacity_and_hasher(max_keys.min(4096), Default::default()),
            keys: Vec::with_capacity(max_keys.min(4096)),
            names: Vec::with_capacity(max_keys.min(4096)),
            last_key: 0,
            max_keys,
            key_limit_reported: false,
            merge_wait,
            hold: Hold {
                entries: vec![None; max_held],
                buffers: (0..max_held).map(|_| Vec::new()).collect(),
                free: (0..max_held).rev().collect(),
                bytes: 0,
                max_bytes: max_held_bytes,
            },
            live: 0,
            waiting: 0,
            figures: [MergeFigures::default(); MAX_CONNECTIONS],
            gaps: 0,
            missing: 0,
            duplicates: 0,
        }
    }

    pub(super) fn key_bytes(&self, key: KeyId) -> Option<&[u8]> {
        self.names.get(key.0 as usize).map(|name| &name[..])
    }

    pub(super) fn key_count(&self) -> usize {
        self.keys.len()
    }

    /// Messages held and not yet delivered.
    pub(super) fn held_count(&self) -> usize {
        self.waiting
    }

    /// The held messages not yet delivered, with their buffers' indices.
    fn waiting(&self) -> impl Iterator<Item = (usize, Held)> + '_ {
        self.hold
            .entries
            .iter()
            .enumerate()
            .filter_map(|(index, held)| held.filter(|held| !held.out).map(|held| (index, held)))
    }

    /// The held message in buffer `index` and its bytes.
    pub(super) fn held(&self, index: usize) -> Option<(Held, &[u8])> {
        let held = self.hold.entries.get(index).copied().flatten()?;
        Some((held, &self.hold.buffers[index]))
    }

    /// Gives a held message's buffer back once its event was taken.
    pub(super) fn release(&mut self, index: usize) {
        if let Some(slot) = self.hold.entries.get_mut(index)
            && slot.take().is_some()
        {
            self.hold.bytes -= self.hold.buffers[index].len();
            self.hold.free.push(index);
        }
    }

    /// `conn` opened: it counts as able to fill holes from now on, with nothing seen yet.
    pub(super) fn conn_up(&mut self, conn: ConnId) {
        self.live |= 1 << conn.0;
        for key in &mut self.keys {
            key.seen[conn.index()] = None;
        }
    }

    /// `conn` went away: it can fill nothing, so holes only it could fill become gaps.
    pub(super) fn conn_down(&mut self, conn: ConnId, out: &mut Vec<Output>) {
        self.live &= !(1 << conn.0);
        for index in 0..self.keys.len() {
            self.keys[index].seen[conn.index()] = None;
            if self.keys[index].held > 0 {
                self.settle(KeyId(index as u32), Expire::No, out);
            }
        }
    }

    /// Whether `new` has delivered, for every key `old` carried, a number at or past
    /// `old`'s last (and something at all).
    pub(super) fn caught_up(&self, new: ConnId, old: ConnId) -> bool {
        let mut any = false;
        for key in &self.keys {
            let new_seen = key.seen[new.index()];
            any |= new_seen.is_some();
            if let Some(old_seen) = key.seen[old.index()]
                && new_seen.is_none_or(|n| n < old_seen)
            {
                return false;
            }
        }
        any
    }

    /// The earliest time a held message stops waiting.
    pub(super) fn poll_timeout(&self) -> Option<Instant> {
        if self.waiting == 0 {
            return None;
        }
        self.waiting()
            .map(|(_, held)| held.since + self.merge_wait)
            .min()
    }

    /// Holes whose held messages waited `merge_wait` by `now` become gaps.
    pub(super) fn handle_timeout(&mut self, now: Instant, out: &mut Vec<Output>) {
        if self.waiting == 0 {
            return;
        }
        for index in 0..self.keys.len() {
            if self.keys[index].held > 0 {
                self.settle(KeyId(index as u32), Expire::At(now), out);
            }
        }
    }

    /// One sequenced message of `conn`. Pushes what goes out before and after it to `out`
    /// (for [`Merged::Deliver`], [`Output::Current`] marks its place).
    #[expect(
        clippy::too_many_arguments,
        reason = "one message and its context, all Copy"
    )]
    #[inline]
    pub(super) fn on_message(
        &mut self,
        conn: ConnId,
        key: &[u8],
        seq: u64,
        stamp: RecvStamp,
        payload: &[u8],
        now: Instant,
        out: &mut Vec<Output>,
    ) -> Merged {
        // The data path, inline: the last message's key again, with its next number and
        // nothing held. Everything else takes the whole rule, out of line.
        let last = self.last_key;
        if let Some(name) = self.names.get(last as usize)
            && same_key(name, key)
        {
            let state = &mut self.keys[last as usize];
            if state.held == 0
                && state
                    .delivered
                    .is_some_and(|d| seq.checked_sub(d) == Some(1))
            {
                let seen = &mut state.seen[conn.index()];
                *seen = Some(seen.map_or(seq, |seen| seen.max(seq)));
                self.mark_delivered(KeyId(last), seq, conn, now);
                return Merged::Alone(KeyId(last));
            }
        }
        self.on_message_slow(conn, key, seq, stamp, payload, now, out)
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one message and its context, all Copy"
    )]
    #[inline(never)]
    fn on_message_slow(
        &mut self,
        conn: ConnId,
        key: &[u8],
        seq: u64,
        stamp: RecvStamp,
        payload: &[u8],
        now: Instant,
        out: &mut Vec<Output>,
    ) -> Merged {
        let Some(key) = self.intern(key) else {
            let first = !self.key_limit_reported;
            self.key_limit_reported = true;
            return Merged::Unkeyed(first);
        };
        let state = &mut self.keys[key.0 as usize];
        let c = conn.index();
        state.seen[c] = Some(state.seen[c].map_or(seq, |seen| seen.max(seq)));
        let delivered = state.delivered;
        if delivered.is_some_and(|d| seq <= d) || self.is_held(key, seq) {
            let state = &mut self.keys[key.0 as usize];
            if state.delivered == Some(seq)
                && let Some(first) = state.delivered_at
            {
                self.figures[c].lag = Some(now.saturating_duration_since(first));
            }
            self.figures[c].duplicates += 1;
            self.duplicates += 1;
            if self.keys[key.0 as usize].held > 0 {
                self.settle(key, Expire::No, out);
            }
            return Merged::Duplicate;
        }
        let held = self.keys[key.0 as usize].held;
        let next = delivered.map(|d| d + 1);
        if held == 0 && next == Some(seq) {
            self.mark_delivered(key, seq, conn, now);
            return Merged::Alone(key);
        }
        if next == Some(seq) || (held == 0 && !self.may_fill(key, seq)) {
            if let Some(next) = next
                && seq > next
            {
                self.gap(key, next, seq - 1, out);
            }
            self.mark_delivered(key, seq, conn, now);
            out.push(Output::Current);
            if held > 0 {
                self.settle(key, Expire::No, out);
            }
            return Merged::Deliver(key);
        }
        let merged = if self.hold_copy(key, seq, conn, stamp, payload, now) {
            Merged::Held
        } else {
            // The hold is full: the holes below this message become gaps now, then it goes
            // out, ahead of the held messages above it.
            self.settle(key, Expire::Below(seq), out);
            let next = self.keys[key.0 as usize].delivered.map(|d| d + 1);
            if let Some(next) = next
                && seq > next
            {
                self.gap(key, next, seq - 1, out);
            }
            self.mark_delivered(key, seq, conn, now);
            out.push(Output::Current);
            self.settle(key, Expire::No, out);
            return Merged::Deliver(key);
        };
        self.settle(key, Expire::No, out);
        merged
    }

    #[inline]
    fn intern(&mut self, key: &[u8]) -> Option<KeyId> {
        // Feeds often carry runs of one key: the last key found is checked before the hash.
        if let Some(name) = self.names.get(self.last_key as usize)
            && same_key(name, key)
        {
            return Some(KeyId(self.last_key));
        }
        if let Some(id) = self.index.get(key) {
            self.last_key = *id;
            return Some(KeyId(*id));
        }
        if self.keys.len() >= self.max_keys {
            return None;
        }
        let id = self.keys.len() as u32;
        self.index.insert(key.into(), id);
        self.names.push(key.into());
        self.last_key = id;
        self.keys.push(KeyState {
            delivered: None,
            delivered_at: None,
            seen: [None; MAX_CONNECTIONS],
            held: 0,
        });
        Some(KeyId(id))
    }

    /// Whether a live connection may still bring a number below `seq` that is not delivered.
    fn may_fill(&self, key: KeyId, seq: u64) -> bool {
        let state = &self.keys[key.0 as usize];
        if state.delivered.is_some_and(|d| d + 1 >= seq) {
            return false;
        }
        (0..MAX_CONNECTIONS)
            .any(|c| self.live & (1 << c) != 0 && state.seen[c].is_none_or(|seen| seen + 1 < seq))
    }

    fn is_held(&self, key: KeyId, seq: u64) -> bool {
        self.keys[key.0 as usize].held > 0
            && self
                .waiting()
                .any(|(_, held)| held.key == key && held.seq == seq)
    }

    fn lowest_held(&self, key: KeyId) -> Option<(usize, Held)> {
        self.waiting()
            .filter(|(_, held)| held.key == key)
            .min_by_key(|(_, held)| held.seq)
    }

    /// Releases `key`'s held messages that may go, lowest first: the next number, one
    /// whose hole no live connection can fill, and those `expire` forces out.
    fn settle(&mut self, key: KeyId, expire: Expire, out: &mut Vec<Output>) {
        let forced_up_to = match expire {
            Expire::No => None,
            Expire::Below(seq) => Some(seq),
            // One that waited `merge_wait` by `now`, and every held one below it.
            Expire::At(now) => self
                .waiting()
                .filter(|(_, held)| held.key == key && held.since + self.merge_wait <= now)
                .map(|(_, held)| held.seq)
                .max(),
        };
        while let Some((index, held)) = self.lowest_held(key) {
            let delivered = self.keys[key.0 as usize].delivered;
            let next = delivered.map(|d| d + 1);
            if let Expire::Below(ceiling) = expire
                && held.seq >= ceiling
            {
                // The message being received goes first.
                break;
            }
            let forced = forced_up_to.is_some_and(|bound| held.seq <= bound);
            if next != Some(held.seq) && !forced && self.may_fill(key, held.seq) {
                break;
            }
            if let Some(next) = next
                && held.seq > next
            {
                self.gap(key, next, held.seq - 1, out);
            }
            self.keys[key.0 as usize].held -= 1;
            self.waiting -= 1;
            if let Some(entry) = &mut self.hold.entries[index] {
                entry.out = true;
            }
            self.mark_delivered(key, held.seq, held.conn, held.since);
            out.push(Output::Held(index));
        }
    }

    fn mark_delivered(&mut self, key: KeyId, seq: u64, conn: ConnId, at: Instant) {
        let state = &mut self.keys[key.0 as usize];
        state.delivered = Some(seq);
        state.delivered_at = Some(at);
        self.figures[conn.index()].first_arrivals += 1;
        self.figures[conn.index()].lag = Some(Duration::ZERO);
    }

    fn gap(&mut self, key: KeyId, from: u64, to: u64, out: &mut Vec<Output>) {
        self.gaps += 1;
        self.missing = self.missing.saturating_add(to - from + 1);
        out.push(Output::Gap { key, from, to });
    }

    fn hold_copy(
        &mut self,
        key: KeyId,
        seq: u64,
        conn: ConnId,
        stamp: RecvStamp,
        payload: &[u8],
        now: Instant,
    ) -> bool {
        let hold = &mut self.hold;
        if hold.bytes + payload.len() > hold.max_bytes {
            return false;
        }
        let Some(index) = hold.free.pop() else {
            return false;
        };
        let buffer = &mut hold.buffers[index];
        buffer.clear();
        buffer.extend_from_slice(payload);
        hold.bytes += payload.len();
        hold.entries[index] = Some(Held {
            key,
            seq,
            conn,
            stamp,
            since: now,
            out: false,
        });
        self.keys[key.0 as usize].held += 1;
        self.waiting += 1;
        true
    }
}

/// Which held messages [`Merge::settle`] forces out whatever the live connections could do.
#[derive(Debug, Clone, Copy)]
enum Expire {
    No,
    /// Those that waited `merge_wait` by then, and every one below them.
    At(Instant),
    /// Those below this number, and none at or above it (the message being received,
    /// which the hold had no room for, goes out before them).
    Below(u64),
}

/// `a == b`, for the short byte strings keys are without a call to `memcmp`: up to 16
/// bytes as two overlapping words from each end.
#[inline]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |bytes: &[u8], at: usize| {
        u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
    };
    let half = |bytes: &[u8], at: usize| {
        u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
    };
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => a == b,
    }
}

/// Builds a message event for a held message.
pub(super) fn held_delivery(held: Held, payload: &[u8]) -> Event<'_> {
    Event::Message(Delivery {
        conn: held.conn,
        key: Some(held.key),
        seq: Some(held.seq),
        stamp: held.stamp,
        payload,
    })
}

/// A word-at-a-time multiplicative hash (in the manner of rustc's FxHash): keys are short (a
/// product id, a channel) and looked up on every message, eight bytes per step; SipHash's
/// DoS resistance buys nothing against the exchange's own key names, which are bounded in
/// number (`max_keys`).
#[derive(Default)]
struct KeyHasher(u64);

impl KeyHasher {
    const K: u64 = 0x517c_c1b7_2722_0a95;

    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(Self::K);
    }
}

impl Hasher for KeyHasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }

    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            self.add(u64::from_le_bytes(chunk.try_into().expect("8 bytes")));
        }
        let rest = chunks.remainder();
        // The last 1 to 7 bytes in one word without a copy: two overlapping loads (the
        // length, hashed before the bytes, tells the overlaps apart).
        let n = rest.len();
        if n >= 4 {
            let lo = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
            let hi = u32::from_le_bytes(rest[n - 4..].try_into().expect("4 bytes"));
            self.add(u64::from(lo) | (u64::from(hi) << 32));
        } else if n > 0 {
            self.add(
                u64::from(rest[0]) | (u64::from(rest[n / 2]) << 8) | (u64::from(rest[n - 1]) << 16),
            );
        }
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}
