//! The async driver of an [`RpcSession`](tickwire_codec::rpc::RpcSession): [`Rpc`] over the
//! tokio feed's [`Connections`], and [`RpcClient`], the same on a task of its own with a
//! future per request. The glue is written once in [`tickwire_core::rpc`]; this module has
//! only the future that waits, [`NextRpcEvent`], and the task.

use std::collections::HashMap;
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

use tickwire_codec::feed::{ConfigError, FeedConfig};
use tickwire_codec::rpc::{Event, NotSent, OwnedOutcome, Rejected, Request, RpcConfig, Ticket};
use tickwire_core::rpc::{Before, RpcIo};
use tokio::sync::{mpsc, oneshot};

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

/// A cloneable handle to an [`Rpc`] driven by a task of its own: each
/// [`request`](Self::request) is a future that resolves exactly once, to the request's
/// [`OwnedOutcome`] (its response copied out of the connection's buffer).
///
/// Made by [`RpcClient::spawn`], which also returns the [`Pushed`] receiver of the messages
/// that answer no request. The task ends once every handle is dropped (or
/// [`close`](Self::close) is called) and every request made resolved. Costs a channel send,
/// a oneshot and the response's copy per request, where [`Rpc`] borrows and allocates
/// nothing.
///
/// ```no_run
/// use tickwire_tokio::ClientBuilder;
/// use tickwire_tokio::codec::feed::FeedConfig;
/// use tickwire_tokio::codec::rpc::{OwnedOutcome, Request, RpcConfig};
/// use tickwire_tokio::rpc::RpcClient;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let feed = FeedConfig::new("wss://ws-api.example/ws");
/// let (client, _pushed) = RpcClient::spawn(feed, RpcConfig::new(), ClientBuilder::new())?;
/// let place = r#"{"method":"order.place","params":{"symbol":"BTCUSDT"}}"#;
/// let (a, b) = tokio::join!(
///     client.request(place, Request::new()),
///     client.request(place, Request::new()),
/// );
/// for outcome in [a, b] {
///     match outcome {
///         OwnedOutcome::Response(text) => println!("{}", String::from_utf8_lossy(&text)),
///         other => println!("{other:?}"),
///     }
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct RpcClient {
    commands: mpsc::Sender<Command>,
}

/// The messages an [`RpcClient`]'s connection received that answer no request (order
/// updates, fills), in order. Bounded: when the user falls behind by its capacity, further
/// ones are counted in [`dropped`](Self::dropped), never dropped silently.
pub struct Pushed {
    messages: mpsc::Receiver<Vec<u8>>,
    dropped: Arc<AtomicU64>,
}

impl Pushed {
    /// The next pushed message; `None` once the session's task ended.
    pub async fn recv(&mut self) -> Option<Vec<u8>> {
        self.messages.recv().await
    }

    /// Pushed messages not delivered because this receiver was full (or dropped).
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

/// Pushed messages held for a [`Pushed`] receiver that is behind.
const PUSHED_CAPACITY: usize = 4_096;

enum Command {
    Request {
        text: String,
        request: Request,
        reply: oneshot::Sender<OwnedOutcome>,
    },
    Close,
}

impl RpcClient {
    /// Starts a task (on the current tokio runtime) driving an [`Rpc`] over `feed`'s
    /// connections, as [`Rpc::new`](tickwire_core::rpc::Rpc::new) configures it.
    pub fn spawn(
        feed: FeedConfig,
        config: RpcConfig,
        client: impl Into<tickwire_core::ws::ClientOptions>,
    ) -> Result<(Self, Pushed), ConfigError> {
        let queued = config.max_queued.max(1);
        let rpc = Rpc::new(feed, config, client)?;
        let (commands, inbox) = mpsc::channel(queued);
        let (pushed_tx, messages) = mpsc::channel(PUSHED_CAPACITY);
        let dropped = Arc::new(AtomicU64::new(0));
        let driver = Driver {
            rpc,
            inbox,
            replies: HashMap::new(),
            pushed: pushed_tx,
            dropped: Arc::clone(&dropped),
            open: true,
        };
        tokio::spawn(driver.run());
        Ok((Self { commands }, Pushed { messages, dropped }))
    }

    /// Sends a request (a JSON object without its id) and resolves to its outcome, exactly
    /// once. Dropping the future does not withdraw the request: it is sent and resolved all
    /// the same. [`OwnedOutcome::Rejected`] when the session refused it or its task ended.
    pub async fn request(&self, text: impl Into<String>, request: Request) -> OwnedOutcome {
        let (reply, outcome) = oneshot::channel();
        let command = Command::Request {
            text: text.into(),
            request,
            reply,
        };
        if self.commands.send(command).await.is_err() {
            return OwnedOutcome::Rejected(Rejected::Ended);
        }
        // The task resolves every request it took before it ends; a reply lost anyway (the
        // task panicked) may have been written.
        outcome.await.unwrap_or(OwnedOutcome::OutcomeUnknown)
    }

    /// Ends the session: the connections close with 1000 once the requests already made
    /// are resolved as the session's end resolves them.
    pub async fn close(&self) {
        let _ = self.commands.send(Command::Close).await;
    }
}

/// The task behind an [`RpcClient`].
struct Driver {
    rpc: Rpc,
    inbox: mpsc::Receiver<Command>,
    replies: HashMap<Ticket, oneshot::Sender<OwnedOutcome>>,
    pushed: mpsc::Sender<Vec<u8>>,
    dropped: Arc<AtomicU64>,
    /// Commands may still come.
    open: bool,
}

impl Driver {
    async fn run(mut self) {
        std::future::poll_fn(|cx| self.poll(cx)).await;
    }

    /// Takes commands and events until the session ended and every reply was sent.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        loop {
            while self.open {
                match self.inbox.poll_recv(cx) {
                    Poll::Ready(Some(command)) => self.command(command),
                    Poll::Ready(None) => self.close(),
                    Poll::Pending => break,
                }
            }
            let event = match pin!(self.rpc.next_event()).poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    self.finish();
                    return Poll::Ready(());
                }
                Poll::Ready(Some(event)) => event,
            };
            match event {
                Event::Resolved {
                    ticket, outcome, ..
                } => {
                    if let Some(reply) = self.replies.remove(&ticket) {
                        let _ = reply.send(outcome.into_owned());
                    }
                }
                Event::Pushed { payload, .. }
                    if self.pushed.try_send(payload.to_vec()).is_err() =>
                {
                    self.dropped.fetch_add(1, Ordering::Relaxed);
                }
                _ => {}
            }
        }
    }

    fn command(&mut self, command: Command) {
        match command {
            Command::Request {
                text,
                request,
                reply,
            } => match self.rpc.submit(&text, request) {
                Ok(ticket) => {
                    self.replies.insert(ticket, reply);
                }
                Err(rejected) => {
                    let _ = reply.send(OwnedOutcome::Rejected(rejected));
                }
            },
            Command::Close => self.close(),
        }
    }

    fn close(&mut self) {
        self.open = false;
        self.rpc.close();
    }

    /// The session ended with every request it took resolved: a reply still held was never
    /// taken by it, and a command still in the channel is refused.
    fn finish(&mut self) {
        for (_, reply) in self.replies.drain() {
            let _ = reply.send(OwnedOutcome::NotSent(NotSent::Ended));
        }
        self.inbox.close();
        while let Ok(command) = self.inbox.try_recv() {
            if let Command::Request { reply, .. } = command {
                let _ = reply.send(OwnedOutcome::Rejected(Rejected::Ended));
            }
        }
    }
}
