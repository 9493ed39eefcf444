//! The heap totals of `CountingAlloc::with_heap_totals`: live bytes and their peak, exact in a
//! process where nothing else allocates meanwhile (its own `main`, no libtest threads).

use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

const BIG: usize = 4 << 20;

fn main() {
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
    println!(
        "heap_totals: live and peak bytes exact through alloc, realloc and free; 1 passed, 0 failed"
    );
}
