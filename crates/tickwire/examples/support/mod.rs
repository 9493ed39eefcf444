//! What the three exchange feed examples (`feed_binance`, `feed_okx`, `feed_coinbase`)
//! share: their arguments, opening the feed, the loop that prints every event for a bounded
//! time, and two small readers of the JSON fields a sequence extractor needs. Each example
//! holds only what its exchange asks for: the `FeedConfig`.

use std::error::Error;
use std::time::{Duration, Instant};

use tickwire::blocking::ClientBuilder;
use tickwire::blocking::feed::Feed;
use tickwire::feed::{ConnId, Event, FeedConfig, FeedError, KeyId, Timestamps, leading_u64};

/// The example's arguments: `[URL] [SECONDS]` (how long it runs; 3 by default).
pub(crate) fn args(default_url: &str) -> (String, Duration) {
    let mut args = std::env::args().skip(1);
    let url = args.next().unwrap_or_else(|| default_url.to_owned());
    let seconds = args.next().and_then(|s| s.parse().ok()).unwrap_or(3.0);
    (url, Duration::from_secs_f64(seconds))
}

/// Opens the feed, with the kernel's receive timestamps where it takes them (`ws://` on
/// Linux), the user's otherwise.
pub(crate) fn open(config: FeedConfig) -> Result<Feed, Box<dyn Error>> {
    let config = config.with_timestamps(Timestamps::Kernel);
    Ok(Feed::new(config, ClientBuilder::new())?)
}

/// Prints every event for `run_for`, calling `on_subscribed` each time a connection has
/// subscribed, then closes the feed and prints its counters. An error if no message was
/// delivered, or if the session ended on its own (for one, when no connection could be made).
pub(crate) fn run(
    mut feed: Feed,
    run_for: Duration,
    mut on_subscribed: impl FnMut(&mut Feed, ConnId),
) -> Result<(), Box<dyn Error>> {
    let until = Instant::now() + run_for;
    let mut closing = false;
    while let Some(event) = feed.next_event()? {
        match event {
            Event::Message(message) => {
                let text = String::from_utf8_lossy(message.payload);
                let seq = message.seq.map_or("-".to_owned(), |seq| seq.to_string());
                // The kernel's receive time and the read's are both wall clocks: between
                // them the message waited in the socket (and in the parser).
                let waited = match message.stamp.kernel_ns {
                    Some(kernel_ns) => {
                        let us = message.stamp.wall_ns.saturating_sub(kernel_ns) / 1000;
                        format!(" ({us} µs after the kernel had it)")
                    }
                    None => String::new(),
                };
                println!("{} seq {seq}{waited}: {text}", message.conn);
            }
            Event::Subscribed { conn } => {
                println!("{conn} subscribed");
                on_subscribed(&mut feed, conn);
            }
            Event::Gap { key, from, to } => {
                println!("gap: {} {from}..={to} missed", key_name(&feed, key));
            }
            Event::Resync { key } => println!("resync {}", key_name(&feed, key)),
            Event::Ended(FeedError::Closed) => println!("closed"),
            Event::Ended(error) => return Err(error.into()),
            other => println!("{other:?}"),
        }
        // The stale timer bounds the wait for the next event, so this check comes in time.
        if !closing && Instant::now() >= until {
            closing = true;
            feed.close();
        }
    }
    let counters = feed.session().counters(Instant::now());
    println!(
        "delivered {}, gaps {} ({} numbers missed), duplicates {}, reconnects {}",
        counters.delivered,
        counters.gaps,
        counters.missing,
        counters.duplicates,
        counters.reconnects
    );
    if counters.delivered == 0 {
        return Err("no message was delivered".into());
    }
    Ok(())
}

/// A sequence key as the messages wrote it.
fn key_name(feed: &Feed, key: KeyId) -> String {
    let bytes = feed.session().key_bytes(key).unwrap_or_default();
    String::from_utf8_lossy(bytes).into_owned()
}

/// The value of the first `"name":` field in a JSON text: a string's contents or a
/// number's digits (`None` for anything else). Enough for the flat fields an exchange puts
/// its sequence numbers in, without allocating; a JSON parser does the same job.
pub(crate) fn field<'a>(message: &'a [u8], name: &str) -> Option<&'a [u8]> {
    let name = name.as_bytes();
    let at = (0..message.len()).find(|&i| {
        message[i] == b'"'
            && message[i + 1..].starts_with(name)
            && message[i + 1 + name.len()..].starts_with(b"\":")
    })?;
    let value = &message[at + name.len() + 3..];
    if let Some(string) = value.strip_prefix(b"\"") {
        let end = string.iter().position(|&b| b == b'"')?;
        return Some(&string[..end]);
    }
    let end = value
        .iter()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(value.len());
    (end > 0).then(|| &value[..end])
}

/// The field `name` as a number (written as one, or as a string of digits).
pub(crate) fn number(message: &[u8], name: &str) -> Option<u64> {
    let digits = field(message, name)?;
    let (number, taken) = leading_u64(digits)?;
    (taken == digits.len()).then_some(number)
}

/// Whether `message` contains `part` (an acknowledgement's marker, for one).
pub(crate) fn contains(message: &[u8], part: &[u8]) -> bool {
    message.windows(part.len()).any(|window| window == part)
}

/// The topics as a JSON array of strings.
pub(crate) fn json_strings(topics: &[String]) -> String {
    let quoted: Vec<String> = topics.iter().map(|topic| format!("\"{topic}\"")).collect();
    format!("[{}]", quoted.join(","))
}
