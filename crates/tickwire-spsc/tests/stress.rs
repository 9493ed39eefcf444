//! Stress tests: a long stream of `u64`s between two threads, with random stalls on both sides
//! so the queue runs full, empty and everything between, and (through the channel) both ends
//! park and get woken. Every value must arrive once, in order.
//!
//! One more test parks on every wait, to race the wake-up handshake itself.
//!
//! The count is 2 million by default (so `cargo test --workspace` stays quick), 100 million
//! with `TICKWIRE_SPSC_STRESS=full` (what `.ci/spsc.sh --full` runs, in release), and a thousand
//! under Miri.

use std::thread;
use std::time::{Duration, Instant};

use tickwire_spsc::{
    Consumer, Producer, RecvError, RecvTimeoutError, WaitStrategy, channel, channel_with, queue,
};

fn message_count() -> u64 {
    scaled(1_000, 2_000_000, 100_000_000)
}

/// `miri` under Miri, `full` with `TICKWIRE_SPSC_STRESS=full`, else `default`.
fn scaled(miri: u64, default: u64, full: u64) -> u64 {
    if cfg!(miri) {
        return miri;
    }
    match std::env::var("TICKWIRE_SPSC_STRESS").as_deref() {
        Ok("full") => full,
        _ => default,
    }
}

/// Marsaglia's xorshift64: cheap enough to call once per message.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Once in 1024 calls, stalls: mostly a short spin, sometimes a yield, rarely a short sleep.
    fn maybe_stall(&mut self) {
        let bits = self.next();
        if bits & 0x3ff != 0 {
            return;
        }
        match (bits >> 10) & 0xff {
            0 => thread::sleep(Duration::from_micros((bits >> 20) & 0x3f)),
            1..=15 => thread::yield_now(),
            _ => {
                for _ in 0..(bits >> 20) & 0x3f {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

#[test]
fn channel_delivers_every_value_once_in_order_under_random_stalls() {
    let count = message_count();
    let start = Instant::now();
    let (mut sender, mut receiver) = channel::<u64>(256);
    let writer = thread::spawn(move || {
        let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
        for value in 0..count {
            rng.maybe_stall();
            sender
                .send(value)
                .expect("the receiver outlives the stream");
        }
    });
    let mut rng = XorShift(0xd1b5_4a32_d192_ed03);
    for expected in 0..count {
        rng.maybe_stall();
        assert_eq!(receiver.recv(), Ok(expected));
    }
    assert_eq!(
        receiver.recv(),
        Err(RecvError),
        "nothing after the last value"
    );
    writer.join().unwrap();
    eprintln!("channel: {count} values in {:?}", start.elapsed());
}

/// Round trips for the park-every-time test: each costs two park / unpark pairs (system calls),
/// so twenty thousand by default and 300 thousand with `TICKWIRE_SPSC_STRESS=full`.
fn round_trip_count() -> u64 {
    scaled(50, 20_000, 300_000)
}

/// Under `Park { spins: 0, yields: 0 }` every wait goes straight to the handshake (announce,
/// heavy fence, re-check, park), so each round trip runs it on real cores with the fences the
/// platform uses. A lost wake-up would leave one end parked with a value waiting; the receives
/// are bounded so that shows up as a failure naming the round trip instead of a hung test.
/// This exercises the handshake, it does not prove it: the race window is nanoseconds wide, and
/// with the `membarrier` call removed the test still passed 300 000 round trips (see
/// `src/barrier.rs` for the argument and the loom models for the protocol).
#[test]
fn ping_pong_that_parks_on_every_wait_never_loses_a_wake_up() {
    let count = round_trip_count();
    let start = Instant::now();
    let strategy = WaitStrategy::Park {
        spins: 0,
        yields: 0,
    };
    let (mut ping, mut ping_rx) = channel_with::<u64>(1, strategy);
    let (mut pong, mut pong_rx) = channel_with::<u64>(1, strategy);
    let stall = Duration::from_secs(10);
    let echo = thread::spawn(move || {
        loop {
            match ping_rx.recv_timeout(stall) {
                Ok(value) => pong.send(value + 1).expect("the pinger is alive"),
                Err(RecvTimeoutError::Disconnected) => return,
                Err(error) => panic!("echo: {error} after {stall:?} (a lost wake-up)"),
            }
        }
    });
    for value in 0..count {
        ping.send(value).expect("the echo is alive");
        match pong_rx.recv_timeout(stall) {
            Ok(back) => assert_eq!(back, value + 1),
            Err(error) => panic!("round trip {value}: {error} after {stall:?} (a lost wake-up)"),
        }
    }
    drop(ping);
    echo.join().unwrap();
    eprintln!(
        "parking ping-pong: {count} round trips in {:?}",
        start.elapsed()
    );
}

/// Pushes `0..count`, alternating single pushes and `push_slice` batches of random length.
fn produce(mut producer: Producer<u64>, count: u64) {
    let mut rng = XorShift(0x2545_f491_4f6c_dd1d);
    let mut batch = [0_u64; 64];
    let mut next = 0;
    while next < count {
        rng.maybe_stall();
        let bits = rng.next();
        if bits & 1 == 0 {
            if producer.push(next).is_ok() {
                next += 1;
            } else {
                thread::yield_now();
            }
            continue;
        }
        let length = (((bits >> 1) % 64) + 1).min(count - next) as usize;
        for (slot, value) in batch[..length].iter_mut().zip(next..) {
            *slot = value;
        }
        match producer.push_slice(&batch[..length]) {
            0 => thread::yield_now(),
            pushed => next += pushed as u64,
        }
    }
}

#[test]
fn queue_delivers_every_value_once_in_order_with_batches_under_random_stalls() {
    let count = message_count();
    let start = Instant::now();
    let (producer, mut consumer): (_, Consumer<u64>) = queue(1024);
    let writer = thread::spawn(move || produce(producer, count));
    let mut rng = XorShift(0x853c_49e6_748f_ea9b);
    let mut batch = [0_u64; 64];
    let mut expected = 0;
    while expected < count {
        rng.maybe_stall();
        let bits = rng.next();
        if bits & 1 == 0 {
            match consumer.pop() {
                Some(value) => {
                    assert_eq!(value, expected);
                    expected += 1;
                }
                None => thread::yield_now(),
            }
            continue;
        }
        let length = ((bits >> 1) % 64) as usize + 1;
        let popped = consumer.pop_into(&mut batch[..length]);
        if popped == 0 {
            thread::yield_now();
        }
        for &value in &batch[..popped] {
            assert_eq!(value, expected);
            expected += 1;
        }
    }
    writer.join().unwrap();
    assert!(consumer.is_abandoned());
    assert_eq!(consumer.pop(), None, "nothing after the last value");
    eprintln!("queue: {count} values in {:?}", start.elapsed());
}
