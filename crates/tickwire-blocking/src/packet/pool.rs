//! [`PacketPool`]: several [`PacketClient`] connections to one address, shared by threads,
//! with reconnects, backoff, health checks and a circuit breaker in front.
//!
//! It owns the slots' locks and connecting; the decisions (which slot, whether a slot's
//! connection is used or replaced, its backoff, what the breaker is told) are
//! tickwire-core's [`Slot`](tickwire_core::packet::Slot),
//! [`SlotOrder`](tickwire_core::packet::SlotOrder) and
//! [`PoolGate`](tickwire_core::packet::PoolGate). It
//! never
//! resends a request (a request that failed may or may not have been executed by the
//! server: retrying is the caller's decision), so no request is ever answered twice.

use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use tickwire_codec::mux::BreakerState;
use tickwire_core::packet::PoolParts;

use super::{Blocking, Error, PacketClient, PacketPoolBuilder, lock};

/// A pool of packet connections to one address, for many threads: see
/// [`PacketPoolBuilder::build`](tickwire_core::packet::PacketPoolBuilder::build) for how a
/// request picks its connection and what the circuit breaker does.
#[derive(Debug)]
pub struct PacketPool {
    parts: PoolParts<Blocking, Mutex<Slot>>,
}

impl PacketPool {
    /// A pool with the default [`PacketPoolBuilder`].
    pub fn new(host: &str, port: u16) -> Self {
        PacketPoolBuilder::new().build(host, port)
    }

    /// Sends `payload` and returns a copy of the answer.
    pub fn request(&self, payload: &[u8]) -> Result<Vec<u8>, Error> {
        self.request_with(payload, <[u8]>::to_vec)
    }

    /// Sends `payload` and hands the borrowed answer to `read` (no copy).
    ///
    /// Failures of the peer or the connection (fatal errors, [`Error::TimedOut`],
    /// [`Error::Busy`], a failed connect, [`Error::Reconnecting`]) count against the breaker;
    /// a success resets it; local refusals ([`Error::Encode`], back-pressure) count neither
    /// way. The request is never sent twice.
    pub fn request_with<R>(
        &self,
        payload: &[u8],
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        let permit = self.parts.gate().admit(Instant::now())?;
        let mut slot = self.pick();
        let exchange = |client: &mut PacketClient| client.request(payload).map(read);
        let result = self.round_trip(&mut slot, permit.is_probe(), exchange);
        drop(slot);
        self.parts.gate().settle(permit, result, Instant::now())
    }

    /// Pings every idle connection and drops those whose pong does not come (or that
    /// failed before); returns how many are healthy. Connections busy with a request are
    /// skipped and counted healthy.
    pub fn check_health(&self) -> usize {
        let mut check = self.parts.health_check();
        while let Some(mut slot) = check.next_idle() {
            let alive = slot.current().is_some_and(|client| client.ping().is_ok());
            check.checked(&mut slot, alive);
        }
        check.healthy()
    }

    /// Where the breaker stands.
    pub fn breaker_state(&self) -> BreakerState {
        self.parts.breaker_state()
    }

    /// Connections currently open (those busy with a request are counted open).
    pub fn open_connections(&self) -> usize {
        self.parts.open_connections()
    }

    /// An idle slot, round-robin from the next one; the next one itself when none is idle.
    fn pick(&self) -> MutexGuard<'_, Slot> {
        (self.parts.idle_slot()).unwrap_or_else(|next| lock(&self.parts.slots()[next]))
    }

    /// `exchange` on the slot's connection, connecting it first when the slot says so.
    fn round_trip<R>(
        &self,
        slot: &mut Slot,
        probe: bool,
        exchange: impl FnOnce(&mut PacketClient) -> Result<R, Error>,
    ) -> Result<R, Error> {
        if slot.must_connect(Instant::now(), probe)? {
            let attempt = self.parts.connect();
            slot.connected(attempt, Instant::now(), self.parts.backoff())?;
        }
        let result = (slot.current()).map_or(Err(Error::Closed), exchange);
        slot.finished(result)
    }
}

type Slot = tickwire_core::packet::Slot<PacketClient>;

/// The pool [`PacketPoolBuilder::build`](tickwire_core::packet::PacketPoolBuilder::build)
/// makes.
impl From<PoolParts<Blocking, Mutex<Slot>>> for PacketPool {
    fn from(parts: PoolParts<Blocking, Mutex<Slot>>) -> Self {
        Self { parts }
    }
}
