//! One node of the NATS suite, run as the hidden subcommand `tickwire-bench nats-node` so that
//! each node is a process of its own (pinned with taskset by the suite): tickwire-server with
//! one worker, every connection subscribed to topic `t` (slow-consumer policy drop-oldest,
//! the default send budget), and either a bridge to NATS (topic `t` relays subject `tw.t`) or,
//! with `--local`, a publisher thread of its own that publishes through
//! `ServerHandle::publish` (the in-process path). Prints `LISTENING PORT` first.
//!
//! A gap the server reports (`Handler::on_gap`: messages dropped for a slow subscriber, or a
//! jump in the numbers the bridge could not fill) goes to the subscriber in line with the
//! messages as a [`GapNotice`] frame. Owns the node; the suite's side is the bench's
//! `server_suite::nats`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tickwire_nats::BridgeBuilder;
use tickwire_nats::server::{
    Conn, Decision, Gap, Handler, Message, Request, ServerBuilder, ServerHandle, SharedFrame,
    SlowConsumer, Topic,
};

use super::feed::{Pacer, monotonic_ns};
use crate::pubsub::wire::Stamp;

/// The topic every connection subscribes to (subject `tw.t` on NATS).
pub const TOPIC: &str = "t";

/// The subject prefix of the bridge and the feed.
pub const PREFIX: &str = "tw";

/// How long a `--local` node waits after its last subscriber opened before it publishes.
const SETTLE: Duration = Duration::from_millis(200);

/// What `nats-node` was asked to do.
#[derive(clap::Args, Clone, Debug)]
pub struct NodeOptions {
    /// The NATS server to bridge from (ignored with `--local`).
    #[arg(long)]
    nats: Option<String>,
    /// Port on 127.0.0.1 (0: any); printed on the first line of stdout.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Publish in this process instead of bridging: this many messages per second.
    #[arg(long)]
    local: Option<f64>,
    /// `--local`: start publishing once this many connections have opened.
    #[arg(long, default_value_t = 1)]
    subscribers: usize,
    /// `--local`: publish for this many seconds, then stop (the node keeps running).
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
}

/// A gap as the node tells its subscriber: 24 bytes (first, last, dropped; little-endian
/// u64s), a length no published message has (they are [`PAYLOAD_LEN`] bytes).
///
/// [`PAYLOAD_LEN`]: crate::pubsub::wire::PAYLOAD_LEN
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GapNotice {
    /// The lowest number missed.
    pub first: u64,
    /// The highest number missed.
    pub last: u64,
    /// How many were missed.
    pub dropped: u64,
}

impl GapNotice {
    /// The frame payload's length.
    pub const LEN: usize = 24;

    /// The payload.
    fn encode(self) -> [u8; Self::LEN] {
        let mut bytes = [0; Self::LEN];
        bytes[..8].copy_from_slice(&self.first.to_le_bytes());
        bytes[8..16].copy_from_slice(&self.last.to_le_bytes());
        bytes[16..].copy_from_slice(&self.dropped.to_le_bytes());
        bytes
    }

    /// The notice a payload of [`Self::LEN`] bytes carries; None for any other length.
    pub fn read(payload: &[u8]) -> Option<Self> {
        let bytes: &[u8; Self::LEN] = payload.try_into().ok()?;
        let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 B"));
        Some(Self {
            first: word(0),
            last: word(8),
            dropped: word(16),
        })
    }
}

/// Runs a node until killed. Err when it cannot start.
pub fn nats_node(options: &NodeOptions) -> Result<(), String> {
    let opened = Arc::new(AtomicUsize::new(0));
    let server = ServerBuilder::new()
        .workers(1)
        .bind(SocketAddr::from(([127, 0, 0, 1], options.port)))
        .map_err(|e| format!("bind: {e}"))?;
    let port = server.local_addr().port();
    let counter = Arc::clone(&opened);
    let running = server
        .start(move |worker| Subscribe {
            topic: worker
                .handle
                .topic(TOPIC, SlowConsumer::DropOldest)
                .expect("one policy for the topic"),
            opened: Arc::clone(&counter),
        })
        .map_err(|e| format!("start: {e}"))?;
    let handle = running.handle().clone();
    // Kept alive for as long as the node runs.
    let _bridge = match options.local {
        Some(rate) => {
            let subscribers = options.subscribers;
            let seconds = Duration::from_secs_f64(options.seconds.max(0.0));
            std::thread::Builder::new()
                .name("local-feed".to_owned())
                .spawn(move || publish_locally(&handle, &opened, subscribers, rate, seconds))
                .map_err(|e| format!("spawn the publisher: {e}"))?;
            None
        }
        None => {
            let url = options
                .nats
                .as_deref()
                .ok_or("--nats URL or --local RATE is required")?;
            let bridge = BridgeBuilder::new(url)
                .prefix(PREFIX)
                .start()
                .map_err(|e| format!("bridge: {e}"))?;
            bridge.attach(&handle);
            Some(bridge)
        }
    };
    println!("LISTENING {port}");
    running.join().map_err(|e| format!("server: {e}"))
}

/// The node's handler: every connection subscribes; gaps become [`GapNotice`] frames.
struct Subscribe {
    topic: Topic,
    opened: Arc<AtomicUsize>,
}

impl Handler for Subscribe {
    type State = ();

    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<()> {
        Decision::accept(request, ())
    }

    fn on_open(&mut self, conn: &mut Conn<'_, ()>) {
        conn.subscribe(&self.topic);
        self.opened.fetch_add(1, Ordering::Release);
    }

    fn on_message(&mut self, _conn: &mut Conn<'_, ()>, _message: Message<'_>) {}

    fn on_gap(&mut self, conn: &mut Conn<'_, ()>, _topic: &Topic, gap: Gap) {
        let notice = GapNotice {
            first: gap.first_seq,
            last: gap.last_seq,
            dropped: gap.dropped,
        };
        // A connection already closing cannot be told; the client sees the close.
        let _ = conn.send_binary(&notice.encode());
    }
}

/// `--local`: once `subscribers` connections opened, publishes stamped messages on the topic
/// at `rate` per second for `seconds`, through the server's own publish path.
fn publish_locally(
    handle: &ServerHandle,
    opened: &AtomicUsize,
    subscribers: usize,
    rate: f64,
    seconds: Duration,
) {
    while opened.load(Ordering::Acquire) < subscribers {
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(SETTLE);
    let Ok(topic) = handle.topic(TOPIC, SlowConsumer::DropOldest) else {
        return;
    };
    let mut pacer = Pacer::new(rate);
    let start = Instant::now();
    while start.elapsed() < seconds {
        for _ in 0..pacer.due(start.elapsed()) {
            let published = handle.publish(&topic, 0, |sequence| {
                let stamp = Stamp {
                    sent_at: monotonic_ns(),
                    sequence,
                };
                SharedFrame::binary(&stamp.payload())
            });
            if published.is_err() {
                return;
            }
            pacer.sent();
        }
        std::thread::sleep(pacer.until_next(start.elapsed()));
    }
}

#[cfg(test)]
mod tests {
    use super::GapNotice;
    use crate::pubsub::wire::PAYLOAD_LEN;

    #[test]
    fn a_gap_notice_reads_back_and_no_message_is_taken_for_one() {
        let notice = GapNotice {
            first: 7,
            last: 9,
            dropped: 3,
        };
        assert_eq!(GapNotice::read(&notice.encode()), Some(notice));
        assert_eq!(GapNotice::read(&[0; PAYLOAD_LEN]), None);
    }
}
