//! The decisions of a packet pool, written once for both transports' `PacketPool`, and
//! what such a pool holds ([`PoolParts`]): which slot a request tries first ([`SlotOrder`]), whether a slot's connection may be used
//! or a new one may be opened, and what a finished request does to it ([`Slot`]), and what
//! the circuit breaker lets through and is told afterwards ([`PoolGate`]).
//!
//! It owns these rules, over the codec's [`Reconnect`] backoff and [`Breaker`]. It does not
//! own the locks around slots, connecting or the requests themselves (the transports'), nor
//! the clock: time is passed in. A pool never resends a request: nothing here retries.

use std::marker::PhantomData;
use std::ops::DerefMut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Instant;

use tickwire_codec::mux::{
    Backoff, Breaker, BreakerConfig, BreakerState, Permit, Reconnect, Verdict,
};

use super::{Error, PacketClientBuilder, PacketPoolBuilder, PacketTransport};

/// What a pool of transport `T` holds, the same on every transport: its address and
/// builder, its slots (each a [`Slot`] behind the transport's lock `L`), their
/// [`SlotOrder`] and the [`PoolGate`].
#[derive(Debug)]
pub struct PoolParts<T, L> {
    host: String,
    port: u16,
    builder: PacketPoolBuilder<T>,
    slots: Vec<L>,
    order: SlotOrder,
    gate: PoolGate,
}

impl<T, L> PoolParts<T, L> {
    /// The parts of a pool for `host:port` as `builder` says, its slots made by `slot` (a
    /// lock around an empty [`Slot`]), one per connection the options ask for (at least 1).
    pub fn new(
        builder: PacketPoolBuilder<T>,
        host: &str,
        port: u16,
        slot: impl FnMut() -> L,
    ) -> Self {
        let options = builder.options();
        let slots = std::iter::repeat_with(slot)
            .take(options.size.max(1))
            .collect();
        Self {
            host: host.to_owned(),
            port,
            gate: PoolGate::new(options.breaker),
            builder,
            slots,
            order: SlotOrder::default(),
        }
    }

    /// The slots, each behind its lock.
    pub fn slots(&self) -> &[L] {
        &self.slots
    }

    /// The next request's turn over the slots.
    pub fn turn(&self) -> Turn {
        self.order.turn(self.slots.len())
    }

    /// The circuit breaker.
    pub fn gate(&self) -> &PoolGate {
        &self.gate
    }

    /// The backoff of a slot's connection attempts.
    pub fn backoff(&self) -> &Backoff {
        &self.builder.options().backoff
    }

    /// The builder each connection is made with.
    pub fn client_builder(&self) -> &PacketClientBuilder<T> {
        self.builder.client_builder()
    }
}

impl<T, L> PoolParts<T, L> {
    /// Where the breaker stands.
    pub fn breaker_state(&self) -> BreakerState {
        self.gate.state()
    }

    /// Connections currently open; a slot busy with a request counts open (it is not waited
    /// for).
    pub fn open_connections(&self) -> usize
    where
        L: TryLockSlot<T>,
        L::Connection: PooledConnection,
    {
        (self.slots.iter())
            .filter(|slot| slot.try_lock_slot().is_none_or(|slot| slot.is_open()))
            .count()
    }

    /// An idle slot, locked, round-robin from the next one; `Err` with the next one's index
    /// when none is idle (the transport waits for that one).
    pub fn idle_slot(&self) -> Result<L::Guard<'_>, usize>
    where
        L: TryLockSlot<T>,
    {
        let turn = self.turn();
        (turn.candidates())
            .find_map(|i| self.slots[i].try_lock_slot())
            .ok_or(turn.fallback())
    }

    /// A health check over the slots: the transport pings the connection of each idle slot
    /// it is handed; busy slots are skipped and counted healthy.
    pub fn health_check(&self) -> HealthCheck<'_, T, L> {
        HealthCheck {
            transport: PhantomData,
            slots: self.slots.iter(),
            healthy: 0,
        }
    }
}

/// A slot's lock on transport `T` that can be tried without waiting: std's `Mutex` (here,
/// for any transport) and tokio's (in tickwire-tokio).
pub trait TryLockSlot<T> {
    /// The connection the slot holds.
    type Connection;
    /// The locked slot.
    type Guard<'a>: DerefMut<Target = Slot<Self::Connection>>
    where
        Self: 'a;

    /// The slot, locked, or `None` while a request holds it.
    fn try_lock_slot(&self) -> Option<Self::Guard<'_>>;
}

impl<T, C> TryLockSlot<T> for Mutex<Slot<C>> {
    type Connection = C;
    type Guard<'a>
        = MutexGuard<'a, Slot<C>>
    where
        C: 'a;

    fn try_lock_slot(&self) -> Option<Self::Guard<'_>> {
        match self.try_lock() {
            Ok(slot) => Some(slot),
            // A slot is consistent between statements: a panic elsewhere leaves it usable.
            Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }
}

/// One health check of a pool's slots ([`PoolParts::health_check`]): hands out the idle
/// slots one by one and counts the healthy ones.
#[derive(Debug)]
pub struct HealthCheck<'a, T, L> {
    transport: PhantomData<fn() -> T>,
    slots: std::slice::Iter<'a, L>,
    healthy: usize,
}

impl<'a, T, L: TryLockSlot<T>> HealthCheck<'a, T, L> {
    /// The next idle slot, locked; the busy ones passed on the way count healthy.
    pub fn next_idle(&mut self) -> Option<L::Guard<'a>> {
        for slot in self.slots.by_ref() {
            match slot.try_lock_slot() {
                Some(slot) => return Some(slot),
                None => self.healthy += 1,
            }
        }
        None
    }

    /// The ping of `slot`'s connection answered (`alive`) or not: a dead connection is
    /// dropped.
    pub fn checked(&mut self, slot: &mut Slot<L::Connection>, alive: bool)
    where
        L::Connection: PooledConnection,
    {
        self.healthy += usize::from(slot.checked(alive));
    }

    /// How many slots were healthy.
    pub fn healthy(&self) -> usize {
        self.healthy
    }
}

impl<T: PacketTransport, L> PoolParts<T, L> {
    /// Connects a new connection for a slot (tokio: a future of it).
    pub fn connect(&self) -> T::Connect<'_> {
        self.client_builder().connect(&self.host, self.port)
    }
}

/// A connection a pool keeps in a slot.
pub trait PooledConnection {
    /// True once the connection is finished (a fatal error): the slot opens a new one.
    fn is_closed(&self) -> bool;
}

/// One slot of a pool: its connection, if open, and the backoff of its connection attempts.
#[derive(Debug)]
pub struct Slot<C> {
    connection: Option<C>,
    reconnect: Reconnect,
}

impl<C> Default for Slot<C> {
    fn default() -> Self {
        Self {
            connection: None,
            reconnect: Reconnect::default(),
        }
    }
}

impl<C: PooledConnection> Slot<C> {
    /// Whether a request at `now` must open a new connection first: `Ok(false)` when the
    /// slot's connection is open (the request goes on [`current`](Self::current)), `Ok(true)`
    /// when there is none or it closed (it is dropped) and an attempt may start now, to be
    /// reported with [`connected`](Self::connected). [`Error::Reconnecting`] while the slot
    /// backs off after failed attempts, unless the request is the breaker's `probe`.
    pub fn must_connect(&mut self, now: Instant, probe: bool) -> Result<bool, Error> {
        if self.is_open() {
            return Ok(false);
        }
        self.connection = None;
        self.reconnect
            .may_connect(now, probe)
            .map_err(|retry_at| Error::Reconnecting { retry_at })?;
        Ok(true)
    }

    /// How the connection attempt [`must_connect`](Self::must_connect) asked for ended at `now`:
    /// the new connection to use, or the error, after which the slot backs off by `backoff`.
    pub fn connected(
        &mut self,
        attempt: Result<C, Error>,
        now: Instant,
        backoff: &Backoff,
    ) -> Result<&mut C, Error> {
        match attempt {
            Ok(connection) => {
                self.reconnect.connected();
                Ok(self.connection.insert(connection))
            }
            Err(error) => {
                self.reconnect.failed(now, backoff);
                Err(error)
            }
        }
    }

    /// A request on the slot's connection ended with `result`: after a fatal error the
    /// connection is dropped (the next request opens another). Returns `result`.
    pub fn finished<R>(&mut self, result: Result<R, Error>) -> Result<R, Error> {
        if result.as_ref().is_err_and(Error::is_fatal) {
            self.connection = None;
        }
        result
    }

    /// The slot's connection, open or closed (`None`: none; after a health check that
    /// failed, or a fatal error).
    pub fn current(&mut self) -> Option<&mut C> {
        self.connection.as_mut()
    }

    /// A health check ended: a connection that was not `alive` is dropped. Returns `alive`.
    pub fn checked(&mut self, alive: bool) -> bool {
        if !alive {
            self.connection = None;
        }
        alive
    }

    /// Whether the slot holds a connection that is not closed.
    pub fn is_open(&self) -> bool {
        self.connection.as_ref().is_some_and(|c| !c.is_closed())
    }
}

/// The order in which a request tries a pool's slots: round-robin from a shared counter, so
/// the first idle slot found is also the least recently picked, and the slot waited for when
/// none is idle is the round-robin one.
#[derive(Debug, Default)]
pub struct SlotOrder {
    next: AtomicUsize,
}

/// One request's turn of [`SlotOrder`] over `len` slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Turn {
    start: usize,
    len: usize,
}

impl SlotOrder {
    /// The next request's turn over `len` slots (at least 1).
    pub fn turn(&self, len: usize) -> Turn {
        Turn {
            start: self.next.fetch_add(1, Ordering::Relaxed),
            len: len.max(1),
        }
    }
}

impl Turn {
    /// The slots to try without waiting, in order (every slot once).
    pub fn candidates(self) -> impl Iterator<Item = usize> {
        (0..self.len).map(move |offset| self.start.wrapping_add(offset) % self.len)
    }

    /// The slot to wait for when none of the candidates was free.
    pub fn fallback(self) -> usize {
        self.start % self.len
    }
}

/// A pool's circuit breaker behind its lock: whether a request may go ahead, and what its
/// outcome tells the breaker.
#[derive(Debug)]
pub struct PoolGate {
    breaker: Mutex<Breaker>,
}

impl PoolGate {
    /// A closed breaker configured by `config`.
    pub fn new(config: BreakerConfig) -> Self {
        Self {
            breaker: Mutex::new(Breaker::new(config)),
        }
    }

    /// Whether a request may go ahead at `now`: its permit (a half-open breaker's probe is
    /// one), or [`Error::CircuitOpen`] while the breaker is open.
    pub fn admit(&self, now: Instant) -> Result<Permit, Error> {
        self.lock()
            .allow(now)
            .map_err(|rejected| Error::CircuitOpen {
                retry_at: rejected.retry_at,
            })
    }

    /// The request `permit` let through ended with `result` at `now`: a success resets the
    /// breaker, a failure of the peer or the link counts against it ([`Error::verdict`]),
    /// a local refusal counts neither way. Returns `result`.
    pub fn settle<R>(
        &self,
        permit: Permit,
        result: Result<R, Error>,
        now: Instant,
    ) -> Result<R, Error> {
        let verdict = result
            .as_ref()
            .map_or_else(Error::verdict, |_| Verdict::Success);
        self.lock().settle(permit, verdict, now);
        result
    }

    /// Where the breaker stands.
    pub fn state(&self) -> BreakerState {
        self.lock().state()
    }

    /// The breaker, ignoring poisoning: it is consistent between calls.
    fn lock(&self) -> MutexGuard<'_, Breaker> {
        self.breaker.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A connection that closes when told to.
    #[derive(Debug, PartialEq)]
    struct Conn {
        id: u32,
        closed: bool,
    }

    impl PooledConnection for Conn {
        fn is_closed(&self) -> bool {
            self.closed
        }
    }

    fn conn(id: u32) -> Conn {
        Conn { id, closed: false }
    }

    const BACKOFF: Backoff = Backoff {
        initial: Duration::from_millis(100),
        max: Duration::from_secs(1),
    };

    #[test]
    fn an_empty_slot_connects_and_then_reuses_its_connection() {
        let now = Instant::now();
        let mut slot = Slot::<Conn>::default();
        assert!(!slot.is_open());
        assert!(slot.must_connect(now, false).unwrap());
        assert_eq!(slot.connected(Ok(conn(1)), now, &BACKOFF).unwrap().id, 1);
        assert!(slot.is_open());
        assert!(!slot.must_connect(now, false).unwrap());
        assert_eq!(slot.current().map(|c| c.id), Some(1));
    }

    #[test]
    fn a_closed_connection_is_replaced() {
        let now = Instant::now();
        let mut slot = Slot::default();
        slot.connected(Ok(conn(1)), now, &BACKOFF).unwrap().closed = true;
        assert!(!slot.is_open());
        assert_eq!(slot.current().map(|c| c.closed), Some(true));
        assert!(slot.must_connect(now, false).unwrap());
        assert_eq!(slot.current(), None, "the closed connection was dropped");
    }

    #[test]
    fn a_failed_connect_backs_the_slot_off_except_for_a_probe() {
        let t0 = Instant::now();
        let mut slot = Slot::<Conn>::default();
        let refused = slot.connected(Err(Error::ConnectTimeout), t0, &BACKOFF);
        assert!(matches!(refused, Err(Error::ConnectTimeout)));
        let backing_off = slot.must_connect(t0 + Duration::from_millis(50), false);
        assert!(
            matches!(backing_off, Err(Error::Reconnecting { retry_at }) if retry_at == t0 + BACKOFF.initial),
            "{backing_off:?}"
        );
        assert!(
            slot.must_connect(t0, true).unwrap(),
            "a probe ignores the backoff"
        );
        assert!(slot.must_connect(t0 + BACKOFF.initial, false).unwrap());
        // A second failure doubles the wait; a success starts over.
        let _ = slot.connected(Err(Error::ConnectTimeout), t0, &BACKOFF);
        let doubled = slot.must_connect(t0 + Duration::from_millis(150), false);
        assert!(
            matches!(doubled, Err(Error::Reconnecting { .. })),
            "{doubled:?}"
        );
        slot.connected(Ok(conn(2)), t0, &BACKOFF).unwrap();
        slot.finished::<()>(Err(Error::Closed)).unwrap_err();
        let _ = slot.connected(Err(Error::ConnectTimeout), t0, &BACKOFF);
        let reset = slot.must_connect(t0 + Duration::from_millis(150), false);
        assert!(
            matches!(reset, Ok(true)),
            "the backoff started over: {reset:?}"
        );
    }

    #[test]
    fn only_a_fatal_error_drops_the_connection() {
        let now = Instant::now();
        let mut slot = Slot::default();
        slot.connected(Ok(conn(1)), now, &BACKOFF).unwrap();
        let id = tickwire_codec::mux::RequestId(7);
        assert!(matches!(
            slot.finished::<()>(Err(Error::TimedOut(id))),
            Err(Error::TimedOut(_))
        ));
        assert!(
            slot.is_open(),
            "a request that timed out leaves the connection"
        );
        assert_eq!(slot.finished(Ok(5)).unwrap(), 5);
        assert!(slot.is_open());
        slot.finished::<()>(Err(Error::Closed)).unwrap_err();
        assert!(!slot.is_open());
    }

    #[test]
    fn a_failed_health_check_drops_the_connection() {
        let now = Instant::now();
        let mut slot = Slot::default();
        slot.connected(Ok(conn(1)), now, &BACKOFF).unwrap();
        assert!(slot.checked(true));
        assert!(slot.is_open());
        assert!(!slot.checked(false));
        assert_eq!(slot.current(), None);
    }

    #[test]
    fn turns_go_round_robin_and_try_every_slot_once() {
        let order = SlotOrder::default();
        let first = order.turn(3);
        assert_eq!(first.candidates().collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(first.fallback(), 0);
        let second = order.turn(3);
        assert_eq!(second.candidates().collect::<Vec<_>>(), [1, 2, 0]);
        assert_eq!(second.fallback(), 1);
        order.turn(3);
        let fourth = order.turn(3);
        assert_eq!(fourth.candidates().collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(order.turn(0).candidates().collect::<Vec<_>>(), [0]);
    }

    #[test]
    fn the_gate_opens_after_peer_failures_and_ignores_local_refusals() {
        let t0 = Instant::now();
        let config = BreakerConfig::new();
        let gate = PoolGate::new(config);
        for _ in 0..10 {
            let permit = gate.admit(t0).unwrap();
            let refused = gate.settle::<()>(permit, Err(Error::RequestsInFlight), t0);
            assert!(matches!(refused, Err(Error::RequestsInFlight)));
        }
        assert_eq!(
            gate.state(),
            BreakerState::Closed {
                consecutive_failures: 0
            },
            "local refusals count neither way"
        );
        loop {
            match gate.admit(t0) {
                Ok(permit) => {
                    let _ = gate.settle::<()>(permit, Err(Error::Closed), t0);
                }
                Err(Error::CircuitOpen { retry_at }) => {
                    assert!(retry_at > t0);
                    break;
                }
                Err(other) => panic!("unexpected {other:?}"),
            }
        }
        assert!(
            matches!(gate.state(), BreakerState::Open { .. }),
            "{:?}",
            gate.state()
        );
        let cool_down = t0 + Duration::from_secs(60);
        let probe = gate.admit(cool_down).unwrap();
        assert!(probe.is_probe());
        assert_eq!(gate.settle(probe, Ok(1), cool_down).unwrap(), 1);
        assert_eq!(
            gate.state(),
            BreakerState::Closed {
                consecutive_failures: 0
            },
            "a probe's success closes it"
        );
    }
}
