//! Exchange feed sessions, sans-IO: one state machine that keeps a market-data feed
//! connected and correct through disconnects, stalls, gaps and rate limits, over one or
//! several WebSocket connections.
//!
//! It owns every decision a feed needs after the WebSocket handshake: when to connect again
//! and why (back-off with full jitter from [`mux::Backoff`](crate::mux::Backoff), a cap on
//! failed attempts, a [`ConnectBudget`] several sessions can share), what to send after
//! each connect (a login, the subscriptions, acknowledged within a deadline), when a
//! connection is dead although its WebSocket pongs still come (a data-only stale timer,
//! application heartbeats), which messages to deliver (per-key sequence numbers:
//! duplicates dropped, holes reported once as gaps, redundant connections merged, first
//! arrival wins), make-before-break rotation, and each connection's send quota
//! ([`SendQuota`], GCRA). It does not own sockets, the WebSocket connections (the driver
//! keeps one `ws::Connection` per slot and answers its pings), TLS, the clock or threads:
//! time comes in as `now` on every call, and receive timestamps ([`RecvStamp`]) are passed
//! through untouched.
//!
//! # The driver's loop
//!
//! A driver (blocking or async) owns one socket per [`ConnId`] and turns the session's
//! [`Action`]s into I/O, and I/O into calls:
//!
//! - `poll_action(now)` until `None`: connect, send a text, close (with a code, or drop);
//! - `on_open`, `on_connect_failed`, `on_closed` with a [`Disconnect`] (a close code, a
//!   reset, a handshake status such as 429);
//! - `on_message(conn, payload, stamp, now)` for each complete message, then
//!   `poll_event(payload)` until `None`: the user's [`Event`]s, the message among them
//!   when it is to be delivered ([`Event::Message`] borrows the payload, or the session's
//!   copy for a message that was held ahead of a hole);
//! - `poll_timeout()`: when to wake and call `handle_timeout(now)`.
//!
//! Here the "network" is scripted with a virtual clock:
//!
//! ```
//! use std::time::{Duration, Instant};
//! use tickwire_codec::feed::{Action, ConnId, Disconnect, Event, FeedConfig, FeedSession, RecvStamp};
//!
//! // Messages look like "BTC 17": a key and a sequence number.
//! fn sequence(msg: &[u8]) -> Option<(&[u8], u64)> {
//!     let text = std::str::from_utf8(msg).ok()?;
//!     let (key, seq) = text.split_once(' ')?;
//!     Some((key.as_bytes(), seq.parse().ok()?))
//! }
//!
//! let config = FeedConfig::new("wss://feed.example/ws")
//!     .with_subscription(r#"{"op":"subscribe","args":["BTC"]}"#)
//!     .with_sequence(sequence)
//!     .with_stale_after(Some(Duration::from_secs(5)));
//! let mut now = Instant::now();
//! let mut session = FeedSession::new(config, 42, now)?;
//! let (mut sent, mut delivered, mut gaps) = (Vec::new(), Vec::new(), Vec::new());
//!
//! // What the network does: the first connection delivers 1, 2, then is reset; the
//! // second delivers from 5 on.
//! let script = [["BTC 1", "BTC 2", "reset"], ["BTC 5", "BTC 5", "BTC 6"]];
//! for messages in script {
//!     // Sleep until the next timer (the first connect is due at once).
//!     if let Some(at) = session.poll_timeout() {
//!         now = now.max(at);
//!         session.handle_timeout(now);
//!     }
//!     while let Some(action) = session.poll_action(now) {
//!         match action {
//!             // A real driver connects (TCP, TLS, WebSocket handshake) and reports.
//!             Action::Connect { conn, .. } => session.on_open(conn, now),
//!             Action::Send { text, .. } => sent.push(text),
//!             _ => {}
//!         }
//!     }
//!     // A real driver reads its sockets until `poll_timeout`.
//!     for message in messages {
//!         if message == "reset" {
//!             session.on_closed(ConnId(0), Disconnect::Reset, now);
//!             continue;
//!         }
//!         let stamp = RecvStamp { recv_ns: 1, wall_ns: 2, kernel_ns: None };
//!         session.on_message(ConnId(0), message.as_bytes(), stamp, now)?;
//!         while let Some(event) = session.poll_event(message.as_bytes()) {
//!             match event {
//!                 Event::Message(m) => delivered.push((m.seq, m.payload.to_vec())),
//!                 Event::Gap { from, to, .. } => gaps.push((from, to)),
//!                 Event::Reconnecting { delay, .. } => {
//!                     assert!(delay >= Duration::from_millis(100)); // the back-off's minimum
//!                 }
//!                 _ => {}
//!             }
//!         }
//!     }
//! }
//! // Subscribed after each connect; 5 once, 3..=4 reported as one gap.
//! assert_eq!(sent.len(), 2);
//! assert_eq!(delivered.iter().map(|(seq, _)| seq.unwrap()).collect::<Vec<_>>(), [1, 2, 5, 6]);
//! assert_eq!(gaps, [(3, 4)]);
//! let counters = session.counters(now);
//! assert_eq!((counters.duplicates, counters.reconnects), (1, 1));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Sequences, redundancy and the key bound
//!
//! With a sequence extractor every data message gets a key and a number. Per key, each
//! number is delivered once, in increasing order, whichever connection brought it first;
//! a later copy is a duplicate (dropped, counted per connection, its lag behind the first
//! recorded). A hole becomes one [`Event::Gap`] only when no open connection can still
//! fill it (each connection is taken to deliver its numbers in increasing order, so one
//! that passed a number missed it); meanwhile the messages after the hole are copied into
//! reused buffers and held, at most [`FeedConfig::merge_wait`] and within
//! [`FeedConfig::max_held`] and [`FeedConfig::max_held_bytes`]: past either, the hole is
//! reported and they go out. With one connection nothing is ever held. Across a reconnect
//! the numbers continue: a hole from the last number before to the first after is a gap.
//! The first number seen for a key starts it: nothing before it is a gap.
//!
//! Keys are interned once (their bytes kept, looked up by hash without allocating) up to
//! [`FeedConfig::max_keys`]; a message with a key past the bound is delivered without key
//! and without the sequence checks, and [`Event::KeyLimit`] says so once: memory stays
//! bounded.
//!
//! Messages without a sequence are delivered as they come, from every connection.
//!
//! # Rotation
//!
//! At [`FeedConfig::rotate_after`] (or on [`FeedSession::rotate`]) the spare slot
//! connects to the same endpoint and subscribes; both are merged meanwhile. Once the new
//! connection is subscribed and has delivered, for every key the old one carried, a number
//! at or past the old one's last, the old one is closed with 1000 and
//! [`Event::Rotated`] reported: no gap and no duplicate, as the merge saw both.
//!
//! # Allocation
//!
//! Receiving a data message allocates nothing in the steady state: keys are looked up
//! without allocating (a new key allocates once), the event queue and the hold keep their
//! capacity. Sends ([`Action::Send`] carries a `String`), connects, subscription changes
//! and events other than messages may allocate; none of them happens per message.

mod config;
mod digits;
mod event;
mod limits;
mod merge;
mod session;

#[cfg(test)]
mod stream_tests;
#[cfg(test)]
mod tests;

pub use config::{
    BuildFn, ConfigError, FeedConfig, Heartbeat, MatchFn, ReconnectPolicy, ReplyFn, SequenceFn,
    Timestamps,
};
pub use digits::leading_u64;
pub use event::{
    Action, ConnFigures, ConnId, ConnState, Counters, Delivery, Disconnect, Disposition, Event,
    FeedError, KeyId, Limited, MAX_CONNECTIONS, ReconnectReason, RecvStamp, SendError,
};
pub use limits::{ConnectBudget, SendQuota};
pub use session::{FeedSession, Undrained};
