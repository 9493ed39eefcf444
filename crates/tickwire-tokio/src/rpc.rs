//! The async driver of an [`RpcSession`](tickwire_codec::rpc::RpcSession): [`Rpc`] over the
//! tokio feed's [`Connections`]. The glue is written once in [`tickwire_core::rpc`]; this
//! module has only the future that waits, [`NextRpcEvent`].

use std::future::Future;
use std::pin::{Pin, pin};
use std::task::{Context, Poll};

use tickwire_codec::rpc::Event;
use tickwire_core::rpc::{Before, RpcIo};

use crate::feed::Connections;

/// Requests and responses over tokio WebSocket connections kept by a feed session
/// (reconnects, send quotas, receive times): see
/// [`RpcSession`](tickwire_codec::rpc::RpcSession) for what it decides and
/// [`tickwire_core::rpc::Rpc`] for its calls.
///
/// ```no_run
/// use tickwire_tokio::ClientBuilder;
/// use tickwire_tokio::codec::feed::FeedConfig;
/// use tickwire_tokio::codec::rpc::{Event, Outcome, Request, RpcConfig};
/// use tickwire_tokio::rpc::Rpc;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let feed = FeedConfig::new("wss://ws-api.example/ws");
/// let mut rpc = Rpc::new(feed, RpcConfig::new(), ClientBuilder::new())?;
/// let order = rpc.submit(r#"{"method":"order.place","params":{"symbol":"BTCUSDT"}}"#, Request::new())?;
/// while let Some(event) = rpc.next_event().await {
///     if let Event::Resolved { ticket, outcome, .. } = event
///         && ticket == order
///     {
///         if let Outcome::Response(text) = outcome {
///             println!("{}", String::from_utf8_lossy(text));
///         }
///         break;
///     }
/// }
/// # Ok(())
/// # }
/// ```
pub type Rpc = tickwire_core::rpc::Rpc<Connections>;

/// The future of [`Rpc::next_event`](tickwire_core::rpc::Rpc::next_event) on tokio: the
/// next event, `None` once the session ended and every request resolved.
///
/// Cancel safe, as the feed's `next_event` is: what a poll took from the sockets is given
/// to the sessions before the poll returns, and requests stay in the session until written.
#[must_use = "futures do nothing unless polled"]
pub struct NextRpcEvent<'a> {
    rpc: Option<&'a mut Rpc>,
}

impl<'a> Future for NextRpcEvent<'a> {
    type Output = Option<Event<'a>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        loop {
            let rpc = this
                .rpc
                .as_mut()
                .expect("NextRpcEvent polled after completion");
            match rpc.before_wait() {
                Before::Event(event) => {
                    this.rpc = None;
                    return Poll::Ready(Some(event));
                }
                Before::Done => {
                    this.rpc = None;
                    return Poll::Ready(None);
                }
                Before::Wait => {}
            }
            let given = {
                let (feed, mut waiter) = rpc.wait_parts();
                let event = std::task::ready!(pin!(feed.next_event()).poll(cx));
                waiter.after(event.as_ref())
            };
            if let Some(absorbed) = given {
                let rpc = this.rpc.take().expect("taken once");
                return Poll::Ready(Some(rpc.event(absorbed)));
            }
        }
    }
}

impl RpcIo for Connections {
    type NextRpc<'a> = NextRpcEvent<'a>;

    fn next_rpc_event(rpc: &mut Rpc) -> NextRpcEvent<'_> {
        NextRpcEvent { rpc: Some(rpc) }
    }
}
