//! Topics fed from outside the server (a bus such as NATS): sequence numbers given by the
//! feed, gaps the feed reports in order with the messages, a client resuming from the last
//! number it has, and the interest listener a bus bridge subscribes by.

use std::net::SocketAddr;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use tickwire_blocking::{ClientBuilder, MaybeTlsStream, Message, Recv, WebSocket};
use tickwire_server::{
    Conn, ConnId, Decision, Gap, HandleError, Handler, Replay, Request, ServerBuilder,
    ServerHandle, SharedFrame, SlowConsumer, Topic,
};

type Ws = WebSocket<MaybeTlsStream>;

/// `/live` subscribes on open; `/resume` hands its id to the test, which resumes it. A gap
/// becomes a text message `gap FIRST LAST DROPPED`, in line with the topic's messages.
struct Feed {
    topic: Topic,
    handle: ServerHandle,
    opened: mpsc::Sender<ConnId>,
}

impl Handler for Feed {
    /// Subscribed on open (`/live`).
    type State = bool;

    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<bool> {
        match request.path() {
            "/live" => Decision::accept(request, true),
            "/resume" => Decision::accept(request, false),
            _ => Decision::reject(404),
        }
    }

    fn on_open(&mut self, conn: &mut Conn<'_, bool>) {
        if *conn.state() {
            conn.subscribe(&self.topic);
        }
        let _ = self.opened.send(conn.id());
    }

    /// `burst N`: publishes N messages of 200 bytes at once (from the worker's thread, so
    /// they all reach the next round together).
    fn on_message(&mut self, _conn: &mut Conn<'_, bool>, message: Message<'_>) {
        if let Message::Text(text) = message {
            let count: u64 = text.strip_prefix("burst ").unwrap().parse().unwrap();
            for _ in 0..count {
                self.handle
                    .publish(&self.topic, 0, |seq| {
                        let mut bytes = [0u8; 200];
                        bytes[..8].copy_from_slice(&seq.to_be_bytes());
                        SharedFrame::binary(&bytes)
                    })
                    .unwrap();
            }
        }
    }

    fn on_gap(&mut self, conn: &mut Conn<'_, bool>, _topic: &Topic, gap: Gap) {
        let notice = format!("gap {} {} {}", gap.first_seq, gap.last_seq, gap.dropped);
        conn.send_text(&notice).unwrap();
    }
}

struct Fixture {
    addr: SocketAddr,
    handle: ServerHandle,
    topic: Topic,
    opened: mpsc::Receiver<ConnId>,
    running: Option<tickwire_server::Running>,
}

impl Fixture {
    fn start(workers: usize) -> Self {
        // Replays count against the send budget: room for the longest one here.
        Self::with_budget(workers, 8 << 20)
    }

    fn with_budget(workers: usize, budget: usize) -> Self {
        let server = ServerBuilder::new()
            .workers(workers)
            .send_budget(budget)
            .bind("127.0.0.1:0")
            .unwrap();
        let addr = server.local_addr();
        let (opened_tx, opened) = mpsc::channel();
        let opened_tx = std::sync::Mutex::new(opened_tx);
        let running = server
            .start(move |context| Feed {
                topic: context
                    .handle
                    .topic("feed", SlowConsumer::DropOldest)
                    .unwrap(),
                handle: context.handle.clone(),
                opened: opened_tx.lock().unwrap().clone(),
            })
            .unwrap();
        let handle = running.handle().clone();
        let topic = handle.topic("feed", SlowConsumer::DropOldest).unwrap();
        Self {
            addr,
            handle,
            topic,
            opened,
            running: Some(running),
        }
    }

    /// A client on `path` and its connection's id, once the server has opened it.
    fn client(&self, path: &str) -> (Ws, ConnId) {
        let ws = ClientBuilder::new()
            .read_timeout(Some(Duration::from_secs(10)))
            .connect(&format!("ws://{}{path}", self.addr))
            .unwrap();
        let id = self.opened.recv_timeout(Duration::from_secs(10)).unwrap();
        (ws, id)
    }

    /// Waits until the topic has `count` subscribers (subscriptions are applied by the
    /// workers after the connection opens).
    fn subscribed(&self, count: u64) {
        for _ in 0..1000 {
            if self.topic.subscribers() == count {
                return;
            }
            thread::sleep(Duration::from_millis(5));
        }
        panic!("{} subscribers, expected {count}", self.topic.subscribers());
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.shutdown(Duration::from_secs(2)).unwrap();
        }
    }
}

fn frame(seq: u64) -> SharedFrame {
    SharedFrame::binary(&seq.to_be_bytes())
}

/// What a client receives: a message's number, or a gap notice.
#[derive(Debug, PartialEq, Eq)]
enum Got {
    Seq(u64),
    Gap(u64, u64, u64),
}

fn next(ws: &mut Ws) -> Got {
    loop {
        match ws.recv().unwrap() {
            Recv::Message(Message::Binary(bytes)) => {
                return Got::Seq(u64::from_be_bytes(bytes[..8].try_into().unwrap()));
            }
            Recv::Message(Message::Text(text)) => {
                let n: Vec<u64> = text[4..].split(' ').map(|n| n.parse().unwrap()).collect();
                return Got::Gap(n[0], n[1], n[2]);
            }
            Recv::Message(Message::Ping(_)) => {}
            other => panic!("expected a topic message, got {other:?}"),
        }
    }
}

#[test]
fn numbers_given_by_the_feed_reach_subscribers_and_a_stale_one_is_refused() {
    let fixture = Fixture::start(2);
    let (mut ws, _) = fixture.client("/live");
    fixture.subscribed(1);
    let handle = &fixture.handle;
    for seq in [5, 9, 10] {
        handle.publish_at(&fixture.topic, seq, 0, frame).unwrap();
    }
    assert_eq!(
        handle.publish_at(&fixture.topic, 10, 0, frame),
        Err(HandleError::StaleSequence(10))
    );
    assert_eq!(
        handle.publish_at(&fixture.topic, 7, 0, frame),
        Err(HandleError::StaleSequence(10))
    );
    // The server's own numbering goes on after the feed's.
    assert_eq!(handle.publish(&fixture.topic, 0, frame).unwrap(), 11);
    let got: Vec<Got> = (0..4).map(|_| next(&mut ws)).collect();
    assert_eq!(got, [5, 9, 10, 11].map(Got::Seq));
    assert_eq!(fixture.topic.last_seq(), 11);
}

#[test]
fn a_gap_the_feed_reports_reaches_every_subscriber_between_the_messages_around_it() {
    let fixture = Fixture::start(2);
    let (mut first, _) = fixture.client("/live");
    let (mut second, _) = fixture.client("/live");
    fixture.subscribed(2);
    let handle = &fixture.handle;
    // Many rounds' worth, so that the notice shares a round with messages on both sides.
    for seq in 1..=200 {
        handle.publish_at(&fixture.topic, seq, 0, frame).unwrap();
    }
    handle
        .report_gap(&fixture.topic, Gap::range(201, 250).unwrap())
        .unwrap();
    for seq in 251..=400 {
        handle.publish_at(&fixture.topic, seq, 0, frame).unwrap();
    }
    let mut expected: Vec<Got> = (1..=200).map(Got::Seq).collect();
    expected.push(Got::Gap(201, 250, 50));
    expected.extend((251..=400).map(Got::Seq));
    for ws in [&mut first, &mut second] {
        let got: Vec<Got> = (0..expected.len()).map(|_| next(ws)).collect();
        assert_eq!(got, expected);
    }
    // Numbering goes on past the gap.
    assert_eq!(fixture.topic.last_seq(), 400);
}

/// The feed's thread: publishes 1..=`last` and resumes each id it is handed between two of
/// its messages, replaying from what it keeps (numbers above `kept_from`).
fn feed_with_resumes(
    handle: &ServerHandle,
    topic: &Topic,
    last: u64,
    kept_from: u64,
    resumes: mpsc::Receiver<(ConnId, u64)>,
) {
    for seq in 1..=last {
        handle.publish_at(topic, seq, 0, frame).unwrap();
        while let Ok((id, after)) = resumes.try_recv() {
            let first_kept = (after + 1).max(kept_from);
            let missed = Gap::range(after + 1, first_kept - 1).map(Replay::Missed);
            let replay = (first_kept..=seq).map(|seq| Replay::Message {
                seq,
                key: 0,
                frame: frame(seq),
            });
            handle
                .resume(id, topic, after, missed.into_iter().chain(replay))
                .unwrap();
        }
        if seq % 64 == 0 {
            thread::sleep(Duration::from_micros(200));
        }
    }
}

#[test]
fn a_resumed_client_gets_what_it_missed_then_the_live_messages_without_a_repeat_or_a_hole() {
    let fixture = Fixture::start(2);
    let (mut live, _) = fixture.client("/live");
    fixture.subscribed(1);
    let last = 20_000;
    let (resume_tx, resumes) = mpsc::channel();
    let (handle, topic) = (fixture.handle.clone(), fixture.topic.clone());
    thread::scope(|scope| {
        let feed = scope.spawn(|| feed_with_resumes(&handle, &topic, last, 1, resumes));
        // Two clients resume mid-stream: one had up to 100, one had nothing.
        let mut resumed = Vec::new();
        for after in [100, 0] {
            while fixture.topic.last_seq() < 2_000 + after * 40 {
                thread::sleep(Duration::from_millis(1));
            }
            let (ws, id) = fixture.client("/resume");
            resume_tx.send((id, after)).unwrap();
            resumed.push((ws, after));
        }
        for (ws, after) in &mut resumed {
            for seq in *after + 1..=last {
                assert_eq!(next(ws), Got::Seq(seq), "resumed after {after}");
            }
        }
        // Resumed clients are subscribers like the others.
        fixture.subscribed(3);
        for seq in 1..=last {
            assert_eq!(next(&mut live), Got::Seq(seq));
        }
        feed.join().unwrap();
    });
}

#[test]
fn a_resume_from_before_what_can_be_replayed_reports_the_missing_range_first() {
    let fixture = Fixture::start(1);
    let last = 5_000;
    let (resume_tx, resumes) = mpsc::channel();
    let (handle, topic) = (fixture.handle.clone(), fixture.topic.clone());
    thread::scope(|scope| {
        // The feed keeps only numbers from 1,001 on.
        let feed = scope.spawn(|| feed_with_resumes(&handle, &topic, last, 1_001, resumes));
        while fixture.topic.last_seq() < 2_000 {
            thread::sleep(Duration::from_millis(1));
        }
        let (mut ws, id) = fixture.client("/resume");
        resume_tx.send((id, 10)).unwrap();
        assert_eq!(next(&mut ws), Got::Gap(11, 1_000, 990));
        for seq in 1_001..=last {
            assert_eq!(next(&mut ws), Got::Seq(seq));
        }
        feed.join().unwrap();
    });
}

#[test]
fn the_interest_listener_hears_the_first_subscriber_come_and_the_last_one_go() {
    let fixture = Fixture::start(2);
    let (tx, heard) = mpsc::channel();
    fixture.handle.watch_interest(move |topic: &Topic| {
        let _ = tx.send((topic.name().to_owned(), topic.subscribers()));
    });
    let wait = Duration::from_secs(10);
    let (first, _) = fixture.client("/live");
    assert_eq!(heard.recv_timeout(wait).unwrap(), ("feed".to_owned(), 1));
    // A second subscriber (on whichever worker) changes the count, not the interest.
    let (second, _) = fixture.client("/live");
    fixture.subscribed(2);
    drop(first);
    fixture.subscribed(1);
    assert!(heard.try_recv().is_err(), "only 0 <-> 1 is reported");
    drop(second);
    assert_eq!(heard.recv_timeout(wait).unwrap(), ("feed".to_owned(), 0));
    assert_eq!(fixture.topic.subscribers(), 0);
    assert_eq!(fixture.handle.topics(), vec![fixture.topic.clone()]);
}

#[test]
fn a_burst_bigger_than_the_send_budget_reaches_a_subscriber_that_reads() {
    // 16 KiB of budget, a burst of 1,000 x 200 B in one round: written in pieces, each
    // before the next is queued, so a subscriber whose socket takes them loses none.
    let fixture = Fixture::with_budget(1, 16 << 10);
    let (mut ws, _) = fixture.client("/live");
    fixture.subscribed(1);
    ws.send_text_now("burst 1000").unwrap();
    for seq in 1..=1_000 {
        assert_eq!(next(&mut ws), Got::Seq(seq));
    }
    let stats = fixture.topic.stats();
    assert_eq!((stats.published, stats.dropped), (1_000, 0), "{stats:?}");
}
