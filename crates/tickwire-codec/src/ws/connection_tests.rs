//! Behavioural tests for [`Connection`]: a simulated client/server pair on a virtual clock.
//!
//! Bytes move only when a test moves them ([`Pair::client_writes`], [`Pair::server_writes`]), in
//! chunks of [`Pair::chunk`] bytes to model partial socket writes, and every instant is `t0`
//! plus a duration the test chooses, so each run is deterministic. Server output is unmasked,
//! so tests that check exact wire bytes look at what a server sends; masked client output is
//! decoded with a server-role [`FrameReader`].

use std::time::{Duration, Instant};

use super::*;
use crate::buf::ReadBuf;

/// What a connection produced, owned so sequences can be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Got {
    Text(String),
    Binary(Vec<u8>),
    Ping(Vec<u8>),
    Pong(Vec<u8>),
    /// A close delivered as a message: a connection never does this (the peer's close is
    /// `Closed`).
    Close(Option<(u16, String)>),
    /// The end of the close handshake, with what the peer's close said.
    Closed(Option<(u16, String)>),
    Error(Error),
}

impl Got {
    fn of(message: Message<'_>) -> Self {
        match message {
            Message::Text(t) => Self::Text(t.to_owned()),
            Message::Binary(b) => Self::Binary(b.to_vec()),
            Message::Ping(p) => Self::Ping(p.to_vec()),
            Message::Pong(p) => Self::Pong(p.to_vec()),
            Message::Close(c) => Self::Close(c.map(|c| (c.code.0, c.reason.to_owned()))),
        }
    }
}

fn text(t: &str) -> Got {
    Got::Text(t.to_owned())
}

fn closed_with(code: CloseCode, reason: &str) -> Got {
    Got::Closed(Some((code.0, reason.to_owned())))
}

/// The keepalive ping payload a client sends the `n`th time (a big-endian counter).
fn keepalive_payload(n: u64) -> Vec<u8> {
    n.to_be_bytes().to_vec()
}

/// A connection with the buffers a transport would lend it, kept together: the tests drive
/// it as a transport does.
#[derive(Debug)]
struct Peer {
    conn: Connection,
    bufs: Buffers,
}

impl Peer {
    fn new(role: Role, config: Config, mask: MaskSource, now: Instant) -> Self {
        let bufs = Buffers::new(&config);
        Self {
            conn: Connection::new(role, config, mask, now),
            bufs,
        }
    }

    fn state(&self) -> ConnectionState {
        self.conn.state()
    }

    fn drains_before_close(&self) -> bool {
        self.conn.drains_before_close()
    }

    fn poll(&mut self) -> Result<Event<'_>, Error> {
        self.conn.poll(&mut self.bufs)
    }

    fn poll_with_sender(&mut self) -> Result<(Event<'_>, Sender<'_>), Error> {
        self.conn.poll_with_sender(&mut self.bufs)
    }

    fn feed(&mut self, bytes: &[u8], now: Instant) {
        self.conn.feed(&mut self.bufs, bytes, now);
    }

    fn sender(&mut self) -> Sender<'_> {
        self.conn.sender(&mut self.bufs)
    }

    fn close(&mut self, code: CloseCode, reason: &str, now: Instant) -> Result<(), Error> {
        self.conn.close(&mut self.bufs, code, reason, now)
    }

    fn wants_write(&self) -> bool {
        self.conn.wants_write(&self.bufs)
    }

    fn output(&self) -> &[u8] {
        self.conn.output(&self.bufs)
    }

    fn advance_output(&mut self, n: usize) {
        self.conn.advance_output(&mut self.bufs, n);
    }

    fn should_close_transport(&self) -> bool {
        self.conn.should_close_transport(&self.bufs)
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.conn.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) -> Result<(), Error> {
        self.conn.handle_timeout(&mut self.bufs, now)
    }
}

/// Polls until `NeedMore`, `Closed` or an error, recording everything.
fn events(conn: &mut Peer) -> Vec<Got> {
    let mut seen = Vec::new();
    loop {
        match conn.poll() {
            Ok(Event::Message(m)) => seen.push(Got::of(m)),
            Ok(Event::NeedMore) => return seen,
            Ok(Event::Closed) => {
                let peer = conn.conn.peer_close(&conn.bufs);
                seen.push(Got::Closed(peer.map(|c| (c.code.0, c.reason.to_owned()))));
                return seen;
            }
            Err(e) => {
                seen.push(Got::Error(e));
                return seen;
            }
        }
    }
}

/// Writes everything queued, at most `chunk` bytes per `advance_output`, and returns it.
fn drain(conn: &mut Peer, chunk: usize) -> Vec<u8> {
    let mut written = Vec::new();
    while conn.wants_write() {
        let out = conn.output();
        let n = chunk.min(out.len());
        written.extend_from_slice(&out[..n]);
        conn.advance_output(n);
    }
    written
}

/// Decodes frames a client wrote (masked), as a server reads them.
fn client_frames(bytes: &[u8]) -> Vec<Got> {
    let mut reader = FrameReader::new(Role::Server, Limits::client());
    let mut buf = ReadBuf::with_capacity(64);
    reader.feed(&mut buf, bytes);
    let mut seen = Vec::new();
    loop {
        match reader.poll(&mut buf) {
            Ok(ReadEvent::Message(m)) => seen.push(Got::of(m)),
            Ok(ReadEvent::NeedMore) => return seen,
            Err(e) => {
                seen.push(Got::Error(e));
                return seen;
            }
        }
    }
}

/// A masked frame with a fixed key, as a client sends it; `payload` under 126 bytes.
fn masked(b0: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 0x7e);
    let key = [0x37, 0xfa, 0x21, 0x3d];
    let mut frame = vec![b0, 0x80 | payload.len() as u8];
    frame.extend_from_slice(&key);
    let at = frame.len();
    frame.extend_from_slice(payload);
    apply_mask(&mut frame[at..], key, 0);
    frame
}

/// A client and a server connected by a simulated socket that moves bytes only on request.
struct Pair {
    client: Peer,
    server: Peer,
    t0: Instant,
    /// Bytes per simulated socket write (and read).
    chunk: usize,
}

impl Pair {
    fn new() -> Self {
        Self::with(Config::client(), Config::server())
    }

    fn with(client: Config, server: Config) -> Self {
        let t0 = Instant::now();
        Self {
            client: Peer::new(Role::Client, client, MaskSource::seeded(0x5eed), t0),
            server: Peer::new(Role::Server, server, MaskSource::seeded(0xfeed), t0),
            t0,
            chunk: 3,
        }
    }

    /// The virtual instant `ms` milliseconds after the handshake.
    fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    /// Moves everything the client has queued into the server at `now`.
    fn client_writes(&mut self, now: Instant) -> usize {
        shuttle(&mut self.client, &mut self.server, self.chunk, now)
    }

    /// Moves everything the server has queued into the client at `now`.
    fn server_writes(&mut self, now: Instant) -> usize {
        shuttle(&mut self.server, &mut self.client, self.chunk, now)
    }
}

/// Partial writes of `chunk` bytes from `from`, each fed to `to` as one read.
fn shuttle(from: &mut Peer, to: &mut Peer, chunk: usize, now: Instant) -> usize {
    let mut moved = 0;
    while from.wants_write() {
        let out = from.output();
        let n = chunk.min(out.len());
        to.feed(&out[..n], now);
        from.advance_output(n);
        moved += n;
    }
    moved
}

// ---- automatic pongs ----

#[test]
fn received_ping_is_answered_with_a_pong_echoing_its_payload() {
    let mut pair = Pair::new();
    pair.client.sender().ping(b"abc").unwrap();
    pair.client_writes(pair.at(1));
    assert!(!pair.server.wants_write());
    assert_eq!(events(&mut pair.server), [Got::Ping(b"abc".to_vec())]);
    // Queued, not written: it stays in the output until the transport writes it.
    assert!(pair.server.wants_write());
    assert_eq!(events(&mut pair.server), []);
    assert_eq!(pair.server.output(), [0x8a, 0x03, b'a', b'b', b'c']);
    assert_eq!(pair.server.sender().queued(), 5);
    assert_eq!(drain(&mut pair.server, 2), [0x8a, 0x03, b'a', b'b', b'c']);
    assert!(!pair.server.wants_write());
}

#[test]
fn client_auto_pong_is_masked_and_reaches_the_server() {
    let mut pair = Pair::new();
    pair.server.sender().ping(b"hb").unwrap();
    pair.server_writes(pair.at(1));
    assert_eq!(events(&mut pair.client), [Got::Ping(b"hb".to_vec())]);
    let pong = pair.client.output().to_vec();
    assert_eq!(pong.len(), 2 + 4 + 2);
    assert_eq!(pong[..2], [0x8a, 0x82]);
    pair.client_writes(pair.at(2));
    assert_eq!(events(&mut pair.server), [Got::Pong(b"hb".to_vec())]);
}

#[test]
fn pong_goes_ahead_of_data_that_has_not_started() {
    let mut pair = Pair::new();
    pair.server.sender().text("data").unwrap();
    pair.client.sender().ping(b"p").unwrap();
    pair.client_writes(pair.at(1));
    assert_eq!(events(&mut pair.server), [Got::Ping(b"p".to_vec())]);
    assert_eq!(pair.server.output(), [0x8a, 0x01, b'p']);
    assert_eq!(
        drain(&mut pair.server, 1),
        [0x8a, 0x01, b'p', 0x81, 0x04, b'd', b'a', b't', b'a']
    );
}

#[test]
fn pong_never_splits_a_partly_written_data_frame() {
    let mut pair = Pair::new();
    pair.server.sender().text("0123456789").unwrap();
    assert_eq!(pair.server.output().len(), 12);
    pair.server.advance_output(3);
    pair.client.sender().ping(b"p").unwrap();
    pair.client_writes(pair.at(1));
    assert_eq!(events(&mut pair.server), [Got::Ping(b"p".to_vec())]);
    let mut expected = b"123456789".to_vec();
    expected.extend_from_slice(&[0x8a, 0x01, b'p']);
    assert_eq!(drain(&mut pair.server, 1), expected);
}

/// The module contract: pongs go ahead of queued data that has not started going out. Only
/// the frame in progress may delay the pong, not every frame queued behind it (else a
/// sender that keeps its queue non-empty starves pongs and the peer's keepalive fails).
#[test]
fn pong_waits_only_for_the_frame_in_progress() {
    let mut pair = Pair::new();
    pair.server.sender().text("first").unwrap();
    pair.server.sender().text("second").unwrap();
    pair.server.advance_output(3);
    pair.client.sender().ping(b"p").unwrap();
    pair.client_writes(pair.at(1));
    assert_eq!(events(&mut pair.server), [Got::Ping(b"p".to_vec())]);
    let mut expected = b"irst".to_vec();
    expected.extend_from_slice(&[0x8a, 0x01, b'p']);
    expected.extend_from_slice(&[0x81, 0x06]);
    expected.extend_from_slice(b"second");
    assert_eq!(drain(&mut pair.server, 4), expected);
}

#[test]
fn auto_pong_off_queues_nothing() {
    let server = Config {
        auto_pong: false,
        ..Config::server()
    };
    let mut pair = Pair::with(Config::client(), server);
    pair.client.sender().ping(b"abc").unwrap();
    pair.client_writes(pair.at(1));
    assert_eq!(events(&mut pair.server), [Got::Ping(b"abc".to_vec())]);
    assert!(!pair.server.wants_write());
    assert_eq!(pair.server.sender().queued(), 0);
}

#[test]
fn ping_flood_from_a_peer_that_never_reads_stays_bounded() {
    let mut pair = Pair::new();
    let ping = masked(0x89, b"old ping");
    for _ in 0..100 {
        for _ in 0..100 {
            pair.server.feed(&ping, pair.at(1));
        }
        let seen = events(&mut pair.server);
        assert_eq!(seen.len(), 100);
        assert!(seen.iter().all(|g| *g == Got::Ping(b"old ping".to_vec())));
    }
    // Unbounded, 10 000 pongs of 10 bytes would be 100 000 bytes.
    let queued = pair.server.sender().queued();
    assert!(queued > 0);
    assert!(queued < 64 << 10, "{queued} bytes queued");
    assert_eq!(pair.server.output()[..10], *b"\x8a\x08old ping");
}

/// A feed whose exchange counts control frames against its message quota reads this count:
/// every pong the connection queued, every keepalive ping, none for a pong that replaced one
/// still queued.
#[test]
fn control_frames_queued_counts_pongs_and_keepalive_pings() {
    let client = Config {
        ping_interval: Some(Duration::from_secs(5)),
        ..Config::client()
    };
    let mut pair = Pair::with(client, Config::server());
    assert_eq!(pair.server.bufs.control_frames_queued(), 0);
    pair.client.sender().ping(b"a").unwrap();
    assert_eq!(pair.client.bufs.control_frames_queued(), 1);
    pair.client_writes(pair.at(1));
    assert_eq!(events(&mut pair.server), [Got::Ping(b"a".to_vec())]);
    assert_eq!(pair.server.bufs.control_frames_queued(), 1);
    assert_eq!(pair.client.handle_timeout(pair.at(5001)), Ok(()));
    assert_eq!(pair.client.bufs.control_frames_queued(), 2);

    // A flood from a peer that never reads: the pongs past the queue's bound replace each
    // other, and only those that went into the queue count.
    let ping = masked(0x89, b"old ping");
    for _ in 0..10_000 {
        pair.server.feed(&ping, pair.at(2));
    }
    assert_eq!(events(&mut pair.server).len(), 10_000);
    let counted = pair.server.bufs.control_frames_queued();
    let queued = pair.server.sender().queued() as u32;
    assert_eq!(counted, 1 + queued / 10, "{queued} bytes queued");
    assert!(counted < 10_000);
}

/// RFC 6455 §5.5.2 requires a pong for every ping; §5.5.3 only lets an endpoint skip pongs
/// for pings older than the most recent one. After a flood the newest ping must be answered.
#[test]
fn ping_flood_still_answers_the_most_recent_ping() {
    let mut pair = Pair::new();
    let ping = masked(0x89, b"old");
    for _ in 0..10_000 {
        pair.server.feed(&ping, pair.at(1));
    }
    assert_eq!(events(&mut pair.server).len(), 10_000);
    pair.server.feed(&masked(0x89, b"new"), pair.at(2));
    assert_eq!(events(&mut pair.server), [Got::Ping(b"new".to_vec())]);
    let written = drain(&mut pair.server, 1000);
    assert_eq!(written[written.len() - 5..], [0x8a, 0x03, b'n', b'e', b'w']);
}

// ---- close handshake ----

#[test]
fn close_started_by_us_follows_queued_data_and_completes_on_the_reply() {
    let mut pair = Pair::new();
    pair.server.sender().text("last").unwrap();
    pair.server
        .close(CloseCode::NORMAL, "bye", pair.at(1000))
        .unwrap();
    assert_eq!(pair.server.state(), ConnectionState::CloseSent);
    assert!(pair.server.sender().is_closing());
    assert_eq!(
        pair.server.sender().text("more"),
        Err(Error::SendAfterClose)
    );
    assert_eq!(pair.server.sender().ping(b""), Err(Error::SendAfterClose));
    assert_eq!(
        pair.server.close(CloseCode::NORMAL, "", pair.at(1000)),
        Err(Error::SendAfterClose)
    );
    assert!(!pair.server.should_close_transport());

    let wire = drain(&mut pair.server, 5);
    let mut expected = vec![0x81, 0x04];
    expected.extend_from_slice(b"last");
    expected.extend_from_slice(&[0x88, 0x05, 0x03, 0xe8, b'b', b'y', b'e']);
    assert_eq!(wire, expected);

    pair.client.feed(&wire, pair.at(1001));
    assert_eq!(
        events(&mut pair.client),
        [text("last"), closed_with(CloseCode::NORMAL, "bye")]
    );
    assert_eq!(pair.client.state(), ConnectionState::Closed);
    assert!(!pair.client.should_close_transport(), "reply not written");

    pair.client_writes(pair.at(1002));
    assert!(pair.client.should_close_transport());
    assert_eq!(pair.server.state(), ConnectionState::CloseSent);
    assert_eq!(
        events(&mut pair.server),
        [closed_with(CloseCode::NORMAL, "")]
    );
    assert_eq!(pair.server.state(), ConnectionState::Closed);
    assert_eq!(
        events(&mut pair.server),
        [closed_with(CloseCode::NORMAL, "")],
        "the same end again"
    );
    assert!(pair.server.should_close_transport());
    assert_eq!(pair.server.poll_timeout(), None);
}

#[test]
fn messages_in_flight_after_our_close_are_still_delivered() {
    let mut pair = Pair::new();
    pair.server
        .close(CloseCode::NORMAL, "", pair.at(1000))
        .unwrap();
    pair.client.sender().text("in flight").unwrap();
    pair.client_writes(pair.at(1001));
    assert_eq!(events(&mut pair.server), [text("in flight")]);
    assert_eq!(pair.server.state(), ConnectionState::CloseSent);
}

#[test]
fn close_started_by_the_peer_is_delivered_and_its_code_echoed() {
    let mut pair = Pair::new();
    pair.client
        .close(CloseCode::GOING_AWAY, "away", pair.at(1000))
        .unwrap();
    assert_eq!(pair.client.state(), ConnectionState::CloseSent);
    pair.client_writes(pair.at(1001));
    assert_eq!(
        events(&mut pair.server),
        [closed_with(CloseCode::GOING_AWAY, "away")]
    );
    assert_eq!(pair.server.state(), ConnectionState::Closed);
    assert_eq!(
        pair.server.sender().text("late"),
        Err(Error::SendAfterClose)
    );
    assert!(!pair.server.should_close_transport());
    assert_eq!(pair.server.output(), [0x88, 0x02, 0x03, 0xe9]);

    pair.server_writes(pair.at(1002));
    assert!(pair.server.should_close_transport());
    assert_eq!(
        events(&mut pair.client),
        [closed_with(CloseCode::GOING_AWAY, "")]
    );
    assert_eq!(pair.client.state(), ConnectionState::Closed);
    assert!(pair.client.should_close_transport());
}

#[test]
fn close_without_a_body_is_answered_with_an_empty_close() {
    let mut pair = Pair::new();
    pair.server.feed(&masked(0x88, b""), pair.at(1));
    assert_eq!(events(&mut pair.server), [Got::Closed(None)]);
    assert_eq!(pair.server.output(), [0x88, 0x00]);
}

// ---- lent messages: replying while holding one, releasing it ----

#[test]
fn poll_with_sender_echoes_a_borrowed_message_without_copying() {
    let mut pair = Pair::new();
    pair.client.sender().text("echo me").unwrap();
    pair.client_writes(pair.at(1));
    {
        let (event, mut sender) = pair.server.poll_with_sender().unwrap();
        let Event::Message(Message::Text(received)) = event else {
            panic!("expected text, got {event:?}");
        };
        assert_eq!(received, "echo me");
        sender.text(received).unwrap();
    }
    assert_eq!(events(&mut pair.server), []);
    let mut expected = vec![0x81, 0x07];
    expected.extend_from_slice(b"echo me");
    assert_eq!(pair.server.output(), expected);
    pair.server_writes(pair.at(2));
    assert_eq!(events(&mut pair.client), [text("echo me")]);
}

#[test]
fn a_message_that_was_all_the_read_held_is_released_by_the_next_advance() {
    // Request / response: each read brings one whole message, and the `advance` after it
    // finds nothing but that message in the buffer. It must release it (the buffer empty,
    // nothing held), and what comes next must parse whole: every kind of message, a
    // fragmented one, and a read that also brings the start of the next frame.
    let t0 = Instant::now();
    let mut server = Peer::new(Role::Server, Config::server(), MaskSource::seeded(1), t0);
    let next_frame = masked(0x81, b"next");
    let reads: [(Vec<u8>, Got); 5] = [
        (masked(0x81, b"request"), text("request")),
        (masked(0x82, &[1, 2, 3]), Got::Binary(vec![1, 2, 3])),
        (
            masked(0x89, b"are you there"),
            Got::Ping(b"are you there".to_vec()),
        ),
        (
            [masked(0x01, b"frag"), masked(0x80, b"mented")].concat(),
            text("fragmented"),
        ),
        (
            [masked(0x81, b"before"), next_frame[..3].to_vec()].concat(),
            text("before"),
        ),
    ];
    for (i, (bytes, expected)) in reads.into_iter().enumerate() {
        server.feed(&bytes, t0);
        assert_eq!(
            server.conn.advance(&mut server.bufs),
            Ok(Progress::Ready),
            "read {i}"
        );
        assert_eq!(
            Got::of(server.conn.message(&mut server.bufs).unwrap()),
            expected,
            "read {i}"
        );
        assert_eq!(
            server.conn.advance(&mut server.bufs),
            Ok(Progress::NeedMore),
            "read {i}"
        );
        if i < 4 {
            assert!(
                server.bufs.read.is_empty() && server.conn.reader_mut().is_between_messages(),
                "read {i}: the message was released and nothing is held"
            );
        } else {
            assert_eq!(
                server.bufs.read.data(),
                &next_frame[..3],
                "the next frame's start kept"
            );
        }
    }
    server.feed(&next_frame[3..], t0);
    assert_eq!(events(&mut server), [text("next")]);
    assert_eq!(
        drain(&mut server, usize::MAX),
        [&[0x8a, 13][..], b"are you there"].concat(),
        "the ping was answered"
    );
    server.feed(&masked(0x88, &[0x03, 0xe8]), t0);
    assert_eq!(events(&mut server), [closed_with(CloseCode::NORMAL, "")]);
}

// ---- shared frames (fan-out by reference): connection_tests/shared.rs ----
mod shared;

// ---- the receive buffer under a backlog: connection_tests/read_growth.rs ----
mod read_growth;

// ---- a run copied out and written later, the rest put back: connection_tests/put_back.rs ----
mod put_back;

// ---- protocol errors and limits: connection_tests/protocol_errors.rs ----
mod protocol_errors;

// ---- the connection cut into a read and a write half: connection_tests/split.rs ----
mod split;

// ---- the timers (close, keepalive, idle) and what a failure leaves the transport: connection_tests/timers.rs ----
mod timers;
