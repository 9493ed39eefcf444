//! Rule 6 of docs/ARCHITECTURE.md for the blocking feed: after warm-up, data messages on two
//! redundant connections allocate nothing on the feed's thread, with user and with kernel
//! receive timestamps. Its own `main`: the counting allocator counts only this thread (the
//! in-test server's threads are not counted).

#[cfg(unix)]
#[expect(dead_code, reason = "the suite's cases are run by tests/feed.rs")]
mod feed_support;
#[cfg(unix)]
#[path = "feed_support/zero_alloc.rs"]
mod feed_zero_alloc;

#[cfg(unix)]
mod run {
    use super::feed_zero_alloc::steady_state_allocates_nothing;
    use tickwire_blocking::feed::{Feed, Timestamps};
    use tickwire_test_support::alloc::CountingAlloc;

    #[global_allocator]
    static ALLOC: CountingAlloc = CountingAlloc::per_thread();

    pub(super) fn main() {
        steady_state_allocates_nothing::<Feed>(&ALLOC, Timestamps::User);
        steady_state_allocates_nothing::<Feed>(&ALLOC, Timestamps::Kernel);
    }
}

fn main() {
    #[cfg(unix)]
    run::main();
}
