//! An OKX-style feed: `{"op":"subscribe","args":[{"channel":"trades","instId":..}]}`, one
//! `subscribe` event per argument, trades numbered per instrument by `seqId`, and the text
//! `ping` (answered `pong`) that keeps a quiet connection open: OKX closes one on which
//! nothing was pushed for 30 s.
//!
//! Against the simulator in OKX's style (docs/FEEDS.md, "Worked examples"); the stall makes
//! the feed quiet for 4 s, more than the 3 s idle limit, and the pings keep it open:
//!
//! ```text
//! cargo run -p tickwire-cli -- exchange-sim --style okx --port 9002 --control-port 9003 \
//!     --rate 5 --keys BTC-USDT,ETH-USDT --idle-close 3s &
//! cargo run -p tickwire --example feed_okx -- ws://127.0.0.1:9002/ws/v5/public 7 &
//! sleep 1; curl -s 'http://127.0.0.1:9003/stall?conn=0'
//! sleep 4; curl -s 'http://127.0.0.1:9003/resume?conn=0'; wait %2
//! ```

// The feeds that list topics as JSON strings use `json_strings`; OKX's are objects.
#[expect(dead_code, reason = "one helper of the shared module is not OKX's")]
mod support;

use std::sync::Arc;
use std::time::Duration;

use support::{contains, field, number};
use tickwire::feed::{FeedConfig, Heartbeat};

/// Quiet time before a `ping`: any N under OKX's 30 s does; 2 s so that the simulator's
/// shorter idle limit shows it within seconds.
const PING_AFTER_QUIET: Duration = Duration::from_secs(2);

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (url, run_for) = support::args("ws://127.0.0.1:9002/ws/v5/public");
    support::run(support::open(config(url))?, run_for, |_, _| {})
}

fn config(url: String) -> FeedConfig {
    FeedConfig::new(url)
        .with_subscription("BTC-USDT")
        .with_subscription("ETH-USDT")
        // One request per instrument: OKX acknowledges each argument with its own event,
        // and the session expects one acknowledgement per message it sent.
        .with_subscribe_with(|ids, out| out.extend(ids.iter().map(|id| request("subscribe", id))))
        .with_unsubscribe_with(|ids, out| {
            out.extend(ids.iter().map(|id| request("unsubscribe", id)));
        })
        .with_ack(|message| contains(message, br#""event":"subscribe""#))
        // Sent when nothing at all was received for PING_AFTER_QUIET; the `pong` is consumed,
        // and none within 5 s replaces the connection.
        .with_heartbeat(Some(Heartbeat {
            text: "ping".to_owned(),
            after_quiet: PING_AFTER_QUIET,
            reply: Arc::new(|message| message == b"pong"),
            deadline: Duration::from_secs(5),
        }))
        // `seqId` counts up per instrument; `instId` (first in `arg`) is the key.
        .with_sequence(|message| Some((field(message, "instId")?, number(message, "seqId")?)))
        // Pongs keep the connection open, not the data flowing: a silent subscription is
        // replaced after 10 s.
        .with_stale_after(Some(Duration::from_secs(10)))
}

/// `{"op":"subscribe","args":[{"channel":"trades","instId":"BTC-USDT"}]}`.
fn request(op: &str, instrument: &str) -> String {
    format!(r#"{{"op":"{op}","args":[{{"channel":"trades","instId":"{instrument}"}}]}}"#)
}
