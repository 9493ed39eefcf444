//! Caller-owned byte buffers for the sans-IO codecs.
//!
//! This module owns [`ReadBuf`], the flat slab a socket reads straight into, and [`WriteBuf`],
//! an output buffer with headroom so a frame header can be prepended in front of a payload that
//! was written first. It does not do I/O: transports hand [`ReadBuf::spare`] to `Read::read` and
//! [`WriteBuf::as_slice`] to `Write::write`.
//!
//! Neither buffer ever exposes uninitialised memory: every byte of the backing `Vec` is
//! initialised (zeroed) when the buffer grows, so `spare()` is safe to give to any `Read`.

/// Relocations inside a [`ReadBuf`] move bytes by whole multiples of this (4 KiB).
///
/// A socket read copies into [`ReadBuf::spare`] with the CPU's fast string copy, which slows
/// down about twelvefold when the destination sits a few bytes past the source modulo 4 KiB
/// (a store and a later load look alike to the memory disambiguator: "4K aliasing"). Moving a
/// partial frame to offset 0 used to put the next read exactly there, a few bytes past a 4 KiB
/// boundary, and showed as an 8x p99 when parsing 40 B and 512 B frames. Keeping the offset
/// modulo 4 KiB when data moves keeps each read where an unmoved buffer would have put it.
pub const ALIAS_PERIOD: usize = 4096;

/// A flat receive buffer: `[consumed | data | spare]`.
///
/// Bytes are appended at the end (through [`spare`](Self::spare) + [`filled`](Self::filled), or
/// [`extend_from_slice`](Self::extend_from_slice)) and released from the front with
/// [`consume`](Self::consume). Consumed space is reclaimed by [`compact`](Self::compact), which
/// `spare` calls itself when the spare tail is smaller than a quarter of the capacity or the
/// data is no larger than the space it frees. In a buffer of 16 KiB or more, data moves only by
/// multiples of [`ALIAS_PERIOD`], and an empty buffer starts (and restarts) at its first
/// 4 KiB-aligned address rather than at offset 0.
#[derive(Debug, Clone)]
pub struct ReadBuf {
    storage: Vec<u8>,
    start: usize,
    end: usize,
    /// `ALIAS_PERIOD - 1` in a buffer of at least four periods, else 0: where moved data
    /// goes is `offset & home_mask` (see [`home`](Self::home)). Kept beside the length so the
    /// per-read check is one AND.
    home_mask: usize,
    /// Where an empty buffer starts: the first offset whose address is 4 KiB-aligned in a
    /// buffer of at least four periods, else 0.
    origin: usize,
}

impl ReadBuf {
    /// A buffer with `capacity` bytes of initialised storage.
    pub fn with_capacity(capacity: usize) -> Self {
        let mut buf = Self {
            storage: vec![0; capacity.max(16)],
            start: 0,
            end: 0,
            home_mask: 0,
            origin: 0,
        };
        buf.place();
        buf.start = buf.origin;
        buf.end = buf.origin;
        buf
    }

    /// Sets `home_mask` and `origin` for the current storage (after it is made or moved).
    fn place(&mut self) {
        self.home_mask = Self::home_mask_for(self.storage.len());
        self.origin = if self.home_mask == 0 {
            0
        } else {
            self.storage.as_ptr().addr().wrapping_neg() & (ALIAS_PERIOD - 1)
        };
    }

    /// The received bytes not yet consumed.
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.storage[self.start..self.end]
    }

    /// The received bytes not yet consumed, mutably (used to unmask payloads in place).
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.end]
    }

    /// Number of unconsumed bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// True when no unconsumed bytes are held.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Total storage, consumed, unconsumed and spare.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.storage.len()
    }

    /// Writable, initialised space after the data, for `Read::read` to fill.
    ///
    /// Compacts first when the tail is short, or when the unconsumed bytes are no more than
    /// the consumed ones (moving them costs at most what was already read, so compaction is
    /// O(1) per byte amortised, and a stream whose reads end mid-frame keeps reusing the front
    /// of the buffer instead of walking all of it through the cache). Returns an empty slice
    /// only when the unconsumed data fills the whole capacity: the caller must then consume or
    /// [`reserve`](Self::reserve).
    #[inline]
    pub fn spare(&mut self) -> &mut [u8] {
        let gain = self.start - self.home(self.start);
        if gain > 0
            && (self.len() <= gain || self.storage.len() - self.end < self.storage.len() / 4)
        {
            self.compact();
        }
        &mut self.storage[self.end..]
    }

    /// True when [`spare`](Self::spare) would return an empty slice: the unconsumed data
    /// reaches the end of the storage and compacting would not move it.
    #[inline]
    pub fn is_full(&self) -> bool {
        self.end == self.storage.len() && self.home(self.start) == self.start
    }

    /// True when the data reaches the end of the storage: the last read filled all the spare
    /// space it was given.
    #[inline]
    pub fn ends_at_capacity(&self) -> bool {
        self.end == self.storage.len()
    }

    /// Grows the storage (zero-filled) to `capacity` bytes; a smaller `capacity` does nothing.
    /// The data stays where it is.
    pub fn grow_to(&mut self, capacity: usize) {
        if capacity > self.storage.len() {
            self.storage.resize(capacity, 0);
            self.place();
        }
    }

    /// Marks `n` bytes of the slice last returned by [`spare`](Self::spare) as received.
    ///
    /// # Panics
    /// If `n` is larger than the spare space: that is a transport bug, not peer input.
    #[inline]
    pub fn filled(&mut self, n: usize) {
        assert!(
            n <= self.storage.len() - self.end,
            "ReadBuf::filled past the spare space"
        );
        self.end += n;
    }

    /// Copies `bytes` in, growing the storage if needed.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        self.storage[self.end..self.end + bytes.len()].copy_from_slice(bytes);
        self.end += bytes.len();
    }

    /// Releases `n` bytes from the front.
    ///
    /// # Panics
    /// If `n` exceeds [`len`](Self::len).
    #[inline]
    pub fn consume(&mut self, n: usize) {
        assert!(n <= self.len(), "ReadBuf::consume past the data");
        self.start += n;
        if self.start == self.end {
            self.start = self.origin;
            self.end = self.origin;
        }
    }

    /// Moves the unconsumed bytes towards the front of the storage: to offset 0 in a buffer
    /// under 16 KiB, else to the first offset with the same remainder modulo 4 KiB (see
    /// [`ALIAS_PERIOD`]), so the next read lands where it would have landed had nothing moved.
    pub fn compact(&mut self) {
        let home = self.home(self.start);
        if self.start > home {
            self.storage.copy_within(self.start..self.end, home);
            self.end -= self.start - home;
            self.start = home;
        }
    }

    /// Where data starting at `at` goes when it moves: the same offset modulo
    /// [`ALIAS_PERIOD`] in a buffer of at least four periods (giving up under 4 KiB of space
    /// for it), else the front.
    #[inline(always)]
    fn home(&self, at: usize) -> usize {
        at & self.home_mask
    }

    const fn home_mask_for(len: usize) -> usize {
        if len >= 4 * ALIAS_PERIOD {
            ALIAS_PERIOD - 1
        } else {
            0
        }
    }

    /// Ensures at least `additional` bytes of spare space, compacting and then growing
    /// (zero-filled) as needed. Callers bound `additional` by their configured limits.
    pub fn reserve(&mut self, additional: usize) {
        if self.storage.len() - self.end >= additional {
            return;
        }
        self.compact();
        let needed = self.end + additional;
        if needed > self.storage.len() {
            self.grow_to(needed.max(self.storage.len().saturating_mul(2)));
        }
    }

    /// Drops all data.
    pub fn clear(&mut self) {
        self.start = self.origin;
        self.end = self.origin;
    }
}

/// An output buffer with headroom: `[headroom | data | spare]`.
///
/// A frame writer appends the payload first (or copies it), then prepends the header into the
/// headroom with [`insert_before_tail`](Self::insert_before_tail), so the whole frame is one contiguous slice.
/// Multiple frames may be queued back to back; [`as_slice`](Self::as_slice) is what goes to
/// the socket and [`consume`](Self::consume) releases what was written.
#[derive(Debug, Clone)]
pub struct WriteBuf {
    storage: Vec<u8>,
    start: usize,
    end: usize,
    headroom: usize,
}

impl WriteBuf {
    /// A buffer with `capacity` bytes after `headroom` bytes reserved for prepended headers.
    pub fn new(capacity: usize, headroom: usize) -> Self {
        Self {
            storage: vec![0; headroom + capacity],
            start: headroom,
            end: headroom,
            headroom,
        }
    }

    /// Bytes queued for the socket.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.storage[self.start..self.end]
    }

    /// Number of queued bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// True when nothing is queued.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Bytes of storage held (headroom included): what the buffer costs while it exists.
    pub fn capacity(&self) -> usize {
        self.storage.len()
    }

    /// Releases `n` written bytes from the front; resets to the headroom mark when empty.
    ///
    /// # Panics
    /// If `n` exceeds [`len`](Self::len).
    #[inline]
    pub fn consume(&mut self, n: usize) {
        assert!(n <= self.len(), "WriteBuf::consume past the data");
        self.start += n;
        if self.start == self.end {
            self.start = self.headroom;
            self.end = self.headroom;
        }
    }

    /// Appends `bytes` after the queued data.
    #[inline]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        let at = self.reserve_tail(bytes.len());
        self.storage[at..at + bytes.len()].copy_from_slice(bytes);
        self.end += bytes.len();
    }

    /// Appends `len` bytes and returns them for the caller to fill (they hold stale bytes).
    #[inline]
    pub fn append_slot(&mut self, len: usize) -> &mut [u8] {
        let at = self.reserve_tail(len);
        self.end += len;
        &mut self.storage[at..at + len]
    }

    /// Writes `header` immediately in front of the last `tail_len` queued bytes.
    ///
    /// When those bytes are everything queued (the payload was written into an empty buffer),
    /// the header lands in the headroom and nothing moves. Otherwise the tail is shifted
    /// right by `header.len()`, one `memmove`.
    ///
    /// # Panics
    /// If `tail_len` exceeds [`len`](Self::len).
    #[inline]
    pub fn insert_before_tail(&mut self, header: &[u8], tail_len: usize) {
        assert!(
            tail_len <= self.len(),
            "WriteBuf::insert_before_tail past the data"
        );
        if tail_len == self.len() && header.len() <= self.start {
            self.start -= header.len();
            self.storage[self.start..self.start + header.len()].copy_from_slice(header);
            return;
        }
        let tail_start = self.end - tail_len;
        self.append_slot(header.len());
        self.storage
            .copy_within(tail_start..tail_start + tail_len, tail_start + header.len());
        self.storage[tail_start..tail_start + header.len()].copy_from_slice(header);
    }

    /// Keeps the first `len` queued bytes and drops the rest: a writer that fails halfway
    /// through a message calls it with the [`len`](Self::len) it saw before it began, so the
    /// buffer is left exactly as it was. Resets to the headroom mark when nothing is left.
    ///
    /// # Panics
    /// If `len` exceeds [`len`](Self::len).
    #[inline]
    pub fn truncate(&mut self, len: usize) {
        assert!(len <= self.len(), "WriteBuf::truncate past the data");
        self.end = self.start + len;
        if len == 0 {
            self.start = self.headroom;
            self.end = self.headroom;
        }
    }

    /// Queued bytes, mutably (used to mask a payload in place).
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.end]
    }

    /// Drops all queued bytes.
    pub fn clear(&mut self) {
        self.start = self.headroom;
        self.end = self.headroom;
    }

    /// Headroom this buffer restores when it empties.
    pub fn headroom(&self) -> usize {
        self.headroom
    }

    #[inline]
    fn reserve_tail(&mut self, len: usize) -> usize {
        if self.storage.len() - self.end < len {
            self.make_room(len);
        }
        self.end
    }

    /// The rare path of [`reserve_tail`](Self::reserve_tail), out of line so the common
    /// append stays a compare and a copy.
    #[cold]
    #[inline(never)]
    fn make_room(&mut self, len: usize) {
        {
            // Move the queued bytes back to the headroom mark before growing.
            if self.start > self.headroom {
                self.storage
                    .copy_within(self.start..self.end, self.headroom);
                self.end -= self.start - self.headroom;
                self.start = self.headroom;
            }
            let needed = self.end + len;
            if needed > self.storage.len() {
                let target = needed.max(self.storage.len().saturating_mul(2));
                self.storage.resize(target, 0);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_full_says_exactly_when_spare_is_empty() {
        for capacity in [16, 100, 4 * ALIAS_PERIOD + 8] {
            for consumed in [
                0,
                1,
                7,
                15,
                ALIAS_PERIOD - 1,
                ALIAS_PERIOD,
                ALIAS_PERIOD + 3,
            ] {
                for kept in [0, 1, 9, capacity / 2, capacity] {
                    let mut buf = ReadBuf::with_capacity(capacity);
                    let spare = buf.spare();
                    let total = (consumed + kept).min(spare.len());
                    spare[..total].fill(1);
                    buf.filled(total);
                    buf.consume(consumed.min(total));
                    let full = buf.is_full();
                    assert_eq!(
                        full,
                        buf.spare().is_empty(),
                        "capacity {capacity} consumed {consumed} kept {kept}"
                    );
                }
            }
        }
    }

    #[test]
    fn read_buf_fill_consume_compact() {
        let mut buf = ReadBuf::with_capacity(16);
        buf.spare()[..10].copy_from_slice(b"0123456789");
        buf.filled(10);
        assert_eq!(buf.data(), b"0123456789");
        buf.consume(2);
        // 8 unread bytes against 2 consumed, and 6 of 16 spare: moving would cost more than
        // it frees, so nothing moves.
        assert_eq!(buf.spare().len(), 6);
        buf.spare()[..6].copy_from_slice(b"abcdef");
        buf.filled(6);
        buf.consume(10);
        // 4 unread bytes against 12 consumed: they move to the front and the rest is spare.
        assert_eq!(buf.spare().len(), 12);
        assert_eq!(buf.data(), b"cdef");
    }

    #[test]
    fn read_buf_moves_keep_the_next_read_at_the_same_offset_modulo_4k() {
        let mut buf = ReadBuf::with_capacity(64 << 10);
        let first_read_at = buf.capacity() - buf.spare().len();
        let bytes: Vec<u8> = (0..10_000u32).map(|i| i as u8).collect();
        buf.extend_from_slice(&bytes);
        buf.consume(9_990);
        // 10 bytes left against 9 990 consumed: they move, by a multiple of 4 KiB.
        let spare = buf.spare().len();
        let next_read_at = buf.capacity() - spare;
        assert_eq!(
            next_read_at % ALIAS_PERIOD,
            (first_read_at + 10_000) % ALIAS_PERIOD
        );
        assert!(next_read_at < ALIAS_PERIOD + 10, "moved to the first 4 KiB");
        assert_eq!(buf.data(), &bytes[9_990..]);
        // Emptied, it restarts at its first 4 KiB-aligned address, whatever came before.
        buf.filled(100);
        buf.consume(buf.len());
        assert_eq!(buf.spare().as_ptr().addr() % ALIAS_PERIOD, 0);
        assert!(buf.capacity() - buf.spare().len() < ALIAS_PERIOD);
    }

    #[test]
    fn large_read_bufs_start_and_restart_4k_aligned() {
        let mut buf = ReadBuf::with_capacity(64 << 10);
        assert_eq!(buf.spare().as_ptr().addr() % ALIAS_PERIOD, 0, "new");
        buf.extend_from_slice(&[7; 5000]);
        buf.consume(5000);
        assert_eq!(buf.spare().as_ptr().addr() % ALIAS_PERIOD, 0, "emptied");
        buf.extend_from_slice(&[7; 300]);
        buf.clear();
        assert_eq!(buf.spare().as_ptr().addr() % ALIAS_PERIOD, 0, "cleared");
        // Growing moves the storage; the data survives and the next empty start is aligned in
        // the new storage.
        buf.extend_from_slice(&[1, 2, 3]);
        buf.grow_to(256 << 10);
        assert_eq!(buf.data(), &[1, 2, 3]);
        buf.consume(3);
        assert_eq!(buf.spare().as_ptr().addr() % ALIAS_PERIOD, 0, "grown");
    }

    #[test]
    fn small_read_bufs_still_compact_to_the_front() {
        let mut buf = ReadBuf::with_capacity(1024);
        buf.extend_from_slice(&[1; 1000]);
        buf.consume(990);
        assert_eq!(buf.spare().len(), 1024 - 10);
        assert_eq!(buf.data(), &[1; 10]);
    }

    #[test]
    fn read_buf_reserve_grows_zeroed() {
        let mut buf = ReadBuf::with_capacity(16);
        buf.extend_from_slice(&[7; 16]);
        assert!(buf.spare().is_empty());
        buf.reserve(100);
        assert!(buf.spare().len() >= 100);
        assert!(buf.spare().iter().all(|&b| b == 0));
        assert_eq!(buf.data(), &[7; 16]);
    }

    #[test]
    fn read_buf_consume_all_resets() {
        let mut buf = ReadBuf::with_capacity(32);
        buf.extend_from_slice(b"abc");
        buf.consume(3);
        assert!(buf.is_empty());
        assert_eq!(buf.spare().len(), 32);
    }

    #[test]
    fn write_buf_header_goes_into_headroom() {
        let mut buf = WriteBuf::new(64, 14);
        buf.extend_from_slice(b"payload");
        let capacity_before = buf.storage.len();
        buf.insert_before_tail(&[0x81, 7], 7);
        assert_eq!(buf.as_slice(), b"\x81\x07payload");
        assert_eq!(buf.start, 12, "header written into the headroom");
        assert_eq!(buf.storage.len(), capacity_before);
        buf.consume(buf.len());
        assert!(buf.is_empty());
        assert_eq!(buf.start, 14, "headroom restored when drained");
    }

    #[test]
    fn write_buf_header_behind_queued_frames_shifts_tail() {
        let mut buf = WriteBuf::new(8, 2);
        buf.extend_from_slice(b"first");
        buf.extend_from_slice(b"second");
        buf.insert_before_tail(&[1, 2, 3], 6);
        assert_eq!(buf.as_slice(), b"first\x01\x02\x03second");
    }

    #[test]
    fn write_buf_truncate_drops_the_tail() {
        let mut buf = WriteBuf::new(16, 4);
        buf.extend_from_slice(b"keep");
        buf.extend_from_slice(b"drop");
        buf.truncate(4);
        assert_eq!(buf.as_slice(), b"keep");
        buf.consume(2);
        buf.truncate(0);
        assert!(buf.is_empty());
        assert_eq!(buf.start, 4, "headroom restored when emptied");
    }

    #[test]
    fn write_buf_grows_keeping_data() {
        let mut buf = WriteBuf::new(4, 4);
        buf.extend_from_slice(b"abcd");
        buf.consume(2);
        buf.extend_from_slice(b"efghijkl");
        assert_eq!(buf.as_slice(), b"cdefghijkl");
    }
}
