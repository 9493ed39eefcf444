//! The requesting side: issues ids, matches responses out of order, runs per-request
//! timeouts, and finishes every request exactly once.
//!
//! Each request lives in a slot of a table allocated once at
//! [`ClientConfig::max_in_flight`]; its id is the slot index and the slot's generation packed
//! into a `u64` (see the module docs of [`mux`](super)). Free slots form a FIFO list, so a
//! freed slot is reused only after every other free one: the generation of one slot advances
//! once per `max_in_flight` requests, not once per request.

use core::fmt;
use std::time::{Duration, Instant};

use super::deadlines::Deadlines;
use super::{Disconnect, Error, RequestId};

/// How many past generations of a slot remember being cancelled or timed out, so that their
/// late response is told apart from a duplicate: one bit each in a `u64`.
const LATE_WINDOW: u64 = 64;

/// End of the free list.
const NO_SLOT: u32 = u32::MAX;

/// Largest [`ClientConfig::max_in_flight`]: slot indices take at most 24 bits of an id, which
/// leaves at least 40 bits of generation.
pub const MAX_IN_FLIGHT: usize = 1 << 24;

/// The client's caps. `#[non_exhaustive]`: start from [`ClientConfig::new`] (or `default()`)
/// and change fields with the `with_*` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientConfig {
    /// Most requests in flight at once on one connection, and the size of the slot table
    /// allocated up front. Default 1 024; at most [`MAX_IN_FLIGHT`]. Each slot costs at most
    /// 76 bytes with a token of 8 bytes or less (the slot, its deadline heap entry and index),
    /// so the default table holds 76 KiB per connection.
    pub max_in_flight: usize,
    /// Largest request payload [`Client::begin`] accepts. Default 16 MiB.
    pub max_request_size: usize,
    /// Largest response payload [`Client::on_response`] accepts, checked on the header before
    /// the payload is read. Default 16 MiB (exchange snapshots of several MiB fit).
    pub max_response_size: usize,
}

impl ClientConfig {
    /// The defaults: 1 024 requests in flight, 16 MiB requests and responses.
    pub const fn new() -> Self {
        Self {
            max_in_flight: 1 << 10,
            max_request_size: 16 << 20,
            max_response_size: 16 << 20,
        }
    }

    with_methods! {
        const_set with_max_in_flight => max_in_flight: usize,
        const_set with_max_request_size => max_request_size: usize,
        const_set with_max_response_size => max_response_size: usize,
    }
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// A request that finished, with the caller's token. Every begun request comes back exactly
/// once as a `Completed` (or, when cancelled, as the token [`Client::cancel`] returns).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Completed<T> {
    /// The request's id.
    pub id: RequestId,
    /// The token given to [`Client::begin`].
    pub token: T,
    /// The `now` given to [`Client::begin`]: the latency is the finishing `now` minus this.
    pub began: Instant,
    /// How it finished.
    pub outcome: Outcome,
}

/// How a request finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Outcome {
    /// Its response arrived; the payload that follows the header has `len` bytes.
    Response {
        /// Payload length announced by the response header.
        len: usize,
        /// From `begin`'s `now` to `on_response`'s `now`.
        latency: Duration,
    },
    /// Its deadline passed before a response arrived.
    TimedOut,
    /// The connection went away with the request in flight.
    Failed(Disconnect),
}

/// What [`Client::on_response`] made of a response header.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Response<T> {
    /// It answers a request in flight, which is now finished.
    Completed(Completed<T>),
    /// It answers a request that was cancelled or timed out. Not the peer's fault: the
    /// transport reads and drops the payload and carries on. Counted in
    /// [`ClientStats::late`].
    Late(RequestId),
}

/// [`Client::begin`] refused a request: the error, and the token back, so that the caller can
/// try elsewhere (another connection of a pool) or report the failure.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Refused<T> {
    /// Why: [`Error::TooManyInFlight`] or [`Error::RequestTooLarge`].
    pub error: Error,
    /// The token given to `begin`.
    pub token: T,
}

impl<T> fmt::Display for Refused<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request refused: {}", self.error)
    }
}

impl<T: fmt::Debug> std::error::Error for Refused<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// Counters since the client was made; `in_flight` is the current number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientStats {
    /// Requests begun and not finished.
    pub in_flight: usize,
    /// Requests begun.
    pub begun: u64,
    /// Requests finished by their response.
    pub completed: u64,
    /// Requests finished by their deadline.
    pub timed_out: u64,
    /// Requests cancelled.
    pub cancelled: u64,
    /// Requests failed by [`Client::fail_all`].
    pub failed: u64,
    /// Responses dropped because their request was cancelled or timed out. Includes responses
    /// too old to check (see the module docs).
    pub late: u64,
}

/// The requesting side of a multiplexed connection: a sans-IO state machine over request ids
/// and lengths. `T` is the caller's per-request token (a waker, a channel sender, an index).
///
/// After warm-up nothing here allocates: the slot table and the deadline heap are allocated
/// once in [`new`](Self::new).
#[derive(Debug)]
pub struct Client<T> {
    config: ClientConfig,
    slots: Box<[Slot<T>]>,
    /// Oldest free slot (reused first) and newest.
    free_head: u32,
    free_tail: u32,
    deadlines: Deadlines,
    /// Bits of an id that hold the slot index.
    index_bits: u32,
    stats: ClientStats,
}

#[derive(Debug)]
struct Slot<T> {
    /// Generation of the last id issued from this slot; 0 before the first.
    generation: u64,
    /// Bit `d` set: the id of generation `generation - d` was cancelled or timed out and its
    /// response has not come yet.
    abandoned: u64,
    /// Next slot in the free list, while free.
    next_free: u32,
    request: Option<InFlight<T>>,
}

#[derive(Debug)]
struct InFlight<T> {
    token: T,
    began: Instant,
}

impl<T> Client<T> {
    /// A client with its slot table and deadline heap allocated for `config.max_in_flight`
    /// requests.
    ///
    /// # Panics
    ///
    /// When `config.max_in_flight` is 0 or above [`MAX_IN_FLIGHT`].
    pub fn new(config: ClientConfig) -> Self {
        let cap = config.max_in_flight;
        assert!(
            (1..=MAX_IN_FLIGHT).contains(&cap),
            "max_in_flight must be in 1..={MAX_IN_FLIGHT}, not {cap}"
        );
        let slots: Box<[Slot<T>]> = (0..cap)
            .map(|index| Slot {
                generation: 0,
                abandoned: 0,
                next_free: if index + 1 < cap {
                    (index + 1) as u32
                } else {
                    NO_SLOT
                },
                request: None,
            })
            .collect();
        Self {
            config,
            slots,
            free_head: 0,
            free_tail: (cap - 1) as u32,
            deadlines: Deadlines::new(cap),
            index_bits: usize::BITS - (cap - 1).leading_zeros(),
            stats: ClientStats::default(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// Starts a request of `payload_len` bytes at `now` and returns the id to put in its
    /// header. With a `timeout`, the request times out at `now + timeout` (a deadline past
    /// what `Instant` can hold means none).
    ///
    /// Refused, with the token handed back and nothing changed, when
    /// [`max_in_flight`](ClientConfig::max_in_flight) requests are in flight
    /// ([`Error::TooManyInFlight`]) or the payload is over
    /// [`max_request_size`](ClientConfig::max_request_size) ([`Error::RequestTooLarge`]).
    pub fn begin(
        &mut self,
        now: Instant,
        payload_len: usize,
        timeout: Option<Duration>,
        token: T,
    ) -> Result<RequestId, Refused<T>> {
        if payload_len > self.config.max_request_size {
            let limit = self.config.max_request_size;
            let error = Error::RequestTooLarge {
                len: payload_len,
                limit,
            };
            return Err(Refused { error, token });
        }
        if self.free_head == NO_SLOT {
            let error = Error::TooManyInFlight {
                limit: self.config.max_in_flight,
            };
            return Err(Refused { error, token });
        }
        let index = self.free_head;
        let generation_mask = u64::MAX >> self.index_bits;
        let slot = &mut self.slots[index as usize];
        self.free_head = slot.next_free;
        if self.free_head == NO_SLOT {
            self.free_tail = NO_SLOT;
        }
        // Generation 0 is never issued, so neither is id 0. The generation wraps only after
        // 2^(64 - index_bits) reuses of this one slot (2^54 at the default cap).
        slot.generation = match slot.generation.wrapping_add(1) & generation_mask {
            0 => 1,
            next => next,
        };
        slot.abandoned <<= 1;
        slot.request = Some(InFlight { token, began: now });
        let id = RequestId((slot.generation << self.index_bits) | u64::from(index));
        if let Some(at) = timeout.and_then(|t| now.checked_add(t)) {
            self.deadlines.insert(index, at);
        }
        self.stats.in_flight += 1;
        self.stats.begun += 1;
        Ok(id)
    }

    /// Matches a response header (its request id and payload length) to its request.
    ///
    /// - A request in flight: finished, returned as [`Response::Completed`].
    /// - A request cancelled or timed out: [`Response::Late`]; drop the payload, carry on.
    /// - An id never issued: [`Error::UnknownId`]; one already answered:
    ///   [`Error::DuplicateResponse`]. Peer violations: close and call
    ///   [`fail_all`](Self::fail_all).
    /// - A payload over [`max_response_size`](ClientConfig::max_response_size) for any id
    ///   this client issued: [`Error::ResponseTooLarge`]; close. The request stays in flight
    ///   until `fail_all`.
    pub fn on_response(
        &mut self,
        id: RequestId,
        payload_len: usize,
        now: Instant,
    ) -> Result<Response<T>, Error> {
        let (index, generation) = self.split(id).ok_or(Error::UnknownId { id })?;
        let slot = &mut self.slots[index as usize];
        if generation > slot.generation {
            return Err(Error::UnknownId { id });
        }
        if payload_len > self.config.max_response_size {
            let limit = self.config.max_response_size;
            let len = payload_len;
            return Err(Error::ResponseTooLarge { id, len, limit });
        }
        let age = slot.generation - generation;
        if age == 0 && slot.request.is_some() {
            let finished = self.finish(index);
            self.stats.completed += 1;
            return Ok(Response::Completed(Completed {
                id,
                token: finished.token,
                began: finished.began,
                outcome: Outcome::Response {
                    len: payload_len,
                    latency: now.saturating_duration_since(finished.began),
                },
            }));
        }
        if age >= LATE_WINDOW {
            // Too old to tell a late response from a duplicate: given the benefit of the
            // doubt. Either way no request in flight can receive it.
            self.stats.late += 1;
            return Ok(Response::Late(id));
        }
        let bit = 1 << age;
        if slot.abandoned & bit == 0 {
            return Err(Error::DuplicateResponse { id });
        }
        slot.abandoned &= !bit;
        self.stats.late += 1;
        Ok(Response::Late(id))
    }

    /// Cancels a request in flight and hands its token back. Its response, if one comes, is
    /// [`Response::Late`]. [`Error::NotInFlight`] (local misuse, nothing changed) for an id
    /// that is not in flight.
    pub fn cancel(&mut self, id: RequestId) -> Result<T, Error> {
        let index = self.in_flight_index(id).ok_or(Error::NotInFlight { id })?;
        let finished = self.finish(index);
        self.slots[index as usize].abandoned |= 1;
        self.stats.cancelled += 1;
        Ok(finished.token)
    }

    /// Whether `id` is in flight.
    pub fn is_in_flight(&self, id: RequestId) -> bool {
        self.in_flight_index(id).is_some()
    }

    /// The earliest request deadline, if any request has one: the transport calls
    /// [`handle_timeout`](Self::handle_timeout) once its clock reaches it.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.deadlines.earliest()
    }

    /// The requests whose deadline is at or before `now`, earliest first, each finished as
    /// [`Outcome::TimedOut`] as the iterator yields it (its response, if one comes, is
    /// [`Response::Late`]). Requests the iterator did not reach when dropped stay in flight
    /// and come out of the next call. Allocates nothing.
    pub fn handle_timeout(&mut self, now: Instant) -> Expired<'_, T> {
        Expired { client: self, now }
    }

    /// Finishes every request in flight as [`Outcome::Failed`] with `reason`, for a connection
    /// that is gone: the transport calls it once the connection is closed or lost. The
    /// iterator yields each request once; dropping it early finishes (and drops the tokens
    /// of) the rest all the same. Afterwards the client is empty and may serve a new
    /// connection: ids keep advancing, so no id of the old connection is issued again, and
    /// an answer on the new connection to an old id is a peer violation, not a late response.
    pub fn fail_all(&mut self, reason: Disconnect) -> Failed<'_, T> {
        self.deadlines.clear();
        for slot in self.slots.iter_mut() {
            slot.abandoned = 0;
        }
        Failed {
            client: self,
            next: 0,
            reason,
        }
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.stats.in_flight
    }

    /// The counters.
    pub fn stats(&self) -> ClientStats {
        self.stats
    }

    /// Slot index and generation of an id this client could have issued, or `None`.
    fn split(&self, id: RequestId) -> Option<(u32, u64)> {
        let index = id.0 & ((1 << self.index_bits) - 1);
        let generation = id.0 >> self.index_bits;
        (generation != 0 && (index as usize) < self.slots.len())
            .then_some((index as u32, generation))
    }

    fn in_flight_index(&self, id: RequestId) -> Option<u32> {
        let (index, generation) = self.split(id)?;
        let slot = &self.slots[index as usize];
        (slot.generation == generation && slot.request.is_some()).then_some(index)
    }

    /// Takes the request out of slot `index` (which must hold one), disarms its deadline and
    /// puts the slot at the back of the free list.
    fn finish(&mut self, index: u32) -> InFlight<T> {
        self.deadlines.remove(index);
        let slot = &mut self.slots[index as usize];
        let request = slot.request.take().expect("slot in flight");
        slot.next_free = NO_SLOT;
        match self.free_tail {
            NO_SLOT => self.free_head = index,
            tail => self.slots[tail as usize].next_free = index,
        }
        self.free_tail = index;
        self.stats.in_flight -= 1;
        request
    }

    #[cfg(test)]
    pub(super) fn allocated(&self) -> (usize, usize) {
        (self.slots.len(), self.deadlines.capacity())
    }
}

/// The timed-out requests of [`Client::handle_timeout`], earliest deadline first.
#[derive(Debug)]
#[must_use = "timed-out requests stay in flight until the iterator yields them"]
pub struct Expired<'a, T> {
    client: &'a mut Client<T>,
    now: Instant,
}

impl<T> Iterator for Expired<'_, T> {
    type Item = Completed<T>;

    fn next(&mut self) -> Option<Completed<T>> {
        let index = self.client.deadlines.pop_due(self.now)?;
        let slot = &self.client.slots[index as usize];
        let id = RequestId((slot.generation << self.client.index_bits) | u64::from(index));
        let finished = self.client.finish(index);
        self.client.slots[index as usize].abandoned |= 1;
        self.client.stats.timed_out += 1;
        Some(Completed {
            id,
            token: finished.token,
            began: finished.began,
            outcome: Outcome::TimedOut,
        })
    }
}

/// The failed requests of [`Client::fail_all`], in slot order. Dropping it finishes the rest.
#[derive(Debug)]
pub struct Failed<'a, T> {
    client: &'a mut Client<T>,
    next: usize,
    reason: Disconnect,
}

impl<T> Iterator for Failed<'_, T> {
    type Item = Completed<T>;

    fn next(&mut self) -> Option<Completed<T>> {
        while self.next < self.client.slots.len() {
            let index = self.next as u32;
            self.next += 1;
            let slot = &self.client.slots[index as usize];
            if slot.request.is_none() {
                continue;
            }
            let id = RequestId((slot.generation << self.client.index_bits) | u64::from(index));
            let finished = self.client.finish(index);
            self.client.stats.failed += 1;
            return Some(Completed {
                id,
                token: finished.token,
                began: finished.began,
                outcome: Outcome::Failed(self.reason),
            });
        }
        None
    }
}

impl<T> Drop for Failed<'_, T> {
    fn drop(&mut self) {
        self.for_each(drop);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The per-slot cost [`ClientConfig::max_in_flight`] documents.
    #[test]
    fn a_slot_costs_at_most_76_bytes_with_a_small_token() {
        let heap_entry = size_of::<(Instant, u32)>() + size_of::<u32>();
        assert!(size_of::<Slot<u64>>() + heap_entry <= 76);
        assert!(size_of::<Slot<()>>() + heap_entry <= 76);
    }
}
