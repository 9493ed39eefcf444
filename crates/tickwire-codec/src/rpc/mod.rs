//! Order entry over WebSocket, sans-IO: requests matched to their responses by id, with
//! deadlines, a cap on requests in flight, a login step, weighted rate limits, and an
//! outcome for every request that tells "never written" apart from "written, then lost".
//!
//! [`RpcSession`] sits on a [`FeedSession`](crate::feed::FeedSession), which keeps its
//! connections (reconnects with back-off, the connect budget, liveness, send quotas, receive
//! timestamps); it owns what a request needs on top: its id, written into the request's text
//! ([`IdFormat`]: a top-level JSON member such as JSON-RPC's `"id"`, or the user's own), the
//! matching of messages to requests, deadlines, the login, the [`RateLimits`] an account
//! shares with its REST client. It owns no socket, no clock and no thread.
//!
//! # Every request ends once
//!
//! [`submit`](RpcSession::submit) accepts a request (or refuses it at once, [`Rejected`]:
//! nothing sent, nothing charged) and returns its [`Ticket`]. It then ends in exactly one
//! [`Event::Resolved`]:
//!
//! | outcome | when | may the exchange have acted? |
//! |---|---|---|
//! | [`Outcome::Response`] | its response came | yes: it answered |
//! | [`Outcome::TimedOut`] | written, no response by its deadline | maybe (a later response is an [`Event::Late`]) |
//! | [`Outcome::OutcomeUnknown`] | written, then its connection failed | maybe: never sent again by the session |
//! | [`Outcome::NotSent`] | never written (deadline, cancel, session end) | no: safe to send again |
//!
//! "Written" starts when [`poll_transmit`](RpcSession::poll_transmit) hands the message to
//! the driver, which queues it on its connection at once (or gives it back with
//! [`unsend`](RpcSession::unsend) when it cannot): from then on its bytes may reach the
//! exchange, so a request is never called `NotSent` once the exchange could have it.
//!
//! A message is matched by the id it carries: the response of a written request resolves
//! it; an id issued earlier whose request already ended is [`Event::Late`] (counted); a
//! message without an id, or with one never issued, is [`Event::Pushed`] (an order update, a
//! fill). Ids are issued in increasing order from 1 and never reused, so they stay small
//! numbers (exact in a JavaScript or `f64` parser) and a late response can never reach a
//! newer request.
//!
//! # Login
//!
//! With a [`Login`], each connection that opens is sent the login message first (built at
//! that moment, so a signature can carry the time), and no request goes out on it before
//! [`Login::accept`] accepted its response ([`Event::Ready`]). A refusal ends the session
//! ([`RpcError::LoginRejected`]); no response within [`Login::timeout`] replaces the
//! connection ([`poll_replace`](RpcSession::poll_replace)). Requests made meanwhile wait, or
//! with [`WhileDown::Fail`] are refused.
//!
//! # Rate limits
//!
//! A request may name a kind of [`RateLimits`] ([`Request::kind`]): it is charged in every
//! window its kind costs something in, in one step, when it is written. The [`OverLimit`]
//! policy decides whether a request made while a window is full waits or is refused; the
//! [`RpcConfig::usage`] hook brings the count up to what the exchange reports it used.
//! Requests are written in the order they were made: one that waits for a limit holds back
//! those behind it.
//!
//! # The driver's loop
//!
//! ```
//! use std::time::{Duration, Instant};
//! use tickwire_codec::feed::{self, ConnId, RecvStamp};
//! use tickwire_codec::rpc::{Event, Login, Outcome, Request, RpcConfig, RpcSession};
//!
//! let login = Login::new(
//!     || r#"{"method":"session.logon","params":{"signature":"..."}}"#.to_owned(),
//!     |response| match response.ends_with(br#","status":200}"#) {
//!         true => Ok(()),
//!         false => Err(String::from_utf8_lossy(response).into_owned()),
//!     },
//! );
//! let mut rpc = RpcSession::new(RpcConfig::new().with_login(Some(login)));
//! let now = Instant::now();
//! let conn = ConnId(0);
//! let stamp = RecvStamp::default();
//! let order = rpc.submit(r#"{"method":"order.place","params":{"symbol":"BTCUSDT"}}"#, Request::new(), now)?;
//!
//! // The feed session opened a connection: the login goes first, the order waits for it.
//! rpc.absorb(&feed::Event::Connected { conn, attempt: 1, endpoint: 0 }, now);
//! let mut wire = Vec::new();
//! while let Some(out) = rpc.poll_transmit(now, |_conn, _weight| Ok(())) {
//!     wire.push(out.text.to_owned()); // the driver queues it on `out.conn`
//! }
//! assert_eq!(wire, [r#"{"id":2,"method":"session.logon","params":{"signature":"..."}}"#]);
//!
//! // The login's response (consumed), then the order goes out.
//! let response = br#"{"id":2,"status":200}"#;
//! let message = feed::Event::Message(feed::Delivery { conn, key: None, seq: None, stamp, payload: response });
//! assert!(rpc.absorb(&message, now).is_none());
//! assert!(matches!(rpc.poll_event(), Some(Event::Ready { .. })));
//! let out = rpc.poll_transmit(now, |_, _| Ok(())).expect("the order");
//! assert_eq!(out.text, r#"{"id":1,"method":"order.place","params":{"symbol":"BTCUSDT"}}"#);
//!
//! // Its response comes back with its id.
//! let response = br#"{"id":1,"status":200,"result":{"orderId":7}}"#;
//! let message = feed::Event::Message(feed::Delivery { conn, key: None, seq: None, stamp, payload: response });
//! let absorbed = rpc.absorb(&message, now + Duration::from_micros(80)).expect("not the session's own");
//! let Event::Resolved { ticket, outcome: Outcome::Response(text), rtt } =
//!     RpcSession::event(absorbed, response) else { panic!() };
//! assert_eq!((ticket, text, rtt), (order, &response[..], Some(Duration::from_micros(80))));
//! # Ok::<(), tickwire_codec::rpc::Rejected>(())
//! ```
//!
//! In a real driver: `poll_transmit` after every input, its quota closure charging the feed
//! session's send quota (`try_send`); every feed event through `absorb` then (unless it
//! was the session's own) `event`, then
//! `poll_event` until `None`; `poll_replace` to the feed session's `replace`;
//! `poll_timeout` merged with the feed session's, `handle_timeout` when it passes; the feed
//! closed once [`ended`](RpcSession::ended) says so.
//!
//! # Allocation
//!
//! The request table (its slots, each with a text buffer kept and reused), the deadline
//! heap and the queue are allocated in `new`, at the caps. Once every slot's buffer has
//! grown to its request size, a request allocates nothing: not in `submit`, `poll_transmit`,
//! matching its response, or resolving it.

mod config;
mod event;
mod ids;
mod limits;
mod session;

#[cfg(test)]
mod tests;

pub use config::{
    AcceptFn, IdFormat, Login, LoginFn, OverLimit, ReadIdFn, Request, RpcConfig, UsageFn,
    WhileDown, WriteIdFn,
};
pub use event::{
    Absorbed, Event, LoginFailure, NotSent, Outcome, OwnedOutcome, Rejected, RpcCounters, RpcError,
    Ticket, Transmit,
};
pub use ids::{IdError, field_u64, json_rpc, set_field};
pub use limits::{KindId, LimitExceeded, RateLimits, WindowId};
pub use session::RpcSession;
