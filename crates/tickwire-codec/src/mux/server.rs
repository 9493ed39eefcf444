//! The answering side: tracks the requests received on one connection until they are answered.
//!
//! The peer chooses the ids, so they cannot index a table: the ids in flight live in an
//! open-addressing hash set (linear probing, deletion by backward shift, so no tombstones
//! build up) allocated once at twice [`ServerConfig::max_in_flight`] rounded up to a power of
//! two; at most half full, a lookup probes about 1.5 entries on average. The hash is keyed
//! per connection from the operating system's random source, so a peer cannot choose ids
//! that all land in one run; even so a lookup never probes more than `max_in_flight` entries.
//! Id 0 marks an empty entry, which is one reason it is reserved.

use super::{Error, RequestId};

/// The server's caps. `#[non_exhaustive]`: start from [`ServerConfig::new`] (or `default()`)
/// and change fields with the `with_*` methods.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerConfig {
    /// Most requests in flight (received, not yet answered) on one connection. Default 256,
    /// tighter than the client's because peers are untrusted. The id table takes 16 bytes
    /// per request of the cap (rounded up to a power of two): 4 KiB at the default.
    pub max_in_flight: usize,
    /// Largest request payload [`Server::on_request`] accepts, checked on the header before
    /// the payload is read. Default 1 MiB.
    pub max_request_size: usize,
}

impl ServerConfig {
    /// The defaults: 256 requests in flight, 1 MiB requests.
    pub const fn new() -> Self {
        Self {
            max_in_flight: 1 << 8,
            max_request_size: 1 << 20,
        }
    }

    with_methods! {
        const_set with_max_in_flight => max_in_flight: usize,
        const_set with_max_request_size => max_request_size: usize,
    }
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self::new()
    }
}

/// Counters since the server was made; `in_flight` is the current number.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerStats {
    /// Requests received and not yet answered.
    pub in_flight: usize,
    /// Requests accepted by [`Server::on_request`].
    pub received: u64,
    /// Requests answered through [`Server::respond`].
    pub answered: u64,
    /// Requests refused with [`Error::Busy`].
    pub busy: u64,
}

/// The answering side of one multiplexed connection: which request ids are in flight.
/// Responses may go out in any order. Nothing allocates after [`new`](Self::new).
#[derive(Debug)]
pub struct Server {
    config: ServerConfig,
    /// Ids in flight; 0 is an empty entry.
    table: Box<[u64]>,
    /// Hash key, random per server.
    key: u64,
    stats: ServerStats,
}

impl Server {
    /// A server with its id table allocated for `config.max_in_flight` requests, hashed with
    /// a key from the operating system's random source (a fixed one if it is unavailable).
    ///
    /// # Panics
    ///
    /// When `config.max_in_flight` is 0 or above 2^30.
    pub fn new(config: ServerConfig) -> Self {
        Self::with_key(config, getrandom::u64().unwrap_or(0x243f_6a88_85a3_08d3))
    }

    /// A server whose id hash uses `key`: for deterministic tests and fuzzing. What the server
    /// answers never depends on the key, only how long a lookup probes.
    ///
    /// # Panics
    ///
    /// When `config.max_in_flight` is 0 or above 2^30.
    pub fn with_key(config: ServerConfig, key: u64) -> Self {
        let cap = config.max_in_flight;
        assert!(
            (1..=1 << 30).contains(&cap),
            "max_in_flight must be in 1..=2^30, not {cap}"
        );
        Self {
            config,
            table: vec![0; (2 * cap).next_power_of_two()].into_boxed_slice(),
            key,
            stats: ServerStats::default(),
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &ServerConfig {
        &self.config
    }

    /// Records a request header (its id and payload length). Checked in this order, each
    /// refusal leaving the server unchanged:
    ///
    /// 1. id 0: [`Error::ReservedId`]; close.
    /// 2. the id is in flight: [`Error::DuplicateRequest`]; close. Checked before the cap, so
    ///    that a duplicate is never answered "busy" (its first copy would be answered too).
    /// 3. a payload over [`max_request_size`](ServerConfig::max_request_size):
    ///    [`Error::IncomingRequestTooLarge`]; close.
    /// 4. [`max_in_flight`](ServerConfig::max_in_flight) in flight: [`Error::Busy`]; answer
    ///    "busy" for this id (or close).
    pub fn on_request(&mut self, id: RequestId, payload_len: usize) -> Result<(), Error> {
        if id == RequestId::RESERVED {
            return Err(Error::ReservedId);
        }
        let at = match self.find(id.0) {
            Ok(_) => return Err(Error::DuplicateRequest { id }),
            Err(empty) => empty,
        };
        if payload_len > self.config.max_request_size {
            let limit = self.config.max_request_size;
            let len = payload_len;
            return Err(Error::IncomingRequestTooLarge { id, len, limit });
        }
        if self.stats.in_flight == self.config.max_in_flight {
            self.stats.busy += 1;
            let limit = self.config.max_in_flight;
            return Err(Error::Busy { id, limit });
        }
        self.table[at] = id.0;
        self.stats.in_flight += 1;
        self.stats.received += 1;
        Ok(())
    }

    /// Marks request `id` answered: call it when its response is queued. Responses may go in
    /// any order. [`Error::NotInFlight`] (local misuse, nothing changed) for an id that was
    /// not received, was refused, or was answered already.
    pub fn respond(&mut self, id: RequestId) -> Result<(), Error> {
        if id == RequestId::RESERVED {
            return Err(Error::NotInFlight { id });
        }
        let at = self.find(id.0).map_err(|_| Error::NotInFlight { id })?;
        self.remove_at(at);
        self.stats.in_flight -= 1;
        self.stats.answered += 1;
        Ok(())
    }

    /// Whether `id` is in flight.
    pub fn is_in_flight(&self, id: RequestId) -> bool {
        id != RequestId::RESERVED && self.find(id.0).is_ok()
    }

    /// Forgets every request in flight, for a connection that is gone (its answers have
    /// nowhere to go) or a new connection on the same server state. Returns how many there
    /// were.
    pub fn reset(&mut self) -> usize {
        self.table.fill(0);
        core::mem::take(&mut self.stats.in_flight)
    }

    /// Requests in flight.
    pub fn in_flight(&self) -> usize {
        self.stats.in_flight
    }

    /// The counters.
    pub fn stats(&self) -> ServerStats {
        self.stats
    }

    fn home(&self, id: u64) -> usize {
        // The splitmix64 finaliser over the keyed id: every input bit moves every output bit.
        let mut x = id ^ self.key;
        x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        x ^= x >> 31;
        (x as usize) & (self.table.len() - 1)
    }

    /// `Ok(index)` of `id` (non-zero) in the table, or `Err(index)` of the empty entry where
    /// it would go. The table is never full (at most half), so an empty entry ends the probe.
    fn find(&self, id: u64) -> Result<usize, usize> {
        let mask = self.table.len() - 1;
        let mut at = self.home(id);
        loop {
            match self.table[at] {
                0 => return Err(at),
                present if present == id => return Ok(at),
                _ => at = (at + 1) & mask,
            }
        }
    }

    /// Empties entry `at`, moving later entries of the same run back so that every entry stays
    /// reachable from its home without tombstones.
    fn remove_at(&mut self, at: usize) {
        let mask = self.table.len() - 1;
        let mut hole = at;
        let mut next = at;
        loop {
            next = (next + 1) & mask;
            let id = self.table[next];
            if id == 0 {
                break;
            }
            // The entry may fill the hole when the hole lies between its home and where it is.
            let from_home = next.wrapping_sub(self.home(id)) & mask;
            let from_hole = next.wrapping_sub(hole) & mask;
            if from_home >= from_hole {
                self.table[hole] = id;
                hole = next;
            }
        }
        self.table[hole] = 0;
    }

    #[cfg(test)]
    pub(super) fn allocated(&self) -> usize {
        self.table.len()
    }
}
