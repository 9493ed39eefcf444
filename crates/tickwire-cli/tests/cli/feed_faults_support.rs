//! A feed session, on either driver, run on a thread of its own against the exchange
//! simulator through toxiproxy: what the fault suite (`feed_faults`) drives. The thread hands
//! every event out as an owned [`Got`] stamped with when it came, and takes [`Command`]s
//! (rotate, a flood of sends, close) between events.
//!
//! Both drivers sit behind [`DriveFeed`], so the suite's scenarios never name one.

use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tickwire::feed::{
    ConnId, Counters, Event, FeedConfig, FeedControl, FeedError, KeyId, Limited, ReconnectReason,
    SendError,
};

/// Which driver runs the session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Driver {
    Blocking,
    Tokio,
}

/// The WebSocket options every connection of the suite opens with: keepalive pings every
/// `ping_every`, a connection failing when the pong is `pong_within` late.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Keepalive {
    pub(crate) ping_every: Duration,
    pub(crate) pong_within: Duration,
}

/// What the test asks of the feed's thread.
#[derive(Debug)]
pub(crate) enum Command {
    /// `feed.rotate(conn)`; answered with [`What::RotateAsked`].
    Rotate(u8),
    /// Send `count` texts on `conn` as fast as its quota lets them through (each refused
    /// send is tried again after the next event); answered with [`What::Flooded`].
    Flood { conn: u8, count: u32, text: String },
    /// `feed.close()`, after reporting the session's [`Counters`].
    Close,
}

/// An event (or an answer to a command) with the time the test's side of the thread saw it.
#[derive(Debug, Clone)]
pub(crate) struct Got {
    pub(crate) at: Instant,
    pub(crate) what: What,
}

/// An owned copy of what the feed handed out.
#[derive(Debug, Clone)]
pub(crate) enum What {
    Message {
        conn: u8,
        /// The key's bytes, as a string, and the number, when the extractor found them.
        seq: Option<(String, u64)>,
        text: String,
        recv_ns: u64,
        wall_ns: u64,
    },
    Gap {
        key: String,
        from: u64,
        to: u64,
    },
    Connected {
        conn: u8,
    },
    Stale {
        conn: u8,
        silent_for: Duration,
    },
    Closed {
        conn: u8,
        reason: ReconnectReason,
    },
    Reconnecting {
        conn: u8,
        reason: ReconnectReason,
        delay: Duration,
    },
    RateLimited {
        conn: u8,
        limited: Limited,
        wait: Duration,
    },
    Rotated {
        from: u8,
        to: u8,
    },
    Ended(FeedError),
    /// What `feed.rotate` answered.
    RotateAsked(bool),
    /// A flood's end: sent, and sends the quota refused (each tried again).
    Flooded {
        sent: u32,
        refused: u32,
    },
    /// The session's figures just before [`Command::Close`] took effect.
    Counters(Box<Counters>),
    /// An event the suite does not look at.
    Other(#[expect(dead_code, reason = "read through Debug, in a failing test's message")] String),
}

/// The calls the suite makes on a feed, the same for both drivers.
trait DriveFeed {
    /// Waits for the next event and copies it out; `None` once the session is over.
    fn next(&mut self) -> Option<What>;
    fn send(&mut self, conn: ConnId, text: &str, weight: u32) -> Result<(), SendError>;
    fn control(&mut self) -> &mut FeedControl;
}

struct BlockingFeed(tickwire::blocking::feed::Feed);

impl DriveFeed for BlockingFeed {
    fn next(&mut self) -> Option<What> {
        let owned = own(&self.0.next_event().expect("poll(2) failed")?);
        Some(resolve(owned, &self.0))
    }

    fn send(&mut self, conn: ConnId, text: &str, weight: u32) -> Result<(), SendError> {
        self.0.send(conn, text, weight)
    }

    fn control(&mut self) -> &mut FeedControl {
        &mut self.0
    }
}

struct TokioFeed {
    runtime: tokio::runtime::Runtime,
    feed: tickwire::tokio::feed::Feed,
}

impl DriveFeed for TokioFeed {
    fn next(&mut self) -> Option<What> {
        let owned = own(&self.runtime.block_on(self.feed.next_event())?);
        Some(resolve(owned, &self.feed))
    }

    fn send(&mut self, conn: ConnId, text: &str, weight: u32) -> Result<(), SendError> {
        self.feed.send(conn, text, weight)
    }

    fn control(&mut self) -> &mut FeedControl {
        &mut self.feed
    }
}

/// A feed running on its own thread. Dropping it asks the feed to close and leaves the
/// thread to end once the session has (or once its events have nowhere to go).
pub(crate) struct RunningFeed {
    commands: Sender<Command>,
    pub(crate) events: Receiver<Got>,
}

impl RunningFeed {
    /// Starts a session of `config` on `driver`, every connection opened with `keepalive`.
    pub(crate) fn start(driver: Driver, config: FeedConfig, keepalive: Keepalive) -> Self {
        let (commands, command_rx) = mpsc::channel();
        let (event_tx, events) = mpsc::channel();
        thread::spawn(move || match driver {
            Driver::Blocking => {
                let client = tickwire::blocking::ClientBuilder::new()
                    .keepalive(keepalive.ping_every, keepalive.pong_within);
                let feed = tickwire::blocking::feed::Feed::new(config, client).unwrap();
                drive(BlockingFeed(feed), &command_rx, &event_tx);
            }
            Driver::Tokio => {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let client = tickwire::tokio::ClientBuilder::new()
                    .keepalive(keepalive.ping_every, keepalive.pong_within);
                let feed = {
                    let _entered = runtime.enter();
                    tickwire::tokio::feed::Feed::new(config, client).unwrap()
                };
                drive(TokioFeed { runtime, feed }, &command_rx, &event_tx);
            }
        });
        Self { commands, events }
    }

    /// Hands `command` to the feed's thread (taken after its next event).
    pub(crate) fn command(&self, command: Command) {
        self.commands
            .send(command)
            .expect("the feed's thread ended");
    }
}

impl Drop for RunningFeed {
    fn drop(&mut self) {
        let _ = self.commands.send(Command::Close);
    }
}

/// A flood in progress: what is left to send.
struct Flood {
    conn: ConnId,
    text: String,
    left: u32,
    sent: u32,
    refused: u32,
}

/// The feed's thread: commands between events, every event out to the test.
fn drive(mut feed: impl DriveFeed, commands: &Receiver<Command>, events: &Sender<Got>) {
    let mut flood: Option<Flood> = None;
    let mut answers = Vec::new();
    loop {
        for command in commands.try_iter() {
            match command {
                Command::Rotate(conn) => {
                    let asked = feed.control().rotate(ConnId(conn));
                    answers.push(What::RotateAsked(asked));
                }
                Command::Flood { conn, count, text } => {
                    flood = Some(Flood {
                        conn: ConnId(conn),
                        text,
                        left: count,
                        sent: 0,
                        refused: 0,
                    });
                }
                Command::Close => {
                    let counters = feed.control().session().counters(Instant::now());
                    answers.push(What::Counters(Box::new(counters)));
                    feed.control().close();
                }
            }
        }
        if let Some(f) = &mut flood {
            // As many as the quota takes now; the rest after the next event.
            while f.left > 0 {
                match feed.send(f.conn, &f.text, 1) {
                    Ok(()) => {
                        f.left -= 1;
                        f.sent += 1;
                    }
                    Err(SendError::RateLimited { .. }) => {
                        f.refused += 1;
                        break;
                    }
                    Err(other) => panic!("a flood's send failed: {other:?}"),
                }
            }
            if f.left == 0 {
                answers.push(What::Flooded {
                    sent: f.sent,
                    refused: f.refused,
                });
                flood = None;
            }
        }
        for what in answers.drain(..) {
            if events
                .send(Got {
                    at: Instant::now(),
                    what,
                })
                .is_err()
            {
                return;
            }
        }
        let Some(what) = feed.next() else {
            return;
        };
        if events
            .send(Got {
                at: Instant::now(),
                what,
            })
            .is_err()
        {
            // The test is gone: close, and let the session's end be unheard.
            feed.control().close();
            while feed.next().is_some() {}
            return;
        }
    }
}

/// An event copied out, the key of a gap still to be looked up.
enum Owned {
    Done(What),
    Gap(KeyId, u64, u64),
}

fn own(event: &Event<'_>) -> Owned {
    Owned::Done(match event {
        Event::Message(m) => {
            let text = String::from_utf8_lossy(m.payload).into_owned();
            What::Message {
                conn: m.conn.0,
                seq: m
                    .seq
                    .and_then(|seq| Some((sequence(m.payload)?.0.to_owned(), seq))),
                text,
                recv_ns: m.stamp.recv_ns,
                wall_ns: m.stamp.wall_ns,
            }
        }
        Event::Gap { key, from, to } => return Owned::Gap(*key, *from, *to),
        Event::Connected { conn, .. } => What::Connected { conn: conn.0 },
        Event::Stale { conn, silent_for } => What::Stale {
            conn: conn.0,
            silent_for: *silent_for,
        },
        Event::Closed { conn, reason } => What::Closed {
            conn: conn.0,
            reason: *reason,
        },
        Event::Reconnecting {
            conn,
            reason,
            delay,
        } => What::Reconnecting {
            conn: conn.0,
            reason: *reason,
            delay: *delay,
        },
        Event::RateLimited {
            conn,
            limited,
            wait,
        } => What::RateLimited {
            conn: conn.0,
            limited: *limited,
            wait: *wait,
        },
        Event::Rotated { from, to } => What::Rotated {
            from: from.0,
            to: to.0,
        },
        Event::Ended(error) => What::Ended(*error),
        other => What::Other(format!("{other:?}")),
    })
}

fn resolve(owned: Owned, control: &FeedControl) -> What {
    match owned {
        Owned::Done(what) => what,
        Owned::Gap(key, from, to) => What::Gap {
            key: control
                .session()
                .key_bytes(key)
                .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
                .unwrap_or_default(),
            from,
            to,
        },
    }
}

/// The simulator's sequence: `"key":"K"` and `"seq":N` in its data messages (a scan, not a
/// parse: the extractor borrows the key from the message).
pub(crate) fn sequence(message: &[u8]) -> Option<(&str, u64)> {
    let text = std::str::from_utf8(message).ok()?;
    let key_at = text.find(r#""key":""#)? + r#""key":""#.len();
    let key = &text[key_at..key_at + text[key_at..].find('"')?];
    let seq_at = text.find(r#""seq":"#)? + r#""seq":"#.len();
    let digits = text[seq_at..]
        .find(|c: char| !c.is_ascii_digit())
        .map_or(&text[seq_at..], |end| &text[seq_at..seq_at + end]);
    Some((key, digits.parse().ok()?))
}

/// Nanoseconds since the Unix epoch now, for checking messages' wall-clock stamps.
pub(crate) fn wall_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}
