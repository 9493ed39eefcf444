//! [`PacketPool`]: several [`PacketClient`] connections to one address, shared by threads,
//! with reconnects, backoff, health checks and a [`Breaker`] in front.
//!
//! It owns the slots, their locks and connections; the decisions are the codec's (a slot's
//! [`Reconnect`] backoff, the [`Breaker`] given each request's [`Verdict`]). It never
//! resends a request (a request that failed may or may not have been executed by the
//! server: retrying is the caller's decision), so no request is ever answered twice.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use tickwire_codec::mux::{Breaker, BreakerState, Reconnect, Verdict};

use super::{Blocking, Error, PacketClient, lock};

/// Options for a [`PacketPool`]: the shared builder on the blocking transport. Defaults: 4
/// connections, the default [`PacketClientBuilder`](super::PacketClientBuilder),
/// [`BreakerConfig::new`] (open after 5 consecutive failures, 1 s cool-down doubling to
/// 30 s), reconnect backoff from 50 ms doubling to 5 s.
///
/// [`BreakerConfig::new`]: tickwire_codec::mux::BreakerConfig::new
pub type PacketPoolBuilder = tickwire_core::packet::PacketPoolBuilder<Blocking>;

/// A pool for `host:port`. Connects lazily: the first request on each slot connects.
pub(super) fn build(builder: PacketPoolBuilder, host: &str, port: u16) -> PacketPool {
    let slots = (0..builder.options().size)
        .map(|_| Mutex::new(Slot::default()))
        .collect();
    PacketPool {
        host: host.to_owned(),
        port,
        breaker: Mutex::new(Breaker::new(builder.options().breaker)),
        builder,
        slots,
        next: AtomicUsize::new(0),
    }
}

/// A pool of packet connections to one address, for many threads.
///
/// Each request takes one connection for its round trip: an idle one if any (round-robin
/// from the last one used, so it is also least-in-flight), else it waits for the
/// round-robin one. A connection that fails fatally is dropped and reconnected by the next
/// request on its slot; a failed connection attempt backs the slot off. Every request first
/// asks the [`Breaker`]: while it is open, requests fail at once with
/// [`Error::CircuitOpen`]; half-open, one probe goes through (ignoring the slot's backoff).
#[derive(Debug)]
pub struct PacketPool {
    host: String,
    port: u16,
    builder: PacketPoolBuilder,
    slots: Vec<Mutex<Slot>>,
    next: AtomicUsize,
    breaker: Mutex<Breaker>,
}

#[derive(Debug, Default)]
struct Slot {
    client: Option<PacketClient>,
    /// The backoff of its connection attempts.
    reconnect: Reconnect,
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
        let permit = lock(&self.breaker)
            .allow(Instant::now())
            .map_err(|rejected| Error::CircuitOpen {
                retry_at: rejected.retry_at,
            })?;
        let mut slot = self.pick();
        let result = self.round_trip(&mut slot, payload, permit.is_probe(), read);
        drop(slot);
        let verdict = result
            .as_ref()
            .map_or_else(Error::verdict, |_| Verdict::Success);
        lock(&self.breaker).settle(permit, verdict, Instant::now());
        result
    }

    /// Pings every idle connection and drops those whose pong does not come (or that
    /// failed before); returns how many are healthy. Connections busy with a request are
    /// skipped and counted healthy.
    pub fn check_health(&self) -> usize {
        let mut healthy = 0;
        for slot in &self.slots {
            let Ok(mut slot) = slot.try_lock() else {
                healthy += 1;
                continue;
            };
            let alive = match slot.client.as_mut() {
                Some(client) => client.ping().is_ok(),
                None => false,
            };
            if alive {
                healthy += 1;
            } else {
                slot.client = None;
            }
        }
        healthy
    }

    /// Where the breaker stands.
    pub fn breaker_state(&self) -> BreakerState {
        lock(&self.breaker).state()
    }

    /// Connections currently open.
    pub fn open_connections(&self) -> usize {
        self.slots
            .iter()
            .filter(|slot| lock(slot).client.as_ref().is_some_and(|c| !c.is_closed()))
            .count()
    }

    /// An idle slot, round-robin from the next one; the next one itself when none is idle.
    fn pick(&self) -> MutexGuard<'_, Slot> {
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let n = self.slots.len();
        for offset in 0..n {
            if let Ok(slot) = self.slots[(start + offset) % n].try_lock() {
                return slot;
            }
        }
        lock(&self.slots[start % n])
    }

    fn round_trip<R>(
        &self,
        slot: &mut Slot,
        payload: &[u8],
        probe: bool,
        read: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        let client = match &mut slot.client {
            Some(client) if !client.is_closed() => client,
            _ => self.reconnect(slot, probe)?,
        };
        match client.request(payload) {
            Ok(answer) => Ok(read(answer)),
            Err(error) => {
                if error.is_fatal() {
                    slot.client = None;
                }
                Err(error)
            }
        }
    }

    fn reconnect<'s>(
        &self,
        slot: &'s mut Slot,
        probe: bool,
    ) -> Result<&'s mut PacketClient, Error> {
        slot.client = None;
        slot.reconnect
            .may_connect(Instant::now(), probe)
            .map_err(|retry_at| Error::Reconnecting { retry_at })?;
        match self.builder.client_builder().connect(&self.host, self.port) {
            Ok(client) => {
                slot.reconnect.connected();
                Ok(slot.client.insert(client))
            }
            Err(error) => {
                let backoff = &self.builder.options().backoff;
                slot.reconnect.failed(Instant::now(), backoff);
                Err(error)
            }
        }
    }
}
