//! The worker's event loop: poll, dispatch each event (the listener, the waker, a
//! connection), then the end of a wake-up (the batch of replies, commands this thread queued
//! for itself, the topic rounds, a blocked accept retried, the timers, the end of a shutdown),
//! and busy polling between wake-ups (`spin`).
//!
//! It owns the order of a wake-up, accepting, the commands of other threads, timers and
//! shutdown. It does not own what a connection does with an event (`phases`) or a round
//! (`rounds`).

use std::io::{self, Write};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Token};
use tickwire_codec::ws::CloseCode;

use super::marks::End;
use super::peer::Phase;
use super::serving::Reading;
use super::spin::Spin;
use super::{LISTENER, SERVICE_UNAVAILABLE, WAKER, Worker};
use crate::handle::Command;
use crate::handler::{DisconnectKind, Handler, HandshakeFailure};
use crate::topic::Subscription;
use crate::transport::Transport;
use crate::wheel::{TICK, UNARMED};

impl<H: Handler, T: Transport> Worker<H, T> {
    pub(crate) fn run(mut self) -> io::Result<()> {
        let mut spin = Spin::new(self.settings.busy_poll);
        // Until then, an empty poll is retried at once instead of sleeping (busy polling).
        let mut spin_until = self.now;
        // When the last wake-up's work was done, while no event has come since.
        let mut idle_since = None;
        let mut worked = false;
        loop {
            // Replies made after the events (commands, topic rounds, timers) go out before
            // the worker sleeps.
            self.send_replies();
            if worked && spin.active() {
                let done = Instant::now();
                idle_since = Some(done);
                spin_until = done + spin.window();
            }
            let mut timeout = self.wheel.timeout(self.now);
            if self.accept_blocked {
                timeout = Some(timeout.map_or(TICK, |t| t.min(TICK)));
            }
            if let Some(at) = self.shutdown_at {
                if self.live == 0 {
                    return Ok(());
                }
                let left = at.saturating_duration_since(self.now);
                timeout = Some(timeout.map_or(left, |t| t.min(left)));
            }
            if self.topics.has_pending() || crate::handle::self_queued() {
                timeout = Some(Duration::ZERO);
            } else if self.now < spin_until {
                timeout = Some(Duration::ZERO);
                if !worked {
                    // Polling with nothing to do: let whatever else wants this core run
                    // first (the network's softirq thread, a kernel worker).
                    std::thread::yield_now();
                }
            }
            let mut events = std::mem::replace(&mut self.events, Events::with_capacity(0));
            match self.poll.poll(&mut events, timeout) {
                Ok(()) => {}
                Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                Err(error) => return Err(error),
            }
            self.now = Instant::now();
            worked = !events.is_empty();
            if worked && let Some(since) = idle_since.take() {
                spin.observe(self.now.saturating_duration_since(since));
            }
            self.dispatch(&events);
            self.events = events;
            if self.end_wakeup() {
                return Ok(());
            }
        }
    }

    /// Hands each event to the listener, the command queue or its connection.
    fn dispatch(&mut self, events: &Events) {
        for event in events.iter() {
            match event.token().0 {
                LISTENER => self.accept(),
                WAKER => self.drain_commands(),
                index => {
                    let reading = if event.is_read_closed() || event.is_error() {
                        Reading::ToWouldBlock
                    } else if event.is_readable() {
                        Reading::Readable
                    } else {
                        Reading::No
                    };
                    let writable = event.is_writable() || event.is_write_closed();
                    self.on_event(index as u32, reading, writable);
                }
            }
        }
    }

    /// The end of a wake-up, once its events are handled; true when the shutdown's grace
    /// period is over and every connection has been dropped.
    fn end_wakeup(&mut self) -> bool {
        // The wake-up's replies go out before anything else touches the connections.
        self.send_replies();
        // Commands this thread queued for itself (a handler publishing) woke nothing.
        if crate::handle::take_self_queued() {
            self.drain_commands();
        }
        self.topics_round();
        if self.accept_blocked {
            self.accept_blocked = false;
            self.accept();
        }
        self.run_timers();
        if let Some(at) = self.shutdown_at
            && self.now >= at
        {
            self.end_all(DisconnectKind::Shutdown);
            return true;
        }
        false
    }

    fn accept(&mut self) {
        loop {
            let Some(listener) = &self.listener else {
                return;
            };
            match listener.accept() {
                Ok((stream, peer)) => self.admit(stream, peer),
                Err(error) => match error.kind() {
                    io::ErrorKind::WouldBlock => return,
                    io::ErrorKind::Interrupted | io::ErrorKind::ConnectionAborted => {}
                    // EMFILE, ENFILE, ENOBUFS, ENOMEM: the pending connections stay queued;
                    // try again on the next tick rather than spinning.
                    _ => {
                        self.accept_blocked = true;
                        return;
                    }
                },
            }
        }
    }

    fn admit(&mut self, mut socket: TcpStream, peer: std::net::SocketAddr) {
        if self.live >= self.settings.max_connections {
            // A plain client reads the refusal; a TLS client sees the connection end.
            if !T::TLS {
                let _ = socket.write(SERVICE_UNAVAILABLE);
            }
            let _ = socket.shutdown(std::net::Shutdown::Write);
            let handler = &mut self.handler;
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                handler.on_handshake_error(Some(peer), HandshakeFailure::OverCapacity);
            }));
            return;
        }
        if self.settings.nodelay {
            let _ = socket.set_nodelay(true);
        }
        if let Some(size) = self.settings.socket_send_buffer {
            let _ = socket2::SockRef::from(&socket).set_send_buffer_size(size);
        }
        let Ok(mut stream) = T::accept(socket, &self.setup) else {
            return;
        };
        let index = self.take_slot();
        if self
            .poll
            .registry()
            .register(
                stream.socket(),
                Token(index as usize),
                Interest::READABLE | Interest::WRITABLE,
            )
            .is_err()
        {
            self.put_slot(index);
            return;
        }
        let tick = self
            .wheel
            .tick_of(self.now + self.settings.handshake_timeout);
        let slot = &mut self.slots[index as usize];
        slot.phase = Phase::Handshake(None);
        slot.stream = Some(stream);
        slot.armed = tick;
        self.wheel.insert(index, tick);
        self.live += 1;
    }

    fn on_event(&mut self, index: u32, reading: Reading, writable: bool) {
        let Some(slot) = self.slots.get(index as usize) else {
            return;
        };
        match slot.phase {
            Phase::Free { .. } => {}
            Phase::Handshake(_) if slot.marks.flags.lingering() => {
                if reading != Reading::No {
                    self.linger(index);
                }
            }
            Phase::Handshake(_) => {
                if writable {
                    self.flush_handshake(index);
                }
                if reading != Reading::No {
                    self.handshake(index);
                }
            }
            Phase::Responding(_) => {
                if writable {
                    self.respond_rest(index);
                }
            }
            Phase::Open(_) => self.serve(index, reading),
        }
    }

    fn drain_commands(&mut self) {
        while let Ok(command) = self.commands.try_recv() {
            match command {
                Command::Shutdown(grace) => self.shutdown(grace),
                Command::Send(id, opcode, payload) => {
                    self.with_open(id, |conn, bufs, _| {
                        let _ = conn.sender(bufs).message(opcode, &payload);
                    });
                }
                Command::Shared(id, frame) => {
                    self.with_open(id, |conn, bufs, _| {
                        let _ = conn.sender(bufs).shared(&frame);
                    });
                }
                Command::Subscribe(id, topic) => {
                    self.change_subscription(Subscription {
                        id,
                        topic,
                        subscribe: true,
                    });
                }
                Command::Unsubscribe(id, topic) => {
                    self.change_subscription(Subscription {
                        id,
                        topic,
                        subscribe: false,
                    });
                }
                Command::Publish(publication) => self.topics.queue(publication),
                Command::Resume(id, topic, after, items) => {
                    self.resume(id, &topic, after, items);
                }
                Command::Close(id, code, reason) => {
                    self.with_open(id, |conn, bufs, now| {
                        let _ = conn.close(bufs, code, &reason, now);
                    });
                }
            }
        }
    }

    fn run_timers(&mut self) {
        let mut due = std::mem::take(&mut self.due);
        self.wheel.expire(self.now, &mut due);
        for entry in due.drain(..) {
            let slot = &mut self.slots[entry.slot as usize];
            if slot.armed != entry.tick {
                continue;
            }
            slot.armed = UNARMED;
            if slot.marks.flags.lingering() {
                self.finish(entry.slot, End::FAILED);
                continue;
            }
            match slot.phase {
                Phase::Free { .. } => {}
                // The opening handshake took too long (a trickled request included).
                Phase::Handshake(_) => self.drop_handshake(entry.slot, HandshakeFailure::Timeout),
                Phase::Responding(_) => self.finish(entry.slot, End::FAILED),
                Phase::Open(_) => self.serve(entry.slot, Reading::No),
            }
        }
        self.due = due;
    }

    fn shutdown(&mut self, grace: Duration) {
        if let Some(mut listener) = self.listener.take() {
            let _ = self.poll.registry().deregister(&mut listener);
        }
        self.accept_blocked = false;
        self.shutdown_at = Some(self.now + grace);
        for index in 0..self.slots.len() as u32 {
            match self.slots[index as usize].phase {
                Phase::Free { .. } => {}
                Phase::Handshake(_) | Phase::Responding(_) => self.finish(
                    index,
                    End {
                        kind: DisconnectKind::Shutdown,
                        code: None,
                    },
                ),
                Phase::Open(_) => {
                    let id = self.id(index);
                    self.with_open(id, |conn, bufs, now| {
                        let _ = conn.close(bufs, CloseCode::GOING_AWAY, "", now);
                    });
                }
            }
        }
    }

    /// Drops every remaining connection (the grace period is over).
    fn end_all(&mut self, kind: DisconnectKind) {
        for index in 0..self.slots.len() as u32 {
            if !matches!(self.slots[index as usize].phase, Phase::Free { .. }) {
                self.finish(
                    index,
                    End {
                        kind,
                        code: Some(CloseCode::GOING_AWAY),
                    },
                );
            }
        }
    }
}
