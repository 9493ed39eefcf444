//! Unit tests of the channel's user-visible behaviour: order, full and empty, disconnection in
//! both directions with and without a blocked peer, timeouts, and drops. They also run under
//! Miri (smaller counts there).

use std::error::Error;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::{channel, channel_with};
use crate::{
    Receiver, RecvError, RecvTimeoutError, SendError, SendTimeoutError, Sender, TryRecvError,
    TrySendError, WaitStrategy,
};

/// Every strategy, with pure parking (no spins, no yields) to exercise the park path hardest.
const STRATEGIES: [WaitStrategy; 4] = [
    WaitStrategy::Park {
        spins: 0,
        yields: 0,
    },
    WaitStrategy::Park {
        spins: 128,
        yields: 16,
    },
    WaitStrategy::Yield,
    WaitStrategy::BusyPoll,
];

/// How long a peer thread waits before acting, so the other end is blocked by then.
const PEER_DELAY: Duration = Duration::from_millis(20);

/// Slack for a timed operation to return after its deadline on a busy 2-core machine.
const TIMEOUT_SLACK: Duration = Duration::from_secs(2);

fn after_delay<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> thread::JoinHandle<R> {
    thread::spawn(move || {
        thread::sleep(PEER_DELAY);
        f()
    })
}

/// A value without `Debug`, to show the errors do not need it.
struct Opaque(u32);

fn assert_send<S: Send>() {}

#[test]
fn ends_are_send_for_send_values() {
    assert_send::<Sender<Vec<u8>>>();
    assert_send::<Receiver<Vec<u8>>>();
}

#[test]
fn values_arrive_in_order() {
    let (mut sender, mut receiver) = channel(4);
    for value in 0..4 {
        sender.send(value).unwrap();
    }
    assert_eq!(sender.len(), 4);
    let received: Vec<_> = (0..4).map(|_| receiver.recv().unwrap()).collect();
    assert_eq!(received, [0, 1, 2, 3]);
    assert!(receiver.is_empty());
}

#[test]
fn capacity_is_rounded_up_and_try_send_reports_full_with_the_value() {
    let (mut sender, mut receiver) = channel(3);
    assert_eq!((sender.capacity(), receiver.capacity()), (4, 4));
    for value in 0..4 {
        sender.try_send(value).unwrap();
    }
    assert!(sender.is_full());
    let error = sender.try_send(4).unwrap_err();
    assert!(error.is_full() && !error.is_disconnected());
    assert_eq!(error.into_inner(), 4);
    assert_eq!(receiver.try_recv(), Ok(0));
    assert_eq!(sender.try_send(4), Ok(()));
}

#[test]
fn try_recv_on_an_empty_channel_is_empty_not_disconnected() {
    let (mut sender, mut receiver) = channel::<u8>(2);
    assert_eq!(receiver.try_recv(), Err(TryRecvError::Empty));
    sender.send(1).unwrap();
    assert_eq!(receiver.try_recv(), Ok(1));
    assert_eq!(receiver.try_recv(), Err(TryRecvError::Empty));
}

#[test]
fn sending_after_the_receiver_is_dropped_gives_the_value_back() {
    let (mut sender, receiver) = channel(2);
    sender.send(String::from("kept")).unwrap();
    drop(receiver);
    assert!(sender.is_disconnected());
    assert_eq!(
        sender.send(String::from("a")),
        Err(SendError(String::from("a")))
    );
    assert_eq!(
        sender.try_send(String::from("b")),
        Err(TrySendError::Disconnected(String::from("b")))
    );
    assert_eq!(
        sender.send_timeout(String::from("c"), Duration::from_secs(60)),
        Err(SendTimeoutError::Disconnected(String::from("c")))
    );
}

#[test]
fn receiver_gets_every_value_sent_before_the_sender_dropped_then_disconnected() {
    let (mut sender, mut receiver) = channel(4);
    sender.send(1).unwrap();
    sender.send(2).unwrap();
    drop(sender);
    assert!(receiver.is_disconnected());
    assert_eq!(receiver.recv(), Ok(1));
    assert_eq!(receiver.try_recv(), Ok(2));
    assert_eq!(receiver.recv(), Err(RecvError));
    assert_eq!(receiver.try_recv(), Err(TryRecvError::Disconnected));
    assert_eq!(
        receiver.recv_timeout(Duration::from_secs(60)),
        Err(RecvTimeoutError::Disconnected)
    );
}

#[test]
fn a_blocked_recv_gets_a_value_sent_later() {
    for strategy in STRATEGIES {
        let (mut sender, mut receiver) = channel_with(2, strategy);
        let peer = after_delay(move || sender.send(42).unwrap());
        assert_eq!(receiver.recv(), Ok(42), "{strategy:?}");
        peer.join().unwrap();
    }
}

#[test]
fn a_blocked_recv_wakes_up_disconnected_when_the_sender_is_dropped() {
    for strategy in STRATEGIES {
        let (sender, mut receiver) = channel_with::<u8>(2, strategy);
        let peer = after_delay(move || drop(sender));
        assert_eq!(receiver.recv(), Err(RecvError), "{strategy:?}");
        peer.join().unwrap();
    }
}

#[test]
fn a_blocked_send_proceeds_when_the_receiver_makes_room() {
    for strategy in STRATEGIES {
        let (mut sender, mut receiver) = channel_with(1, strategy);
        sender.send(1).unwrap();
        let peer = after_delay(move || (receiver.recv(), receiver.recv()));
        assert_eq!(sender.send(2), Ok(()), "{strategy:?}");
        assert_eq!(peer.join().unwrap(), (Ok(1), Ok(2)), "{strategy:?}");
    }
}

#[test]
fn a_blocked_send_gets_its_value_back_when_the_receiver_is_dropped() {
    for strategy in STRATEGIES {
        let (mut sender, receiver) = channel_with(1, strategy);
        sender.send(String::from("queued")).unwrap();
        let peer = after_delay(move || drop(receiver));
        let error = sender.send(String::from("blocked")).unwrap_err();
        assert_eq!(error.into_inner(), "blocked", "{strategy:?}");
        peer.join().unwrap();
    }
}

#[test]
fn recv_timeout_on_an_empty_channel_returns_timeout_within_bounds() {
    let timeout = Duration::from_millis(30);
    for strategy in STRATEGIES {
        let (_sender, mut receiver) = channel_with::<u8>(1, strategy);
        let start = Instant::now();
        assert_eq!(
            receiver.recv_timeout(timeout),
            Err(RecvTimeoutError::Timeout),
            "{strategy:?}"
        );
        let elapsed = start.elapsed();
        assert!(
            elapsed >= timeout,
            "{strategy:?} returned early: {elapsed:?}"
        );
        assert!(
            elapsed < timeout + TIMEOUT_SLACK,
            "{strategy:?} returned late: {elapsed:?}"
        );
    }
}

#[test]
fn send_timeout_on_a_full_channel_returns_timeout_with_the_value_within_bounds() {
    let timeout = Duration::from_millis(30);
    for strategy in STRATEGIES {
        let (mut sender, _receiver) = channel_with(1, strategy);
        sender.send(0).unwrap();
        let start = Instant::now();
        assert_eq!(
            sender.send_timeout(1, timeout),
            Err(SendTimeoutError::Timeout(1)),
            "{strategy:?}"
        );
        let elapsed = start.elapsed();
        assert!(
            elapsed >= timeout,
            "{strategy:?} returned early: {elapsed:?}"
        );
        assert!(
            elapsed < timeout + TIMEOUT_SLACK,
            "{strategy:?} returned late: {elapsed:?}"
        );
    }
}

#[test]
fn timed_operations_succeed_when_the_peer_acts_in_time() {
    let (mut sender, mut receiver) = channel(1);
    let peer = after_delay(move || {
        sender.send(1).unwrap();
        sender.send_timeout(2, Duration::from_secs(60))
    });
    assert_eq!(receiver.recv_timeout(Duration::from_secs(60)), Ok(1));
    assert_eq!(receiver.recv_timeout(Duration::from_secs(60)), Ok(2));
    assert_eq!(peer.join().unwrap(), Ok(()));
}

#[test]
fn a_zero_or_huge_timeout_still_works() {
    let (mut sender, mut receiver) = channel(1);
    assert_eq!(
        receiver.recv_timeout(Duration::ZERO),
        Err(RecvTimeoutError::Timeout)
    );
    assert_eq!(sender.send_timeout(1, Duration::MAX), Ok(()));
    assert_eq!(
        sender.send_timeout(2, Duration::ZERO),
        Err(SendTimeoutError::Timeout(2))
    );
    assert_eq!(receiver.recv_timeout(Duration::MAX), Ok(1));
}

#[test]
fn ping_pong_round_trips_with_every_strategy() {
    let round_trips: u32 = if cfg!(miri) { 20 } else { 10_000 };
    for strategy in STRATEGIES {
        let (mut ping, mut ping_rx) = channel_with(1, strategy);
        let (mut pong, mut pong_rx) = channel_with(1, strategy);
        let echo = thread::spawn(move || {
            while let Ok(value) = ping_rx.recv() {
                pong.send(value + 1).unwrap();
            }
        });
        for value in 0..round_trips {
            ping.send(value).unwrap();
            assert_eq!(pong_rx.recv(), Ok(value + 1), "{strategy:?}");
        }
        drop(ping);
        echo.join().unwrap();
        assert_eq!(pong_rx.recv(), Err(RecvError));
    }
}

#[test]
fn values_left_in_the_channel_are_dropped_once() {
    let drops = Arc::new(AtomicUsize::new(0));
    struct Counted(Arc<AtomicUsize>);
    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
    let (mut sender, mut receiver) = channel(4);
    for _ in 0..3 {
        sender
            .send(Counted(Arc::clone(&drops)))
            .unwrap_or_else(|_| unreachable!());
    }
    drop(receiver.recv());
    drop(receiver);
    assert_eq!(
        drops.load(Ordering::Relaxed),
        1,
        "the sender keeps the queue alive"
    );
    let refused = sender.send(Counted(Arc::clone(&drops))).unwrap_err();
    drop(refused);
    assert_eq!(drops.load(Ordering::Relaxed), 2);
    drop(sender);
    assert_eq!(drops.load(Ordering::Relaxed), 4);
}

#[test]
fn errors_display_and_box_into_dyn_error_without_debug_values() {
    let errors: Vec<Box<dyn Error>> = vec![
        Box::new(SendError(Opaque(1))),
        Box::new(TrySendError::Full(Opaque(2))),
        Box::new(TrySendError::Disconnected(Opaque(3))),
        Box::new(SendTimeoutError::Timeout(Opaque(4))),
        Box::new(SendTimeoutError::Disconnected(Opaque(5))),
        Box::new(RecvError),
        Box::new(TryRecvError::Empty),
        Box::new(TryRecvError::Disconnected),
        Box::new(RecvTimeoutError::Timeout),
        Box::new(RecvTimeoutError::Disconnected),
    ];
    let messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert_eq!(
        messages,
        [
            "sending on a channel whose receiver was dropped",
            "sending on a full channel",
            "sending on a channel whose receiver was dropped",
            "timed out sending on a full channel",
            "sending on a channel whose receiver was dropped",
            "receiving on an empty channel whose sender was dropped",
            "receiving on an empty channel",
            "receiving on an empty channel whose sender was dropped",
            "timed out receiving on an empty channel",
            "receiving on an empty channel whose sender was dropped",
        ]
    );
    assert_eq!(format!("{:?}", TrySendError::Full(Opaque(0))), "Full(..)");
    assert_eq!(SendTimeoutError::Timeout(Opaque(9)).into_inner().0, 9);
    assert_eq!(SendError(Opaque(8)).into_inner().0, 8);
}

#[test]
fn the_default_strategy_parks_after_spinning_and_both_ends_report_theirs() {
    assert_eq!(
        WaitStrategy::default(),
        WaitStrategy::Park {
            spins: 128,
            yields: 16
        }
    );
    let (sender, receiver) = channel::<u8>(1);
    assert_eq!(sender.wait_strategy(), WaitStrategy::default());
    assert!(format!("{sender:?}").starts_with("Sender { len: 0, capacity: 1"));
    assert!(format!("{receiver:?}").contains("disconnected: false"));
    let (_, receiver) = channel_with::<u8>(1, WaitStrategy::BusyPoll);
    assert_eq!(receiver.wait_strategy(), WaitStrategy::BusyPoll);
}
