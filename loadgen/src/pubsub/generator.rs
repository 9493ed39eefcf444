//! The pub/sub load generator: one thread holding N subscriber connections on one mio `Poll`
//! (opened by `dial.rs`), connection 0 also the publisher. The publisher keeps at most
//! `window` messages outstanding, a message being done once every other connection received
//! it; each delivery is checked (the next sequence number of its subscriber, 100 B, the
//! publisher's filler; inflated first on the deflate row) and timed (rdtsc after the read
//! minus the send time the message carries).
//!
//! One shared read buffer, one shared inflater, a few words per subscriber, no allocation per
//! message. Owns the event loop; the bytes are `wire.rs`'s, what the numbers mean the
//! bench's (`server_suite::pubsub`).

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};

use super::window::Window;
use super::wire::{self, Decoder, FrameReader, Stamp};
use crate::connection;
use crate::dial::Dial;
use crate::generator::{Measured, Phase, Probe, Snapshot};
use crate::timing;

/// How long the messages still outstanding may take to reach everyone once a point stops
/// publishing.
const DRAIN_LIMIT: Duration = Duration::from_secs(10);

/// The shared read buffer.
const READ_BUFFER: usize = 64 << 10;

/// The publisher's connection (it is a subscriber too; the server sends it nothing of its own).
const PUBLISHER: usize = 0;

/// One point's load.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    /// Messages the publisher keeps outstanding.
    pub window: usize,
    /// Run this long before measuring.
    pub warmup: Duration,
    /// Then measure this long.
    pub measure: Duration,
}

/// N open subscriber connections to one pub/sub server, driven from the thread that made them.
pub struct Generator {
    poll: Poll,
    events: Events,
    subscribers: Vec<Subscriber>,
    read_buffer: Box<[u8]>,
    deflate: bool,
    decoder: Decoder,
    /// Publisher frames handed out and not yet written (from `written` on).
    unwritten: Vec<u8>,
    written: usize,
    watching_writes: bool,
    /// Messages published and deliveries received so far, over every run.
    published: u64,
    delivered: u64,
    ticks_per_ns: f64,
}

/// One connection's reading side.
struct Subscriber {
    stream: TcpStream,
    reader: FrameReader,
    /// The sequence number its next delivery must carry.
    next: u64,
}

impl Generator {
    /// Opens `count` (at least 2) connections to `server`, offering permessage-deflate without
    /// context takeover when `deflate` (and then requiring the server to accept it).
    pub fn connect(
        server: SocketAddr,
        count: usize,
        deflate: bool,
        budget: Duration,
        ticks_per_ns: f64,
    ) -> Result<Self, String> {
        if count < 2 {
            return Err("pub/sub needs a publisher and at least one other subscriber".to_owned());
        }
        let offer = deflate.then(|| wire::deflate_config().offer());
        let request = connection::upgrade_request(server, offer.as_deref());
        let accept = |head: &[u8]| -> Result<bool, String> {
            let upgraded = connection::upgrade_response(head)?;
            if upgraded && deflate {
                wire::check_deflate_answer(head)?;
            }
            Ok(upgraded)
        };
        let dialed = Dial {
            server,
            count,
            budget,
            request: &request,
            accept: &accept,
        }
        .open()?;
        let mut subscribers = Vec::with_capacity(count);
        for (index, mut stream) in dialed.streams.into_iter().enumerate() {
            // Readable events only from now on (each ACK would otherwise be an event); the
            // publisher adds writable interest while its bytes wait for room.
            dialed
                .poll
                .registry()
                .reregister(&mut stream, Token(index), Interest::READABLE)
                .map_err(|e| format!("epoll_ctl: {e}"))?;
            subscribers.push(Subscriber {
                stream,
                reader: FrameReader::default(),
                next: 0,
            });
        }
        Ok(Self {
            poll: dialed.poll,
            events: Events::with_capacity(1024),
            subscribers,
            read_buffer: vec![0; READ_BUFFER].into_boxed_slice(),
            deflate,
            decoder: Decoder::default(),
            unwritten: Vec::with_capacity(64 * wire::FRAME_LEN),
            written: 0,
            watching_writes: false,
            published: 0,
            delivered: 0,
            ticks_per_ns,
        })
    }

    /// The share of deliveries so far that arrived compressed (the deflate row: all of
    /// them, unless the server sent some stored; 0 elsewhere).
    pub fn compressed_share(&self) -> f64 {
        self.decoder.inflated_count as f64 / self.delivered.max(1) as f64
    }

    /// Runs one point: warm-up, the measured window, then a drain until every message
    /// published reached every subscriber. Err (the point failed) when a delivery is wrong
    /// (out of order, lost, mangled), a connection closes, or the drain takes longer than
    /// `DRAIN_LIMIT`.
    ///
    /// Longer than most functions here on purpose: the phases, the counters they snapshot and
    /// the hot loop stay in one place, where delivered = published x (N - 1) can be checked by
    /// eye.
    pub fn run(&mut self, load: Load, probe: Probe) -> Result<Measured, String> {
        let others = self.subscribers.len() as u64 - 1;
        let first_sequence = self.published;
        let mut window = Window::new(load.window, others, first_sequence);
        let mut delivered = 0u64;
        let mut histogram = timing::new_histogram();
        let ticks = |d: Duration| (d.as_nanos() as f64 * self.ticks_per_ns) as u64;
        let start = timing::ticks_start();
        let warmup_end = start + ticks(load.warmup);
        let measure_end = warmup_end + ticks(load.measure);
        let drain_end = measure_end + ticks(DRAIN_LIMIT);
        let mut phase = Phase::WarmUp;
        let (mut measured_from, mut measured_to) = (None, None);
        loop {
            let now = timing::ticks_start();
            if phase == Phase::WarmUp && now >= warmup_end {
                phase = Phase::Measuring;
                measured_from = Some(Snapshot::take(delivered, probe));
            }
            if phase == Phase::Measuring && now >= measure_end {
                phase = Phase::Draining;
                measured_to = Some(Snapshot::take(delivered, probe));
            }
            if phase == Phase::Draining {
                if window.is_empty() {
                    break;
                }
                if now >= drain_end {
                    return Err(self.lost(&window, DRAIN_LIMIT));
                }
            } else {
                while let Some(sequence) = window.publish() {
                    Stamp {
                        sent_at: timing::ticks_start(),
                        sequence,
                    }
                    .encode_frame(&mut self.unwritten);
                }
                self.published = window.published();
            }
            self.flush()?;
            self.poll
                .poll(&mut self.events, Some(Duration::from_millis(1)))
                .map_err(|e| format!("epoll_wait: {e}"))?;
            let measuring = phase == Phase::Measuring;
            for event in &self.events {
                let index = event.token().0;
                let readable = event.is_readable() || event.is_read_closed() || event.is_error();
                if !readable {
                    continue;
                }
                read_deliveries(
                    &mut self.subscribers[index],
                    &mut self.read_buffer,
                    self.deflate,
                    &mut self.decoder,
                    |stamp, at| {
                        if index == PUBLISHER {
                            return Err("the publisher received its own message".to_owned());
                        }
                        window.deliver(stamp.sequence)?;
                        if measuring {
                            histogram.saturating_record(at.saturating_sub(stamp.sent_at).max(1));
                        }
                        delivered += 1;
                        Ok(())
                    },
                )
                .map_err(|why| format!("connection {index}: {why}"))?;
            }
        }
        let expected = (self.published - first_sequence) * others;
        let behind = self.subscribers[1..]
            .iter()
            .filter(|s| s.next != self.published)
            .count();
        if delivered != expected || behind != 0 || self.unwritten.len() != self.written {
            return Err(format!(
                "published {} messages to {others} subscribers: {delivered} deliveries of \
                 {expected} expected, {behind} subscriber(s) short",
                self.published - first_sequence
            ));
        }
        self.delivered += delivered;
        let (Some(first), Some(last)) = (measured_from, measured_to) else {
            unreachable!("the loop ends only after the window closed");
        };
        Ok(Measured::between(first, last, histogram))
    }

    /// Writes the publisher's unwritten frames until done or the socket would block, and
    /// watches for room only while bytes wait.
    fn flush(&mut self) -> Result<(), String> {
        let publisher = &mut self.subscribers[PUBLISHER].stream;
        while self.written < self.unwritten.len() {
            match publisher.write(&self.unwritten[self.written..]) {
                Ok(0) => return Err("the publisher's socket took no bytes".to_owned()),
                Ok(n) => self.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(format!("publishing: {e}")),
            }
        }
        if self.written == self.unwritten.len() {
            self.unwritten.clear();
            self.written = 0;
        }
        let waiting = !self.unwritten.is_empty();
        if waiting != self.watching_writes {
            let interest = if waiting {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            self.poll
                .registry()
                .reregister(publisher, Token(PUBLISHER), interest)
                .map_err(|e| format!("epoll_ctl: {e}"))?;
            self.watching_writes = waiting;
        }
        Ok(())
    }

    /// Why the drain failed: which message is not everywhere yet, and how many miss it.
    fn lost(&self, window: &Window, limit: Duration) -> String {
        let completed = window.oldest_outstanding();
        let short = self.subscribers[1..]
            .iter()
            .filter(|s| s.next <= completed)
            .count();
        format!(
            "message {completed} of {} had not reached {short} of {} subscribers {} s after \
             the point stopped publishing (lost, or delivered too slowly to drain in time)",
            self.published,
            self.subscribers.len() - 1,
            limit.as_secs()
        )
    }
}

/// Reads everything the server has sent `subscriber`, checking each message is the next of
/// its sequence and calling `delivered(stamp, read_at)` for it. Err when the server closed
/// the connection, sent a wrong frame or message, skipped or repeated one, or `delivered`
/// refused it.
fn read_deliveries(
    subscriber: &mut Subscriber,
    buffer: &mut [u8],
    deflate: bool,
    decoder: &mut Decoder,
    mut delivered: impl FnMut(Stamp, u64) -> Result<(), String>,
) -> Result<(), String> {
    let Subscriber {
        stream,
        reader,
        next,
    } = subscriber;
    loop {
        match stream.read(buffer) {
            Ok(0) => return Err("the server closed the connection".to_owned()),
            Ok(n) => {
                let at = timing::ticks_start();
                reader.consume(&buffer[..n], deflate, |rsv1, payload| {
                    let stamp = decoder.stamp(rsv1, payload)?;
                    if stamp.sequence != *next {
                        return Err(format!(
                            "message {} arrived where message {} was due (a loss or a reorder)",
                            stamp.sequence, *next
                        ));
                    }
                    *next += 1;
                    delivered(stamp, at)
                })?;
                // A short read emptied the socket: with edge-triggered epoll, later bytes
                // raise a new event (as in the echo generator).
                if n < buffer.len() {
                    return Ok(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}
