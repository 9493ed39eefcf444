//! A Binance-style feed: combined streams (`/stream`, every event wrapped as
//! `{"stream":..,"data":..}`), `SUBSCRIBE` requests acknowledged by id, trades numbered per
//! stream by `t`, Binance's 5 incoming messages per second per connection (its pings and
//! pongs count) as the send quota, and a make-before-break rotation ahead of its 24-hour
//! close.
//!
//! Against the simulator in Binance's style (docs/FEEDS.md, "Worked examples"):
//!
//! ```text
//! cargo run -p tickwire-cli -- exchange-sim --style binance --port 9002 --rate 5 \
//!     --keys BTC-USDT,ETH-USDT --max-age 24h &
//! cargo run -p tickwire --example feed_binance -- ws://127.0.0.1:9002/stream 3
//! ```

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use support::{contains, field, json_strings, number};
use tickwire::feed::{FeedConfig, SendQuota};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (url, run_for) = support::args("ws://127.0.0.1:9002/stream");
    let config = config(url);
    let mut next_id = 100;
    support::run(support::open(config)?, run_for, |feed, conn| {
        // Requests of the user's own go through the same quota: past it, `send` says how
        // long to wait instead of getting the connection cut.
        for _ in 0..4 {
            next_id += 1;
            let list = format!(r#"{{"method":"LIST_SUBSCRIPTIONS","id":{next_id}}}"#);
            match feed.send(conn, &list, 1) {
                Ok(()) => println!("{conn}: sent {list}"),
                Err(refused) => println!("{conn}: not sent: {refused}"),
            }
        }
    })
}

fn config(url: String) -> FeedConfig {
    // Binance's request ids: any number, echoed in the answer.
    let ids = Arc::new(AtomicU64::new(1));
    let unsubscribe_ids = Arc::clone(&ids);
    FeedConfig::new(url)
        .with_subscription("btcusdt@trade")
        .with_subscription("ethusdt@trade")
        // One SUBSCRIBE for the whole set after each connect; UNSUBSCRIBE when one is dropped.
        .with_subscribe_with(move |streams, out| out.push(request(&ids, "SUBSCRIBE", streams)))
        .with_unsubscribe_with(move |streams, out| {
            out.push(request(&unsubscribe_ids, "UNSUBSCRIBE", streams));
        })
        // `{"result":null,"id":N}` acknowledges a SUBSCRIBE.
        .with_ack(|message| contains(message, br#""result":null"#))
        // Trade ids count up per symbol: the stream is the key, `t` the number.
        .with_sequence(|message| Some((field(message, "stream")?, number(message, "t")?)))
        // At most 5 messages in any second, pings and pongs included.
        .with_send_quota(Some(
            SendQuota::per_window(5, Duration::from_secs(1)).with_count_control_frames(true),
        ))
        // Binance closes every connection at 24 h: replace it before, with no gap.
        .with_rotate_after(Some(Duration::from_secs(23 * 3600 + 50 * 60)))
        .with_stale_after(Some(Duration::from_secs(5)))
}

/// `{"method":"SUBSCRIBE","params":["btcusdt@trade",..],"id":N}`.
fn request(ids: &AtomicU64, method: &str, streams: &[String]) -> String {
    let id = ids.fetch_add(1, Ordering::Relaxed);
    let params = json_strings(streams);
    format!(r#"{{"method":"{method}","params":{params},"id":{id}}}"#)
}
