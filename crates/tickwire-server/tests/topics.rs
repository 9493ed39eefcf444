//! Topics end to end over loopback: order and completeness for subscribers that keep up, each
//! slow-consumer policy for one that does not (while the others keep receiving everything),
//! and subscription changes racing publications.

mod support;

use std::collections::{HashMap, HashSet};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use support::{raw_upgrade, read_frame};
use tickwire_blocking::{ClientBuilder, MaybeTlsStream, Message, Recv, WebSocket};

type Ws = WebSocket<MaybeTlsStream>;
use tickwire_server::{
    CloseCode, Conn, ConnId, Decision, Disconnect, Gap, Handler, Request, ServerBuilder,
    ServerHandle, SharedFrame, SlowConsumer, Topic, TopicStats,
};

/// What the handler reports to the test.
#[derive(Debug)]
enum Event {
    Gap(#[allow(dead_code)] ConnId, Gap),
    Closed(#[allow(dead_code)] ConnId, Disconnect),
}

/// Subscribes each connection to the topic its path names (`/0`, `/1`, ...) when it opens;
/// answers `ready` with `ready` (sent after the subscription is in place), `unsub` and `sub`
/// change the subscription; a binary message is relayed on the topic to the other
/// subscribers.
struct Subscriber {
    handle: ServerHandle,
    topics: Vec<Topic>,
    events: mpsc::Sender<Event>,
}

impl Handler for Subscriber {
    type State = usize;

    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<usize> {
        match request.path()[1..].parse::<usize>() {
            Ok(topic) if topic < self.topics.len() => Decision::accept(request, topic),
            _ => Decision::reject(404),
        }
    }

    fn on_open(&mut self, conn: &mut Conn<'_, usize>) {
        let topic = self.topics[*conn.state()].clone();
        conn.subscribe(&topic);
    }

    fn on_message(&mut self, conn: &mut Conn<'_, usize>, message: Message<'_>) {
        let topic = self.topics[*conn.state()].clone();
        match message {
            Message::Text("ready") => conn.send_text("ready").unwrap(),
            Message::Text("unsub") => conn.unsubscribe(&topic),
            Message::Text("sub") => conn.subscribe(&topic),
            Message::Binary(data) => {
                let frame = SharedFrame::binary(data);
                self.handle
                    .publish_from(conn.id(), &topic, 0, |_| frame)
                    .unwrap();
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn on_gap(&mut self, conn: &mut Conn<'_, usize>, _topic: &Topic, gap: Gap) {
        let _ = self.events.send(Event::Gap(conn.id(), gap));
    }

    fn on_close(&mut self, id: ConnId, _state: usize, disconnect: Disconnect) {
        let _ = self.events.send(Event::Closed(id, disconnect));
    }
}

struct Fixture {
    addr: SocketAddr,
    handle: ServerHandle,
    topics: Vec<Topic>,
    events: std::sync::Mutex<mpsc::Receiver<Event>>,
    running: Option<tickwire_server::Running>,
}

impl Fixture {
    fn start(builder: ServerBuilder, policies: &[SlowConsumer]) -> Self {
        let server = builder.bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr();
        let (tx, events) = mpsc::channel();
        let tx = std::sync::Mutex::new(tx);
        let (topics_tx, topics_rx) = mpsc::channel();
        let policies = policies.to_vec();
        let running = server
            .start(move |context| {
                let topics: Vec<Topic> = policies
                    .iter()
                    .enumerate()
                    .map(|(i, &policy)| context.handle.topic(&format!("t{i}"), policy).unwrap())
                    .collect();
                let _ = topics_tx.send(topics.clone());
                Subscriber {
                    handle: context.handle.clone(),
                    topics,
                    events: tx.lock().unwrap().clone(),
                }
            })
            .unwrap();
        let topics = topics_rx.recv().unwrap();
        Self {
            addr,
            handle: running.handle().clone(),
            topics,
            events: std::sync::Mutex::new(events),
            running: Some(running),
        }
    }

    /// A subscriber of topic `index` whose subscription is in place.
    fn subscriber(&self, index: usize) -> Ws {
        let mut ws = ClientBuilder::new()
            .read_timeout(Some(Duration::from_secs(10)))
            .connect(&format!("ws://{}/{index}", self.addr))
            .unwrap();
        ws.send_text_now("ready").unwrap();
        // Topic messages may come first: the subscription starts when the connection opens.
        loop {
            match ws.recv().unwrap() {
                Recv::Message(Message::Text("ready")) => return ws,
                Recv::Message(Message::Binary(_)) => {}
                other => panic!("expected the answer to ready, got {other:?}"),
            }
        }
    }

    /// A raw subscriber of topic `index` that reads nothing until told to.
    fn silent_subscriber(&self, index: usize) -> TcpStream {
        let mut stream = raw_upgrade(self.addr, &format!("/{index}"));
        std::io::Write::write_all(&mut stream, &support::client_frame(1, b"ready")).unwrap();
        // Topic messages may come first, as for `subscriber`.
        loop {
            match read_frame(&mut stream) {
                (0x81, text) if text == b"ready" => return stream,
                (0x82, _) => {}
                other => panic!("expected the answer to ready, got {other:?}"),
            }
        }
    }

    /// Publishes message `seq` of `size` bytes with `key`: the payload starts with the
    /// sequence number and the key, so a reader can check both.
    fn publish(&self, topic: usize, key: u64, size: usize) -> u64 {
        self.handle
            .publish(&self.topics[topic], key, |seq| {
                SharedFrame::binary(&payload(seq, key, size))
            })
            .unwrap()
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown(Duration::from_secs(2)).unwrap();
        }
    }
}

fn payload(seq: u64, key: u64, size: usize) -> Vec<u8> {
    let mut bytes = vec![0xab; size.max(16)];
    bytes[..8].copy_from_slice(&seq.to_be_bytes());
    bytes[8..16].copy_from_slice(&key.to_be_bytes());
    bytes
}

fn seq_and_key(bytes: &[u8]) -> (u64, u64) {
    (
        u64::from_be_bytes(bytes[..8].try_into().unwrap()),
        u64::from_be_bytes(bytes[8..16].try_into().unwrap()),
    )
}

/// Reads `count` messages and returns their (seq, key) in arrival order.
fn read_messages(ws: &mut Ws, count: usize) -> Vec<(u64, u64)> {
    let mut got = Vec::with_capacity(count);
    while got.len() < count {
        match ws.recv().unwrap() {
            Recv::Message(Message::Binary(bytes)) => got.push(seq_and_key(bytes)),
            Recv::Message(Message::Ping(_)) => {}
            other => panic!("expected topic messages, got {other:?}"),
        }
    }
    got
}

const POLICIES: [SlowConsumer; 3] = [
    SlowConsumer::Close(CloseCode::TRY_AGAIN_LATER),
    SlowConsumer::DropOldest,
    SlowConsumer::Conflate,
];

#[test]
fn subscribers_that_keep_up_get_every_message_in_order_under_every_policy() {
    // Keeping up: never more queued than the budget (here far more than the whole stream,
    // which is published without waiting for the readers).
    let fixture = Fixture::start(
        ServerBuilder::new().workers(2).send_budget(16 << 20),
        &POLICIES,
    );
    let mut readers: Vec<(usize, Ws)> = (0..POLICIES.len())
        .flat_map(|topic| (0..3).map(move |_| topic))
        .map(|topic| (topic, fixture.subscriber(topic)))
        .collect();
    const COUNT: u64 = 2_000;
    // Two publishers per topic would interleave; one per topic, all topics at once.
    thread::scope(|scope| {
        for topic in 0..POLICIES.len() {
            let fixture = &fixture;
            scope.spawn(move || {
                for i in 0..COUNT {
                    assert_eq!(fixture.publish(topic, i % 7, 100), i + 1);
                }
            });
        }
        for (topic, ws) in &mut readers {
            let got = read_messages(ws, COUNT as usize);
            let expected: Vec<(u64, u64)> = (0..COUNT).map(|i| (i + 1, i % 7)).collect();
            assert_eq!(got, expected, "topic {topic}: every message, in order");
        }
    });
    for (topic, policy) in POLICIES.iter().enumerate() {
        let stats = fixture.topics[topic].stats();
        assert_eq!(stats.published, COUNT, "{policy:?}");
        assert_eq!(stats.dropped, 0, "{policy:?}");
    }
    assert!(
        fixture.events.lock().unwrap().try_recv().is_err(),
        "no gap, no close when everyone keeps up"
    );
}

#[test]
fn subscribers_whose_sockets_take_part_of_a_round_get_the_rest_in_order() {
    // Socket buffers of a few KiB: rounds of 1 KB messages often go only partly into a
    // socket, so the rest is queued and written later (the batched send's short-write path
    // and the per-subscriber path both). The budget holds the whole stream: nothing drops.
    let fixture = Fixture::start(
        ServerBuilder::new()
            .workers(1)
            .send_budget(16 << 20)
            .socket_send_buffer(Some(4096)),
        &[SlowConsumer::DropOldest],
    );
    let mut readers: Vec<Ws> = (0..20).map(|_| fixture.subscriber(0)).collect();
    const COUNT: u64 = 3_000;
    thread::scope(|scope| {
        let fixture = &fixture;
        scope.spawn(move || {
            // Bursts of 10 with pauses: rounds of a few messages, as a feed makes them.
            for i in 0..COUNT {
                assert_eq!(fixture.publish(0, i % 5, 1_000), i + 1);
                if i % 10 == 9 {
                    thread::sleep(Duration::from_micros(200));
                }
            }
        });
        for (index, ws) in readers.iter_mut().enumerate() {
            scope.spawn(move || {
                for i in 0..COUNT {
                    // Readers of different speeds: some pause now and then.
                    if index % 2 == 1 && i % 200 == 0 {
                        thread::sleep(Duration::from_millis(2));
                    }
                    match ws.recv().unwrap() {
                        Recv::Message(Message::Binary(bytes)) => {
                            assert_eq!(seq_and_key(bytes), (i + 1, i % 5), "reader {index}");
                            assert_eq!(bytes, payload(i + 1, i % 5, 1_000).as_slice());
                        }
                        other => panic!("reader {index}: expected topic messages, got {other:?}"),
                    }
                }
            });
        }
    });
    let stats = settled(&fixture.topics[0], |stats| stats.queued == COUNT * 20);
    assert_eq!(stats.dropped, 0);
    assert_eq!(stats.queued, COUNT * 20);
}

/// Publishes `count` messages of 4 KiB (keys cycling through `keys`), never more than 8
/// ahead of `fast`, which reads them all and must get every one in order. Far more than the
/// budget and the socket buffers of a silent subscriber.
fn flood(fixture: &Fixture, topic: usize, fast: &mut Ws, count: u64, keys: u64) {
    let read = AtomicU64::new(0);
    thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..count {
                while i >= read.load(Ordering::Acquire) + 8 {
                    thread::yield_now();
                }
                fixture.publish(topic, i % keys, 4096);
            }
        });
        for i in 0..count {
            let got = read_messages(fast, 1)[0];
            assert_eq!(got, (i + 1, i % keys), "the subscriber that keeps up");
            read.store(i + 1, Ordering::Release);
        }
    });
}

/// Reads a silent subscriber's messages until the one with `last` (the newest published).
fn drain_until(stream: &mut TcpStream, last: u64) -> Vec<(u64, u64)> {
    let mut got = Vec::new();
    loop {
        let (first, payload) = read_frame(stream);
        assert_eq!(first, 0x82, "only topic messages");
        let message = seq_and_key(&payload);
        got.push(message);
        if message.0 == last {
            return got;
        }
    }
}

/// The topic's counters once `done` holds for them (or 5 s pass). A worker adds a round's
/// counts after the round, and it writes each subscriber's messages during the round, so a
/// reader can see its last message a moment before the counters include it.
fn settled(topic: &Topic, done: impl Fn(&TopicStats) -> bool) -> TopicStats {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let stats = topic.stats();
        if done(&stats) || Instant::now() >= deadline {
            return stats;
        }
        thread::sleep(Duration::from_millis(1));
    }
}

/// Sums the gaps reported until `dropped` are accounted for (or 5 s pass).
fn gaps(events: &mpsc::Receiver<Event>, dropped: u64) -> (u64, Vec<Gap>) {
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut total = 0;
    let mut gaps = Vec::new();
    while total < dropped {
        let left = deadline.saturating_duration_since(Instant::now());
        match events.recv_timeout(left) {
            Ok(Event::Gap(_, gap)) => {
                total += gap.dropped;
                gaps.push(gap);
            }
            Ok(other) => panic!("unexpected {other:?}"),
            Err(_) => break,
        }
    }
    (total, gaps)
}

#[test]
fn drop_oldest_keeps_the_newest_and_reports_every_dropped_message() {
    let fixture = Fixture::start(
        ServerBuilder::new().workers(1).send_budget(64 << 10),
        &[SlowConsumer::DropOldest],
    );
    let mut fast = fixture.subscriber(0);
    let mut slow = fixture.silent_subscriber(0);
    const COUNT: u64 = 4_000;
    flood(&fixture, 0, &mut fast, COUNT, 1);
    let got = drain_until(&mut slow, COUNT);
    assert!(
        got.windows(2).all(|w| w[0].0 < w[1].0),
        "what arrives is in order"
    );
    let dropped = COUNT - got.len() as u64;
    assert!(dropped > 0, "the silent subscriber fell behind");
    let stats = settled(&fixture.topics[0], |s| {
        s.dropped >= dropped && s.queued >= 2 * COUNT
    });
    assert_eq!(
        stats.dropped, dropped,
        "every message is received or counted"
    );
    // Every message was queued on both subscribers before the silent one's were dropped to
    // make room for newer ones.
    assert_eq!(stats.queued, 2 * COUNT);
    // The handler is told about exactly the missing sequence numbers.
    let (reported, gaps) = gaps(&fixture.events.lock().unwrap(), dropped);
    assert_eq!(reported, dropped);
    let received: HashSet<u64> = got.iter().map(|m| m.0).collect();
    for seq in (1..=COUNT).filter(|seq| !received.contains(seq)) {
        assert!(
            gaps.iter()
                .any(|g| (g.first_seq..=g.last_seq).contains(&seq)),
            "{seq} missing and in no reported gap"
        );
    }
}

#[test]
fn conflate_keeps_the_newest_message_of_every_key() {
    let fixture = Fixture::start(
        ServerBuilder::new().workers(1).send_budget(64 << 10),
        &[SlowConsumer::Conflate],
    );
    let mut fast = fixture.subscriber(0);
    let mut slow = fixture.silent_subscriber(0);
    const COUNT: u64 = 4_000;
    const KEYS: u64 = 10;
    flood(&fixture, 0, &mut fast, COUNT, KEYS);
    let got = drain_until(&mut slow, COUNT);
    assert!(got.windows(2).all(|w| w[0].0 < w[1].0), "in order");
    // The newest message of every key arrived: the last seq seen per key is the last
    // published for it.
    let mut last: HashMap<u64, u64> = HashMap::new();
    for &(seq, key) in &got {
        last.insert(key, seq);
    }
    for key in 0..KEYS {
        let newest = (1..=COUNT)
            .rev()
            .find(|seq| (seq - 1) % KEYS == key)
            .unwrap();
        assert_eq!(last.get(&key), Some(&newest), "key {key}");
    }
    let dropped = COUNT - got.len() as u64;
    assert!(dropped > 0, "the silent subscriber fell behind");
    let stats = settled(&fixture.topics[0], |s| s.dropped >= dropped);
    assert_eq!(
        stats.dropped, dropped,
        "every message is received or counted"
    );
    assert_eq!(gaps(&fixture.events.lock().unwrap(), dropped).0, dropped);
}

#[test]
fn close_policy_closes_the_slow_subscriber_only() {
    let fixture = Fixture::start(
        ServerBuilder::new()
            .workers(1)
            .send_budget(64 << 10)
            .close_timeout(Duration::from_millis(300)),
        &[SlowConsumer::Close(CloseCode::POLICY_VIOLATION)],
    );
    let mut fast = fixture.subscriber(0);
    let _slow = fixture.silent_subscriber(0);
    flood(&fixture, 0, &mut fast, 4_000, 1);
    match fixture
        .events
        .lock()
        .unwrap()
        .recv_timeout(Duration::from_secs(5))
    {
        Ok(Event::Closed(_, disconnect)) => {
            assert_eq!(disconnect.code, Some(CloseCode::POLICY_VIOLATION));
        }
        other => panic!("expected the slow subscriber's close, got {other:?}"),
    }
    let stats = fixture.topics[0].stats();
    assert_eq!(stats.closed, 1);
    assert!(stats.dropped > 0);
    // The subscriber that kept up is still subscribed.
    fixture.publish(0, 0, 100);
    assert_eq!(read_messages(&mut fast, 1), vec![(4_001, 0)]);
}

#[test]
fn subscribing_unsubscribing_and_closing_during_publishing_are_safe() {
    // A budget no subscriber reaches here: nothing is dropped, so the steady subscriber
    // must get every message.
    let fixture = Fixture::start(
        ServerBuilder::new().workers(2).send_budget(64 << 20),
        &[SlowConsumer::DropOldest],
    );
    let mut steady = fixture.subscriber(0);
    const COUNT: u64 = 20_000;
    let published = AtomicBool::new(false);
    thread::scope(|scope| {
        scope.spawn(|| {
            for i in 0..COUNT {
                fixture.publish(0, 0, 64);
                if i % 1_000 == 0 {
                    thread::yield_now();
                }
            }
            published.store(true, Ordering::Release);
        });
        // Churn: subscribers that come, toggle their subscription and go (some without a
        // close handshake), while messages are published.
        let churn = scope.spawn(|| {
            let mut rounds = 0;
            while !published.load(Ordering::Acquire) || rounds < 20 {
                let mut ws = fixture.subscriber(0);
                ws.send_text_now("unsub").unwrap();
                ws.send_text_now("sub").unwrap();
                if rounds % 2 == 0 {
                    let _ = ws.close(CloseCode::NORMAL, "");
                }
                drop(ws);
                let raw = fixture.silent_subscriber(0);
                drop(raw);
                rounds += 1;
            }
            rounds
        });
        let got = read_messages(&mut steady, COUNT as usize);
        assert!(
            got.iter().enumerate().all(|(i, m)| m.0 == i as u64 + 1),
            "the steady subscriber gets every message in order"
        );
        assert!(churn.join().unwrap() >= 20);
    });
    // The server still serves.
    let mut late = fixture.subscriber(0);
    fixture.publish(0, 0, 16);
    assert_eq!(read_messages(&mut late, 1)[0].0, COUNT + 1);
}

#[test]
fn a_relayed_message_reaches_every_subscriber_but_its_sender() {
    let fixture = Fixture::start(ServerBuilder::new().workers(2), &[SlowConsumer::DropOldest]);
    let mut clients: Vec<Ws> = (0..4).map(|_| fixture.subscriber(0)).collect();
    clients[0].send_binary_now(&payload(0, 1, 32)).unwrap();
    for ws in &mut clients[1..] {
        assert_eq!(read_messages(ws, 1), vec![(0, 1)]);
    }
    // The sender's next message is the next publication, not its own relay.
    fixture.publish(0, 2, 16);
    for ws in &mut clients {
        assert_eq!(read_messages(ws, 1), vec![(2, 2)]);
    }
}

#[cfg(feature = "deflate")]
#[test]
fn deflate_subscribers_get_the_message_compressed_and_plain_ones_get_it_plain() {
    use tickwire_server::DeflateConfig;
    let fixture = Fixture::start(
        ServerBuilder::new()
            .workers(2)
            .deflate(DeflateConfig::default()),
        &[SlowConsumer::DropOldest],
    );
    let mut plain = fixture.subscriber(0);
    let mut deflating: Vec<Ws> = [true, false]
        .into_iter()
        .map(|no_takeover| {
            let mut config = DeflateConfig::default();
            config.server_no_context_takeover = no_takeover;
            let mut ws = ClientBuilder::new()
                .deflate(config)
                .read_timeout(Some(Duration::from_secs(10)))
                .connect(&format!("ws://{}/0", fixture.addr))
                .unwrap();
            assert!(ws.deflate().is_some(), "permessage-deflate negotiated");
            ws.send_text_now("ready").unwrap();
            assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text("ready")));
            ws
        })
        .collect();
    // A raw subscriber that offers permessage-deflate sees the frames as sent.
    let mut raw = TcpStream::connect(fixture.addr).unwrap();
    raw.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    std::io::Write::write_all(
        &mut raw,
        b"GET /0 HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
          Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
          Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
    )
    .unwrap();
    let head = support::read_head(&mut raw);
    assert!(head.contains("permessage-deflate"), "{head}");
    std::io::Write::write_all(&mut raw, &support::client_frame(1, b"ready")).unwrap();
    assert_eq!(read_frame(&mut raw), (0x81, b"ready".to_vec()));
    // Compressible: every byte after the sequence number and key is the same.
    for _ in 0..50 {
        fixture.publish(0, 3, 2_000);
    }
    let expected: Vec<(u64, u64)> = (1..=50).map(|seq| (seq, 3)).collect();
    assert_eq!(read_messages(&mut plain, 50), expected);
    for ws in &mut deflating {
        assert_eq!(read_messages(ws, 50), expected);
    }
    for _ in 0..50 {
        let (first, compressed) = read_frame(&mut raw);
        assert_eq!(first, 0xc2, "final binary frame with RSV1: compressed");
        assert!(
            compressed.len() < 100,
            "2,000 bytes compressed to {}",
            compressed.len()
        );
    }
}
