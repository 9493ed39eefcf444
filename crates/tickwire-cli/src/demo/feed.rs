//! The demo's synthetic market: order-book updates and trades for a few symbols at a steady
//! rate, and a status message four times a second, each published once on its topic with its
//! sequence number and publish time embedded.
//!
//! Owns the prices (a random walk per symbol) and the pacing; publishing and fan-out are the
//! server's ([`ServerHandle::publish`]).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use tickwire::server::{HandleError, ServerHandle, SharedFrame};

use super::{Shared, TopicId};

/// Symbols the feed quotes, with a starting price in cents.
const SYMBOLS: [(&str, u64); 16] = [
    ("BTC-USD", 6_401_250),
    ("ETH-USD", 320_175),
    ("SOL-USD", 14_530),
    ("BNB-USD", 58_210),
    ("AVAX-USD", 3_412),
    ("LINK-USD", 1_488),
    ("LTC-USD", 8_215),
    ("DOT-USD", 712),
    ("ADA-USD", 1_045),
    ("ATOM-USD", 905),
    ("NEAR-USD", 611),
    ("UNI-USD", 973),
    ("APT-USD", 1_127),
    ("ARB-USD", 1_090),
    ("OP-USD", 1_740),
    ("FIL-USD", 598),
];

/// The most symbols `--symbols` may ask for.
pub(crate) const MAX_SYMBOLS: usize = SYMBOLS.len();

/// How often the status topic is published.
const STATUS_EVERY: Duration = Duration::from_millis(250);

/// How often the feed publishes what is due.
const BURST_EVERY: Duration = Duration::from_millis(2);

/// Out of 10 feed messages, how many are book updates (the rest are trades).
const BOOK_SHARE: u64 = 8;

/// Publishes `rate` book updates and trades per second over `symbols` symbols (book updates
/// keyed by symbol, so conflation keeps the newest per symbol) until `duration` has passed,
/// then records the last sequence number of each topic in `shared` and returns. Stops early
/// when the server does.
pub(crate) fn run(
    handle: &ServerHandle,
    shared: &Shared,
    rate: u32,
    symbols: usize,
    duration: Duration,
) -> Result<(), HandleError> {
    let mut market = Market::new(symbols);
    let mut text = String::with_capacity(512);
    let start = Instant::now();
    let mut sent: u64 = 0;
    let mut next_status = start;
    let result = loop {
        let now = Instant::now();
        let elapsed = now - start;
        if elapsed >= duration {
            break Ok(());
        }
        if now >= next_status {
            next_status += STATUS_EVERY;
            if let Err(e) = publish_status(handle, shared, &mut text) {
                break Err(e);
            }
        }
        // Catch up with the schedule: every message due by now goes out in this burst.
        let due = (elapsed.as_secs_f64() * f64::from(rate)) as u64;
        let mut failed = None;
        while sent < due {
            let event = market.next_event();
            if let Err(e) = publish_event(handle, shared, &event, &mut text) {
                failed = Some(e);
                break;
            }
            sent += 1;
        }
        if let Some(e) = failed {
            break Err(e);
        }
        // Bursts every 2 ms, as exchange feeds arrive: measured on 2 cores with 200 clients,
        // 0.5 ms bursts gave p99 23 ms (a round of writes per burst per subscriber), 2 ms
        // bursts p99 7 ms at the same deliveries per second. A message is stamped when it is
        // published, so latency measures the fan-out, not the wait for the next burst.
        std::thread::sleep(BURST_EVERY);
    };
    // One last status, so every client's view ends on the final numbers.
    let last = result.and_then(|()| publish_status(handle, shared, &mut text));
    shared.feed_done.store(true, Ordering::Release);
    last
}

fn publish_event(
    handle: &ServerHandle,
    shared: &Shared,
    event: &Event,
    text: &mut String,
) -> Result<(), HandleError> {
    let topic = match event.kind {
        EventKind::Book { .. } => TopicId::Book,
        EventKind::Trade { .. } => TopicId::Trades,
    };
    let seq = handle.publish(shared.topic(topic), event.symbol as u64, |seq| {
        text.clear();
        let ts = shared.now_ns();
        event.write_json(text, seq, ts);
        SharedFrame::text(text)
    })?;
    shared.published[topic as usize].store(seq, Ordering::Release);
    Ok(())
}

/// `{"type":"status",...}`: the feed's counts so far.
fn publish_status(
    handle: &ServerHandle,
    shared: &Shared,
    text: &mut String,
) -> Result<(), HandleError> {
    let book = shared.published[TopicId::Book as usize].load(Ordering::Acquire);
    let trades = shared.published[TopicId::Trades as usize].load(Ordering::Acquire);
    let seq = handle.publish(shared.topic(TopicId::Status), 0, |seq| {
        text.clear();
        let ts = shared.now_ns();
        let _ = write!(
            text,
            r#"{{"type":"status","seq":{seq},"ts":{ts},"book":{book},"trades":{trades}}}"#
        );
        SharedFrame::text(text)
    })?;
    shared.published[TopicId::Status as usize].store(seq, Ordering::Release);
    Ok(())
}

/// One thing that happened in the market.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Event {
    pub(crate) symbol: usize,
    pub(crate) kind: EventKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EventKind {
    /// The top three levels of each side after a change: (price in cents, size in
    /// thousandths).
    Book {
        bids: [(u64, u64); 3],
        asks: [(u64, u64); 3],
    },
    /// A trade at `price` cents for `size` thousandths; `buy` when the taker bought.
    Trade {
        id: u64,
        price: u64,
        size: u64,
        buy: bool,
    },
}

impl Event {
    /// The message as the clients get it: flat JSON with `type`, `seq` and `ts` (publish
    /// time, nanoseconds since the demo started) first.
    pub(crate) fn write_json(&self, out: &mut String, seq: u64, ts: u64) {
        let symbol = SYMBOLS[self.symbol].0;
        match &self.kind {
            EventKind::Book { bids, asks } => {
                let _ = write!(
                    out,
                    r#"{{"type":"book","seq":{seq},"ts":{ts},"sym":"{symbol}","bids":"#
                );
                write_levels(out, bids);
                out.push_str(r#","asks":"#);
                write_levels(out, asks);
                out.push('}');
            }
            EventKind::Trade {
                id,
                price,
                size,
                buy,
            } => {
                let side = if *buy { "buy" } else { "sell" };
                let _ = write!(
                    out,
                    r#"{{"type":"trade","seq":{seq},"ts":{ts},"sym":"{symbol}","id":{id},"px":{}.{:02},"qty":{}.{:03},"side":"{side}"}}"#,
                    price / 100,
                    price % 100,
                    size / 1000,
                    size % 1000,
                );
            }
        }
    }
}

fn write_levels(out: &mut String, levels: &[(u64, u64); 3]) {
    out.push('[');
    for (i, (price, size)) in levels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(
            out,
            "[{}.{:02},{}.{:03}]",
            price / 100,
            price % 100,
            size / 1000,
            size % 1000
        );
    }
    out.push(']');
}

/// Prices that wander: a mid price per symbol moving a tick or two at a time.
pub(crate) struct Market {
    mids: Vec<u64>,
    random: XorShift,
    trade_id: u64,
}

impl Market {
    pub(crate) fn new(symbols: usize) -> Self {
        Self {
            mids: SYMBOLS[..symbols.clamp(1, MAX_SYMBOLS)]
                .iter()
                .map(|s| s.1)
                .collect(),
            random: XorShift(0x9e37_79b9_7f4a_7c15),
            trade_id: 1_000_000,
        }
    }

    /// The next book update or trade (about `BOOK_SHARE` in 10 are book updates).
    pub(crate) fn next_event(&mut self) -> Event {
        let symbol = (self.random.next() % self.mids.len() as u64) as usize;
        let mid = &mut self.mids[symbol];
        let step = self.random.next() % 5;
        *mid = (*mid + step).saturating_sub(2).max(100);
        let mid = *mid;
        let kind = if self.random.next() % 10 < BOOK_SHARE {
            let mut size = || 1 + self.random.next() % 25_000;
            EventKind::Book {
                bids: [(mid - 1, size()), (mid - 2, size()), (mid - 3, size())],
                asks: [(mid + 1, size()), (mid + 2, size()), (mid + 3, size())],
            }
        } else {
            self.trade_id += 1;
            let buy = self.random.next().is_multiple_of(2);
            EventKind::Trade {
                id: self.trade_id,
                price: if buy { mid + 1 } else { mid - 1 },
                size: 1 + self.random.next() % 5_000,
                buy,
            }
        };
        Event { symbol, kind }
    }
}

/// A small fast generator (xorshift64*): the market needs variety, not secrecy.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::check::{field_str, field_u64};

    #[test]
    fn messages_carry_type_seq_and_timestamp_for_the_clients() {
        let mut market = Market::new(8);
        let (mut books, mut trades) = (0, 0);
        for i in 0..1_000 {
            let event = market.next_event();
            assert!(event.symbol < 8);
            let mut text = String::new();
            event.write_json(&mut text, i + 1, 12_345);
            assert_eq!(field_u64(&text, "seq"), Some(i + 1));
            assert_eq!(field_u64(&text, "ts"), Some(12_345));
            match field_str(&text, "type") {
                Some("book") => books += 1,
                Some("trade") => trades += 1,
                other => panic!("{other:?} in {text}"),
            }
            assert!(text.starts_with('{') && text.ends_with('}'), "{text}");
        }
        assert!(
            books > 700 && trades > 100,
            "{books} books, {trades} trades"
        );
    }

    #[test]
    fn a_trade_reads_as_a_trade() {
        let event = Event {
            symbol: 0,
            kind: EventKind::Trade {
                id: 7,
                price: 6_401_205,
                size: 1_500,
                buy: true,
            },
        };
        let mut text = String::new();
        event.write_json(&mut text, 3, 9);
        assert_eq!(
            text,
            r#"{"type":"trade","seq":3,"ts":9,"sym":"BTC-USD","id":7,"px":64012.05,"qty":1.500,"side":"buy"}"#
        );
    }
}
