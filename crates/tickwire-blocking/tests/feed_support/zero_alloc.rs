//! The feed drivers' zero-allocation case, included by the zero-allocation test binaries
//! next to `feed_support` (whose server it uses).

use std::time::Duration;

use super::feed_support::{Driver, Seen, config, hold, send, serve};
use tickwire_blocking::feed::Timestamps;

/// Rule 6 (docs/ARCHITECTURE.md) for a feed: after warm-up, receiving data messages on two
/// redundant connections (each number twice: merged, the copy dropped) allocates nothing on
/// the feed's thread, with `timestamps`.
pub(crate) fn steady_state_allocates_nothing<D: Driver>(
    alloc: &tickwire_test_support::alloc::CountingAlloc,
    timestamps: Timestamps,
) {
    const WARM_UP: u64 = 1_000;
    const COUNTED: u64 = 2_000;
    // Both connections send only once both are subscribed, and in paced batches, so both
    // deliver first arrivals and duplicates while counted.
    let both = std::sync::Arc::new(std::sync::Barrier::new(2));
    let server = serve(&[], move |_, ws| {
        both.wait();
        for batch in 0..(WARM_UP + COUNTED) / 50 {
            send(ws, "BTC", batch * 50 + 1..=batch * 50 + 50);
            std::thread::sleep(Duration::from_millis(1));
        }
        hold(ws, Duration::from_secs(5));
    });
    let config = config(&server.url).with_connections(2);
    let mut feed = D::start(config, timestamps);
    let mut next = 1;
    let mut take = |feed: &mut D, until: u64| {
        while next <= until {
            if let Seen::Message { seq, kernel_ns, .. } = feed.next() {
                assert_eq!(seq, next);
                assert_eq!(kernel_ns.is_some(), timestamps == Timestamps::Kernel);
                next += 1;
            }
        }
    };
    take(&mut feed, WARM_UP);
    let counting = alloc.start();
    take(&mut feed, WARM_UP + COUNTED);
    let counts = counting.stop();
    let counters = feed.counters();
    assert!(
        counters.duplicates > 0,
        "both connections delivered: {counters:?}"
    );
    assert_eq!(
        counts.allocations, 0,
        "{counts:?} in {COUNTED} messages after warm-up ({timestamps:?})"
    );
    println!("feed zero-alloc: {COUNTED} messages after warm-up, 0 allocations ({timestamps:?})");
}
