//! The feed drivers' smoke suite, shared by tickwire-blocking's and tickwire-tokio's tests
//! (the tokio one includes this file): a small in-test WebSocket server on the blocking
//! server API, and the cases, each run on a [`Driver`]: connect, subscribe, stamped
//! messages, reconnect after a close with the back-off, a gap across it, a stale connection
//! replaced, two redundant connections, a refused handshake's status, a connect that hangs
//! beside an open connection, pongs charged to a quota that counts control frames.

use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tickwire_blocking::codec::feed::{
    ConnId, Counters, Disconnect, Event, FeedConfig, ReconnectPolicy, ReconnectReason, SendError,
    SendQuota,
};
use tickwire_blocking::codec::handshake::Response;
use tickwire_blocking::codec::mux::Backoff;
use tickwire_blocking::feed::Timestamps;
use tickwire_blocking::{
    ClientOptions, CloseCode, Message, Recv, ServerBuilder, Transport, WebSocket,
};

const MIN: Duration = Duration::from_millis(20);
const MAX: Duration = Duration::from_millis(200);

/// What one accepted connection does, given its number (from 0) and the socket.
type Script = dyn Fn(usize, &mut WebSocket<TcpStream>) + Send + Sync;

pub(crate) struct Server {
    pub(crate) url: String,
    /// The texts received, with the connection number.
    received: Arc<Mutex<Vec<(usize, String)>>>,
}

/// Serves `script` on every accepted connection; connection numbers in `refuse` are
/// answered with HTTP 429 instead.
pub(crate) fn serve(
    refuse: &'static [usize],
    script: impl Fn(usize, &mut WebSocket<TcpStream>) + Send + Sync + 'static,
) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}/feed", listener.local_addr().unwrap());
    let received = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&received);
    let script: Arc<Script> = Arc::new(script);
    thread::spawn(move || {
        for (number, stream) in listener.incoming().enumerate() {
            let Ok(stream) = stream else { return };
            let (script, log) = (Arc::clone(&script), Arc::clone(&log));
            thread::spawn(move || {
                let refused = refuse.contains(&number);
                let accepted = ServerBuilder::new().accept_with(stream, |request| {
                    if refused {
                        Response::reject(429)
                    } else {
                        Response::accept(request)
                    }
                });
                let Ok(mut ws) = accepted else { return };
                // The subscription comes first.
                ws.set_read_timeout(Some(Duration::from_secs(2)));
                if let Ok(Recv::Message(Message::Text(text))) = ws.recv() {
                    log.lock().unwrap().push((number, text.to_owned()));
                }
                script(number, &mut ws);
            });
        }
    });
    Server { url, received }
}

/// Sends `key n` for each number; a feed that went away (the test is over) ends the sending
/// quietly, and the assertions on the feed's side say whether that was early.
pub(crate) fn send<S: Transport>(
    ws: &mut WebSocket<S>,
    key: &str,
    numbers: impl IntoIterator<Item = u64>,
) {
    for n in numbers {
        if ws.send_text(&format!("{key} {n}")).is_err() {
            return;
        }
    }
    let _ = ws.flush();
}

/// Keeps the connection open (answering pings) for `time`.
pub(crate) fn hold(ws: &mut WebSocket<TcpStream>, time: Duration) {
    ws.set_read_timeout(Some(time));
    let _ = ws.recv();
}

fn sequence(msg: &[u8]) -> Option<(&[u8], u64)> {
    let text = std::str::from_utf8(msg).ok()?;
    let (key, seq) = text.split_once(' ')?;
    Some((key.as_bytes(), seq.parse().ok()?))
}

pub(crate) fn config(url: &str) -> FeedConfig {
    FeedConfig::new(url)
        .with_subscription("sub BTC")
        .with_sequence(sequence)
        .with_reconnect(ReconnectPolicy::new().with_backoff(Backoff {
            initial: MIN,
            max: MAX,
        }))
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Seen {
    Message {
        conn: u8,
        seq: u64,
        recv_ns: u64,
        wall_ns: u64,
        kernel_ns: Option<u64>,
    },
    Gap(u64, u64),
    Reconnecting(ReconnectReason, Duration),
    Stale(u8),
    Connected(u8),
    Subscribed(u8),
    Other(String),
}

/// A feed driver under test.
pub(crate) trait Driver: Sized {
    /// Starts a feed with `config` and the default client options.
    fn start(config: FeedConfig, timestamps: Timestamps) -> Self {
        Self::start_with(config.with_timestamps(timestamps), ClientOptions::default())
    }
    /// Starts a feed with `config` and `client`'s options (TLS, ...).
    fn start_with(config: FeedConfig, client: ClientOptions) -> Self;
    /// The next event, as [`Seen`].
    fn next(&mut self) -> Seen;
    /// The session's counters now.
    fn counters(&mut self) -> Counters;
    /// A user's send.
    fn send(&mut self, conn: ConnId, text: &str) -> Result<(), SendError>;
}

/// The blocking driver (the tokio suite has its own).
impl Driver for tickwire_blocking::feed::Feed {
    fn start_with(config: FeedConfig, client: ClientOptions) -> Self {
        Self::new(config, client).unwrap()
    }

    fn next(&mut self) -> Seen {
        seen(self.next_event().unwrap().expect("the feed does not end"))
    }

    fn counters(&mut self) -> Counters {
        self.session().counters(std::time::Instant::now())
    }

    fn send(&mut self, conn: ConnId, text: &str) -> Result<(), SendError> {
        tickwire_blocking::feed::Feed::send(self, conn, text, 1)
    }
}

/// What a test compares of an event.
pub(crate) fn seen(event: Event<'_>) -> Seen {
    match event {
        Event::Message(m) => Seen::Message {
            conn: m.conn.0,
            seq: m.seq.unwrap(),
            recv_ns: m.stamp.recv_ns,
            wall_ns: m.stamp.wall_ns,
            kernel_ns: m.stamp.kernel_ns,
        },
        Event::Gap { from, to, .. } => Seen::Gap(from, to),
        Event::Reconnecting { reason, delay, .. } => Seen::Reconnecting(reason, delay),
        Event::Stale { conn, .. } => Seen::Stale(conn.0),
        Event::Connected { conn, .. } => Seen::Connected(conn.0),
        Event::Subscribed { conn } => Seen::Subscribed(conn.0),
        other => Seen::Other(format!("{other:?}")),
    }
}

/// Takes events until `done` holds of them (10 s at most).
fn collect(feed: &mut impl Driver, done: impl Fn(&[Seen]) -> bool) -> Vec<Seen> {
    let mut seen = Vec::new();
    let give_up = std::time::Instant::now() + Duration::from_secs(10);
    while !done(&seen) {
        assert!(
            std::time::Instant::now() < give_up,
            "gave up waiting: {seen:?}"
        );
        seen.push(feed.next());
    }
    seen
}

fn numbers(seen: &[Seen]) -> Vec<u64> {
    seen.iter()
        .filter_map(|s| match s {
            Seen::Message { seq, .. } => Some(*seq),
            _ => None,
        })
        .collect()
}

pub(crate) fn wall_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

pub(crate) fn connects_subscribes_and_delivers_stamped_messages<D: Driver>() {
    let server = serve(&[], |_, ws| {
        send(ws, "BTC", 1..=3);
        hold(ws, Duration::from_secs(3));
    });
    let before = wall_now();
    let mut feed = D::start(config(&server.url), Timestamps::User);
    let seen = collect(&mut feed, |seen| numbers(seen).len() == 3);
    assert_eq!(seen[..2], [Seen::Connected(0), Seen::Subscribed(0)]);
    assert_eq!(numbers(&seen), [1, 2, 3]);
    let after = wall_now();
    let mut last = 0;
    for s in &seen {
        if let Seen::Message {
            recv_ns, wall_ns, ..
        } = *s
        {
            assert!(
                wall_ns >= before && wall_ns <= after,
                "{wall_ns} outside {before}..{after}"
            );
            assert!(recv_ns > 0 && recv_ns >= last);
            last = recv_ns;
        }
    }
    assert_eq!(
        *server.received.lock().unwrap(),
        [(0, "sub BTC".to_owned())]
    );
}

pub(crate) fn a_server_close_reconnects_with_the_back_off_resubscribes_and_reports_the_gap<
    D: Driver,
>() {
    let server = serve(&[], |number, ws| {
        if number == 0 {
            send(ws, "BTC", 1..=2);
            ws.close(CloseCode(1001), "bye").unwrap();
            let _ = ws.finish();
        } else {
            send(ws, "BTC", 5..=6);
            hold(ws, Duration::from_secs(3));
        }
    });
    let mut feed = D::start(config(&server.url), Timestamps::User);
    let seen = collect(&mut feed, |seen| numbers(seen).len() == 4);
    assert_eq!(numbers(&seen), [1, 2, 5, 6]);
    assert!(seen.contains(&Seen::Gap(3, 4)), "{seen:?}");
    let delays: Vec<_> = seen
        .iter()
        .filter_map(|s| match s {
            Seen::Reconnecting(reason, delay) => Some((*reason, *delay)),
            _ => None,
        })
        .collect();
    assert_eq!(delays.len(), 1, "{seen:?}");
    assert_eq!(
        delays[0].0,
        ReconnectReason::Disconnect(Disconnect::Closed(Some(1001)))
    );
    assert!(delays[0].1 >= MIN && delays[0].1 <= MAX, "{delays:?}");
    let subs = server.received.lock().unwrap().clone();
    assert_eq!(subs, [(0, "sub BTC".to_owned()), (1, "sub BTC".to_owned())]);
}

pub(crate) fn a_stale_connection_is_replaced<D: Driver>() {
    let server = serve(&[], |number, ws| {
        if number == 0 {
            send(ws, "BTC", [1]);
            // Silent, yet answering pings.
            hold(ws, Duration::from_secs(3));
        } else {
            send(ws, "BTC", [2]);
            hold(ws, Duration::from_secs(3));
        }
    });
    let config = config(&server.url).with_stale_after(Some(Duration::from_millis(300)));
    let mut feed = D::start(config, Timestamps::User);
    let seen = collect(&mut feed, |seen| numbers(seen).len() == 2);
    assert_eq!(numbers(&seen), [1, 2]);
    assert!(seen.contains(&Seen::Stale(0)), "{seen:?}");
    let stale = seen.iter().find_map(|s| match s {
        Seen::Reconnecting(ReconnectReason::Stale, delay) => Some(*delay),
        _ => None,
    });
    assert!(
        stale.is_some_and(|delay| delay >= MIN && delay <= MAX),
        "{seen:?}"
    );
}

pub(crate) fn two_redundant_connections_one_closed_deliver_each_number_once<D: Driver>() {
    let server = serve(&[], |number, ws| {
        if number == 0 {
            // Cut after 2, without a close frame.
            send(ws, "BTC", 1..=2);
        } else {
            thread::sleep(Duration::from_millis(50));
            send(ws, "BTC", 1..=6);
            hold(ws, Duration::from_secs(3));
        }
    });
    let config = config(&server.url).with_connections(2);
    let mut feed = D::start(config, Timestamps::User);
    let seen = collect(&mut feed, |seen| numbers(seen).len() == 6);
    assert_eq!(numbers(&seen), [1, 2, 3, 4, 5, 6]);
    assert!(!seen.iter().any(|s| matches!(s, Seen::Gap(..))), "{seen:?}");
    let counters = feed.counters();
    assert!(counters.duplicates >= 2, "{counters:?}");
}

pub(crate) fn a_refused_handshake_is_reported_with_its_status<D: Driver>() {
    let server = serve(&[0], |_, ws| {
        send(ws, "BTC", [1]);
        hold(ws, Duration::from_secs(3));
    });
    let mut feed = D::start(config(&server.url), Timestamps::User);
    let seen = collect(&mut feed, |seen| numbers(seen).len() == 1);
    assert!(
        matches!(
            seen[0],
            Seen::Reconnecting(
                ReconnectReason::Disconnect(Disconnect::HandshakeStatus(429)),
                _
            )
        ),
        "{seen:?}"
    );
    assert!(seen.contains(&Seen::Connected(0)));
    assert_eq!(feed.send(ConnId(0), "hello"), Ok(()));
}

pub(crate) fn kernel_timestamps_are_taken_after_the_send<D: Driver>() {
    // The server notes the wall time just before each send.
    let sent_at = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&sent_at);
    let server = serve(&[], move |_, ws| {
        for n in 1..=3 {
            log.lock().unwrap().push(wall_now());
            send(ws, "BTC", [n]);
            thread::sleep(Duration::from_millis(5));
        }
        hold(ws, Duration::from_secs(3));
    });
    let mut feed = D::start(config(&server.url), Timestamps::Kernel);
    check_kernel_stamps(&mut feed, &sent_at);
}

/// Takes the three messages of a server that noted the wall time just before each send
/// (`sent_at`), and checks that each carries a kernel time between that send and the user
/// stamp.
pub(crate) fn check_kernel_stamps(feed: &mut impl Driver, sent_at: &Mutex<Vec<u64>>) {
    let seen = collect(feed, |seen| numbers(seen).len() == 3);
    let sent_at = sent_at.lock().unwrap().clone();
    let mut stamps = 0;
    for s in &seen {
        if let Seen::Message {
            seq,
            wall_ns,
            kernel_ns,
            ..
        } = *s
        {
            let kernel = kernel_ns.unwrap_or_else(|| panic!("no kernel timestamp: {seen:?}"));
            let sent = sent_at[seq as usize - 1];
            assert!(kernel >= sent, "kernel {kernel} before the send at {sent}");
            assert!(
                kernel <= wall_ns,
                "kernel {kernel} after the user stamp {wall_ns}"
            );
            stamps += 1;
        }
    }
    assert_eq!(stamps, 3);
}

pub(crate) fn a_connect_that_hangs_does_not_hold_up_the_open_connection<D: Driver>() {
    let server = serve(&[], |_, ws| {
        for n in 1..=20 {
            send(ws, "BTC", [n]);
            thread::sleep(Duration::from_millis(10));
        }
        hold(ws, Duration::from_secs(3));
    });
    // Accepted by the kernel, never answered: the second connection's handshake waits
    // out its 5 s timeout.
    let black_hole = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent = format!("ws://{}/feed", black_hole.local_addr().unwrap());
    let config = config(&server.url)
        .with_endpoint(silent)
        .with_connections(2)
        .with_connect_timeout(Duration::from_secs(5));
    let started = std::time::Instant::now();
    let mut feed = D::start(config, Timestamps::User);
    let seen = collect(&mut feed, |seen| numbers(seen).len() == 20);
    assert_eq!(numbers(&seen), (1..=20).collect::<Vec<_>>());
    assert!(!seen.contains(&Seen::Connected(1)), "{seen:?}");
    // Some 200 ms of sending; a driver that waited for the other connect would take 5 s.
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(2500),
        "took {took:?}: {seen:?}"
    );
}

pub(crate) fn pongs_count_against_a_quota_that_counts_control_frames<D: Driver>() {
    for counts in [true, false] {
        let server = serve(&[], |_, ws| {
            for _ in 0..4 {
                ws.ping(b"hb").unwrap();
            }
            send(ws, "BTC", [1]);
            hold(ws, Duration::from_secs(3));
        });
        // 4 units per 10 s: the four pongs use them all when they count.
        let quota =
            SendQuota::per_window(4, Duration::from_secs(10)).with_count_control_frames(counts);
        let config = config(&server.url).with_send_quota(Some(quota));
        let mut feed = D::start(config, Timestamps::User);
        let seen = collect(&mut feed, |seen| numbers(seen).len() == 1);
        assert_eq!(numbers(&seen), [1]);
        let sent = feed.send(ConnId(0), "order");
        if counts {
            assert!(
                matches!(sent, Err(SendError::RateLimited { .. })),
                "{sent:?} after four pongs"
            );
        } else {
            assert_eq!(sent, Ok(()), "pongs do not count");
        }
    }
}
