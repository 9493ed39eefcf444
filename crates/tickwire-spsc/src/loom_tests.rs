//! Loom models of the queue and the channel: every interleaving (up to the preemption bound in
//! `LOOM_MAX_PREEMPTIONS`) and every value a weak load may return, of push, pop, disconnect,
//! park and unpark. A lost wake-up shows up as loom's "deadlock" panic, a double drop as a
//! wrong count or a concurrent access loom reports on a slot, an unsynchronised slot read as a
//! causality violation.
//!
//! Run with `RUSTFLAGS="--cfg loom" cargo test -p tickwire-spsc --release --lib loom` (see
//! `.ci/spsc.sh`). The models use `Park { spins: 0, yields: 0 }`, so every wait parks at once.

use std::sync::atomic::{AtomicUsize, Ordering};

use loom::sync::Arc;
use loom::sync::atomic::AtomicBool;
use loom::thread;

use crate::{RecvError, SendError, WaitStrategy, channel_with, queue};

const PARK_AT_ONCE: WaitStrategy = WaitStrategy::Park {
    spins: 0,
    yields: 0,
};

/// Runs `f` on a new model thread and returns a flag that turns `true` after `f` (and the drops
/// of everything it captured) is done; [`wait_until_done`] waits for it.
///
/// The channel models use this instead of `JoinHandle::join`: the protocol may unpark a thread
/// that is no longer parked (std keeps that as a token for a later `park`, which is harmless),
/// and loom 0.7 mishandles an unpark that reaches a thread blocked in `join` (loom issue #249).
/// A thread waiting by yielding takes a stray unpark as the spurious wake-up it is.
fn spawn_done<F: FnOnce() + 'static>(f: F) -> Arc<AtomicBool> {
    let done = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&done);
    thread::spawn(move || {
        f();
        flag.store(true, loom::sync::atomic::Ordering::Release);
    });
    done
}

fn wait_until_done(done: &AtomicBool) {
    while !done.load(loom::sync::atomic::Ordering::Acquire) {
        thread::yield_now();
    }
}

/// Counts its drops. The counter is a `std` atomic: the checks read it once the other thread is
/// done, and keeping it out of the model keeps the state space small.
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Pushes `value`, yielding to the consumer while the queue is full.
fn push_until_accepted<T>(producer: &mut crate::Producer<T>, value: T) {
    let mut pending = value;
    while let Err(back) = producer.push(pending) {
        pending = back;
        thread::yield_now();
    }
}

#[test]
fn loom_queue_delivers_in_order_across_wrap_around() {
    loom::model(|| {
        let (mut producer, mut consumer) = queue::<u32>(2);
        let writer = thread::spawn(move || {
            for value in 0..3 {
                push_until_accepted(&mut producer, value);
            }
        });
        for expected in 0..3 {
            loop {
                match consumer.pop() {
                    Some(value) => {
                        assert_eq!(value, expected);
                        break;
                    }
                    None => thread::yield_now(),
                }
            }
        }
        writer.join().unwrap();
    });
}

#[test]
fn loom_queue_batches_deliver_in_order() {
    loom::model(|| {
        let (mut producer, mut consumer) = queue::<u32>(2);
        let writer = thread::spawn(move || {
            let values = [1, 2, 3];
            let mut sent = 0;
            while sent < values.len() {
                sent += producer.push_slice(&values[sent..]);
                thread::yield_now();
            }
        });
        let mut received = Vec::new();
        while received.len() < 3 {
            let mut out = [0; 2];
            let count = consumer.pop_into(&mut out);
            received.extend_from_slice(&out[..count]);
            thread::yield_now();
        }
        assert_eq!(received, [1, 2, 3]);
        writer.join().unwrap();
    });
}

/// Single pops and batches share the consumer's cached copy of `tail`; mixed, in every
/// interleaving with the pushes, each value still comes out once and in order.
#[test]
fn loom_queue_single_pops_and_batches_mixed_deliver_each_value_once() {
    loom::model(|| {
        let (mut producer, mut consumer) = queue::<u32>(2);
        let writer = thread::spawn(move || {
            for value in 1..=3 {
                push_until_accepted(&mut producer, value);
            }
        });
        let mut received = Vec::new();
        while received.len() < 3 {
            if let Some(value) = consumer.pop() {
                received.push(value);
            }
            let mut out = [0; 2];
            let count = consumer.pop_into(&mut out);
            received.extend_from_slice(&out[..count]);
            thread::yield_now();
        }
        assert_eq!(received, [1, 2, 3]);
        writer.join().unwrap();
    });
}

#[test]
fn loom_queue_drops_every_value_exactly_once_whichever_end_goes_last() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut producer, mut consumer) = queue(2);
        let writer = {
            let drops = Arc::clone(&drops);
            thread::spawn(move || {
                for _ in 0..2 {
                    assert!(producer.push(Counted(Arc::clone(&drops))).is_ok());
                }
            })
        };
        // Zero or one value popped, depending on the interleaving; dropped here.
        drop(consumer.pop());
        drop(consumer);
        writer.join().unwrap();
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn loom_channel_no_lost_wake_up_in_either_direction() {
    // Capacity 1 and two values: the receiver may park on an empty channel, and the sender on a
    // full one.
    loom::model(|| {
        let (mut sender, mut receiver) = channel_with::<u32>(1, PARK_AT_ONCE);
        let writer = spawn_done(move || {
            sender.send(1).unwrap();
            sender.send(2).unwrap();
        });
        assert_eq!(receiver.recv(), Ok(1));
        assert_eq!(receiver.recv(), Ok(2));
        wait_until_done(&writer);
    });
}

#[test]
fn loom_channel_three_values_through_two_slots_then_disconnect() {
    // Wraps around, fills, empties and disconnects in one run: every wait may park.
    loom::model(|| {
        let (mut sender, mut receiver) = channel_with::<u32>(2, PARK_AT_ONCE);
        let writer = spawn_done(move || {
            for value in 0..3 {
                sender.send(value).unwrap();
            }
        });
        for expected in 0..3 {
            assert_eq!(receiver.recv(), Ok(expected));
        }
        assert_eq!(receiver.recv(), Err(RecvError));
        wait_until_done(&writer);
    });
}

#[test]
fn loom_channel_sender_drop_wakes_the_receiver() {
    loom::model(|| {
        let (mut sender, mut receiver) = channel_with::<u32>(1, PARK_AT_ONCE);
        let writer = spawn_done(move || {
            sender.send(1).unwrap();
            drop(sender);
        });
        assert_eq!(receiver.recv(), Ok(1));
        assert_eq!(receiver.recv(), Err(RecvError));
        wait_until_done(&writer);
    });
}

#[test]
fn loom_channel_receiver_drop_wakes_the_sender_and_gives_the_value_back() {
    loom::model(|| {
        let drops = Arc::new(AtomicUsize::new(0));
        let (mut sender, receiver) = channel_with(1, PARK_AT_ONCE);
        assert!(sender.send(Counted(Arc::clone(&drops))).is_ok());
        let reader = spawn_done(move || drop(receiver));
        // The channel is full: this blocks until the receiver is gone, then fails.
        match sender.send(Counted(Arc::clone(&drops))) {
            Err(SendError(value)) => drop(value),
            Ok(()) => panic!("sent into a full channel"),
        }
        drop(sender);
        wait_until_done(&reader);
        assert_eq!(drops.load(Ordering::Relaxed), 2);
    });
}

#[test]
fn loom_async_receive_is_woken_by_send_and_by_sender_drop() {
    loom::model(|| {
        let (mut sender, mut receiver) = channel_with::<u32>(1, PARK_AT_ONCE);
        let writer = spawn_done(move || {
            sender.send(1).unwrap();
            drop(sender);
        });
        assert_eq!(loom::future::block_on(receiver.recv_async()), Ok(1));
        assert_eq!(
            loom::future::block_on(receiver.recv_async()),
            Err(RecvError)
        );
        wait_until_done(&writer);
    });
}

/// The fences are what prevents the lost wake-up: with them switched off, loom finds an
/// execution in which the receiver parks on a channel that has a value (or the sender parks on
/// one that has room) and nobody unparks it. This is the model's own check that it can fail.
#[test]
#[should_panic(expected = "deadlock")]
fn loom_lost_wake_up_without_fence() {
    struct FencesBackOn;
    impl Drop for FencesBackOn {
        fn drop(&mut self) {
            crate::sync::set_fences_off(false);
        }
    }
    crate::sync::set_fences_off(true);
    let _fences_back_on = FencesBackOn;
    loom::model(|| {
        let (mut sender, mut receiver) = channel_with::<u32>(1, PARK_AT_ONCE);
        let (handed_back, sender_slot) = std::sync::mpsc::channel();
        let writer = spawn_done(move || {
            sender.send(1).unwrap();
            // Handed over, so its drop (which wakes the receiver too) comes only after `recv`.
            handed_back.send(sender).unwrap();
        });
        assert_eq!(receiver.recv(), Ok(1));
        wait_until_done(&writer);
        drop(sender_slot.recv().unwrap());
    });
}
