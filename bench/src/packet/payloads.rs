//! The packet suite's payloads, the same bytes on every run: JSON order-book snapshots, binary
//! market-data ticks, and already-compressed bytes (deflate output), each of any length.
//!
//! Owns what is measured on, not how: every library in a table gets the very same bytes.

use std::io::Write as _;

use flate2::Compression;
use flate2::write::DeflateEncoder;

/// The kinds of data the compression tables run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Data {
    /// [`order_book_json`].
    OrderBookJson,
    /// [`binary_ticks`].
    BinaryTicks,
    /// [`already_compressed`].
    AlreadyCompressed,
}

impl Data {
    /// Every kind, in table order.
    pub const ALL: [Self; 3] = [
        Self::OrderBookJson,
        Self::BinaryTicks,
        Self::AlreadyCompressed,
    ];

    /// File-name-safe identifier.
    pub fn id(self) -> &'static str {
        match self {
            Self::OrderBookJson => "json",
            Self::BinaryTicks => "ticks",
            Self::AlreadyCompressed => "compressed",
        }
    }

    /// What a table heading calls it.
    pub fn title(self) -> &'static str {
        match self {
            Self::OrderBookJson => "JSON order-book snapshots",
            Self::BinaryTicks => "binary market-data ticks",
            Self::AlreadyCompressed => "already-compressed bytes (deflate output)",
        }
    }

    /// `len` bytes of this kind.
    pub fn generate(self, len: usize) -> Vec<u8> {
        match self {
            Self::OrderBookJson => order_book_json(len),
            Self::BinaryTicks => binary_ticks(len),
            Self::AlreadyCompressed => already_compressed(len),
        }
    }
}

/// Bytes in one [`binary_ticks`] record.
pub const TICK_RECORD_LEN: usize = 32;

/// `len` bytes of JSON order-book snapshots, one after another: each a whole book of 50 bid and
/// 50 ask levels, prices two decimals apart by a few cents, quantities with eight decimals, as
/// a REST depth snapshot of a crypto exchange. Consecutive snapshots share the structure, not
/// the numbers. The last snapshot is cut at `len`.
pub fn order_book_json(len: usize) -> Vec<u8> {
    let mut rng = Rng(0x6f72_6465_7262_6f6f);
    let mut out = Vec::with_capacity(len + (8 << 10));
    let mut mid_cents: u64 = 9_734_210;
    let mut sequence: u64 = 51_203_118_774;
    while out.len() < len {
        sequence += 1 + rng.below(40);
        mid_cents = mid_cents + rng.below(200) - 100;
        let _ = write!(
            out,
            r#"{{"type":"snapshot","symbol":"BTC-USDT","sequence":{sequence},"bids":["#
        );
        book_side(&mut out, &mut rng, mid_cents, false);
        out.extend_from_slice(br#"],"asks":["#);
        book_side(&mut out, &mut rng, mid_cents, true);
        out.extend_from_slice(b"]}\n");
    }
    out.truncate(len);
    out
}

/// `len` bytes of little-endian 32-byte tick records: nanosecond timestamp (u64, rising by
/// microseconds), instrument id (u32, one of 16), price in ticks (i64, a random walk),
/// quantity (u32), sequence number (u32) and side and flags (u32). The last record is cut at
/// `len`.
pub fn binary_ticks(len: usize) -> Vec<u8> {
    let mut rng = Rng(0x7469_636b_7469_636b);
    let mut out = Vec::with_capacity(len + TICK_RECORD_LEN);
    let mut time_ns: u64 = 1_732_350_000_123_456_789;
    let mut prices = [0i64; 16];
    for (i, price) in prices.iter_mut().enumerate() {
        *price = 4_000_000 + i as i64 * 250_000;
    }
    let mut sequence: u32 = 7_004_211;
    while out.len() < len {
        time_ns += 200 + rng.below(5_000);
        let instrument = rng.below(16) as usize;
        prices[instrument] += rng.below(9) as i64 - 4;
        sequence += 1;
        out.extend_from_slice(&time_ns.to_le_bytes());
        out.extend_from_slice(&(1_000 + instrument as u32).to_le_bytes());
        out.extend_from_slice(&prices[instrument].to_le_bytes());
        out.extend_from_slice(&(1 + rng.below(500) as u32 * 100).to_le_bytes());
        out.extend_from_slice(&sequence.to_le_bytes());
        out.extend_from_slice(&(rng.below(2) as u32).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// `len` bytes that have been compressed already: JSON order books through deflate at its best
/// level, as a gzip body or a compressed archive would arrive. Neither LZ4 nor Zstd can
/// shrink them by more than a few percent.
pub fn already_compressed(len: usize) -> Vec<u8> {
    let source = order_book_json(len.saturating_mul(8).max(64 << 10));
    let mut encoder = DeflateEncoder::new(Vec::with_capacity(len), Compression::best());
    let mut out = Vec::with_capacity(len);
    // Deflate shrinks the JSON about eight times; compress further copies (each its own
    // stream) until there are enough bytes.
    while out.len() < len {
        encoder.write_all(&source).expect("deflate into a Vec");
        out.extend_from_slice(&encoder.reset(Vec::new()).expect("deflate into a Vec"));
    }
    out.truncate(len);
    out
}

/// One side of a book: 50 levels moving away from the mid price.
fn book_side(out: &mut Vec<u8>, rng: &mut Rng, mid_cents: u64, asks: bool) {
    let mut price = if asks { mid_cents + 1 } else { mid_cents };
    for level in 0..50 {
        if level > 0 {
            out.push(b',');
            let step = 1 + rng.below(30);
            price = if asks { price + step } else { price - step };
        }
        let quantity = rng.below(500_000_000);
        let _ = write!(
            out,
            r#"["{}.{:02}","{}.{:08}"]"#,
            price / 100,
            price % 100,
            quantity / 100_000_000,
            quantity % 100_000_000
        );
    }
}

/// xorshift64*: fast, deterministic, good enough to make numbers look like a market's.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform-enough in `0..bound`.
    fn below(&mut self, bound: u64) -> u64 {
        self.next() % bound
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deflated_len(data: &[u8]) -> usize {
        let mut encoder = DeflateEncoder::new(Vec::new(), Compression::default());
        encoder.write_all(data).expect("deflate into a Vec");
        encoder.finish().expect("deflate into a Vec").len()
    }

    #[test]
    fn every_kind_has_exactly_the_length_asked_for() {
        for data in Data::ALL {
            for len in [0, 1, 64, 1000, 64 << 10] {
                assert_eq!(data.generate(len).len(), len, "{data:?} at {len} B");
            }
        }
    }

    #[test]
    fn every_kind_is_the_same_on_every_run_and_a_prefix_of_a_longer_one() {
        for data in Data::ALL {
            let short = data.generate(4096);
            assert_eq!(short, data.generate(4096), "{data:?}");
            if data != Data::AlreadyCompressed {
                // The compressed stream depends on how much JSON went in; the others extend.
                assert_eq!(&data.generate(8192)[..4096], &short[..], "{data:?}");
            }
        }
    }

    #[test]
    fn order_book_json_is_whole_snapshots_of_fifty_levels_a_side() {
        let json = order_book_json(256 << 10);
        let text = std::str::from_utf8(&json).expect("ASCII JSON");
        let snapshots: Vec<&str> = text.lines().collect();
        let whole = &snapshots[..snapshots.len() - 1];
        assert!(whole.len() > 10);
        for snapshot in whole {
            assert!(snapshot.starts_with(r#"{"type":"snapshot","symbol":"BTC-USDT""#));
            assert!(snapshot.ends_with("]]}"));
            assert_eq!(
                snapshot.matches(r#"[""#).count(),
                100,
                "50 bids and 50 asks"
            );
        }
        assert_ne!(whole[0], whole[1], "consecutive snapshots differ");
    }

    #[test]
    fn binary_ticks_have_rising_timestamps_and_known_instruments() {
        let ticks = binary_ticks(100 * TICK_RECORD_LEN);
        let mut last = 0u64;
        for record in ticks.chunks_exact(TICK_RECORD_LEN) {
            let time = u64::from_le_bytes(record[..8].try_into().expect("8 bytes"));
            let instrument = u32::from_le_bytes(record[8..12].try_into().expect("4 bytes"));
            assert!(time > last);
            assert!((1_000..1_016).contains(&instrument));
            last = time;
        }
    }

    #[test]
    fn compressibility_ranks_json_then_ticks_then_compressed_bytes() {
        let len = 64 << 10;
        let json = deflated_len(&order_book_json(len));
        let ticks = deflated_len(&binary_ticks(len));
        let compressed = deflated_len(&already_compressed(len));
        assert!(json * 3 < len, "JSON shrinks at least three times: {json}");
        assert!(ticks < len * 3 / 4, "ticks shrink: {ticks}");
        assert!(ticks > json, "ticks compress less than JSON");
        assert!(
            compressed > len * 97 / 100,
            "compressed bytes stay: {compressed}"
        );
    }
}
