//! [`FeedSession`]: the state machine. The rules, in the order a connection meets them:
//!
//! 1. A slot waiting for its back-off connects once the wait is over and the connect budget
//!    has room ([`Action::Connect`]); an attempt not open within `connect_timeout` fails.
//! 2. An open slot sends its login, then its subscriptions, each through its send quota;
//!    it is subscribed once they are sent and (with a matcher) acknowledged within
//!    `ack_timeout`.
//! 3. A received message is, in this order: a server ping (answered), a heartbeat reply,
//!    an acknowledgement, or data. Only data resets the stale timer; anything resets the
//!    heartbeat's quiet timer.
//! 4. Data goes through the merge (sequence, duplicates, holes, gaps) and out as events.
//! 5. A failure (the driver's report, stale, a heartbeat or acknowledgement deadline, a
//!    connect timeout) closes the slot, resets its back-off if it had stayed up
//!    `stable_after`, and schedules the next attempt with jitter, or ends the session past
//!    `max_attempts`.
//! 6. A rotation connects the spare; once it is subscribed and caught up with the slot it
//!    replaces, the old one is closed with 1000 and the spare takes its place.

use std::collections::VecDeque;
use std::time::Instant;

use super::config::{ConfigError, FeedConfig};
use super::event::{
    Action, ConnFigures, ConnId, ConnState, Counters, Delivery, Disconnect, Disposition, Event,
    FeedError, KeyId, MAX_CONNECTIONS, ReconnectReason, RecvStamp, SendError, age,
};
use super::limits::{Gcra, GcraRefusal};
use super::merge::{Merge, Merged, Output, held_delivery};
use crate::mux::Jitter;

mod lifecycle;

/// A sans-IO feed session: see the [module docs](super) for the driver's loop.
pub struct FeedSession {
    config: FeedConfig,
    slots: Vec<Slot>,
    merge: Merge,
    merge_out: Vec<Output>,
    queue: VecDeque<Queued>,
    actions: VecDeque<Action>,
    jitter: Jitter,
    ended: Option<FeedError>,
    lent: Option<usize>,
    /// The message being received, delivered with nothing queued before it (the data path's
    /// common case): handed out first by `poll_event`, without a trip through `queue`.
    lone: Option<Meta>,
    current_pending: bool,
    rotation: Option<(ConnId, ConnId)>,
    scratch: Vec<String>,
    messages: u64,
    delivered: u64,
    reconnects: u64,
    /// `poll_action`'s scans of the slots (sends due, connects due) found nothing, and no
    /// input since could have changed that: a data message that was only delivered, held or
    /// dropped leaves it set, so the data path does not scan the slots per message.
    quiet: bool,
}

/// Another message's events are still queued: drain `poll_event(payload)` with its payload
/// before the next `on_message`. Nothing was done with this message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Undrained;

impl core::fmt::Display for Undrained {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str("the previous message's events were not drained before on_message")
    }
}

impl std::error::Error for Undrained {}

enum Queued {
    Event(Event<'static>),
    Current(Meta),
    Held(usize),
}

#[derive(Clone, Copy)]
struct Meta {
    conn: ConnId,
    key: Option<KeyId>,
    seq: Option<u64>,
    stamp: RecvStamp,
}

impl Meta {
    #[inline]
    fn delivery(self, payload: &[u8]) -> Event<'_> {
        Event::Message(Delivery {
            conn: self.conn,
            key: self.key,
            seq: self.seq,
            stamp: self.stamp,
            payload,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Active,
    Joining,
    Spare,
}

#[derive(Debug, Clone, Copy)]
enum SlotState {
    Idle,
    Waiting { at: Instant },
    Connecting { deadline: Instant, attempt: u32 },
    Open(Open),
}

#[derive(Debug, Clone, Copy)]
struct Open {
    opened_at: Instant,
    last_data: Instant,
    last_received: Instant,
    heartbeat_deadline: Option<Instant>,
    ack_deadline: Option<Instant>,
    subscribe_sends: u32,
    acks_pending: u32,
    subscribed: bool,
    delivered_any: bool,
}

struct Slot {
    role: Role,
    state: SlotState,
    endpoint: usize,
    failures: u32,
    quota: Option<Gcra>,
    /// Texts to send, each with whether it is part of subscribing.
    outbox: VecDeque<(String, bool)>,
    send_wait: Option<Instant>,
    messages: u64,
    reconnects: u64,
}

impl FeedSession {
    /// A session that starts connecting every slot of the redundant set at once. `seed`
    /// seeds the back-off jitter (from the OS in production, fixed in a test).
    pub fn new(config: FeedConfig, seed: u64, now: Instant) -> Result<Self, ConfigError> {
        if config.endpoints.is_empty() {
            return Err(ConfigError::NoEndpoints);
        }
        if config.connections == 0 || config.connections >= MAX_CONNECTIONS {
            return Err(ConfigError::Connections(config.connections));
        }
        let slots = (0..=config.connections)
            .map(|index| {
                let spare = index == config.connections;
                Slot {
                    role: if spare { Role::Spare } else { Role::Active },
                    state: if spare {
                        SlotState::Idle
                    } else {
                        SlotState::Waiting { at: now }
                    },
                    endpoint: index % config.endpoints.len(),
                    failures: 0,
                    quota: None,
                    outbox: VecDeque::new(),
                    send_wait: None,
                    messages: 0,
                    reconnects: 0,
                }
            })
            .collect();
        let merge = Merge::new(
            config.max_keys,
            config.merge_wait,
            config.max_held,
            config.max_held_bytes,
        );
        Ok(Self {
            slots,
            merge,
            merge_out: Vec::with_capacity(16),
            queue: VecDeque::with_capacity(64),
            actions: VecDeque::with_capacity(MAX_CONNECTIONS),
            jitter: Jitter::seeded(seed),
            ended: None,
            lent: None,
            lone: None,
            current_pending: false,
            rotation: None,
            scratch: Vec::new(),
            messages: 0,
            delivered: 0,
            reconnects: 0,
            quiet: false,
            config,
        })
    }

    /// The next thing the driver must do, at `now`; call until `None` after every input
    /// (`on_*`, `handle_timeout`, `subscribe`, ...). Sends are charged to the quota here.
    pub fn poll_action(&mut self, now: Instant) -> Option<Action> {
        if let Some(action) = self.actions.pop_front() {
            return Some(action);
        }
        if self.ended.is_some() || self.quiet {
            return None;
        }
        for index in 0..self.slots.len() {
            if let Some(action) = self.next_send(index, now) {
                return Some(action);
            }
        }
        for index in 0..self.slots.len() {
            if let Some(action) = self.next_connect(index, now) {
                return Some(action);
            }
        }
        self.quiet = true;
        None
    }

    /// Whether [`poll_action`](Self::poll_action) may have an action: `false` when it would
    /// return `None` without reading `now`, so a driver need not read the clock for it
    /// (the data path: a message delivered changes nothing the actions depend on).
    pub fn wants_poll(&self) -> bool {
        !self.actions.is_empty() || (!self.quiet && self.ended.is_none())
    }

    /// The next event, in order. `current` is the payload of the message last given to
    /// [`on_message`](Self::on_message) (its [`Event::Message`] borrows it; pass `&[]`
    /// when there is none). Drain until `None` before the next `on_message`.
    pub fn poll_event<'a>(&'a mut self, current: &'a [u8]) -> Option<Event<'a>> {
        if let Some(index) = self.lent.take() {
            self.merge.release(index);
        }
        if let Some(meta) = self.lone.take() {
            self.current_pending = false;
            return Some(meta.delivery(current));
        }
        match self.queue.pop_front()? {
            Queued::Event(event) => Some(event),
            Queued::Current(meta) => {
                self.current_pending = false;
                Some(meta.delivery(current))
            }
            Queued::Held(index) => {
                self.lent = Some(index);
                let (held, payload) = self.merge.held(index)?;
                Some(held_delivery(held, payload))
            }
        }
    }

    /// Whether [`poll_event`](Self::poll_event) has an event to give: a driver that must
    /// return one event borrowed from the session checks here before it waits for input.
    pub fn has_event(&self) -> bool {
        self.lone.is_some() || !self.queue.is_empty()
    }

    /// The configuration, as changed since (the subscription set is the live one).
    pub fn config(&self) -> &FeedConfig {
        &self.config
    }

    /// When [`handle_timeout`](Self::handle_timeout) (and then `poll_action`) must run
    /// next; `None`: only an input can change anything.
    pub fn poll_timeout(&self) -> Option<Instant> {
        if self.ended.is_some() {
            return None;
        }
        let mut earliest = self.merge.poll_timeout();
        let mut consider = |at: Option<Instant>| {
            if let Some(at) = at {
                earliest = Some(earliest.map_or(at, |e: Instant| e.min(at)));
            }
        };
        for slot in &self.slots {
            match slot.state {
                SlotState::Idle => {}
                SlotState::Waiting { at } => consider(Some(at)),
                SlotState::Connecting { deadline, .. } => consider(Some(deadline)),
                SlotState::Open(open) => {
                    consider(self.config.stale_after.map(|t| open.last_data + t));
                    consider(open.ack_deadline);
                    if let Some(heartbeat) = &self.config.heartbeat {
                        consider(Some(
                            open.heartbeat_deadline
                                .unwrap_or(open.last_received + heartbeat.after_quiet),
                        ));
                    }
                    if !slot.outbox.is_empty() {
                        consider(slot.send_wait);
                    }
                    if slot.role == Role::Active && self.rotation.is_none() {
                        consider(self.config.rotate_after.map(|t| open.opened_at + t));
                    }
                }
            }
        }
        earliest
    }

    /// Runs the timers due at `now`: connect, acknowledgement and heartbeat deadlines, stale
    /// connections, heartbeats to send, rotations due, held messages that waited enough.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.quiet = false;
        if self.ended.is_some() {
            return;
        }
        for index in 0..self.slots.len() {
            self.slot_timers(index, now);
        }
        if self.rotation.is_none()
            && let Some(after) = self.config.rotate_after
        {
            let due = self.slots.iter().position(|slot| {
                slot.role == Role::Active
                    && matches!(slot.state, SlotState::Open(open) if age(now, open.opened_at) >= after)
            });
            if let Some(index) = due {
                self.start_rotation(index, now);
            }
        }
        self.merge.handle_timeout(now, &mut self.merge_out);
        self.flush_merge(None);
    }

    /// The driver opened `conn` (the WebSocket handshake succeeded) at `now`.
    pub fn on_open(&mut self, conn: ConnId, now: Instant) {
        self.quiet = false;
        let Some(slot) = self.slots.get_mut(conn.index()) else {
            return;
        };
        let SlotState::Connecting { attempt, .. } = slot.state else {
            return;
        };
        slot.quota = self.config.send_quota.map(Gcra::new);
        slot.outbox.clear();
        slot.send_wait = None;
        if let Some(login) = &self.config.login {
            slot.outbox.push_back((login.clone(), true));
        }
        self.scratch.clear();
        build_subscribe(&self.config, &self.config.subscriptions, &mut self.scratch);
        let subscribe_messages = self.scratch.len() as u32;
        slot.outbox
            .extend(self.scratch.drain(..).map(|text| (text, true)));
        let acks_pending = if self.config.ack.is_some() {
            subscribe_messages
        } else {
            0
        };
        slot.state = SlotState::Open(Open {
            opened_at: now,
            last_data: now,
            last_received: now,
            heartbeat_deadline: None,
            ack_deadline: (acks_pending > 0).then(|| now + self.config.ack_timeout),
            subscribe_sends: slot.outbox.len() as u32,
            acks_pending,
            subscribed: false,
            delivered_any: false,
        });
        let endpoint = slot.endpoint;
        self.merge.conn_up(conn);
        self.push(Event::Connected {
            conn,
            attempt,
            endpoint,
        });
        self.check_subscribed(conn.index());
    }

    /// The attempt for `conn` failed before it opened.
    pub fn on_connect_failed(&mut self, conn: ConnId, why: Disconnect, now: Instant) {
        self.quiet = false;
        if matches!(
            self.slots.get(conn.index()).map(|slot| slot.state),
            Some(SlotState::Connecting { .. })
        ) {
            self.fail(conn.index(), ReconnectReason::Disconnect(why), now);
        }
    }

    /// The open connection `conn` ended (not after an [`Action::Close`] for it).
    pub fn on_closed(&mut self, conn: ConnId, why: Disconnect, now: Instant) {
        self.quiet = false;
        if matches!(
            self.slots.get(conn.index()).map(|slot| slot.state),
            Some(SlotState::Open(_) | SlotState::Connecting { .. })
        ) {
            self.fail(conn.index(), ReconnectReason::Disconnect(why), now);
        }
    }

    /// Drops the open (or connecting) connection `conn` and replaces it, as for a stale one:
    /// the driver is told to drop its socket ([`Action::Close`] without a code), and
    /// [`Event::Closed`] and [`Event::Reconnecting`] carry `reason`. `false` when `conn` was
    /// neither.
    pub fn replace(&mut self, conn: ConnId, reason: ReconnectReason, now: Instant) -> bool {
        self.quiet = false;
        if !matches!(
            self.slots.get(conn.index()).map(|slot| slot.state),
            Some(SlotState::Open(_) | SlotState::Connecting { .. })
        ) {
            return false;
        }
        self.actions.push_back(Action::Close { conn, code: None });
        self.fail(conn.index(), reason, now);
        true
    }

    /// A complete text or binary message received on `conn` at `now`, read at `stamp`. Then
    /// drain [`poll_event`](Self::poll_event)`(payload)`: with [`Disposition::Deliver`] the
    /// message's event is among those queued, after any gap before it and before held
    /// messages it released.
    pub fn on_message(
        &mut self,
        conn: ConnId,
        payload: &[u8],
        stamp: RecvStamp,
        now: Instant,
    ) -> Result<Disposition, Undrained> {
        if self.current_pending {
            return Err(Undrained);
        }
        if self.ended.is_some() {
            return Ok(Disposition::Ignored);
        }
        let index = conn.index();
        let Some(Slot {
            state: SlotState::Open(open),
            ..
        }) = self.slots.get_mut(index)
        else {
            return Ok(Disposition::Ignored);
        };
        open.last_received = now;
        if let Some(answer) = &self.config.answer_ping
            && let Some(reply) = answer(payload)
        {
            self.slots[index].outbox.push_back((reply, false));
            self.quiet = false;
            return Ok(Disposition::Control);
        }
        if let Some(heartbeat) = &self.config.heartbeat
            && (heartbeat.reply)(payload)
        {
            open.heartbeat_deadline = None;
            return Ok(Disposition::Control);
        }
        if open.acks_pending > 0
            && let Some(ack) = &self.config.ack
            && ack(payload)
        {
            open.acks_pending -= 1;
            if open.acks_pending == 0 {
                open.ack_deadline = None;
            }
            self.quiet = false;
            self.check_subscribed(index);
            return Ok(Disposition::Control);
        }
        open.last_data = now;
        open.delivered_any = true;
        self.slots[index].messages += 1;
        self.messages += 1;
        let sequenced = self.config.sequence.as_ref().and_then(|f| f(payload));
        // What the message is, and the key and number it goes out with when it goes out now.
        let (disposition, current) = match sequenced {
            Some((key, seq)) => {
                let merged =
                    self.merge
                        .on_message(conn, key, seq, stamp, payload, now, &mut self.merge_out);
                match merged {
                    Merged::Alone(key) => (Disposition::Deliver, Some((Some(key), Some(seq)))),
                    Merged::Deliver(key) => {
                        self.flush_merge(Some(Meta {
                            conn,
                            key: Some(key),
                            seq: Some(seq),
                            stamp,
                        }));
                        (Disposition::Deliver, None)
                    }
                    Merged::Held => {
                        self.flush_merge(None);
                        (Disposition::Held, None)
                    }
                    Merged::Duplicate => {
                        self.flush_merge(None);
                        (Disposition::Duplicate, None)
                    }
                    Merged::Unkeyed(first) => {
                        if first {
                            self.push(Event::KeyLimit {
                                max_keys: self.config.max_keys,
                            });
                        }
                        (Disposition::Deliver, Some((None, Some(seq))))
                    }
                }
            }
            None => (Disposition::Deliver, Some((None, None))),
        };
        if let Some((key, seq)) = current {
            self.queue_current(Meta {
                conn,
                key,
                seq,
                stamp,
            });
        }
        if self.rotation.is_some() {
            self.quiet = false;
            self.check_rotation(conn);
        }
        Ok(disposition)
    }

    /// Charges a user's send of `weight` units on `conn` at `now` to its quota, or says why
    /// not (nothing charged). The driver sends only after `Ok`.
    pub fn try_send(&mut self, conn: ConnId, weight: u32, now: Instant) -> Result<(), SendError> {
        let Some(slot) = self.slots.get_mut(conn.index()) else {
            return Err(SendError::NotOpen);
        };
        if !matches!(slot.state, SlotState::Open(_)) {
            return Err(SendError::NotOpen);
        }
        let Some(quota) = &mut slot.quota else {
            return Ok(());
        };
        quota
            .try_take(now, weight)
            .map_err(|refusal| match refusal {
                GcraRefusal::Wait(retry_after) => SendError::RateLimited { retry_after },
                GcraRefusal::OverBurst(burst) => SendError::WeightOverBurst { weight, burst },
            })
    }

    /// The driver sent a WebSocket control frame (a ping, pong or close the protocol owed)
    /// on `conn`: charged to the quota when it counts control frames, never refused.
    pub fn on_control_sent(&mut self, conn: ConnId, now: Instant) {
        if let Some(Slot {
            quota: Some(quota), ..
        }) = self.slots.get_mut(conn.index())
            && quota.counts_control_frames()
        {
            quota.force_take(now, 1);
        }
    }

    /// Adds `topic` to the subscription set and subscribes every open connection to it.
    pub fn subscribe(&mut self, topic: impl Into<String>, now: Instant) {
        self.quiet = false;
        let topic = topic.into();
        self.scratch.clear();
        build_subscribe(
            &self.config,
            core::slice::from_ref(&topic),
            &mut self.scratch,
        );
        self.config.subscriptions.push(topic);
        let with_ack = self.config.ack.is_some();
        let ack_deadline = now + self.config.ack_timeout;
        for slot in &mut self.slots {
            if let SlotState::Open(open) = &mut slot.state {
                let count = self.scratch.len() as u32;
                slot.outbox
                    .extend(self.scratch.iter().map(|text| (text.clone(), true)));
                open.subscribe_sends += count;
                if with_ack && count > 0 {
                    open.acks_pending += count;
                    open.ack_deadline.get_or_insert(ack_deadline);
                }
                open.subscribed = false;
            }
        }
    }

    /// Removes `topic` from the set (`false` if it was not in it) and sends the
    /// unsubscribe messages, if configured, on every open connection.
    pub fn unsubscribe(&mut self, topic: &str) -> bool {
        self.quiet = false;
        let Some(position) = self.config.subscriptions.iter().position(|t| t == topic) else {
            return false;
        };
        let removed = self.config.subscriptions.remove(position);
        self.scratch.clear();
        if let Some(build) = &self.config.unsubscribe_with {
            build(core::slice::from_ref(&removed), &mut self.scratch);
        }
        for slot in &mut self.slots {
            if matches!(slot.state, SlotState::Open(_)) {
                slot.outbox
                    .extend(self.scratch.iter().map(|text| (text.clone(), false)));
            }
        }
        true
    }

    /// The current subscription set.
    pub fn subscriptions(&self) -> &[String] {
        &self.config.subscriptions
    }

    /// Starts a make-before-break rotation of `conn` now; `false` when it is not an open
    /// connection of the redundant set or a rotation is already under way.
    pub fn rotate(&mut self, conn: ConnId, now: Instant) -> bool {
        self.quiet = false;
        let open_active = self.slots.get(conn.index()).is_some_and(|slot| {
            slot.role == Role::Active && matches!(slot.state, SlotState::Open(_))
        });
        if !open_active || self.rotation.is_some() || self.ended.is_some() {
            return false;
        }
        self.start_rotation(conn.index(), now);
        true
    }

    /// Ends the session: every connection is closed with 1000, held messages go out, and
    /// [`Event::Ended`] with [`FeedError::Closed`] follows.
    pub fn close(&mut self) {
        self.quiet = false;
        self.end(None, FeedError::Closed);
    }

    /// Why the session ended, once it has.
    pub fn ended(&self) -> Option<FeedError> {
        self.ended
    }

    /// The bytes of an interned key.
    pub fn key_bytes(&self, key: KeyId) -> Option<&[u8]> {
        self.merge.key_bytes(key)
    }

    /// A snapshot of the counters at `now`.
    pub fn counters(&self, now: Instant) -> Counters {
        let mut connections = [ConnFigures::default(); MAX_CONNECTIONS];
        for (index, (slot, figures)) in self.slots.iter().zip(&mut connections).enumerate() {
            let merged = self.merge.figures[index];
            *figures = ConnFigures {
                state: match slot.state {
                    SlotState::Idle => ConnState::Spare,
                    SlotState::Waiting { .. } => ConnState::Waiting,
                    SlotState::Connecting { .. } => ConnState::Connecting,
                    SlotState::Open(open) if open.subscribed => ConnState::Live,
                    SlotState::Open(_) => ConnState::Subscribing,
                },
                messages: slot.messages,
                first_arrivals: merged.first_arrivals,
                duplicates: merged.duplicates,
                lag: merged.lag,
                last_message_age: match slot.state {
                    SlotState::Open(open) => Some(age(now, open.last_data)),
                    _ => None,
                },
                reconnects: slot.reconnects,
            };
        }
        Counters {
            messages: self.messages,
            delivered: self.delivered,
            gaps: self.merge.gaps,
            missing: self.merge.missing,
            duplicates: self.merge.duplicates,
            reconnects: self.reconnects,
            keys: self.merge.key_count(),
            held: self.merge.held_count(),
            connections,
            slots: self.slots.len(),
        }
    }

    fn push(&mut self, event: Event<'static>) {
        self.queue.push_back(Queued::Event(event));
    }

    #[inline]
    fn queue_current(&mut self, meta: Meta) {
        self.current_pending = true;
        self.delivered += 1;
        if self.queue.is_empty() {
            // Everything queued later comes after it, so it goes out first.
            self.lone = Some(meta);
        } else {
            self.queue.push_back(Queued::Current(meta));
        }
    }

    /// Moves the merge's output to the queue; `current` is the message being received.
    fn flush_merge(&mut self, current: Option<Meta>) {
        let resync = self.config.resync_on_gap;
        // Taken for the loop and put back after, its capacity kept: no allocation.
        let mut outputs = core::mem::take(&mut self.merge_out);
        for output in outputs.drain(..) {
            match output {
                Output::Current => {
                    if let Some(meta) = current {
                        self.queue_current(meta);
                    }
                }
                Output::Held(index) => {
                    self.delivered += 1;
                    self.queue.push_back(Queued::Held(index));
                }
                Output::Gap { key, from, to } => {
                    self.queue
                        .push_back(Queued::Event(Event::Gap { key, from, to }));
                    if resync {
                        self.queue.push_back(Queued::Event(Event::Resync { key }));
                    }
                }
            }
        }
        self.merge_out = outputs;
    }
}

fn build_subscribe(config: &FeedConfig, topics: &[String], out: &mut Vec<String>) {
    match &config.subscribe_with {
        Some(build) => build(topics, out),
        None => out.extend(topics.iter().cloned()),
    }
}
