//! The HTTP client's timer: one process-wide thread wakes a waiting request when its read or
//! write timeout, or its total deadline, passes. Not an entry in tokio's timer.
//!
//! Why: while any entry of tokio's timer is armed, the runtime parks in `epoll_wait` with a
//! timeout rather than `-1`, and the kernel arms and cancels a high-resolution timer on every
//! park. A request that waits for its response parks once or twice, and the timeouts are on by
//! default (30 s per read and write, 60 s in all), so every request paid that for a timeout
//! that almost never fires: about 2-3% of the rate of one request in flight over loopback
//! (bench/results/issue-16.md). Here arming costs one atomic swap and one uncontended lock
//! to leave the waker, and reads no clock; the runtime parks untimed.
//!
//! The thread sleeps until the earliest instant set. A connection's instant moves later with
//! each request, so in steady state the thread wakes about once per timeout period, finds every
//! instant moved, and sleeps again; it is woken early only when an instant earlier than all the
//! others is set. The instants are on the real clock (`std::time::Instant`), not tokio's: a
//! test that pauses tokio's clock does not advance them.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

/// `Slot::at` when nothing is armed.
const UNSET: u64 = 0;
/// `Watchdog::next` while the thread looks at the slots: whoever arms one then rings.
const SCANNING: u64 = 0;
/// `Watchdog::next` when no slot is armed.
const NEVER: u64 = u64::MAX;

/// One connection's timer: at most one instant armed at a time.
#[derive(Debug)]
pub(crate) struct Alarm {
    slot: Arc<Slot>,
    watchdog: &'static Watchdog,
}

#[derive(Debug, Default)]
struct Slot {
    /// The armed instant in nanoseconds after the watchdog's epoch, at least 1; `UNSET`.
    at: AtomicU64,
    /// The task to wake when `at` passes.
    waker: Mutex<Option<Waker>>,
}

#[derive(Debug)]
struct Watchdog {
    epoch: Instant,
    state: Mutex<State>,
    bell: Condvar,
    /// The instant the thread sleeps until (nanoseconds after `epoch`), `SCANNING` or `NEVER`.
    next: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    /// Every alarm alive, and some dropped ones until the next prune.
    slots: Vec<Weak<Slot>>,
    /// The number of slots after the last prune: the list is pruned when it doubles.
    pruned_len: usize,
    /// An instant earlier than the one the thread sleeps until was armed.
    rung: bool,
}

impl Alarm {
    /// A connection's alarm, nothing armed. Fails only when the timer thread is not running
    /// and cannot be started (the system refused a thread): the connection is not opened then,
    /// rather than opened without timeouts.
    pub(crate) fn new() -> io::Result<Self> {
        let watchdog = Watchdog::get()?;
        let slot = Arc::new(Slot::default());
        let mut state = watchdog.lock();
        if state.slots.len() >= 2 * state.pruned_len.max(32) {
            state.slots.retain(|slot| slot.strong_count() > 0);
            state.pruned_len = state.slots.len();
        }
        state.slots.push(Arc::downgrade(&slot));
        drop(state);
        Ok(Self { slot, watchdog })
    }

    /// Arms `at`, replacing whatever was armed: `cx`'s task is woken once it has passed, and
    /// [`poll`](Self::poll) is then ready. Reads no clock: the caller knows `at` is still
    /// ahead.
    pub(crate) fn arm(&self, at: Instant, cx: &mut Context<'_>) {
        self.set_waker(cx);
        let at = self.watchdog.since_epoch(at);
        let before = self.slot.at.swap(at, SeqCst);
        if before != at {
            let next = self.watchdog.next.load(SeqCst);
            if next == SCANNING || at < next {
                self.watchdog.ring();
            }
        }
    }

    /// Ready once the instant last [`arm`](Self::arm)ed has passed (the thread disarms what
    /// it fires); until then `cx`'s task is the one woken.
    pub(crate) fn poll(&self, cx: &mut Context<'_>) -> Poll<()> {
        if self.slot.at.load(SeqCst) == UNSET {
            return Poll::Ready(());
        }
        self.set_waker(cx);
        // Fired between the load above and the new waker: the thread took the old one.
        if self.slot.at.load(SeqCst) == UNSET {
            return Poll::Ready(());
        }
        Poll::Pending
    }

    /// Nothing armed: the wait ended before its instant.
    pub(crate) fn disarm(&self) {
        self.slot.at.store(UNSET, SeqCst);
    }

    fn set_waker(&self, cx: &Context<'_>) {
        let mut waker = self
            .slot
            .waker
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match waker.as_ref() {
            Some(waker) if waker.will_wake(cx.waker()) => {}
            _ => *waker = Some(cx.waker().clone()),
        }
    }
}

impl Watchdog {
    /// The process's watchdog, its thread started on first use (and tried again on the next
    /// use if the system refused it).
    fn get() -> io::Result<&'static Self> {
        static WATCHDOG: OnceLock<Watchdog> = OnceLock::new();
        static STARTED: Mutex<bool> = Mutex::new(false);
        let watchdog = WATCHDOG.get_or_init(|| Self {
            epoch: Instant::now(),
            state: Mutex::default(),
            bell: Condvar::new(),
            next: AtomicU64::new(NEVER),
        });
        let mut started = STARTED.lock().unwrap_or_else(PoisonError::into_inner);
        if !*started {
            std::thread::Builder::new()
                .name("tickwire-http-alarm".into())
                .spawn(|| watchdog.run())?;
            *started = true;
        }
        Ok(watchdog)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `at` in nanoseconds after the epoch, at least 1 (`UNSET` is 0).
    fn since_epoch(&self, at: Instant) -> u64 {
        let nanos = at.saturating_duration_since(self.epoch).as_nanos();
        u64::try_from(nanos).unwrap_or(NEVER - 1).max(1)
    }

    /// Wakes the thread to look again: an instant earlier than the one it sleeps until was
    /// armed, or one was armed while it looked.
    fn ring(&self) {
        self.lock().rung = true;
        self.bell.notify_one();
    }

    /// Wakes the tasks whose instants passed and sleeps until the earliest one left.
    fn run(&self) {
        let mut due = Vec::new();
        let mut state = self.lock();
        loop {
            self.next.store(SCANNING, SeqCst);
            state.rung = false;
            let now = self.since_epoch(Instant::now());
            let mut next = NEVER;
            state.slots.retain(|slot| {
                let Some(slot) = slot.upgrade() else {
                    return false;
                };
                let at = slot.at.load(SeqCst);
                if at == UNSET {
                    return true;
                }
                // Fired only if it still holds the instant that passed; one moved or
                // disarmed meanwhile is read again.
                if at <= now && slot.at.compare_exchange(at, UNSET, SeqCst, SeqCst).is_ok() {
                    let waker = slot
                        .waker
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take();
                    due.extend(waker);
                    return true;
                }
                match slot.at.load(SeqCst) {
                    UNSET => {}
                    at => next = next.min(at),
                }
                true
            });
            state.pruned_len = state.slots.len();
            self.next.store(next, SeqCst);
            if !due.is_empty() {
                drop(state);
                due.drain(..).for_each(Waker::wake);
                state = self.lock();
                continue;
            }
            while !state.rung {
                let now = self.since_epoch(Instant::now());
                if next <= now {
                    break;
                }
                state = if next == NEVER {
                    self.bell
                        .wait(state)
                        .unwrap_or_else(PoisonError::into_inner)
                } else {
                    let sleep = Duration::from_nanos(next - now);
                    let woken = self.bell.wait_timeout(state, sleep);
                    woken.unwrap_or_else(PoisonError::into_inner).0
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Waits on `alarm` for `at`, returns how long it took.
    async fn wait(alarm: &Alarm, at: Instant) -> Duration {
        let start = Instant::now();
        let mut armed = false;
        std::future::poll_fn(|cx| {
            if !armed {
                alarm.arm(at, cx);
                armed = true;
            }
            alarm.poll(cx)
        })
        .await;
        start.elapsed()
    }

    #[tokio::test]
    async fn fires_at_its_instant_not_before() {
        let alarm = Alarm::new().expect("the timer thread");
        let waited = wait(&alarm, Instant::now() + Duration::from_millis(40)).await;
        assert!(waited >= Duration::from_millis(40), "{waited:?}");
        assert!(waited < Duration::from_secs(5), "{waited:?}");
    }

    #[tokio::test]
    async fn an_instant_earlier_than_every_other_wakes_the_thread_early() {
        // Another alarm holds the thread asleep for a minute.
        let far = Alarm::new().expect("the timer thread");
        let waker = Waker::noop();
        let far_at = Instant::now() + Duration::from_secs(60);
        far.arm(far_at, &mut Context::from_waker(waker));
        // This one, armed for a minute then moved to 30 ms, fires at 30 ms.
        let near = Alarm::new().expect("the timer thread");
        let later = Instant::now() + Duration::from_secs(60);
        near.arm(later, &mut Context::from_waker(waker));
        let waited = wait(&near, Instant::now() + Duration::from_millis(30)).await;
        assert!(waited < Duration::from_secs(5), "{waited:?}");
        far.disarm();
    }

    #[tokio::test]
    async fn a_disarmed_alarm_never_wakes_its_task() {
        let alarm = Alarm::new().expect("the timer thread");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<()>();
        // A waker that sends on the channel when woken.
        struct Tell(tokio::sync::mpsc::UnboundedSender<()>);
        impl std::task::Wake for Tell {
            fn wake(self: Arc<Self>) {
                let _ = self.0.send(());
            }
        }
        let waker = Waker::from(Arc::new(Tell(tx)));
        let at = Instant::now() + Duration::from_millis(20);
        alarm.arm(at, &mut Context::from_waker(&waker));
        alarm.disarm();
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert!(rx.try_recv().is_err(), "a disarmed alarm woke its task");
        // Armed again, it does, and is then ready.
        let at = Instant::now() + Duration::from_millis(20);
        alarm.arm(at, &mut Context::from_waker(&waker));
        assert!(alarm.poll(&mut Context::from_waker(&waker)).is_pending());
        tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .expect("the alarm woke its task");
        assert!(Instant::now() >= at);
        assert!(alarm.poll(&mut Context::from_waker(&waker)).is_ready());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn many_alarms_each_fire_once_their_instant_passed() {
        let tasks: Vec<_> = (0..200u64)
            .map(|i| {
                tokio::spawn(async move {
                    let alarm = Alarm::new().expect("the timer thread");
                    let at = Instant::now() + Duration::from_millis(1 + i % 50);
                    let waited = wait(&alarm, at).await;
                    assert!(Instant::now() >= at);
                    waited
                })
            })
            .collect();
        for task in tasks {
            let waited = tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("every alarm fired")
                .expect("the task did not panic");
            assert!(waited < Duration::from_secs(5), "{waited:?}");
        }
    }

    #[test]
    fn dropped_alarms_leave_the_list() {
        for _ in 0..10_000 {
            drop(Alarm::new().expect("the timer thread"));
        }
        let alive = Alarm::new().expect("the timer thread");
        let slots = Watchdog::get()
            .expect("the timer thread")
            .lock()
            .slots
            .len();
        // Other tests' alarms may be alive at the same time; never ten thousand.
        assert!(slots < 1_000, "{slots} slots kept for dropped alarms");
        drop(alive);
    }
}
