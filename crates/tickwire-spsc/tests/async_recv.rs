//! `Receiver::recv_async` driven by a minimal executor: ready at once, woken by a send or by the
//! sender's drop, self-waking under the strategies that never park, and cancellation that loses
//! nothing. Runs under Miri too.

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::Duration;

use tickwire_spsc::{RecvError, WaitStrategy, channel, channel_with};

/// Unparks the polling thread and counts how often it was woken.
struct CountingWaker {
    thread: Thread,
    wakes: AtomicUsize,
}

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.wakes.fetch_add(1, Ordering::SeqCst);
        self.thread.unpark();
    }
}

fn counting_waker() -> (Arc<CountingWaker>, Waker) {
    let counter = Arc::new(CountingWaker {
        thread: thread::current(),
        wakes: AtomicUsize::new(0),
    });
    (Arc::clone(&counter), Waker::from(counter))
}

/// Polls `future` on this thread, parking between polls, and returns its output and the number
/// of polls it took.
fn block_on<F: Future>(future: F) -> (F::Output, usize) {
    let (_, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    let mut polls = 0;
    loop {
        polls += 1;
        match future.as_mut().poll(&mut cx) {
            Poll::Ready(output) => return (output, polls),
            Poll::Pending => thread::park(),
        }
    }
}

#[test]
fn a_value_already_sent_is_ready_on_the_first_poll() {
    let (mut sender, mut receiver) = channel(2);
    sender.send(5).unwrap();
    assert_eq!(block_on(receiver.recv_async()), (Ok(5), 1));
}

#[test]
fn a_pending_receive_is_woken_by_a_later_send() {
    let (mut sender, mut receiver) = channel(2);
    let (counter, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(receiver.recv_async());
    assert_eq!(future.as_mut().poll(&mut cx), Poll::Pending);
    assert_eq!(counter.wakes.load(Ordering::SeqCst), 0, "nobody sent yet");
    sender.send(9).unwrap();
    assert!(
        counter.wakes.load(Ordering::SeqCst) >= 1,
        "the send woke the task"
    );
    assert_eq!(future.as_mut().poll(&mut cx), Poll::Ready(Ok(9)));
}

#[test]
fn a_pending_receive_is_woken_by_the_sender_drop_and_reports_disconnection() {
    let (sender, mut receiver) = channel::<u8>(2);
    let (counter, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(receiver.recv_async());
    assert_eq!(future.as_mut().poll(&mut cx), Poll::Pending);
    drop(sender);
    assert!(counter.wakes.load(Ordering::SeqCst) >= 1);
    assert_eq!(future.as_mut().poll(&mut cx), Poll::Ready(Err(RecvError)));
}

#[test]
fn values_from_another_thread_arrive_in_order() {
    let count: u32 = if cfg!(miri) { 50 } else { 20_000 };
    let (mut sender, mut receiver) = channel(4);
    let writer = thread::spawn(move || {
        for value in 0..count {
            if value % 64 == 0 {
                thread::sleep(Duration::from_micros(50));
            }
            sender.send(value).unwrap();
        }
    });
    for expected in 0..count {
        assert_eq!(block_on(receiver.recv_async()).0, Ok(expected));
    }
    assert_eq!(block_on(receiver.recv_async()).0, Err(RecvError));
    writer.join().unwrap();
}

#[test]
fn under_strategies_that_never_park_a_pending_receive_wakes_itself() {
    for strategy in [WaitStrategy::BusyPoll, WaitStrategy::Yield] {
        let (_sender, mut receiver) = channel_with::<u8>(2, strategy);
        let (counter, waker) = counting_waker();
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(receiver.recv_async());
        assert_eq!(future.as_mut().poll(&mut cx), Poll::Pending);
        assert_eq!(counter.wakes.load(Ordering::SeqCst), 1, "{strategy:?}");
    }
}

#[test]
fn dropping_a_pending_receive_loses_nothing_and_stops_the_wake_ups() {
    let (mut sender, mut receiver) = channel(2);
    let (counter, waker) = counting_waker();
    {
        let mut cx = Context::from_waker(&waker);
        let mut future = pin!(receiver.recv_async());
        assert_eq!(future.as_mut().poll(&mut cx), Poll::Pending);
    }
    sender.send(3).unwrap();
    assert_eq!(
        counter.wakes.load(Ordering::SeqCst),
        0,
        "the future is gone"
    );
    assert_eq!(receiver.try_recv(), Ok(3));
}
