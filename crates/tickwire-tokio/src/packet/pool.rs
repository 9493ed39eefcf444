//! [`PacketPool`]: several [`PacketClient`] connections to one address, shared by tasks,
//! with reconnects, backoff, health checks and a circuit breaker in front. It owns the
//! slots' locks and connecting; the decisions (which slot, whether a slot's connection is
//! used or replaced, its backoff, what the breaker is told) are tickwire-core's
//! [`Slot`](tickwire_core::packet::Slot),
//! [`SlotOrder`](tickwire_core::packet::SlotOrder) and
//! [`PoolGate`](tickwire_core::packet::PoolGate), as the blocking
//! pool's are. It never resends a request, so no request is ever answered twice.

use tokio::sync::{Mutex, MutexGuard};

use tickwire_codec::mux::BreakerState;
use tickwire_core::packet::{PoolParts, TryLockSlot};

use super::{Error, PacketClient, PacketPoolBuilder, Tokio};
use crate::core::now;

/// A pool of packet connections to one address. Share it between tasks in an `Arc`; a
/// request waits for its connection without blocking the runtime (each slot is a tokio
/// mutex), and a dropped request future gives its connection back (the module docs list
/// what each call does when cancelled). How a request picks its connection and what the
/// circuit breaker does: [`PacketPoolBuilder::build`](tickwire_core::packet::PacketPoolBuilder::build).
#[derive(Debug)]
pub struct PacketPool {
    parts: PoolParts<Tokio, Mutex<Slot>>,
}

impl PacketPool {
    /// Where the breaker stands.
    pub fn breaker_state(&self) -> BreakerState {
        self.parts.breaker_state()
    }

    /// A pool with the default [`PacketPoolBuilder`].
    pub fn new(host: &str, port: u16) -> Self {
        PacketPoolBuilder::new().build(host, port)
    }

    /// Sends `payload` and returns a copy of the answer. Cancel safety as
    /// [`request_with`](Self::request_with).
    pub async fn request(&self, payload: &[u8]) -> Result<Vec<u8>, Error> {
        self.request_with(payload, <[u8]>::to_vec).await
    }

    /// Sends `payload` and hands the borrowed answer to `read` (no copy).
    ///
    /// Failures of the peer or the connection (fatal errors, [`Error::TimedOut`],
    /// [`Error::Busy`], a failed connect, [`Error::Reconnecting`]) count against the
    /// breaker; a success resets it; local refusals count neither way. The request is never
    /// sent twice.
    ///
    /// Cancel safe: a dropped call releases its connection, whose next request cancels the
    /// abandoned one (its answer is dropped, never given to another request); the breaker
    /// counts it neither way.
    pub async fn request_with<R>(
        &self,
        payload: &[u8],
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        let permit = self.parts.gate().admit(now())?;
        let mut slot = self.pick().await;
        let result = self
            .round_trip(&mut slot, payload, permit.is_probe(), read)
            .await;
        drop(slot);
        self.parts.gate().settle(permit, result, now())
    }

    /// Pings every idle connection and drops those whose pong does not come (or that
    /// failed before); returns how many are healthy. Connections busy with a request are
    /// skipped and counted healthy. Cancel safe: a connection whose ping was abandoned is
    /// checked again next time (its pong is taken by its next wait).
    pub async fn check_health(&self) -> usize {
        let mut check = self.parts.health_check();
        while let Some(mut slot) = check.next_idle() {
            let alive = match slot.current() {
                Some(client) => client.ping().await.is_ok(),
                None => false,
            };
            check.checked(&mut slot, alive);
        }
        check.healthy()
    }

    /// Connections currently open (those busy with a request are counted open).
    pub fn open_connections(&self) -> usize {
        self.parts.open_connections()
    }

    /// An idle slot, round-robin from the next one; the next one itself when none is idle.
    async fn pick(&self) -> MutexGuard<'_, Slot> {
        match self.parts.idle_slot() {
            Ok(slot) => slot,
            Err(next) => self.parts.slots()[next].lock().await,
        }
    }

    async fn round_trip<R>(
        &self,
        slot: &mut Slot,
        payload: &[u8],
        probe: bool,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        if slot.must_connect(now(), probe)? {
            let attempt = self.parts.connect().await;
            slot.connected(attempt, now(), self.parts.backoff())?;
        }
        let Some(client) = slot.current() else {
            return Err(Error::Closed);
        };
        let result = client.request(payload).await.map(read);
        slot.finished(result)
    }
}

type Slot = tickwire_core::packet::Slot<PacketClient>;

impl TryLockSlot<Tokio> for Mutex<Slot> {
    type Connection = PacketClient;
    type Guard<'a> = MutexGuard<'a, Slot>;

    fn try_lock_slot(&self) -> Option<Self::Guard<'_>> {
        self.try_lock().ok()
    }
}

/// The pool [`PacketPoolBuilder::build`](tickwire_core::packet::PacketPoolBuilder::build)
/// makes.
impl From<PoolParts<Tokio, Mutex<Slot>>> for PacketPool {
    fn from(parts: PoolParts<Tokio, Mutex<Slot>>) -> Self {
        Self { parts }
    }
}
