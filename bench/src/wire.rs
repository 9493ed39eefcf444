//! The pre-encoded bytes every library parses: frames built here, independently of any
//! library under test, so each one sees exactly the same input; and the deterministic
//! market-data feed the compression workloads send.

pub use tickwire_loadgen::payload::json_payload;

/// `count` distinct JSON market-data messages of exactly `len` bytes each, the same on every
/// run: trades below 256 B, order book depth updates from 256 B up (as many bid and ask levels
/// as fit). Prices walk a few cents from message to message, quantities, ids and times move
/// as an exchange's do, and numbers have fixed decimals as Binance's do, so consecutive messages
/// share their structure but not their numbers: what permessage-deflate sees on a real feed.
/// JSON whitespace before the closing brace pads each message to `len`.
///
/// Panics when `len` is under 127 B, the longest trade.
pub fn market_messages(len: usize, count: usize) -> Vec<Vec<u8>> {
    let mut feed = Feed {
        // Any fixed seed: the same feed on every run.
        rng: 0x7469_636b_7769_7265,
        mid_cents: 9_734_210,
        time_ms: 1_732_350_000_123,
        update_id: 4_180_223_411,
    };
    (0..count).map(|_| feed.message(len)).collect()
}

/// The state of the deterministic feed behind [`market_messages`].
struct Feed {
    rng: u64,
    mid_cents: u64,
    time_ms: u64,
    update_id: u64,
}

impl Feed {
    fn message(&mut self, len: usize) -> Vec<u8> {
        self.time_ms += 1 + self.below(20);
        // A walk of a few cents, held in five integer digits so every price keeps its width.
        self.mid_cents = (self.mid_cents + self.below(7)).saturating_sub(3);
        self.mid_cents = self.mid_cents.clamp(1_100_000, 9_900_000);
        let first_id = self.update_id + 1;
        self.update_id += 1 + self.below(60);
        let mut out = if len < 256 {
            let buyer_maker = self.below(2) == 0;
            let quantity = self.quantity(false);
            format!(
                r#"{{"e":"trade","E":{},"s":"BTCUSDT","t":{},"p":"{}","q":"{quantity}","T":{},"m":{buyer_maker}}}"#,
                self.time_ms,
                self.update_id,
                price(self.mid_cents),
                self.time_ms - 2,
            )
        } else {
            // A level is at most 33 bytes with its comma; the head and the tail take 95.
            let levels = len.saturating_sub(95) / 33;
            let bids = levels / 2;
            let mut book = format!(
                r#"{{"e":"depthUpdate","E":{},"s":"BTCUSDT","U":{first_id},"u":{},"b":["#,
                self.time_ms, self.update_id,
            );
            for level in 0..levels {
                if level == bids {
                    trim_comma(&mut book);
                    book.push_str(r#"],"a":["#);
                }
                // Bids below the mid, asks above, a level every ~10 cents.
                let rank = if level < bids { level } else { level - bids } as u64;
                let offset = rank * 10 + self.below(10) + 1;
                let cents = if level < bids {
                    self.mid_cents - offset
                } else {
                    self.mid_cents + offset
                };
                let quantity = self.quantity(true);
                book.push_str(&format!(r#"["{}","{quantity}"],"#, price(cents)));
            }
            trim_comma(&mut book);
            book.push_str("]}");
            book
        }
        .into_bytes();
        assert!(
            out.len() <= len,
            "a {len} B market-data message needs {} B",
            out.len()
        );
        let close = out.pop();
        out.resize(len - 1, b' ');
        out.extend(close);
        out
    }

    /// A quantity as exchanges print it: eight decimals, three of them significant; with
    /// `levels`, one book level in five is emptied (zero).
    fn quantity(&mut self, levels: bool) -> String {
        if levels && self.below(5) == 0 {
            return "0.00000000".to_owned();
        }
        let thousandths = 1 + self.below(40_000);
        format!("{}.{:03}00000", thousandths / 1000, thousandths % 1000)
    }

    /// A number in `0..n` (splitmix64; the tiny modulo bias does not matter here).
    fn below(&mut self, n: u64) -> u64 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }
}

/// Drops the comma after the last level of a side.
fn trim_comma(book: &mut String) {
    if book.ends_with(',') {
        book.pop();
    }
}

/// `cents` as a price with eight decimals (always five integer digits here).
fn price(cents: u64) -> String {
    format!("{}.{:02}000000", cents / 100, cents % 100)
}

/// One frame: FIN as given, `opcode`, unmasked when `mask` is `None`.
pub fn frame(fin: bool, opcode: u8, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    let mut out = Vec::with_capacity(payload.len() + 14);
    out.push(if fin { 0x80 } else { 0 } | opcode);
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    match payload.len() {
        n if n < 126 => out.push(mask_bit | n as u8),
        n if n <= 0xffff => {
            out.push(mask_bit | 126);
            out.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            out.push(mask_bit | 127);
            out.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    match mask {
        None => out.extend_from_slice(payload),
        Some(key) => {
            out.extend_from_slice(&key);
            out.extend(payload.iter().enumerate().map(|(i, b)| b ^ key[i % 4]));
        }
    }
    out
}

/// A text message split into `pieces` frames of near-equal size.
pub fn fragmented_text(payload: &[u8], pieces: usize, mask: Option<[u8; 4]>) -> Vec<u8> {
    let size = payload.len().div_ceil(pieces);
    let mut out = Vec::new();
    let chunks: Vec<&[u8]> = payload.chunks(size).collect();
    for (i, chunk) in chunks.iter().enumerate() {
        let opcode = if i == 0 { 0x1 } else { 0x0 };
        out.extend(frame(i + 1 == chunks.len(), opcode, chunk, mask));
    }
    out
}

/// The masking key used for every masked frame (any non-zero key; fixed so runs repeat).
pub const MASK_KEY: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];
