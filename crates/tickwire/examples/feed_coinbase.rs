//! A Coinbase-style feed: `{"type":"subscribe","product_ids":[..],"channels":["matches"]}`
//! answered by the whole subscription set (`"type":"subscriptions"`), messages numbered per
//! product by `sequence`. A missed number is a gap once, and the cue to rebuild the
//! product's state from a REST snapshot, as Coinbase advises.
//!
//! Against the simulator in Coinbase's style (docs/FEEDS.md, "Worked examples"); the
//! `/gap` request makes the simulator skip three numbers of BTC-USD:
//!
//! ```text
//! cargo run -p tickwire-cli -- exchange-sim --style coinbase --port 9002 --control-port 9003 \
//!     --rate 5 --keys BTC-USD,ETH-USD &
//! cargo run -p tickwire --example feed_coinbase -- ws://127.0.0.1:9002/ 3 &
//! sleep 1; curl -s 'http://127.0.0.1:9003/gap?key=BTC-USD&size=3'; wait %2
//! ```

mod support;

use std::time::Duration;

use support::{contains, field, json_strings, number};
use tickwire::feed::FeedConfig;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (url, run_for) = support::args("ws://127.0.0.1:9002/");
    support::run(support::open(config(url))?, run_for, |_, _| {})
}

fn config(url: String) -> FeedConfig {
    FeedConfig::new(url)
        .with_subscription("BTC-USD")
        .with_subscription("ETH-USD")
        // Coinbase disconnects a client that has not subscribed within 5 s: the session
        // sends this right after each connect.
        .with_subscribe_with(|products, out| out.push(request("subscribe", products)))
        .with_unsubscribe_with(|products, out| out.push(request("unsubscribe", products)))
        .with_ack(|message| contains(message, br#""type":"subscriptions""#))
        // Numbers count up by one per product: `product_id` is the key.
        .with_sequence(|message| {
            Some((field(message, "product_id")?, number(message, "sequence")?))
        })
        // After each gap, an `Event::Resync` for its product: the place to fetch a snapshot.
        .with_resync_on_gap(true)
        .with_stale_after(Some(Duration::from_secs(5)))
}

/// `{"type":"subscribe","product_ids":["BTC-USD",..],"channels":["matches"]}`.
fn request(kind: &str, products: &[String]) -> String {
    let products = json_strings(products);
    format!(r#"{{"type":"{kind}","product_ids":{products},"channels":["matches"]}}"#)
}
