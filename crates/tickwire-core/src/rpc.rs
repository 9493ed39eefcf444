//! Order entry over a feed's connections: [`Rpc`], an [`RpcSession`] driven over a
//! [`Feed`], the same for the blocking and the tokio transport. What the session decides is
//! the codec's ([`tickwire_codec::rpc`]); what this module adds is the glue both drivers
//! share: requests written through the feed's sockets under its send quotas, the feed's
//! events fed to the session with their receive times, the login's failures turned into
//! the feed's actions. A transport's [`RpcIo`] has only its loop (waiting, `.await`).

use std::time::{Duration, Instant};

use tickwire_codec::feed::{self, ConfigError, ConnId, FeedConfig, ReconnectReason, SendError};
use tickwire_codec::rpc::{
    Absorbed, Event, Rejected, Request, RpcConfig, RpcCounters, RpcError, RpcSession, Ticket,
};

use crate::feed::{Feed, FeedControl, FeedIo};
use crate::ws::ClientOptions;

/// Requests and responses over a feed's connections. Use the transport's alias
/// (`tickwire_blocking::rpc::Rpc`, `tickwire_tokio::rpc::Rpc`).
pub struct Rpc<X> {
    feed: Feed<X>,
    session: RpcSession,
}

/// A transport's loop for an [`Rpc`]: what [`Rpc::next_event`] returns and how it waits.
pub trait RpcIo: FeedIo {
    /// The next event (or `None` once the session ended), or a future of it.
    type NextRpc<'a>
    where
        Self: 'a;

    /// Waits for the next event.
    fn next_rpc_event(rpc: &mut Rpc<Self>) -> Self::NextRpc<'_>;
}

/// What an [`Rpc`] has before it waits, for its driver.
#[doc(hidden)]
#[derive(Debug)]
pub enum Before {
    /// An event the session queued: hand it out.
    Event(Event<'static>),
    /// The session ended and its feed has nothing more: `None`.
    Done,
    /// Wait for the feed's next event (the feed wakes by itself for the session's timers).
    Wait,
}

/// Takes what the feed's wait gave, for the driver (while the feed is borrowed by it).
#[doc(hidden)]
pub struct Waiter<'a> {
    session: &'a mut RpcSession,
    /// The feed's clock origin: a receive stamp's `recv_ns` counts from it.
    epoch: Instant,
}

impl Waiter<'_> {
    /// The feed's wait gave `event` (`None`: it woke for the session's timer, or ended):
    /// what to hand out, with [`Rpc::event`] (`None`: go round again).
    pub fn after(&mut self, event: Option<&feed::Event<'_>>) -> Option<Absorbed> {
        let Some(event) = event else {
            self.session.handle_timeout(Instant::now());
            return None;
        };
        let at = match event {
            // A response's time is when it was read, not when it is handed over.
            feed::Event::Message(message) => {
                self.epoch + Duration::from_nanos(message.stamp.recv_ns)
            }
            _ => Instant::now(),
        };
        self.session.absorb(event, at)
    }
}

impl<X: FeedIo> Rpc<X> {
    /// A session over a feed that connects as `feed` says, each connection opened with
    /// `client`'s options. The feed's sequence extractor is left out (responses and pushed
    /// messages are not sequenced; a message held for a gap would be delivered late), and
    /// with one connection requests go on it; with several, on the one that became ready
    /// last. On tokio, call from within a runtime.
    pub fn new(
        feed: FeedConfig,
        config: RpcConfig,
        client: impl Into<ClientOptions>,
    ) -> Result<Self, ConfigError> {
        let mut feed = feed;
        feed.sequence = None;
        Ok(Self {
            feed: Feed::new(feed, client)?,
            session: RpcSession::new(config),
        })
    }

    /// Accepts a request (see [`RpcSession::submit`]): `text` is a JSON object without its
    /// id; its [`Ticket`] resolves exactly once, in an [`Event::Resolved`] from
    /// `next_event`. It is written by the next `next_event`.
    pub fn submit(&mut self, text: &str, request: Request) -> Result<Ticket, Rejected> {
        self.session.submit(text, request, Instant::now())
    }

    /// Withdraws a request not written yet (see [`RpcSession::cancel`]).
    pub fn cancel(&mut self, ticket: Ticket) -> bool {
        self.session.cancel(ticket)
    }

    /// Ends the session: every connection is closed with 1000; what was not written
    /// resolves `NotSent`, what was written and not answered `OutcomeUnknown`, by the
    /// events up to the feed's `Ended`.
    pub fn close(&mut self) {
        self.feed.close();
    }

    /// Why the session ended, once it has.
    pub fn ended(&self) -> Option<&RpcError> {
        self.session.ended()
    }

    /// The session's counters.
    pub fn counters(&self) -> RpcCounters {
        self.session.counters()
    }

    /// The RPC session.
    pub fn session(&self) -> &RpcSession {
        &self.session
    }

    /// The feed under it (its connections' counters, rotation).
    pub fn feed(&mut self) -> &mut FeedControl {
        &mut self.feed
    }

    /// A driver's: writes what may go out, acts on the session's requests of the feed
    /// (replace a connection, close), and says whether there is something to hand out.
    #[doc(hidden)]
    pub fn before_wait(&mut self) -> Before {
        let now = Instant::now();
        self.transmit(now);
        while let Some(conn) = self.session.poll_replace() {
            self.feed
                .session_mut()
                .replace(conn, ReconnectReason::LoginTimeout, now);
        }
        if self.session.ended().is_some() && self.feed.ended().is_none() {
            self.feed.close();
        }
        if let Some(event) = self.session.poll_event() {
            return Before::Event(event);
        }
        // Once the feed ended, its last events were taken: the session ended with it.
        if self.feed.ended().is_some() && self.feed.ready() == Some(false) {
            return Before::Done;
        }
        self.feed.set_wake(self.session.poll_timeout());
        Before::Wait
    }

    /// A driver's: the feed to wait on, and what takes the event it gives.
    #[doc(hidden)]
    pub fn wait_parts(&mut self) -> (&mut Feed<X>, Waiter<'_>) {
        let epoch = self.feed.instant_of(feed::RecvStamp::default());
        (
            &mut self.feed,
            Waiter {
                session: &mut self.session,
                epoch,
            },
        )
    }

    /// A driver's: the user's event for what [`Waiter::after`] gave.
    #[doc(hidden)]
    pub fn event(&self, absorbed: Absorbed) -> Event<'_> {
        RpcSession::event(absorbed, self.feed.current_payload())
    }

    /// Queues on their connections what the session lets out now, each charged to the
    /// connection's send quota.
    fn transmit(&mut self, now: Instant) {
        let (control, io) = self.feed.parts();
        loop {
            let feed_session = control.session_mut();
            let quota = |conn: ConnId, weight: u32| match feed_session.try_send(conn, weight, now) {
                Ok(()) => Ok(()),
                Err(SendError::RateLimited { retry_after }) => Err(Some(retry_after)),
                Err(SendError::WeightOverBurst { .. }) => Err(Some(Duration::from_secs(1))),
                Err(_) => Err(None),
            };
            let Some(out) = self.session.poll_transmit(now, quota) else {
                break;
            };
            let (conn, ticket) = (out.conn, out.ticket);
            if !control.send(io, conn, out.text) {
                self.session.unsend(ticket);
            }
        }
    }
}

impl<X: RpcIo> Rpc<X> {
    /// The next event: a request resolved (its response borrowed from the connection's
    /// buffer), a pushed message, a late response, a connection ready, the feed's
    /// connection events; `None` once the session ended and every request made before
    /// resolved. Blocking: waits (`Err` only when waiting itself failed). Tokio: a future,
    /// cancel safe. Requests submitted since the last call are written first.
    pub fn next_event(&mut self) -> X::NextRpc<'_> {
        X::next_rpc_event(self)
    }
}
