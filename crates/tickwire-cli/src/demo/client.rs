//! The demo's subscribers: tickwire clients (the blocking [`ClientBuilder`] for the opening
//! handshake, then [`WebSocket::try_recv`] on a non-blocking socket), many per thread on one
//! epoll loop (mio). Each checks every topic's sequence numbers and gap notices
//! ([`SeqCheck`]) and records publish-to-receive latency; slow ones read late on purpose
//! ([`Pace`]) so that the topics' policies act, and reconnect when a policy closes them, as a
//! real client would.
//!
//! Owns the client side only; what it checks against (the numbers published) is in
//! [`Shared`].

use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use mio::unix::SourceFd;
use mio::{Events, Interest, Poll, Token};
use socket2::{Domain, Protocol, Socket, Type};
use tickwire::blocking::{ClientBuilder, Message, Recv, WebSocket};

use super::check::{SeqCheck, field_str, field_u64};
use super::stats::Interval;
use super::{Shared, TOPICS, TopicId};

/// How a client reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pace {
    /// As fast as messages come: must see every message, in order, with no gap.
    Fast,
    /// Reads for 2 s, then stops reading for 6 s, over and over (long enough to fill the
    /// kernel's socket buffers and then the server's send budget at the default rate).
    Stalling,
    /// Reads at most a twentieth of what the feed publishes; subscribes to the book and the
    /// trades only (not to the status topic, whose policy would close it).
    Throttled,
}

impl Pace {
    /// The topics a client of this pace subscribes to: the path of its URL.
    pub(crate) fn topics(self) -> &'static str {
        match self {
            Self::Fast | Self::Stalling => "book,trades,status",
            Self::Throttled => "book,trades",
        }
    }
}

/// A slow client's receive buffer and segment size: small, like a client on a slow link, so
/// that it falls behind in the server's queue (where the policies act) rather than in the
/// kernel's (loopback's 64 KiB segments would let the server's socket buffer grow to
/// megabytes).
const SLOW_RECEIVE_BUFFER: usize = 16 << 10;
const SLOW_SEGMENT: u32 = 1_200;
/// How long a client closed by a policy waits before it reconnects.
const RECONNECT_AFTER: Duration = Duration::from_millis(500);
/// How long, after the feed stopped, the clients may take to receive what is in flight.
const DRAIN_FOR: Duration = Duration::from_secs(5);

/// What one client saw over the whole run.
#[derive(Debug, Clone)]
pub(crate) struct ClientReport {
    pub(crate) pace: Pace,
    /// Messages received per topic, over all its connections.
    pub(crate) received: [u64; TOPICS],
    /// Messages reported dropped by gap notices per topic, over all its connections.
    pub(crate) reported: [u64; TOPICS],
    /// Messages that arrived with a number not above the previous one's.
    pub(crate) out_of_order: u64,
    /// Times a slow-consumer policy closed it (1008 or 1013).
    pub(crate) policy_closes: u64,
    /// Connections opened (1 + reconnects).
    pub(crate) connections: u64,
    /// Its last connection received or was told about every message published while it
    /// was subscribed.
    pub(crate) complete: bool,
    /// Its only connection received every message published, in order, with no gap.
    pub(crate) gapless: bool,
    /// What went wrong, if anything did that the demo did not ask for.
    pub(crate) failure: Option<String>,
}

/// Runs `clients` (their paces) on this thread against the server at `server` until the feed is done and
/// each has received what was published (or [`DRAIN_FOR`] passed); records into `interval`.
pub(crate) fn run_thread(
    paces: Vec<Pace>,
    server: SocketAddr,
    shared: &Shared,
    interval: &Mutex<Interval>,
) -> Vec<ClientReport> {
    let mut poll = match Poll::new() {
        Ok(poll) => poll,
        Err(e) => return paces.iter().map(|&p| failed(p, &e.to_string())).collect(),
    };
    let started = Instant::now();
    let mut clients: Vec<Client> = paces
        .into_iter()
        .enumerate()
        .map(|(index, pace)| Client::new(index, pace, started))
        .collect();
    for client in &mut clients {
        // Subscribed before the feed starts: accountable for every message from the first.
        client.connect(server, &poll, |_| SeqCheck::from(1));
    }
    let mut events = Events::with_capacity(256);
    let mut drain_until = None;
    loop {
        if let Err(e) = poll.poll(&mut events, Some(Duration::from_millis(5)))
            && e.kind() != std::io::ErrorKind::Interrupted
        {
            for client in &mut clients {
                client.report.failure.get_or_insert_with(|| e.to_string());
            }
            break;
        }
        for event in &events {
            clients[event.token().0].readable = true;
        }
        let now = Instant::now();
        let feed_done = shared.feed_done.load(Ordering::Acquire);
        let deadline = *drain_until.get_or_insert_with(|| now + DRAIN_FOR);
        if !feed_done {
            drain_until = None;
        }
        {
            let mut interval = interval.lock().unwrap_or_else(PoisonError::into_inner);
            for client in &mut clients {
                client.step(now, feed_done, server, &poll, shared, &mut interval);
            }
        }
        if shared.stop.load(Ordering::Acquire) {
            break;
        }
        if feed_done {
            let published = shared.published_now();
            if now >= deadline || clients.iter().all(|c| c.settled(&published)) {
                break;
            }
        }
    }
    let published = shared.published_now();
    clients
        .into_iter()
        .map(|client| client.finish(&published))
        .collect()
}

fn failed(pace: Pace, why: &str) -> ClientReport {
    let mut report = ClientReport::new(pace);
    report.failure = Some(why.to_owned());
    report
}

impl ClientReport {
    fn new(pace: Pace) -> Self {
        Self {
            pace,
            received: [0; TOPICS],
            reported: [0; TOPICS],
            out_of_order: 0,
            policy_closes: 0,
            connections: 0,
            complete: false,
            gapless: false,
            failure: None,
        }
    }
}

/// One client: its connection (while it has one) and its tallies.
struct Client {
    index: usize,
    pace: Pace,
    started: Instant,
    connection: Option<Connection>,
    reconnect_at: Option<Instant>,
    /// Readiness seen and not yet read to would-block (epoll is edge-triggered).
    readable: bool,
    /// `Throttled`: messages it may still read, and when the allowance last grew.
    allowance: f64,
    allowance_at: Instant,
    said_hello: bool,
    report: ClientReport,
}

struct Connection {
    ws: WebSocket<TcpStream>,
    checks: [SeqCheck; TOPICS],
    /// The close code the server sent, once it has.
    closed_with: Option<u16>,
}

impl Client {
    fn new(index: usize, pace: Pace, started: Instant) -> Self {
        Self {
            index,
            pace,
            started,
            connection: None,
            reconnect_at: None,
            readable: false,
            allowance: 0.0,
            allowance_at: started,
            said_hello: false,
            report: ClientReport::new(pace),
        }
    }

    /// Connects; `check` makes the sequence check of each topic it subscribes to (the others
    /// owe nothing).
    fn connect(&mut self, server: SocketAddr, poll: &Poll, check: impl Fn(TopicId) -> SeqCheck) {
        match open(server, self.index, self.pace, poll) {
            Ok(ws) => {
                let topics = self.pace.topics();
                self.connection = Some(Connection {
                    ws,
                    checks: TopicId::ALL.map(|t| {
                        if topics.split(',').any(|name| name == t.name()) {
                            check(t)
                        } else {
                            SeqCheck::joining()
                        }
                    }),
                    closed_with: None,
                });
                self.report.connections += 1;
                self.readable = true;
            }
            Err(e) => {
                self.report.failure.get_or_insert(e);
            }
        }
    }

    /// Reads what its pace allows, or reconnects when it is time to.
    fn step(
        &mut self,
        now: Instant,
        feed_done: bool,
        server: SocketAddr,
        poll: &Poll,
        shared: &Shared,
        interval: &mut Interval,
    ) {
        if self.connection.is_none() {
            if self.reconnect_at.is_some_and(|at| at <= now) && !feed_done {
                self.reconnect_at = None;
                self.connect(server, poll, |_| SeqCheck::joining());
            }
            return;
        }
        let mut budget = self.budget(now, feed_done, shared);
        if !self.readable || budget == 0 {
            return;
        }
        let slow = self.pace != Pace::Fast;
        let Some(connection) = self.connection.as_mut() else {
            return;
        };
        let ended = loop {
            if budget == 0 {
                break None;
            }
            match connection.ws.try_recv() {
                Ok(Recv::Message(Message::Text(text))) => {
                    budget -= 1;
                    match on_text(text, &mut connection.checks, shared, interval, slow) {
                        Received::Hello if !self.said_hello => {
                            self.said_hello = true;
                            shared.ready.fetch_add(1, Ordering::AcqRel);
                        }
                        Received::Unexpected => {
                            let what = format!("unexpected message {text:?}");
                            self.report.failure.get_or_insert(what);
                        }
                        _ => {}
                    }
                }
                Ok(Recv::Message(_)) => {}
                Ok(Recv::WouldBlock | Recv::Timeout) => {
                    self.readable = false;
                    break None;
                }
                Ok(Recv::Closed(frame)) => {
                    connection.closed_with = Some(frame.map_or(1005, |f| f.code.0));
                    break Some(Ok(()));
                }
                Err(e) => break Some(Err(e.to_string())),
                Ok(_) => {}
            }
        };
        if self.pace == Pace::Throttled {
            self.allowance = budget as f64;
        }
        if let Some(outcome) = ended {
            self.ended(outcome, now, poll);
        }
    }

    /// Messages it may read now (`usize::MAX`: no limit).
    fn budget(&mut self, now: Instant, feed_done: bool, shared: &Shared) -> usize {
        if feed_done {
            return usize::MAX;
        }
        match self.pace {
            Pace::Fast => usize::MAX,
            Pace::Stalling => {
                // Out of step with the other stalling clients, by index.
                let offset = Duration::from_millis(2_700 * self.index as u64);
                let phase = (now - self.started + offset).as_millis() % 8_000;
                if phase < 2_000 { usize::MAX } else { 0 }
            }
            Pace::Throttled => {
                let per_second = (f64::from(shared.rate) / 20.0).max(10.0);
                let grown = (now - self.allowance_at).as_secs_f64() * per_second;
                self.allowance_at = now;
                self.allowance = (self.allowance + grown).min(per_second / 10.0);
                self.allowance as usize
            }
        }
    }

    /// The connection ended: a policy's close is expected of a slow client (it reconnects);
    /// anything else while the feed runs is a failure.
    fn ended(&mut self, outcome: Result<(), String>, now: Instant, poll: &Poll) {
        let Some(connection) = self.connection.take() else {
            return;
        };
        let _ = poll
            .registry()
            .deregister(&mut SourceFd(&connection.ws.stream().as_raw_fd()));
        self.add_tallies(&connection);
        if connection.closed_with.is_some_and(is_policy_close) {
            self.report.policy_closes += 1;
            self.reconnect_at = Some(now + RECONNECT_AFTER);
            return;
        }
        let why = match (outcome, connection.closed_with) {
            (Err(e), _) => e,
            (Ok(()), Some(code)) => format!("closed by the server with {code}"),
            (Ok(()), None) => "closed by the server".to_owned(),
        };
        self.report.failure.get_or_insert(why);
    }

    fn add_tallies(&mut self, connection: &Connection) {
        for (topic, check) in connection.checks.iter().enumerate() {
            self.report.received[topic] += check.received;
            self.report.reported[topic] += check.reported;
            self.report.out_of_order += check.out_of_order;
        }
    }

    /// Nothing more is coming its way: every message published was received or reported,
    /// or it has no connection left.
    fn settled(&self, published: &[u64; TOPICS]) -> bool {
        match &self.connection {
            None => true,
            Some(c) => (0..TOPICS).all(|t| c.checks[t].unaccounted(published[t]) == 0),
        }
    }

    /// Closes its connection (without waiting for the server's answer) and returns its
    /// report, judged against the final `published` numbers.
    fn finish(mut self, published: &[u64; TOPICS]) -> ClientReport {
        // Closed by a policy and not reconnected (the feed had stopped): nothing is owed.
        self.report.complete = self.report.policy_closes > 0 && self.report.failure.is_none();
        if let Some(mut connection) = self.connection.take() {
            let checks = connection.checks;
            self.report.complete = (0..TOPICS).all(|t| checks[t].complete(published[t]));
            self.report.gapless = self.report.connections == 1
                && (0..TOPICS).all(|t| checks[t].gapless(published[t]));
            self.add_tallies(&connection);
            let _ = connection
                .ws
                .close(tickwire::blocking::CloseCode::NORMAL, "");
            let _ = connection.ws.flush();
        }
        self.report
    }
}

/// 1008 (policy violation) and 1013 (try again later): the codes a topic's `Close` policy
/// uses.
fn is_policy_close(code: u16) -> bool {
    code == 1008 || code == 1013
}

/// Connects (blocking, for the handshake) with the socket options of its pace, subscribing
/// to its pace's topics, then switches the socket to non-blocking and registers it with
/// `poll` under `token`.
fn open(
    server: SocketAddr,
    token: usize,
    pace: Pace,
    poll: &Poll,
) -> Result<WebSocket<TcpStream>, String> {
    let socket = Socket::new(
        Domain::for_address(server),
        Type::STREAM,
        Some(Protocol::TCP),
    )
    .map_err(|e| format!("socket: {e}"))?;
    if pace != Pace::Fast {
        // Before connecting, so that the handshake announces them.
        socket
            .set_recv_buffer_size(SLOW_RECEIVE_BUFFER)
            .and_then(|()| socket.set_tcp_mss(SLOW_SEGMENT))
            .map_err(|e| format!("slow client's socket options: {e}"))?;
    }
    socket
        .connect(&server.into())
        .and_then(|()| socket.set_tcp_nodelay(true))
        .map_err(|e| format!("connect to {server}: {e}"))?;
    let url =
        url::Url::parse(&format!("ws://{server}/{}", pace.topics())).map_err(|e| e.to_string())?;
    let ws = ClientBuilder::new()
        .handshake(TcpStream::from(socket), &url)
        .map_err(|e| format!("opening handshake with {url}: {e}"))?;
    let tcp = ws.stream();
    tcp.set_nonblocking(true)
        .map_err(|e| format!("non-blocking: {e}"))?;
    poll.registry()
        .register(
            &mut SourceFd(&tcp.as_raw_fd()),
            Token(token),
            Interest::READABLE,
        )
        .map_err(|e| format!("epoll: {e}"))?;
    Ok(ws)
}

/// What a text message was.
#[derive(Debug, PartialEq, Eq)]
enum Received {
    Topic,
    Gap,
    Hello,
    Unexpected,
}

/// Checks and records one text message from the server.
fn on_text(
    text: &str,
    checks: &mut [SeqCheck; TOPICS],
    shared: &Shared,
    interval: &mut Interval,
    slow: bool,
) -> Received {
    let Some(kind) = field_str(text, "type") else {
        return Received::Unexpected;
    };
    if kind == "hello" {
        return Received::Hello;
    }
    if kind == "gap" {
        let topic = field_str(text, "topic").and_then(TopicId::named);
        let dropped = field_u64(text, "dropped");
        let first = field_u64(text, "first");
        return match (topic, dropped, first) {
            (Some(topic), Some(dropped), Some(first)) => {
                checks[topic as usize].gap(dropped, first);
                Received::Gap
            }
            _ => Received::Unexpected,
        };
    }
    let topic = TopicId::of_message(kind);
    let (Some(topic), Some(seq), Some(ts)) = (topic, field_u64(text, "seq"), field_u64(text, "ts"))
    else {
        return Received::Unexpected;
    };
    checks[topic as usize].message(seq);
    interval.record(shared.now_ns().saturating_sub(ts), slow);
    Received::Topic
}
