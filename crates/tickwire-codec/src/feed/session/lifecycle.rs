//! The slots' life cycle behind [`FeedSession`]'s public calls: sends through the quota,
//! connects through the budget, the timers of an open connection, failure and back-off,
//! rotation, subscription state and the end of the session.

use std::time::{Duration, Instant};

use super::{FeedSession, Role, SlotState};
use crate::feed::event::{Action, ConnId, Event, FeedError, Limited, ReconnectReason, age};
use crate::feed::limits::GcraRefusal;

impl FeedSession {
    pub(super) fn next_send(&mut self, index: usize, now: Instant) -> Option<Action> {
        let slot = &mut self.slots[index];
        if !matches!(slot.state, SlotState::Open(_)) || slot.outbox.is_empty() {
            return None;
        }
        if let Some(quota) = &mut slot.quota {
            match quota.try_take(now, 1) {
                Ok(()) => slot.send_wait = None,
                Err(refusal) => {
                    // A weight of 1 is never over the burst (at least 1).
                    let wait = match refusal {
                        GcraRefusal::Wait(wait) => wait,
                        GcraRefusal::OverBurst(_) => Duration::ZERO,
                    };
                    let first = slot.send_wait.is_none();
                    slot.send_wait = Some(now + wait);
                    if first {
                        self.push(Event::RateLimited {
                            conn: ConnId(index as u8),
                            limited: Limited::Send,
                            wait,
                        });
                    }
                    return None;
                }
            }
        }
        let (text, subscribing) = slot.outbox.pop_front()?;
        if subscribing && let SlotState::Open(open) = &mut slot.state {
            open.subscribe_sends = open.subscribe_sends.saturating_sub(1);
        }
        self.check_subscribed(index);
        Some(Action::Send {
            conn: ConnId(index as u8),
            text,
        })
    }

    pub(super) fn next_connect(&mut self, index: usize, now: Instant) -> Option<Action> {
        let slot = &mut self.slots[index];
        let SlotState::Waiting { at } = slot.state else {
            return None;
        };
        if at > now {
            return None;
        }
        if let Some(budget) = &self.config.connect_budget
            && let Err(free_at) = budget.try_acquire(now)
        {
            slot.state = SlotState::Waiting { at: free_at };
            self.push(Event::RateLimited {
                conn: ConnId(index as u8),
                limited: Limited::Connect,
                wait: free_at - now,
            });
            return None;
        }
        let attempt = slot.failures + 1;
        slot.state = SlotState::Connecting {
            deadline: now + self.config.connect_timeout,
            attempt,
        };
        Some(Action::Connect {
            conn: ConnId(index as u8),
            endpoint: slot.endpoint,
            attempt,
        })
    }

    pub(super) fn slot_timers(&mut self, index: usize, now: Instant) {
        let conn = ConnId(index as u8);
        match self.slots[index].state {
            SlotState::Connecting { deadline, .. } if deadline <= now => {
                self.actions.push_back(Action::Close { conn, code: None });
                self.fail(index, ReconnectReason::ConnectTimeout, now);
            }
            SlotState::Open(open) => {
                let reason = if self
                    .config
                    .stale_after
                    .is_some_and(|t| age(now, open.last_data) >= t)
                {
                    self.push(Event::Stale {
                        conn,
                        silent_for: age(now, open.last_data),
                    });
                    Some(ReconnectReason::Stale)
                } else if open.heartbeat_deadline.is_some_and(|d| d <= now) {
                    Some(ReconnectReason::HeartbeatTimeout)
                } else if open.ack_deadline.is_some_and(|d| d <= now) {
                    Some(ReconnectReason::AckTimeout)
                } else {
                    None
                };
                if let Some(reason) = reason {
                    self.actions.push_back(Action::Close { conn, code: None });
                    self.fail(index, reason, now);
                    return;
                }
                if let Some(heartbeat) = &self.config.heartbeat
                    && open.heartbeat_deadline.is_none()
                    && age(now, open.last_received) >= heartbeat.after_quiet
                {
                    let slot = &mut self.slots[index];
                    slot.outbox.push_back((heartbeat.text.clone(), false));
                    if let SlotState::Open(open) = &mut slot.state {
                        open.heartbeat_deadline = Some(now + heartbeat.deadline);
                    }
                }
            }
            _ => {}
        }
    }

    /// Slot `index` failed at `now`: close it out, then back off or end the session.
    pub(super) fn fail(&mut self, index: usize, reason: ReconnectReason, now: Instant) {
        let conn = ConnId(index as u8);
        let slot = &mut self.slots[index];
        slot.outbox.clear();
        slot.send_wait = None;
        // A connection that stayed up starts the back-off over, and its loss is no failed
        // attempt; one that dropped early counts as one.
        let mut stable = false;
        if let SlotState::Open(open) = slot.state {
            if age(now, open.opened_at) >= self.config.reconnect.stable_after {
                slot.failures = 0;
                stable = true;
            }
            slot.state = SlotState::Idle;
            self.merge.conn_down(conn, &mut self.merge_out);
            self.flush_merge(None);
            self.push(Event::Closed { conn, reason });
            if let Some((old, new)) = self.rotation
                && old == conn
                && matches!(self.slots[new.index()].state, SlotState::Open(_))
            {
                // The connection being replaced went first: its replacement takes over.
                self.finish_rotation(old, new, false);
                return;
            }
        }
        let slot = &mut self.slots[index];
        if !stable {
            slot.failures = slot.failures.saturating_add(1);
        }
        slot.reconnects += 1;
        self.reconnects += 1;
        let failures = slot.failures;
        // A rotation's new connection failing ends nothing: the old one still serves, and
        // the spare keeps trying within the back-off.
        let capped = slot.role != Role::Joining;
        if !stable
            && capped
            && self
                .config
                .reconnect
                .max_attempts
                .is_some_and(|max| failures >= max)
        {
            slot.state = SlotState::Idle;
            let error = FeedError::AttemptsExhausted {
                conn,
                attempts: failures,
                last: reason,
            };
            self.end(Some(index), error);
            return;
        }
        let policy = self.config.reconnect;
        let delay =
            policy
                .backoff
                .jittered(failures.saturating_sub(1), policy.factor, &mut self.jitter);
        self.slots[index].state = SlotState::Waiting { at: now + delay };
        self.push(Event::Reconnecting {
            conn,
            reason,
            delay,
        });
    }

    pub(super) fn start_rotation(&mut self, old: usize, now: Instant) {
        let Some(spare) = self.slots.iter().position(|slot| slot.role == Role::Spare) else {
            return;
        };
        let endpoint = self.slots[old].endpoint;
        let slot = &mut self.slots[spare];
        slot.role = Role::Joining;
        slot.endpoint = endpoint;
        slot.failures = 0;
        slot.state = SlotState::Waiting { at: now };
        self.rotation = Some((ConnId(old as u8), ConnId(spare as u8)));
    }

    /// After a message on `conn`: the rotation switches once the joining connection is
    /// subscribed and caught up with the one it replaces, and no hole waits to be filled.
    pub(super) fn check_rotation(&mut self, conn: ConnId) {
        let Some((old, new)) = self.rotation else {
            return;
        };
        if conn != new {
            return;
        }
        let SlotState::Open(open) = self.slots[new.index()].state else {
            return;
        };
        if !open.subscribed || !open.delivered_any {
            return;
        }
        // Nothing held either: a held message sits above a hole the old one may still fill.
        let caught_up = self.config.sequence.is_none()
            || (self.merge.caught_up(new, old) && self.merge.held_count() == 0);
        if caught_up {
            self.finish_rotation(old, new, true);
        }
    }

    pub(super) fn finish_rotation(&mut self, old: ConnId, new: ConnId, close_old: bool) {
        if close_old {
            self.actions.push_back(Action::Close {
                conn: old,
                code: Some(1000),
            });
            self.merge.conn_down(old, &mut self.merge_out);
            self.flush_merge(None);
        }
        let retired = &mut self.slots[old.index()];
        retired.role = Role::Spare;
        retired.state = SlotState::Idle;
        retired.outbox.clear();
        self.slots[new.index()].role = Role::Active;
        self.rotation = None;
        self.push(Event::Rotated { from: old, to: new });
    }

    pub(super) fn check_subscribed(&mut self, index: usize) {
        if let SlotState::Open(open) = &mut self.slots[index].state
            && !open.subscribed
            && open.subscribe_sends == 0
            && open.acks_pending == 0
        {
            open.subscribed = true;
            self.push(Event::Subscribed {
                conn: ConnId(index as u8),
            });
        }
    }

    /// Ends the session: every other slot is closed with 1000 (`failed` is already gone).
    pub(super) fn end(&mut self, failed: Option<usize>, error: FeedError) {
        if self.ended.is_some() {
            return;
        }
        for index in 0..self.slots.len() {
            let conn = ConnId(index as u8);
            let state = self.slots[index].state;
            if Some(index) != failed
                && matches!(state, SlotState::Open(_) | SlotState::Connecting { .. })
            {
                self.actions.push_back(Action::Close {
                    conn,
                    code: Some(1000),
                });
            }
            if matches!(state, SlotState::Open(_)) {
                self.merge.conn_down(conn, &mut self.merge_out);
                self.flush_merge(None);
            }
            self.slots[index].state = SlotState::Idle;
            self.slots[index].outbox.clear();
        }
        self.ended = Some(error);
        self.push(Event::Ended(error));
    }
}
