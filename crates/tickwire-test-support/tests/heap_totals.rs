//! The heap totals of `CountingAlloc::with_heap_totals`: live bytes and their peak, and a heap
//! region's counts, exact in a process where nothing else allocates meanwhile (its own `main`,
//! no libtest threads).

use tickwire_test_support::alloc::{CountingAlloc, HeapCounts};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

const BIG: usize = 4 << 20;

fn live_and_peak() {
    let before = ALLOC.live();
    ALLOC.reset_peak();
    let mut held = std::hint::black_box(vec![7u8; BIG]);
    let holding = ALLOC.live();
    held.reserve_exact(BIG);
    let grown = ALLOC.live();
    drop(held);
    let after = ALLOC.live();
    let peak = ALLOC.peak();
    ALLOC.reset_peak();
    let reset = ALLOC.peak();

    assert_eq!(holding - before, BIG, "live bytes while holding {BIG}");
    assert_eq!(
        grown - before,
        2 * BIG,
        "a reallocation moves the old size to the new"
    );
    assert_eq!(after, before, "every byte freed");
    assert_eq!(peak - before, 2 * BIG, "the peak is the grown vector");
    assert_eq!(reset, after, "a reset peak starts from the live bytes");
    println!("heap_totals: live and peak bytes exact through alloc, realloc and free");
}

fn region_counts() {
    let region = ALLOC.heap_region();
    let mut held = std::hint::black_box(vec![7u8; BIG]);
    let holding = region.change();
    held.reserve_exact(BIG);
    let grown = region.change();
    held.truncate(BIG / 2);
    held.shrink_to_fit();
    let shrunk = region.change();
    drop(held);
    let freed = region.change();
    let zeroed = std::hint::black_box(vec![0u64; 8]);
    let counted_zeroed = region.change();
    drop(zeroed);

    assert_eq!(
        holding,
        HeapCounts {
            allocations: 1,
            reallocations: 0,
            bytes_allocated: BIG as u64,
            bytes_freed: 0
        }
    );
    assert_eq!(
        grown,
        HeapCounts {
            reallocations: 1,
            bytes_allocated: 2 * BIG as u64,
            ..holding
        },
        "a growth is a reallocation, its growth bytes allocated"
    );
    assert_eq!(
        shrunk,
        HeapCounts {
            reallocations: 2,
            bytes_freed: (2 * BIG - BIG / 2) as u64,
            ..grown
        },
        "a shrink is a reallocation, its shrinkage bytes freed"
    );
    assert_eq!(freed.held(), 0, "every byte freed: {freed:?}");
    assert_eq!(
        (counted_zeroed.allocations, counted_zeroed.held()),
        (2, 64),
        "a zeroed allocation counts as an allocation"
    );

    // Every thread is counted, not only the one that started the region.
    let region = ALLOC.heap_region();
    let other = std::thread::spawn(|| std::hint::black_box(vec![1u8; BIG]));
    let kept = other.join().unwrap();
    let change = region.change();
    drop(kept);
    assert!(
        change.bytes_allocated >= BIG as u64 && change.held() >= BIG as i64,
        "another thread's {BIG} bytes, still held: {change:?}"
    );
    println!("heap_totals: a heap region counts every thread's allocations and bytes");
}

fn main() {
    live_and_peak();
    region_counts();
    println!("heap_totals: 2 passed, 0 failed");
}
