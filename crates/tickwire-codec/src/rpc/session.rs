//! [`RpcSession`]: the state machine of requests over a feed session's connections.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::config::{RpcConfig, WhileDown};
use super::event::{
    Absorbed, Event, LoginFailure, NotSent, Outcome, Rejected, RpcCounters, RpcError, Ticket,
    Transmit,
};
use super::limits::KindId;
use super::{OverLimit, Request};
use crate::feed::{self, ConnId, MAX_CONNECTIONS};
use crate::mux::deadlines::Deadlines;

/// Requests matched to responses by id over the connections of a
/// [`FeedSession`](crate::feed::FeedSession), sans-IO. See the [module docs](super) for the
/// driver's loop and the rules.
pub struct RpcSession {
    config: RpcConfig,
    /// Indexed by `id & mask`; holds every request not yet resolved, and the logins.
    slots: Box<[Slot]>,
    mask: u64,
    /// The next id to issue (ids only grow: one below it was issued, or skipped).
    next_id: u64,
    deadlines: Deadlines,
    /// Requests waiting to be written, oldest first: (slot, id).
    queue: VecDeque<(u32, u64)>,
    /// Text buffers of freed slots, the last freed on top: a slot in use takes one, so the
    /// buffers stay as many as the requests ever out at once and keep their capacity, however
    /// the ids spread over the table.
    spare: Vec<String>,
    conns: [Conn; MAX_CONNECTIONS],
    events: VecDeque<Event<'static>>,
    /// Connections whose login timed out: the driver replaces them.
    replace: VecDeque<ConnId>,
    /// No request is written before this (a rate limit's or the send quota's wait).
    hold_until: Option<Instant>,
    /// No login is written before this (the send quota's wait).
    login_hold: Option<Instant>,
    ended: Option<RpcError>,
    counters: RpcCounters,
}

#[derive(Debug, Default)]
struct Slot {
    /// 0: free.
    id: u64,
    state: State,
    text: String,
    kind: Option<KindId>,
    weight: u32,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum State {
    #[default]
    Free,
    Queued,
    Written {
        conn: ConnId,
        at: Instant,
    },
    Login {
        conn: ConnId,
        written: Option<Instant>,
    },
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
enum Conn {
    #[default]
    Down,
    LoggingIn {
        slot: u32,
    },
    Ready {
        since: Instant,
    },
}

/// The first id issued (0 is left out: some exchanges treat it as "no id").
const FIRST_ID: u64 = 1;

impl RpcSession {
    /// A session with no connection yet. The tables are allocated now, at the caps
    /// (`max_in_flight` and `max_queued`, each at least 1).
    pub fn new(mut config: RpcConfig) -> Self {
        config.max_in_flight = config.max_in_flight.clamp(1, 1 << 20);
        config.max_queued = config.max_queued.clamp(1, 1 << 20);
        // At most half full: a new id finds a free slot within two probes on average.
        let capacity =
            ((config.max_in_flight + config.max_queued + MAX_CONNECTIONS) * 2).next_power_of_two();
        Self {
            slots: (0..capacity).map(|_| Slot::default()).collect(),
            mask: capacity as u64 - 1,
            next_id: FIRST_ID,
            deadlines: Deadlines::new(capacity),
            queue: VecDeque::with_capacity(config.max_queued),
            spare: Vec::with_capacity(capacity),
            conns: [Conn::Down; MAX_CONNECTIONS],
            events: VecDeque::with_capacity(64),
            replace: VecDeque::new(),
            hold_until: None,
            login_hold: None,
            ended: None,
            counters: RpcCounters::default(),
            config,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &RpcConfig {
        &self.config
    }

    /// Accepts a request: `text` (a JSON object, without its id: the session writes one)
    /// queued to be written once a connection is ready, within `request`'s limits. Its
    /// ticket resolves exactly once, in an [`Event::Resolved`]. Refused (nothing queued,
    /// nothing charged) when the queue is full, the session ended, a rate limit refuses
    /// (see [`OverLimit`]) or, with [`WhileDown::Fail`], no connection is ready.
    pub fn submit(
        &mut self,
        text: &str,
        request: Request,
        now: Instant,
    ) -> Result<Ticket, Rejected> {
        let refused = self.refusal(request.kind, now);
        if let Some(rejected) = refused {
            self.counters.rejected += 1;
            return Err(rejected);
        }
        let timeout = request.timeout.unwrap_or(self.config.timeout);
        let index = self.allocate();
        let slot = &mut self.slots[index as usize];
        if let Err(error) = self.config.ids.write(text, slot.id, &mut slot.text) {
            self.free(index);
            self.counters.rejected += 1;
            return Err(Rejected::Id(error));
        }
        slot.state = State::Queued;
        slot.kind = request.kind;
        slot.weight = request.weight;
        let ticket = Ticket(slot.id);
        self.deadlines.insert(index, now + timeout);
        self.queue.push_back((index, ticket.0));
        self.counters.submitted += 1;
        self.counters.queued += 1;
        Ok(ticket)
    }

    /// Withdraws a request that was not written yet: it resolves
    /// [`NotSent::Cancelled`]. `false` when it was written or resolved already (a written
    /// request cannot be called back: its outcome comes as usual).
    pub fn cancel(&mut self, ticket: Ticket) -> bool {
        let index = (ticket.0 & self.mask) as u32;
        let slot = &self.slots[index as usize];
        if slot.id != ticket.0 || slot.state != State::Queued {
            return false;
        }
        self.queue.retain(|&(_, id)| id != ticket.0);
        self.deadlines.remove(index);
        self.resolve(index, Outcome::NotSent(NotSent::Cancelled));
        true
    }

    /// The next message to write, at `now`: a connection's login first, then the oldest
    /// request, on the connection that became ready last, when the in-flight cap, the rate
    /// limits and `quota` (the connection's send quota: `Err(Some(wait))` to wait,
    /// `Err(None)` when the connection cannot take it) allow. Call until `None` after
    /// every input.
    pub fn poll_transmit(
        &mut self,
        now: Instant,
        mut quota: impl FnMut(ConnId, u32) -> Result<(), Option<Duration>>,
    ) -> Option<Transmit<'_>> {
        if self.ended.is_some() {
            return None;
        }
        if let Some(index) = self.next_login(now, &mut quota) {
            let slot = &self.slots[index as usize];
            let State::Login { conn, .. } = slot.state else {
                return None;
            };
            return Some(Transmit {
                conn,
                ticket: Ticket(slot.id),
                text: &slot.text,
                login: true,
            });
        }
        let index = self.next_request(now, &mut quota)?;
        let slot = &self.slots[index as usize];
        let State::Written { conn, .. } = slot.state else {
            return None;
        };
        Some(Transmit {
            conn,
            ticket: Ticket(slot.id),
            text: &slot.text,
            login: false,
        })
    }

    /// The driver could not queue `ticket`'s message (the connection was gone): it is
    /// taken back, unwritten, to go out first on the next ready connection (a login is
    /// dropped: the next connection logs in anew). What it was charged stays charged.
    pub fn unsend(&mut self, ticket: Ticket) {
        let index = (ticket.0 & self.mask) as u32;
        let slot = &mut self.slots[index as usize];
        if slot.id != ticket.0 {
            return;
        }
        match slot.state {
            State::Written { conn, .. } => {
                slot.state = State::Queued;
                self.counters.written -= 1;
                self.counters.in_flight -= 1;
                self.counters.queued += 1;
                self.queue.push_front((index, ticket.0));
                self.conn_down(conn);
            }
            State::Login { conn, .. } => self.conn_down(conn),
            State::Free | State::Queued => {}
        }
    }

    /// Takes in what the feed session reported, at `now`: a message is matched to its
    /// request by id (or is a login's response, or answers nothing); a connection that
    /// opened logs in or becomes ready; one that closed takes its written requests with it
    /// ([`Outcome::OutcomeUnknown`]). `None` when it was the session's own (a login's
    /// response); else build the user's event with [`event`](Self::event). Then drain
    /// [`poll_event`](Self::poll_event).
    pub fn absorb(&mut self, event: &feed::Event<'_>, now: Instant) -> Option<Absorbed> {
        match event {
            feed::Event::Message(message) => {
                return self.on_message(message.conn, message.payload, now);
            }
            feed::Event::Connected { conn, .. } => self.on_open(*conn, now),
            feed::Event::Closed { conn, .. } => self.on_closed(*conn),
            feed::Event::Rotated { from, .. } => self.on_closed(*from),
            feed::Event::Ended(error) => self.end(RpcError::Feed(*error)),
            _ => {}
        }
        Some(Absorbed::Forward(owned(event)))
    }

    /// The user's event for what [`absorb`](Self::absorb) returned; `payload` is the
    /// message's (`&[]` for others).
    pub fn event<'a>(absorbed: Absorbed, payload: &'a [u8]) -> Event<'a> {
        match absorbed {
            Absorbed::Response { ticket, rtt } => Event::Resolved {
                ticket,
                outcome: Outcome::Response(payload),
                rtt: Some(rtt),
            },
            Absorbed::Late { ticket, conn } => Event::Late {
                ticket,
                conn,
                payload,
            },
            Absorbed::Pushed { conn } => Event::Pushed { conn, payload },
            Absorbed::Forward(event) => Event::Feed(event),
        }
    }

    /// The next event the session queued (requests resolved by timers or lost
    /// connections, connections ready, logins failed), in order.
    pub fn poll_event(&mut self) -> Option<Event<'static>> {
        self.events.pop_front()
    }

    /// Whether [`poll_event`](Self::poll_event) has one.
    pub fn has_event(&self) -> bool {
        !self.events.is_empty()
    }

    /// A connection whose login timed out, for the driver to drop and replace (the feed
    /// session's `replace`).
    pub fn poll_replace(&mut self) -> Option<ConnId> {
        self.replace.pop_front()
    }

    /// When [`handle_timeout`](Self::handle_timeout) must run next (a deadline), or
    /// [`poll_transmit`](Self::poll_transmit) be tried again (a limit's wait).
    pub fn poll_timeout(&self) -> Option<Instant> {
        let login_waits = self.conns.iter().any(|conn| {
            matches!(conn, Conn::LoggingIn { slot }
                if matches!(self.slots[*slot as usize].state, State::Login { written: None, .. }))
        });
        [
            self.deadlines.earliest(),
            self.hold_until.filter(|_| !self.queue.is_empty()),
            self.login_hold.filter(|_| login_waits),
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs the deadlines due at `now`: a request waiting resolves [`NotSent::Deadline`],
    /// one written [`Outcome::TimedOut`]; a login past its timeout fails and its connection
    /// is to be replaced.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(index) = self.deadlines.pop_due(now) {
            let slot = &self.slots[index as usize];
            match slot.state {
                State::Queued => {
                    let id = slot.id;
                    self.queue.retain(|&(_, queued)| queued != id);
                    self.resolve(index, Outcome::NotSent(NotSent::Deadline));
                }
                State::Written { .. } => self.resolve(index, Outcome::TimedOut),
                State::Login { conn, .. } => {
                    self.free(index);
                    self.conns[conn.index()] = Conn::Down;
                    self.replace.push_back(conn);
                    self.events.push_back(Event::LoginFailed {
                        conn,
                        failure: LoginFailure::TimedOut,
                    });
                }
                State::Free => {}
            }
        }
        if self.hold_until.is_some_and(|at| at <= now) {
            self.hold_until = None;
        }
        if self.login_hold.is_some_and(|at| at <= now) {
            self.login_hold = None;
        }
    }

    /// Why the session ended, once it has: every request made before resolved by then.
    pub fn ended(&self) -> Option<&RpcError> {
        self.ended.as_ref()
    }

    /// Whether a connection is ready for requests.
    pub fn is_ready(&self) -> bool {
        self.ready_conn().is_some()
    }

    /// The counters.
    pub fn counters(&self) -> RpcCounters {
        self.counters
    }

    fn refusal(&self, kind: Option<KindId>, now: Instant) -> Option<Rejected> {
        if self.ended.is_some() {
            return Some(Rejected::Ended);
        }
        if self.counters.queued >= self.config.max_queued {
            return Some(Rejected::QueueFull {
                max_queued: self.config.max_queued,
            });
        }
        if self.config.while_down == WhileDown::Fail && self.ready_conn().is_none() {
            return Some(Rejected::NotReady);
        }
        if let (Some(kind), Some(limits)) = (kind, &self.config.limits)
            && let Err(exceeded) = limits.check(kind, now)
            && (exceeded.retry_after.is_none() || self.config.over_limit == OverLimit::Refuse)
        {
            return Some(Rejected::Limit(exceeded));
        }
        None
    }

    /// A free slot with a fresh id (ids only grow; one whose slot is taken is skipped).
    fn allocate(&mut self) -> u32 {
        loop {
            let id = self.next_id;
            self.next_id += 1;
            let index = (id & self.mask) as usize;
            if self.slots[index].id == 0 {
                let slot = &mut self.slots[index];
                slot.id = id;
                slot.text = self.spare.pop().unwrap_or_default();
                return index as u32;
            }
        }
    }

    fn next_login(
        &mut self,
        now: Instant,
        quota: &mut impl FnMut(ConnId, u32) -> Result<(), Option<Duration>>,
    ) -> Option<u32> {
        if self.login_hold.is_some_and(|at| at > now) {
            return None;
        }
        self.login_hold = None;
        for conn in 0..MAX_CONNECTIONS {
            let Conn::LoggingIn { slot: index } = self.conns[conn] else {
                continue;
            };
            let slot = &mut self.slots[index as usize];
            let State::Login {
                conn: id,
                written: None,
            } = slot.state
            else {
                continue;
            };
            if let Err(wait) = quota(id, 1) {
                self.login_hold = Some(now + wait.unwrap_or(Duration::from_millis(1)));
                continue;
            }
            slot.state = State::Login {
                conn: id,
                written: Some(now),
            };
            return Some(index);
        }
        None
    }

    fn next_request(
        &mut self,
        now: Instant,
        quota: &mut impl FnMut(ConnId, u32) -> Result<(), Option<Duration>>,
    ) -> Option<u32> {
        if self.hold_until.is_some_and(|at| at > now) {
            return None;
        }
        self.hold_until = None;
        if self.counters.in_flight >= self.config.max_in_flight {
            return None;
        }
        let conn = self.ready_conn()?;
        let &(index, _) = self.queue.front()?;
        let (kind, weight) = {
            let slot = &self.slots[index as usize];
            (slot.kind, slot.weight)
        };
        let limits = kind.zip(self.config.limits.as_deref());
        if let Some((kind, limits)) = limits
            && let Err(exceeded) = limits.check(kind, now)
        {
            self.hold_until = Some(now + exceeded.retry_after.unwrap_or(Duration::from_secs(1)));
            return None;
        }
        if let Err(wait) = quota(conn, weight) {
            // Not open: the feed reports the close; until then nothing more goes out.
            self.hold_until = Some(now + wait.unwrap_or(Duration::from_millis(1)));
            return None;
        }
        if let Some((kind, limits)) = limits
            && let Err(exceeded) = limits.try_acquire(kind, now)
        {
            // Taken by another client since the check: the quota's unit is lost, safely.
            self.hold_until = Some(now + exceeded.retry_after.unwrap_or(Duration::from_secs(1)));
            return None;
        }
        self.queue.pop_front();
        self.slots[index as usize].state = State::Written { conn, at: now };
        self.counters.queued -= 1;
        self.counters.in_flight += 1;
        self.counters.written += 1;
        Some(index)
    }

    #[inline]
    fn on_message(&mut self, conn: ConnId, payload: &[u8], now: Instant) -> Option<Absorbed> {
        if let (Some(usage), Some(limits)) = (&self.config.usage, &self.config.limits) {
            usage(payload, limits, now);
        }
        let Some(id) = self.config.ids.read(payload) else {
            self.counters.pushed += 1;
            return Some(Absorbed::Pushed { conn });
        };
        let index = (id & self.mask) as u32;
        let slot = &self.slots[index as usize];
        if slot.id == id {
            match slot.state {
                State::Written { at, .. } => {
                    self.deadlines.remove(index);
                    self.free(index);
                    self.counters.in_flight -= 1;
                    self.counters.responses += 1;
                    return Some(Absorbed::Response {
                        ticket: Ticket(id),
                        rtt: now.saturating_duration_since(at),
                    });
                }
                State::Login {
                    conn: login_conn, ..
                } => {
                    self.on_login_response(index, login_conn, payload, now);
                    return None;
                }
                State::Queued | State::Free => {}
            }
        }
        if (FIRST_ID..self.next_id).contains(&id) {
            self.counters.late += 1;
            return Some(Absorbed::Late {
                ticket: Ticket(id),
                conn,
            });
        }
        self.counters.pushed += 1;
        Some(Absorbed::Pushed { conn })
    }

    fn on_login_response(&mut self, index: u32, conn: ConnId, payload: &[u8], now: Instant) {
        self.deadlines.remove(index);
        self.free(index);
        let Some(login) = &self.config.login else {
            return;
        };
        match (login.accept)(payload) {
            Ok(()) => {
                self.counters.logins += 1;
                self.conns[conn.index()] = Conn::Ready { since: now };
                self.events.push_back(Event::Ready { conn });
            }
            Err(reason) => {
                self.conns[conn.index()] = Conn::Down;
                self.events.push_back(Event::LoginFailed {
                    conn,
                    failure: LoginFailure::Rejected(reason.clone()),
                });
                self.end(RpcError::LoginRejected { conn, reason });
            }
        }
    }

    fn on_open(&mut self, conn: ConnId, now: Instant) {
        if self.ended.is_some() || conn.index() >= MAX_CONNECTIONS {
            return;
        }
        self.conn_down(conn);
        let Some(login) = self.config.login.clone() else {
            self.conns[conn.index()] = Conn::Ready { since: now };
            self.events.push_back(Event::Ready { conn });
            return;
        };
        let text = (login.build)();
        let index = self.allocate();
        let slot = &mut self.slots[index as usize];
        if let Err(error) = self.config.ids.write(&text, slot.id, &mut slot.text) {
            self.free(index);
            self.events.push_back(Event::LoginFailed {
                conn,
                failure: LoginFailure::Id(error),
            });
            self.end(RpcError::LoginId(error));
            return;
        }
        slot.state = State::Login {
            conn,
            written: None,
        };
        self.deadlines.insert(index, now + login.timeout);
        self.conns[conn.index()] = Conn::LoggingIn { slot: index };
    }

    fn on_closed(&mut self, conn: ConnId) {
        if conn.index() >= MAX_CONNECTIONS {
            return;
        }
        self.conn_down(conn);
        for index in 0..self.slots.len() as u32 {
            if matches!(self.slots[index as usize].state, State::Written { conn: on, .. } if on == conn)
            {
                self.deadlines.remove(index);
                self.resolve(index, Outcome::OutcomeUnknown);
            }
        }
        if self.config.while_down == WhileDown::Fail && self.ready_conn().is_none() {
            while let Some((index, _)) = self.queue.pop_front() {
                self.deadlines.remove(index);
                self.resolve(index, Outcome::NotSent(NotSent::Disconnected));
            }
        }
    }

    /// `conn` is no longer usable: its login (if one was running) is dropped.
    fn conn_down(&mut self, conn: ConnId) {
        if let Conn::LoggingIn { slot } = self.conns[conn.index()] {
            self.deadlines.remove(slot);
            self.free(slot);
        }
        self.conns[conn.index()] = Conn::Down;
    }

    /// The connection that became ready last.
    fn ready_conn(&self) -> Option<ConnId> {
        let mut best: Option<(Instant, usize)> = None;
        for (index, conn) in self.conns.iter().enumerate() {
            if let Conn::Ready { since } = conn
                && best.is_none_or(|(at, _)| *since >= at)
            {
                best = Some((*since, index));
            }
        }
        best.map(|(_, index)| ConnId(index as u8))
    }

    /// Resolves the request in `index` (its deadline already disarmed) with `outcome`.
    fn resolve(&mut self, index: u32, outcome: Outcome<'static>) {
        let slot = &self.slots[index as usize];
        let ticket = Ticket(slot.id);
        match slot.state {
            State::Queued => self.counters.queued -= 1,
            State::Written { .. } => self.counters.in_flight -= 1,
            State::Login { .. } | State::Free => {}
        }
        match &outcome {
            Outcome::TimedOut => self.counters.timed_out += 1,
            Outcome::NotSent(_) => self.counters.not_sent += 1,
            Outcome::OutcomeUnknown => self.counters.unknown += 1,
            Outcome::Response(_) => self.counters.responses += 1,
            Outcome::Rejected(_) => self.counters.rejected += 1,
        }
        self.free(index);
        self.events.push_back(Event::Resolved {
            ticket,
            outcome,
            rtt: None,
        });
    }

    fn free(&mut self, index: u32) {
        let slot = &mut self.slots[index as usize];
        slot.id = 0;
        slot.state = State::Free;
        slot.kind = None;
        // Within the capacity reserved in `new`: one buffer per slot at most.
        self.spare.push(core::mem::take(&mut slot.text));
    }

    /// Ends the session: every request waiting is [`NotSent::Ended`], every one written
    /// [`Outcome::OutcomeUnknown`].
    fn end(&mut self, error: RpcError) {
        if self.ended.is_some() {
            return;
        }
        self.queue.clear();
        for index in 0..self.slots.len() as u32 {
            let outcome = match self.slots[index as usize].state {
                State::Queued => Outcome::NotSent(NotSent::Ended),
                State::Written { .. } => Outcome::OutcomeUnknown,
                State::Login { .. } => {
                    self.free(index);
                    continue;
                }
                State::Free => continue,
            };
            self.resolve(index, outcome);
        }
        self.deadlines.clear();
        self.conns = [Conn::Down; MAX_CONNECTIONS];
        self.hold_until = None;
        self.ended = Some(error);
    }
}

/// A feed event other than a message, owned.
fn owned(event: &feed::Event<'_>) -> feed::Event<'static> {
    use feed::Event as E;
    match *event {
        E::Connected {
            conn,
            attempt,
            endpoint,
        } => E::Connected {
            conn,
            attempt,
            endpoint,
        },
        E::Subscribed { conn } => E::Subscribed { conn },
        // Messages are absorbed, never forwarded; a held one (no sequences here) cannot be.
        E::Message(_) => E::KeyLimit { max_keys: 0 },
        E::Gap { key, from, to } => E::Gap { key, from, to },
        E::Resync { key } => E::Resync { key },
        E::Stale { conn, silent_for } => E::Stale { conn, silent_for },
        E::Closed { conn, reason } => E::Closed { conn, reason },
        E::Reconnecting {
            conn,
            reason,
            delay,
        } => E::Reconnecting {
            conn,
            reason,
            delay,
        },
        E::RateLimited {
            conn,
            limited,
            wait,
        } => E::RateLimited {
            conn,
            limited,
            wait,
        },
        E::Rotated { from, to } => E::Rotated { from, to },
        E::KeyLimit { max_keys } => E::KeyLimit { max_keys },
        E::Ended(error) => E::Ended(error),
    }
}
