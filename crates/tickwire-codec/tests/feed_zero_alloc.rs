//! Proves that a feed session allocates nothing per message once warmed up (rule 6 of
//! docs/ARCHITECTURE.md): two redundant connections carry 200 000 sequenced numbers on 16
//! keys, the second one number behind the first, the first missing every seventh number
//! (what comes after is held, then released when the second fills the hole), both missing
//! every 101st (a gap), the second's copies dropped as duplicates, timers run in between,
//! under a counting global allocator, for this test binary only.

use std::time::{Duration, Instant};

use tickwire_codec::feed::{
    Action, ConnId, Disposition, Event, FeedConfig, FeedSession, RecvStamp,
};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

const KEYS: usize = 16;

/// `KEY:NUMBER` with a fixed-width number, written into `out`.
fn write_message(out: &mut [u8; 24], key: usize, seq: u64) -> usize {
    out[0] = b'a' + key as u8;
    out[1] = b':';
    let digits = seq.to_string();
    out[2..2 + digits.len()].copy_from_slice(digits.as_bytes());
    2 + digits.len()
}

fn sequence(msg: &[u8]) -> Option<(&[u8], u64)> {
    let (key, digits) = msg.split_at(1);
    let mut seq = 0u64;
    for &byte in digits.get(1..)? {
        seq = seq * 10 + u64::from(byte.checked_sub(b'0')?);
    }
    Some((key, seq))
}

/// Sends numbers `from..to` of every key, both connections, returns (delivered, gaps).
fn run(
    session: &mut FeedSession,
    now: &mut Instant,
    from: u64,
    to: u64,
    payloads: &[Vec<u8>],
) -> (u64, u64) {
    let (mut delivered, mut gaps, mut held) = (0, 0, 0);
    let stamp = RecvStamp::default();
    for step in from..=to {
        for key in 0..KEYS {
            // The second connection runs one number behind the first.
            for (conn, seq) in [(0u8, step), (1, step - 1)] {
                let missed = seq % 101 == 0 || (conn == 0 && seq % 7 == 0);
                if missed || seq < from || seq >= to {
                    continue;
                }
                let payload = &payloads[seq as usize * KEYS + key][..];
                let disposition = session
                    .on_message(ConnId(conn), payload, stamp, *now)
                    .expect("drained");
                assert_ne!(disposition, Disposition::Ignored);
                held += u64::from(disposition == Disposition::Held);
                while let Some(event) = session.poll_event(payload) {
                    match event {
                        Event::Message(_) => delivered += 1,
                        Event::Gap { .. } => gaps += 1,
                        other => panic!("unexpected {other:?}"),
                    }
                }
            }
        }
        if step % 64 == 0 {
            *now += Duration::from_millis(1);
            session.handle_timeout(*now);
            assert_eq!(session.poll_action(*now), None);
        }
    }
    assert!(held > (to - from) / 10, "the hold was used: {held}");
    (delivered, gaps)
}

fn main() {
    const TOTAL: u64 = 200_000 / KEYS as u64;
    let mut now = Instant::now();
    let config = FeedConfig::new("wss://feed")
        .with_connections(2)
        .with_sequence(sequence)
        .with_stale_after(Some(Duration::from_secs(60)));
    let mut session = FeedSession::new(config, 3, now).expect("config");
    while let Some(action) = session.poll_action(now) {
        if let Action::Connect { conn, .. } = action {
            session.on_open(conn, now);
        }
    }
    while session.poll_event(&[]).is_some() {}
    // Every message written once, up front: the loop below only reads them.
    let payloads: Vec<Vec<u8>> = (0..TOTAL + 1)
        .flat_map(|seq| {
            (0..KEYS).map(move |key| {
                let mut out = [0u8; 24];
                let n = write_message(&mut out, key, seq);
                out[..n].to_vec()
            })
        })
        .collect();

    // Warm-up: every key interned, the queue and the hold at their working sizes.
    run(&mut session, &mut now, 1, 1_000, &payloads);

    let region = ALLOC.heap_region();
    let (delivered, gaps) = run(&mut session, &mut now, 1_000, TOTAL, &payloads);
    let stats = region.change();

    let numbers = (TOTAL - 1_000) * KEYS as u64;
    let common_misses = (1_000..TOTAL).filter(|s| s % 101 == 0).count() as u64 * KEYS as u64;
    assert_eq!(
        delivered + common_misses,
        numbers,
        "every number once, or missed by both"
    );
    assert_eq!(gaps, common_misses, "each common miss one gap");
    assert_eq!(
        (stats.allocations, stats.reallocations),
        (0, 0),
        "{numbers} messages allocated: {stats:?}"
    );
    println!(
        "feed session: {numbers} numbers on 2 connections, {delivered} delivered, {gaps} gaps, \
         0 allocations"
    );
}
