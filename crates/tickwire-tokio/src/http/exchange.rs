//! One request on the pool: a connection from it, an attempt, and the one resend the
//! codec's [`ClientSession`](tickwire_codec::http::ClientSession) may allow, all within the
//! request's deadline. The connection's I/O is `conn`'s; which connection is `pool`'s.

use std::sync::Arc;
use std::task::Poll;
use std::time::Instant;

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::http::{Failure, Method};
use tickwire_core::http::HttpClientError;

use super::conn::Attempt;
use super::pool::Shared;
use super::response::ClientResponse;

impl Shared {
    /// Sends the request in `wbuf` and reads its final response, all within the request's
    /// deadline. `wbuf` is empty afterwards, whatever the outcome.
    pub(crate) async fn execute(
        self: &Arc<Self>,
        wbuf: &mut WriteBuf,
        method: Method,
    ) -> Result<ClientResponse, HttpClientError> {
        let now = Instant::now();
        let deadline = (self.options.socket.request_deadline).map(|total| now + total);
        let result = self.exchange(wbuf.as_slice(), method, now, deadline).await;
        wbuf.clear();
        result
    }

    /// The request on a connection from the pool. The deadline bounds the wait for a pooled
    /// connection and the connect (with a timer of their own, only when they have to wait)
    /// and every write and read (the connection's timer). A request stopped by the deadline
    /// leaves its connection unusable, so the pool closes it (see `Checkout`).
    async fn exchange(
        self: &Arc<Self>,
        request: &[u8],
        method: Method,
        now: Instant,
        deadline: Option<Instant>,
    ) -> Result<ClientResponse, HttpClientError> {
        let socket = &self.options.socket;
        let mut place = match self.checkout_idle(now) {
            Some(place) => place,
            None => self.by_deadline(deadline, self.checkout()).await?,
        };
        let attempt = place
            .conn_mut()
            .attempt(request, method, socket, deadline)
            .await?;
        if let Attempt::ClosedBeforeResponse(e) = attempt {
            if !place
                .conn()
                .may_resend(method, Failure::ClosedBeforeResponse)
            {
                return Err(e);
            }
            self.by_deadline(deadline, place.reconnect()).await?;
            let retried = place
                .conn_mut()
                .attempt(request, method, socket, deadline)
                .await?;
            if let Attempt::ClosedBeforeResponse(e) = retried {
                return Err(e);
            }
        }
        place.conn_mut().decode_body()?;
        Ok(ClientResponse::new(place))
    }

    /// `step`, stopped at `deadline`. Polled once first: a step done at once (an idle pooled
    /// connection) makes no timer.
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
