//! Unit tests of the ring buffer's user-visible behaviour; they also run under Miri, which
//! checks every slot access for undefined behaviour and the drop tests for leaks.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;

use super::{Consumer, Producer, queue};

/// Counts its drops in a shared counter.
#[derive(Debug)]
struct Counted(u32, Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::Relaxed);
    }
}

/// Panics when dropped if its flag says so, after counting the drop.
struct PanicsOnDrop(bool, Arc<AtomicUsize>);

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        self.1.fetch_add(1, Ordering::Relaxed);
        if self.0 {
            panic!("PanicsOnDrop");
        }
    }
}

/// Puts both ends at `position` (a fresh queue starts at 0), to test counter wrap-around.
fn start_at<T>(producer: &mut Producer<T>, consumer: &mut Consumer<T>, position: usize) {
    producer.tail = position;
    producer.cached_head = position;
    consumer.head = position;
    consumer.cached_tail = position;
    producer.shared.tail.store(position, Ordering::Relaxed);
    producer.shared.head.store(position, Ordering::Relaxed);
}

#[test]
fn capacity_is_rounded_up_to_a_power_of_two() {
    for (requested, expected) in [(1, 1), (2, 2), (3, 4), (5, 8), (1000, 1024), (1024, 1024)] {
        let (producer, consumer) = queue::<u64>(requested);
        assert_eq!(producer.capacity(), expected, "requested {requested}");
        assert_eq!(consumer.capacity(), expected, "requested {requested}");
    }
}

#[test]
#[should_panic(expected = "capacity of at least 1")]
fn zero_capacity_panics() {
    let _ = queue::<u8>(0);
}

#[test]
#[should_panic(expected = "overflows usize")]
fn capacity_that_cannot_round_up_panics() {
    let _ = queue::<u8>(usize::MAX);
}

#[test]
fn values_come_out_in_push_order_across_wrap_around() {
    let (mut producer, mut consumer) = queue(4);
    let mut next_out = 0;
    for next_in in 0..50 {
        producer.push(next_in).unwrap();
        if next_in % 3 == 2 {
            while let Some(value) = consumer.pop() {
                assert_eq!(value, next_out);
                next_out += 1;
            }
        }
    }
    while let Some(value) = consumer.pop() {
        assert_eq!(value, next_out);
        next_out += 1;
    }
    assert_eq!(next_out, 50);
}

#[test]
fn push_on_a_full_queue_gives_the_value_back() {
    let (mut producer, mut consumer) = queue(3);
    for value in 0..4 {
        producer.push(value).unwrap();
    }
    assert!(producer.is_full());
    assert_eq!(producer.free_slots(), 0);
    assert_eq!(producer.push(99), Err(99));
    assert_eq!(consumer.pop(), Some(0));
    assert_eq!(producer.free_slots(), 1);
    assert_eq!(producer.push(4), Ok(()));
    assert_eq!(producer.push(5), Err(5));
    let drained: Vec<_> = std::iter::from_fn(|| consumer.pop()).collect();
    assert_eq!(drained, [1, 2, 3, 4]);
}

#[test]
fn pop_on_an_empty_queue_returns_none_until_a_push() {
    let (mut producer, mut consumer) = queue::<u8>(2);
    assert_eq!(consumer.pop(), None);
    assert!(consumer.is_empty() && producer.is_empty());
    producer.push(1).unwrap();
    assert_eq!(consumer.pop(), Some(1));
    assert_eq!(consumer.pop(), None);
}

#[test]
fn both_ends_report_the_same_length() {
    let (mut producer, mut consumer) = queue(8);
    for expected in 1..=5 {
        producer.push(expected).unwrap();
        assert_eq!((producer.len(), consumer.len()), (expected, expected));
    }
    consumer.pop();
    assert_eq!((producer.len(), consumer.len()), (4, 4));
    assert!(!producer.is_empty() && !consumer.is_empty() && !producer.is_full());
}

#[test]
fn push_slice_pushes_what_fits_and_pop_into_takes_what_is_there() {
    let (mut producer, mut consumer) = queue::<u32>(8);
    let input: Vec<u32> = (0..10).collect();
    assert_eq!(producer.push_slice(&input), 8);
    assert_eq!(producer.push_slice(&input[8..]), 0);

    let mut out = [0; 3];
    assert_eq!(consumer.pop_into(&mut out), 3);
    assert_eq!(out, [0, 1, 2]);

    // Wraps around the end of the slots.
    assert_eq!(producer.push_slice(&input[8..]), 2);
    let mut out = [0; 16];
    assert_eq!(consumer.pop_into(&mut out), 7);
    assert_eq!(out[..7], [3, 4, 5, 6, 7, 8, 9]);
    assert_eq!(consumer.pop_into(&mut out), 0);
    assert_eq!(producer.push_slice(&[]), 0);
}

#[test]
fn positions_wrap_around_usize_max() {
    let (mut producer, mut consumer) = queue(4);
    start_at(&mut producer, &mut consumer, usize::MAX - 5);
    let mut next_out = 0;
    for next_in in 0..20 {
        if producer.push(next_in).is_err() {
            assert_eq!(producer.len(), 4);
            assert_eq!(consumer.pop(), Some(next_out));
            next_out += 1;
            producer.push(next_in).unwrap();
        }
    }
    assert_eq!(producer.push_slice(&[100]), 0);
    let mut out = [0; 4];
    assert_eq!(consumer.pop_into(&mut out), 4);
    assert_eq!(out, [16, 17, 18, 19]);
    assert_eq!(next_out, 16);
}

#[test]
fn each_end_sees_when_the_other_is_dropped() {
    let (mut producer, consumer) = queue::<u8>(2);
    assert!(!producer.is_abandoned());
    drop(consumer);
    assert!(producer.is_abandoned());
    // Pushing still works; the value is dropped with the queue.
    assert_eq!(producer.push(1), Ok(()));

    let (mut producer, mut consumer) = queue::<u8>(2);
    producer.push(7).unwrap();
    assert!(!consumer.is_abandoned());
    drop(producer);
    assert!(consumer.is_abandoned());
    assert_eq!(
        consumer.pop(),
        Some(7),
        "values pushed before the drop are still there"
    );
    assert_eq!(consumer.pop(), None);
}

#[test]
fn values_left_in_the_queue_are_dropped_once_when_both_ends_are_gone() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (mut producer, mut consumer) = queue(4);
    for id in 0..6 {
        // Wraps around, so the remaining values straddle the end of the slots.
        if producer.push(Counted(id, Arc::clone(&drops))).is_err() {
            drop(consumer.pop());
            drop(consumer.pop());
            producer.push(Counted(id, Arc::clone(&drops))).unwrap();
        }
    }
    assert_eq!(
        drops.load(Ordering::Relaxed),
        3,
        "two popped, one pushed back"
    );
    drop(producer);
    assert_eq!(
        drops.load(Ordering::Relaxed),
        3,
        "the consumer can still pop them"
    );
    assert_eq!(consumer.pop().map(|counted| counted.0), Some(2));
    drop(consumer);
    assert_eq!(
        drops.load(Ordering::Relaxed),
        7,
        "6 values, 1 of them refused once"
    );
}

#[test]
fn a_panicking_drop_does_not_stop_the_other_values_from_being_dropped() {
    let drops = Arc::new(AtomicUsize::new(0));
    let (mut producer, consumer) = queue(4);
    for panics in [false, true, false, false] {
        producer
            .push(PanicsOnDrop(panics, Arc::clone(&drops)))
            .unwrap_or_else(|_| unreachable!());
    }
    drop(producer);
    let result = catch_unwind(AssertUnwindSafe(move || drop(consumer)));
    assert!(result.is_err(), "the value's panic reaches the caller");
    assert_eq!(drops.load(Ordering::Relaxed), 4);
}

#[test]
fn zero_sized_values_are_counted_like_any_other() {
    let (mut producer, mut consumer) = queue::<()>(3);
    for _ in 0..4 {
        producer.push(()).unwrap();
    }
    assert_eq!(producer.push(()), Err(()));
    assert_eq!(consumer.len(), 4);
    assert_eq!(consumer.pop(), Some(()));
    assert_eq!(producer.free_slots(), 1);
}

#[test]
fn zero_sized_values_with_drop_are_dropped_once() {
    static DROPS: AtomicUsize = AtomicUsize::new(0);
    struct Marker;
    impl Drop for Marker {
        fn drop(&mut self) {
            DROPS.fetch_add(1, Ordering::Relaxed);
        }
    }
    let (mut producer, mut consumer) = queue(2);
    producer.push(Marker).unwrap_or_else(|_| unreachable!());
    producer.push(Marker).unwrap_or_else(|_| unreachable!());
    assert!(producer.push(Marker).is_err());
    assert_eq!(DROPS.load(Ordering::Relaxed), 1, "the refused one");
    drop(consumer.pop());
    assert_eq!(DROPS.load(Ordering::Relaxed), 2);
    drop((producer, consumer));
    assert_eq!(DROPS.load(Ordering::Relaxed), 3);
}

#[test]
fn values_cross_threads_in_order() {
    let count: u64 = if cfg!(miri) { 200 } else { 100_000 };
    let (mut producer, mut consumer) = queue(16);
    let writer = thread::spawn(move || {
        for value in 0..count {
            let mut pending = value;
            while let Err(back) = producer.push(pending) {
                pending = back;
                thread::yield_now();
            }
        }
    });
    let mut expected = 0;
    while expected < count {
        match consumer.pop() {
            Some(value) => {
                assert_eq!(value, expected);
                expected += 1;
            }
            None => thread::yield_now(),
        }
    }
    writer.join().unwrap();
    assert_eq!(consumer.pop(), None);
}

#[test]
fn debug_shows_the_state() {
    let (mut producer, consumer) = queue(2);
    producer.push(1).unwrap();
    assert_eq!(
        format!("{producer:?}"),
        "Producer { len: 1, capacity: 2, abandoned: false }"
    );
    drop(producer);
    assert_eq!(
        format!("{consumer:?}"),
        "Consumer { len: 1, capacity: 2, abandoned: true }"
    );
}

#[test]
fn single_pops_and_batches_mixed_take_each_value_once_in_order() {
    // Single pops move `head` past what a batch last cached; the batch after them must neither
    // re-read a popped slot nor run past the last value.
    let (mut producer, mut consumer) = queue::<u32>(8);
    let mut next_in = 0;
    let mut next_out = 0;
    let mut out = [0_u32; 8];
    for round in 0..40 {
        let pushes = 1 + round % 8;
        for _ in 0..pushes {
            if producer.push(next_in).is_ok() {
                next_in += 1;
            }
        }
        for _ in 0..round % 3 {
            if let Some(value) = consumer.pop() {
                assert_eq!(value, next_out);
                next_out += 1;
            }
        }
        assert_eq!(
            consumer.len(),
            (next_in - next_out) as usize,
            "round {round}"
        );
        let popped = consumer.pop_into(&mut out[..1 + round % 8]);
        for &value in &out[..popped] {
            assert_eq!(value, next_out, "round {round}");
            next_out += 1;
        }
        assert_eq!(
            consumer.len(),
            (next_in - next_out) as usize,
            "round {round}"
        );
    }
    while let Some(value) = consumer.pop() {
        assert_eq!(value, next_out);
        next_out += 1;
    }
    assert_eq!(next_out, next_in);
    assert!(next_in > 100, "the ring wrapped several times");
}
