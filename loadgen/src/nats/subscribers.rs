//! The NATS suite's subscribers: one thread holding N WebSocket connections spread evenly
//! over the nodes, all on one mio `Poll` (opened by the server suite's `dial.rs`, frames read
//! by the pub/sub suite's `FrameReader`). Every message is timed (CLOCK_MONOTONIC after the
//! read minus the send time it carries) and its number checked against the subscriber's
//! last: a jump is a loss, a notice from the node says how much of it the node reported.
//!
//! Unlike the pub/sub generator this one does not fail a point on a loss: the slow-consumer
//! policy and the bridge may drop by design, and the tables count what was lost instead.

use std::io::{self, Read};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use super::feed::monotonic_ns;
use super::node::GapNotice;
use crate::connection;
use crate::dial::Dial;
use crate::generator::idle_share;
use crate::pubsub::wire::{FrameReader, PAYLOAD_LEN, Stamp};
use crate::servers;
use crate::timing;

/// The shared read buffer.
const READ_BUFFER: usize = 64 << 10;

/// How long the first message may take to arrive once the feed starts.
const FIRST_LIMIT: Duration = Duration::from_secs(10);

/// After the measured window: the point ends once nothing arrived for this long ...
const QUIET: Duration = Duration::from_millis(500);

/// ... or this long after the window, whichever comes first.
const DRAIN_LIMIT: Duration = Duration::from_secs(15);

/// One point's timing, counted from the first message any subscriber received.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Deliveries before this are not timed.
    pub warmup: Duration,
    /// Then this long is measured.
    pub measure: Duration,
    /// The subscribers' core and the nodes' core, whose idle shares the window reports.
    pub cores: (usize, usize),
}

/// What one point saw.
#[derive(Debug, Clone)]
pub struct Seen {
    /// Deliveries per second in the measured window.
    pub rate: f64,
    /// Publish-to-receive ns of every delivery in the window.
    pub latency: Histogram<u64>,
    /// Deliveries over the whole point.
    pub delivered: u64,
    /// Subscribers.
    pub subscribers: u64,
    /// The highest number any subscriber received: the feed's last message, as far as the
    /// subscribers can tell.
    pub last: u64,
    /// Numbers some subscriber did not get (up to `last`), over the whole point.
    pub missed: u64,
    /// Of those, how many the nodes reported in gap notices.
    pub reported: u64,
    /// Messages that arrived at or below a number the subscriber already had.
    pub out_of_order: u64,
    /// The share of the window the subscribers' core was idle (above 0: they kept up).
    pub subscriber_core_idle: Option<f64>,
    /// The same for the nodes' core (shared with nats-server and the feed).
    pub node_core_idle: Option<f64>,
}

/// N open subscriber connections, driven from the thread that made them.
pub struct Subscribers {
    poll: Poll,
    events: Events,
    subscribers: Vec<Subscriber>,
    read_buffer: Box<[u8]>,
}

/// One connection's reading side and tally.
struct Subscriber {
    stream: TcpStream,
    reader: FrameReader,
    /// The highest number received (0: none yet; the feed numbers from 1).
    last: u64,
    reported: u64,
}

impl Subscribers {
    /// Opens `count` connections, node `i` of `nodes` taking every `nodes.len()`-th one (so
    /// they differ by at most one). Err when a node's connections do not all open in
    /// `budget`.
    pub fn connect(nodes: &[SocketAddr], count: usize, budget: Duration) -> Result<Self, String> {
        let poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
        let mut subscribers = Vec::with_capacity(count);
        for (i, &node) in nodes.iter().enumerate() {
            let share = count / nodes.len() + usize::from(i < count % nodes.len());
            if share == 0 {
                continue;
            }
            let request = connection::upgrade_request(node, None);
            let dialed = Dial {
                server: node,
                count: share,
                budget,
                request: &request,
                accept: &connection::upgrade_response,
            }
            .open()
            .map_err(|why| format!("node {}: {why}", i + 1))?;
            for mut stream in dialed.streams {
                // Moved to the one poll every subscriber shares, readable events only.
                dialed
                    .poll
                    .registry()
                    .deregister(&mut stream)
                    .map_err(|e| format!("epoll_ctl: {e}"))?;
                poll.registry()
                    .register(&mut stream, Token(subscribers.len()), Interest::READABLE)
                    .map_err(|e| format!("epoll_ctl: {e}"))?;
                subscribers.push(Subscriber {
                    stream,
                    reader: FrameReader::default(),
                    last: 0,
                    reported: 0,
                });
            }
        }
        Ok(Self {
            poll,
            events: Events::with_capacity(1024),
            subscribers,
            read_buffer: vec![0; READ_BUFFER].into_boxed_slice(),
        })
    }

    /// Reads until the feed has run its course: from the first message on, `window.warmup`
    /// untimed, `window.measure` timed, then until the connections are quiet. Err when no
    /// message arrives, a connection closes, or a frame is not the feed's.
    ///
    /// Near 80 lines on purpose, like the pub/sub generator's `run`: the phases, the counters
    /// they snapshot and the read loop stay in one place.
    pub fn run(&mut self, window: Window) -> Result<Seen, String> {
        let mut latency = timing::new_histogram();
        let mut delivered = 0u64;
        let mut out_of_order = 0u64;
        let started = Instant::now();
        let (mut first, mut measured_from, mut measured_to) = (None::<Instant>, None, None);
        let mut last_arrival = Instant::now();
        loop {
            let now = Instant::now();
            match first {
                None if now.duration_since(started) > FIRST_LIMIT => {
                    return Err(format!(
                        "no message reached any of {} subscribers in {} s",
                        self.subscribers.len(),
                        FIRST_LIMIT.as_secs()
                    ));
                }
                None => {}
                Some(first) => {
                    let since = now.duration_since(first);
                    if measured_from.is_none() && since >= window.warmup {
                        measured_from = Some((now, delivered, jiffies(window.cores)));
                    }
                    if measured_to.is_none() && since >= window.warmup + window.measure {
                        measured_to = Some((now, delivered, jiffies(window.cores)));
                    }
                    if let Some((end, _, _)) = measured_to
                        && (now.duration_since(last_arrival) >= QUIET
                            || now.duration_since(end) >= DRAIN_LIMIT)
                    {
                        break;
                    }
                }
            }
            self.poll
                .poll(&mut self.events, Some(Duration::from_millis(1)))
                .map_err(|e| format!("epoll_wait: {e}"))?;
            let timing = measured_from.is_some() && measured_to.is_none();
            for event in &self.events {
                let index = event.token().0;
                let arrived = read_messages(
                    &mut self.subscribers[index],
                    &mut self.read_buffer,
                    |stamp, at| {
                        if timing {
                            latency.saturating_record(at.saturating_sub(stamp.sent_at).max(1));
                        }
                    },
                    &mut out_of_order,
                )
                .map_err(|why| format!("subscriber {index}: {why}"))?;
                if arrived > 0 {
                    delivered += arrived;
                    last_arrival = Instant::now();
                    first.get_or_insert(last_arrival);
                }
            }
        }
        let (Some((from, from_count, from_cores)), Some((to, to_count, to_cores))) =
            (measured_from, measured_to)
        else {
            unreachable!("the loop ends only after the window closed");
        };
        let last = self.subscribers.iter().map(|s| s.last).max().unwrap_or(0);
        Ok(Seen {
            rate: (to_count - from_count) as f64 / to.duration_since(from).as_secs_f64(),
            latency,
            delivered,
            subscribers: self.subscribers.len() as u64,
            last,
            // Repeats (counted in `out_of_order`) are not deliveries of a new number.
            missed: (self.subscribers.len() as u64 * last).saturating_sub(delivered - out_of_order),
            reported: self.subscribers.iter().map(|s| s.reported).sum(),
            out_of_order,
            subscriber_core_idle: idle_share(from_cores.0, to_cores.0),
            node_core_idle: idle_share(from_cores.1, to_cores.1),
        })
    }
}

/// (idle, total) jiffies of both cores now.
type CoreJiffies = (Option<(u64, u64)>, Option<(u64, u64)>);

fn jiffies((subscribers, nodes): (usize, usize)) -> CoreJiffies {
    (
        servers::core_jiffies(subscribers),
        servers::core_jiffies(nodes),
    )
}

/// Reads everything the node has sent `subscriber`, calling `timed(stamp, read_at_ns)` for
/// each message; returns how many messages came. Err when the node closed the connection or
/// sent a frame that is neither a message nor a gap notice.
fn read_messages(
    subscriber: &mut Subscriber,
    buffer: &mut [u8],
    mut timed: impl FnMut(Stamp, u64),
    out_of_order: &mut u64,
) -> Result<u64, String> {
    let Subscriber {
        stream,
        reader,
        last,
        reported,
    } = subscriber;
    let mut arrived = 0;
    loop {
        match stream.read(buffer) {
            Ok(0) => return Err("the node closed the connection".to_owned()),
            Ok(n) => {
                let at = monotonic_ns();
                reader.consume(&buffer[..n], false, |_, payload| {
                    if payload.len() != PAYLOAD_LEN {
                        let notice = GapNotice::read(payload).ok_or_else(|| {
                            format!(
                                "a {} B frame: neither a message nor a notice",
                                payload.len()
                            )
                        })?;
                        *reported += notice.dropped;
                        return Ok(());
                    }
                    let stamp = Stamp::read(payload)?;
                    if stamp.sequence <= *last {
                        *out_of_order += 1;
                    } else {
                        *last = stamp.sequence;
                    }
                    arrived += 1;
                    timed(stamp, at);
                    Ok(())
                })?;
                // A short read emptied the socket: with edge-triggered epoll, later bytes
                // raise a new event (as in the pub/sub generator).
                if n < buffer.len() {
                    return Ok(arrived);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(arrived),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}
