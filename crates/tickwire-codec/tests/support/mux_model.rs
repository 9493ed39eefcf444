//! A model of one multiplexed connection between a `mux::Client` and a `mux::Server`, driven
//! by a byte-decoded operation sequence: requests begun, answered in any order, cancelled,
//! timed out, forged or replayed responses, duplicate and reserved request ids, connections
//! lost. After every step the real state machines are checked against the model: each begun
//! request finishes exactly once with its own token, no response reaches another request,
//! every error is the one the module docs promise, and the caps hold.
//!
//! Shared by tests/mux_model.rs (proptest) and the fuzz target fuzz/fuzz_targets/mux_state.rs.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use tickwire_codec::mux::{
    Client, ClientConfig, ClientStats, Disconnect, Error, Outcome, RequestId, Response, Server,
    ServerConfig, ServerStats,
};

/// Client cap: small, so that the cap, slot reuse and the 64-generation late window are all
/// reached by short sequences.
pub(crate) const CLIENT_CAP: usize = 6;
/// Server cap: under the client's, so that "busy" happens.
pub(crate) const SERVER_CAP: usize = 4;
/// Client request limit; the server's is lower, so an accepted request can be refused there.
pub(crate) const MAX_REQUEST: usize = 1000;
/// Server request limit.
pub(crate) const SERVER_MAX_REQUEST: usize = 900;
/// Client response limit.
pub(crate) const MAX_RESPONSE: usize = 1000;

/// What the model says a response header must produce.
#[derive(Debug, PartialEq, Eq)]
enum Expect {
    Completed(u64),
    Late,
    TooLarge,
    Unknown,
    Duplicate,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IdState {
    InFlight {
        token: u64,
    },
    /// Cancelled or timed out on the current connection; no response seen yet.
    Abandoned,
    /// Answered, late response seen, failed, or abandoned on a connection since lost.
    Done,
}

/// The two state machines and the model of what they should hold.
pub(crate) struct Model {
    client: Client<u64>,
    server: Server,
    now: Instant,
    index_bits: u32,
    next_token: u64,
    ids: HashMap<u64, IdState>,
    deadlines: HashMap<u64, Instant>,
    /// Highest generation issued per slot index.
    generations: HashMap<u64, u64>,
    /// Ids the server holds, in arrival order.
    server_held: Vec<u64>,
    begun: HashSet<u64>,
    finished: HashSet<u64>,
    late: u64,
}

impl Model {
    /// A fresh pair; the server hash key is fixed so that runs reproduce.
    pub(crate) fn new() -> Self {
        let client = ClientConfig::new()
            .with_max_in_flight(CLIENT_CAP)
            .with_max_request_size(MAX_REQUEST)
            .with_max_response_size(MAX_RESPONSE);
        let server = ServerConfig::new()
            .with_max_in_flight(SERVER_CAP)
            .with_max_request_size(SERVER_MAX_REQUEST);
        Self {
            client: Client::new(client),
            server: Server::with_key(server, 7),
            now: Instant::now(),
            index_bits: usize::BITS - (CLIENT_CAP - 1).leading_zeros(),
            next_token: 0,
            ids: HashMap::new(),
            deadlines: HashMap::new(),
            generations: HashMap::new(),
            server_held: Vec::new(),
            begun: HashSet::new(),
            finished: HashSet::new(),
            late: 0,
        }
    }

    /// Runs the operations `ops` encodes (two bytes each), then loses the connection and
    /// checks that every begun request finished exactly once. Returns the final counters, to
    /// show what a run exercised.
    pub(crate) fn run(ops: &[u8]) -> (ClientStats, ServerStats) {
        let mut model = Self::new();
        for op in ops.chunks(2) {
            model.step(op[0], *op.get(1).unwrap_or(&0));
            model.check_invariants();
        }
        model.lose_connection(Disconnect::Shutdown);
        assert_eq!(model.begun, model.finished, "every begun request finished");
        let stats = model.client.stats();
        assert_eq!(
            stats.begun,
            stats.completed + stats.timed_out + stats.cancelled + stats.failed
        );
        assert_eq!(stats.late, model.late);
        (stats, model.server.stats())
    }

    /// One operation: the low nibble of `op` picks it (begins and answers are the most
    /// frequent), the high nibble and `arg` parameterise it.
    pub(crate) fn step(&mut self, op: u8, arg: u8) {
        let len = usize::from(arg) * 5; // 0..=1275: over both request limits and the response one
        match op & 0x0f {
            0..=2 | 12 | 13 => {
                let timeout = (op & 0x10 != 0).then(|| u64::from(arg % 64) + 1);
                self.begin(len, timeout);
            }
            3..=5 | 14 | 15 => self.server_responds(usize::from(arg), len),
            6 => self.cancel(usize::from(arg)),
            7 => self.advance(u64::from(arg)),
            8 => {
                // The peer answers an id issued at any time again: late, duplicate or too old.
                let mut issued: Vec<u64> = self.ids.keys().copied().collect();
                issued.sort_unstable();
                if !issued.is_empty() {
                    let id = issued[usize::from(arg) % issued.len()];
                    self.deliver_response(id, len % 600);
                }
            }
            9 => {
                // A forged id near the ones in use, or anywhere.
                let id = match op >> 4 {
                    0 => u64::from(arg),
                    1 => u64::MAX - u64::from(arg),
                    n => (u64::from(n) << self.index_bits) | u64::from(arg % 8),
                };
                self.deliver_response(id, 10);
            }
            10 => self.server_misuse(op >> 4, arg),
            _ => self.lose_connection(Disconnect::ConnectionLost),
        }
    }

    fn begin(&mut self, len: usize, timeout_ms: Option<u64>) {
        let token = self.next_token;
        self.next_token += 1;
        let timeout = timeout_ms.map(Duration::from_millis);
        match self.client.begin(self.now, len, timeout, token) {
            Ok(id) => {
                assert!(len <= MAX_REQUEST && self.model_in_flight() < CLIENT_CAP);
                assert_ne!(id, RequestId::RESERVED);
                assert!(!self.ids.contains_key(&id.0), "{id} issued twice");
                let (index, generation) = self.split(id.0);
                let current = self.generations.entry(index).or_insert(0);
                assert_eq!(generation, *current + 1, "generations advance one by one");
                *current = generation;
                self.ids.insert(id.0, IdState::InFlight { token });
                if let Some(t) = timeout {
                    self.deadlines.insert(id.0, self.now + t);
                }
                self.begun.insert(token);
                self.send_request(id, len);
            }
            Err(refused) => {
                assert_eq!(refused.token, token, "the token comes back");
                let expected = if len > MAX_REQUEST {
                    Error::RequestTooLarge {
                        len,
                        limit: MAX_REQUEST,
                    }
                } else {
                    assert_eq!(self.model_in_flight(), CLIENT_CAP);
                    Error::TooManyInFlight { limit: CLIENT_CAP }
                };
                assert_eq!(refused.error, expected);
                assert!(!refused.error.must_close());
            }
        }
    }

    /// A request header reaches the server, from the client or from a peer that forges ids
    /// (which may collide with the client's). The server checks in its documented order.
    fn send_request(&mut self, id: RequestId, len: usize) {
        let result = self.server.on_request(id, len);
        let expected = if id == RequestId::RESERVED {
            Err(Error::ReservedId)
        } else if self.server_held.contains(&id.0) {
            Err(Error::DuplicateRequest { id })
        } else if len > SERVER_MAX_REQUEST {
            let limit = SERVER_MAX_REQUEST;
            Err(Error::IncomingRequestTooLarge { id, len, limit })
        } else if self.server_held.len() == SERVER_CAP {
            Err(Error::Busy {
                id,
                limit: SERVER_CAP,
            })
        } else {
            Ok(())
        };
        assert_eq!(result, expected, "request {id:#x?}");
        match result {
            Ok(()) => self.server_held.push(id.0),
            // Answered "busy" at once, without `respond`.
            Err(Error::Busy { .. }) => self.deliver_response(id.0, 4),
            Err(error) => self.close(error),
        }
    }

    /// The server answers one of the requests it holds, in any order.
    fn server_responds(&mut self, pick: usize, len: usize) {
        if self.server_held.is_empty() {
            return;
        }
        let id = self.server_held.remove(pick % self.server_held.len());
        self.server
            .respond(RequestId(id))
            .expect("held by the server");
        assert_eq!(
            self.server.respond(RequestId(id)),
            Err(Error::NotInFlight { id: RequestId(id) }),
            "answered twice"
        );
        self.deliver_response(id, len);
    }

    fn cancel(&mut self, pick: usize) {
        let mut flying = self.model_ids_in_flight();
        if flying.is_empty() {
            return;
        }
        let id = flying.swap_remove(pick % flying.len());
        let token = self.client.cancel(RequestId(id)).expect("in flight");
        self.finish(id, token);
        self.ids.insert(id, IdState::Abandoned);
        assert_eq!(
            self.client.cancel(RequestId(id)),
            Err(Error::NotInFlight { id: RequestId(id) })
        );
    }

    fn advance(&mut self, ms: u64) {
        self.now += Duration::from_millis(ms);
        let due = self.model_earliest_deadline();
        assert_eq!(self.client.poll_timeout(), due);
        let now = self.now;
        let expired: Vec<_> = self.client.handle_timeout(now).collect();
        for done in expired {
            assert_eq!(done.outcome, Outcome::TimedOut);
            let deadline = self.deadlines[&done.id.0];
            assert!(deadline <= now, "timed out early");
            self.finish(done.id.0, done.token);
            self.ids.insert(done.id.0, IdState::Abandoned);
        }
        assert!(self.model_earliest_deadline().is_none_or(|at| at > now));
    }

    /// The server's peer misbehaves (a duplicate id, id 0, an id of its own), or the server
    /// is asked about ids it does not hold.
    fn server_misuse(&mut self, kind: u8, arg: u8) {
        match kind % 4 {
            0 if !self.server_held.is_empty() => {
                let held = self.server_held[usize::from(arg) % self.server_held.len()];
                self.send_request(RequestId(held), 1);
            }
            1 => self.send_request(RequestId::RESERVED, 1),
            3 => {
                let id = (u64::from(arg) << self.index_bits) | u64::from(arg % 8);
                self.send_request(RequestId(id), usize::from(arg) * 5);
            }
            _ => {
                let id = RequestId(u64::from(arg) << 3 | 0x7);
                let held = self.server_held.contains(&id.0);
                assert_eq!(self.server.is_in_flight(id), held);
                if !held {
                    assert_eq!(self.server.respond(id), Err(Error::NotInFlight { id }));
                }
            }
        }
    }

    /// A response header for `id` reaches the client; the model predicts the result.
    fn deliver_response(&mut self, id: u64, len: usize) {
        let expect = self.expect(id, len);
        let result = self.client.on_response(RequestId(id), len, self.now);
        match (expect, result) {
            (Expect::Completed(token), Ok(Response::Completed(done))) => {
                assert_eq!((done.id.0, done.token), (id, token), "the right request");
                assert!(matches!(done.outcome, Outcome::Response { len: l, .. } if l == len));
                self.finish(id, token);
                self.ids.insert(id, IdState::Done);
            }
            (Expect::Late, Ok(Response::Late(late))) => {
                assert_eq!(late.0, id);
                self.late += 1;
                if self.ids.get(&id) == Some(&IdState::Abandoned) {
                    self.ids.insert(id, IdState::Done);
                }
            }
            (Expect::TooLarge, Err(e @ Error::ResponseTooLarge { .. })) => self.close(e),
            (Expect::Unknown, Err(e @ Error::UnknownId { .. }))
            | (Expect::Duplicate, Err(e @ Error::DuplicateResponse { .. })) => self.close(e),
            (expect, result) => panic!("response to {id:#x}: expected {expect:?}, got {result:?}"),
        }
    }

    fn expect(&self, id: u64, len: usize) -> Expect {
        let (index, generation) = self.split(id);
        let current = self.generations.get(&index).copied().unwrap_or(0);
        if generation == 0 || index >= CLIENT_CAP as u64 || generation > current {
            return Expect::Unknown;
        }
        if len > MAX_RESPONSE {
            return Expect::TooLarge;
        }
        match self.ids[&id] {
            IdState::InFlight { token } => Expect::Completed(token),
            IdState::Abandoned => Expect::Late,
            IdState::Done if current - generation >= 64 => Expect::Late,
            IdState::Done => Expect::Duplicate,
        }
    }

    fn close(&mut self, error: Error) {
        assert!(error.must_close());
        self.lose_connection(Disconnect::Closed(error));
    }

    /// The connection goes away: every request in flight fails once; the server forgets.
    fn lose_connection(&mut self, reason: Disconnect) {
        let mut expected = self.model_ids_in_flight();
        let mut failed: Vec<_> = self.client.fail_all(reason).collect();
        assert!(
            self.client.fail_all(reason).next().is_none(),
            "failed twice"
        );
        failed.sort_by_key(|done| done.id);
        expected.sort_unstable();
        assert_eq!(failed.iter().map(|d| d.id.0).collect::<Vec<_>>(), expected);
        for done in failed {
            assert_eq!(done.outcome, Outcome::Failed(reason));
            self.finish(done.id.0, done.token);
        }
        for state in self.ids.values_mut() {
            *state = IdState::Done;
        }
        assert_eq!(self.server.reset(), self.server_held.len());
        self.server_held.clear();
        assert_eq!(self.client.poll_timeout(), None);
    }

    /// Records that the request `id` finished with `token`, checking it was that request's
    /// token and that it had not finished before.
    fn finish(&mut self, id: u64, token: u64) {
        assert_eq!(self.ids.get(&id), Some(&IdState::InFlight { token }));
        assert!(self.finished.insert(token), "token {token} finished twice");
        self.deadlines.remove(&id);
    }

    fn check_invariants(&self) {
        assert_eq!(self.client.in_flight(), self.model_in_flight());
        assert!(self.client.in_flight() <= CLIENT_CAP);
        assert_eq!(self.server.in_flight(), self.server_held.len());
        assert!(self.server.in_flight() <= SERVER_CAP);
        for &id in &self.server_held {
            assert!(self.server.is_in_flight(RequestId(id)));
        }
        for (&id, state) in &self.ids {
            let flying = matches!(state, IdState::InFlight { .. });
            assert_eq!(self.client.is_in_flight(RequestId(id)), flying);
        }
    }

    fn split(&self, id: u64) -> (u64, u64) {
        (id & ((1 << self.index_bits) - 1), id >> self.index_bits)
    }

    fn model_ids_in_flight(&self) -> Vec<u64> {
        let mut ids: Vec<u64> = (self.ids.iter())
            .filter(|(_, state)| matches!(state, IdState::InFlight { .. }))
            .map(|(&id, _)| id)
            .collect();
        ids.sort_unstable();
        ids
    }

    fn model_in_flight(&self) -> usize {
        self.model_ids_in_flight().len()
    }

    fn model_earliest_deadline(&self) -> Option<Instant> {
        self.deadlines.values().min().copied()
    }
}
