//! One request on the pool, as a named future ([`ResponseFuture`], what `send` returns): a
//! connection from it, an attempt, and the one resend the codec's
//! [`ClientSession`](tickwire_codec::http::ClientSession) may allow, all within the request's
//! deadline. The connection's I/O is `conn`'s; which connection is `pool`'s.
//!
//! The future is written by hand (a `poll` over the steps) so that tickwire-core's
//! `ClientRequest::send` can name it as this transport's result, and so that a request on
//! an idle pooled connection allocates nothing. A step that has to open a connection or
//! wait for one (the pool at its cap) runs as a boxed `async` block: one allocation on a
//! path that opens a socket or waits for another request's response anyway.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::http::{Failure, Method, Sending};
use tickwire_core::http::{Exchange, HttpClientError};

use super::conn::{Attempt, AttemptIo};
use super::pool::{Checkout, Shared};
use super::response::ClientResponse;
use crate::Tokio;

/// The async client's side of an [`HttpClient`](super::HttpClient): a handle on the client's
/// pool (the options, the connections, the counters), shared by every clone of the client.
/// The client dereferences to it, so its methods are the client's; `send` on a
/// [`ClientRequest`](super::ClientRequest) carries a request out through it.
#[derive(Debug, Clone)]
pub struct HttpPool {
    pub(crate) shared: Arc<Shared>,
}

impl Exchange for HttpPool {
    type Marker = Tokio;
    type Sent<'c> = ResponseFuture<'c>;

    fn send<'c>(&'c mut self, wbuf: &'c mut WriteBuf, sending: Sending) -> ResponseFuture<'c> {
        ResponseFuture {
            shared: &self.shared,
            wbuf: Some(wbuf),
            sending,
            deadline: None,
            state: State::Start,
        }
    }

    fn fail<'c>(&'c mut self, error: HttpClientError) -> ResponseFuture<'c> {
        ResponseFuture {
            shared: &self.shared,
            wbuf: None,
            sending: Sending::new(Method::Get),
            deadline: None,
            state: State::Failed(error),
        }
    }
}

/// The future of a request's response, what [`ClientRequest::send`](super::ClientRequest)
/// returns: it completes with the whole response, or the request's error. Nothing happens
/// until it is polled. `Send`; what dropping it part-way leaves is in
/// [`HttpClient`'s cancel safety](super::HttpClient#cancel-safety).
#[must_use = "a request is sent only when its future is awaited"]
pub struct ResponseFuture<'c> {
    shared: &'c Arc<Shared>,
    /// The request, written; cleared once the exchange is over. `None` for a request that
    /// failed before it was written.
    wbuf: Option<&'c mut WriteBuf>,
    /// Its method, and whether it may be resent.
    sending: Sending,
    /// The request's deadline, fixed at the first poll.
    deadline: Option<Instant>,
    state: State<'c>,
}

/// A step that opens a connection or waits for one, bounded by the request's deadline.
type Opening<'c> = Pin<Box<dyn Future<Output = Result<Checkout, HttpClientError>> + Send + 'c>>;

enum State<'c> {
    /// Not polled yet.
    Start,
    /// Waiting for a connection from the pool, or opening one.
    Checkout(Opening<'c>),
    /// The request on a connection; `resent`: this is the one resend.
    Attempt {
        place: Checkout,
        io: AttemptIo,
        resent: bool,
    },
    /// Opening a new connection for the resend of an idempotent request.
    Reconnect(Opening<'c>),
    /// Failed before anything was sent.
    Failed(HttpClientError),
    /// Completed.
    Done,
}

impl fmt::Debug for ResponseFuture<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Start => "start",
            State::Checkout(_) => "checkout",
            State::Attempt { resent: false, .. } => "attempt",
            State::Attempt { resent: true, .. } => "resend",
            State::Reconnect(_) => "reconnect",
            State::Failed(_) => "failed",
            State::Done => "done",
        };
        f.debug_struct("ResponseFuture")
            .field("method", &self.sending.method)
            .field("state", &state)
            .finish()
    }
}

impl Future for ResponseFuture<'_> {
    type Output = Result<ClientResponse, HttpClientError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let result = std::task::ready!(self.step(cx));
        if let Some(wbuf) = self.wbuf.as_mut() {
            wbuf.clear();
        }
        Poll::Ready(result)
    }
}

impl<'c> ResponseFuture<'c> {
    /// Advances the exchange as far as it goes without waiting. The deadline bounds the wait
    /// for a pooled connection and the connect (with a timer of their own, only when they
    /// have to wait) and every write and read (the connection's timer). A request stopped by
    /// the deadline leaves its connection unusable, so the pool closes it (see `Checkout`).
    fn step(&mut self, cx: &mut Context<'_>) -> Poll<Result<ClientResponse, HttpClientError>> {
        let shared = self.shared;
        let socket = &shared.options.socket;
        loop {
            // Each step takes the state and puts back what is left (all of it when pending).
            self.state = match std::mem::replace(&mut self.state, State::Done) {
                State::Start => {
                    let now = Instant::now();
                    self.deadline = socket.request_deadline.map(|total| now + total);
                    socket.request_made(now);
                    match shared.checkout_idle(now) {
                        Some(place) => self.attempt(place, false),
                        None => {
                            let deadline = self.deadline;
                            State::Checkout(Box::pin(async move {
                                shared.by_deadline(deadline, shared.checkout()).await
                            }))
                        }
                    }
                }
                State::Checkout(mut opening) => match opening.as_mut().poll(cx) {
                    Poll::Ready(place) => self.attempt(place?, false),
                    Poll::Pending => {
                        self.state = State::Checkout(opening);
                        return Poll::Pending;
                    }
                },
                State::Reconnect(mut opening) => match opening.as_mut().poll(cx) {
                    Poll::Ready(place) => self.attempt(place?, true),
                    Poll::Pending => {
                        self.state = State::Reconnect(opening);
                        return Poll::Pending;
                    }
                },
                State::Attempt {
                    mut place,
                    mut io,
                    resent,
                } => {
                    let request = self.wbuf.as_deref().map_or(&[][..], WriteBuf::as_slice);
                    let conn = place.conn_mut();
                    let method = self.sending.method;
                    match conn.poll_attempt(&mut io, cx, request, method, socket) {
                        Poll::Pending => {
                            self.state = State::Attempt { place, io, resent };
                            return Poll::Pending;
                        }
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        Poll::Ready(Ok(Attempt::Done)) => {
                            place.conn_mut().decode_body()?;
                            return Poll::Ready(Ok(ClientResponse::new(place)));
                        }
                        Poll::Ready(Ok(Attempt::ClosedBeforeResponse(e))) => {
                            let failure = Failure::ClosedBeforeResponse;
                            if resent
                                || !place.conn().may_resend(self.sending, failure)
                                || !socket.resend_allowed(Instant::now())
                            {
                                return Poll::Ready(Err(e));
                            }
                            let deadline = self.deadline;
                            State::Reconnect(Box::pin(async move {
                                shared.by_deadline(deadline, place.reconnect()).await?;
                                Ok(place)
                            }))
                        }
                    }
                }
                State::Failed(error) => return Poll::Ready(Err(error)),
                // Polled after it completed: the request is over.
                State::Done => return Poll::Ready(Err(HttpClientError::NoResponse)),
            };
        }
    }

    /// The attempt of the request on `place`'s connection.
    fn attempt(&self, mut place: Checkout, resent: bool) -> State<'c> {
        let io = (place.conn_mut()).start_attempt(&self.shared.options.socket, self.deadline);
        State::Attempt { place, io, resent }
    }
}

impl Shared {
    /// `step`, stopped at `deadline`. Polled once first: a step done at once makes no timer.
    async fn by_deadline<T>(
        &self,
        deadline: Option<Instant>,
        step: impl Future<Output = Result<T, HttpClientError>>,
    ) -> Result<T, HttpClientError> {
        let mut step = std::pin::pin!(step);
        let Some(deadline) = deadline else {
            return step.await;
        };
        if let Poll::Ready(done) =
            std::future::poll_fn(|cx| Poll::Ready(step.as_mut().poll(cx))).await
        {
            return done;
        }
        let total = self.options.socket.request_deadline.unwrap_or_default();
        tokio::time::timeout_at(deadline.into(), step)
            .await
            .unwrap_or(Err(HttpClientError::DeadlineExceeded { deadline: total }))
    }
}
