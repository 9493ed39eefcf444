//! The feed suite's clients: each row's receive loop, opened on a [`FeedServer`] URL and
//! asked for one message at a time, the same code for the timed and the counted runs.
//!
//! Owns how each library is driven, not timing. Rows: tickwire's bare `recv` (blocking and
//! tokio, the floors: no sequence, no timestamp), tickwire's feed session on either driver
//! (sequence extraction and receive timestamps, user or kernel), and a reconnect loop over
//! tokio-tungstenite written as its users write it (`connect_async`, subscribe, read loop
//! with the same extractor, a drop of numbers already seen and `Instant::now()` plus
//! `SystemTime::now()` per message; on an error, sleep the back-off and connect again), and
//! the same handler under barter-integration's reconnecting socket.
//!
//! [`FeedServer`]: super::server::FeedServer

use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use tickwire_blocking::feed::Timestamps;
use tickwire_codec::feed::{Event, FeedConfig, ReconnectPolicy};
use tickwire_codec::mux::Backoff;

use super::server;

/// The subscription every client sends first (the server waits for a text message).
pub const SUBSCRIBE: &str = r#"{"op":"subscribe","args":["BTC-USD"]}"#;

/// The reconnect wait of every reconnecting row: the back-off at its minimum, jitter off
/// (the feed's back-off draws between `initial` and the ceiling, both this).
pub const BACKOFF: Duration = Duration::from_millis(1);

/// Bounds a blocking bare `recv`, so a dead server fails the run instead of hanging it.
const READ_TIMEOUT: Duration = Duration::from_secs(30);

/// One row's client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client {
    /// tickwire blocking `WebSocket::recv`.
    BlockingRecv,
    /// tickwire blocking `Feed::next_event`.
    BlockingFeed(Timestamps),
    /// tickwire-tokio `WebSocket::recv().await`.
    TokioRecv,
    /// tickwire-tokio `Feed::next_event().await`.
    TokioFeed(Timestamps),
    /// tokio-tungstenite in a hand-written reconnect loop.
    TokioTungstenite,
    /// tokio-tungstenite under barter-integration's reconnecting socket.
    Barter,
}

impl Client {
    /// Every per-message row, in table order.
    pub const ALL: [Self; 8] = [
        Self::BlockingRecv,
        Self::BlockingFeed(Timestamps::User),
        Self::BlockingFeed(Timestamps::Kernel),
        Self::TokioRecv,
        Self::TokioFeed(Timestamps::User),
        Self::TokioFeed(Timestamps::Kernel),
        Self::TokioTungstenite,
        Self::Barter,
    ];

    /// The rows that reconnect (the failover table).
    pub const RECONNECTING: [Self; 4] = [
        Self::BlockingFeed(Timestamps::User),
        Self::TokioFeed(Timestamps::User),
        Self::TokioTungstenite,
        Self::Barter,
    ];

    /// The row's name in the tables and on the callgrind target's command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::BlockingRecv => "tickwire recv (blocking)",
            Self::BlockingFeed(Timestamps::Kernel) => "tickwire feed, kernel stamps (blocking)",
            Self::BlockingFeed(_) => "tickwire feed, user stamps (blocking)",
            Self::TokioRecv => "tickwire-tokio recv",
            Self::TokioFeed(Timestamps::Kernel) => "tickwire-tokio feed, kernel stamps",
            Self::TokioFeed(_) => "tickwire-tokio feed, user stamps",
            Self::TokioTungstenite => "tokio-tungstenite reconnect loop",
            Self::Barter => "barter-integration reconnecting socket",
        }
    }

    /// The client named `name` ([`name`](Self::name)).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.name() == name)
    }

    /// True for the rows that run on tokio.
    pub fn is_async(self) -> bool {
        !matches!(self, Self::BlockingRecv | Self::BlockingFeed(_))
    }

    /// The bare `recv` row of the same driver: what this row's overhead is measured over.
    pub fn floor(self) -> Self {
        if self.is_async() {
            Self::TokioRecv
        } else {
            Self::BlockingRecv
        }
    }

    /// True for tickwire's feed rows, whose allocations per message must be 0.
    pub fn is_feed(self) -> bool {
        matches!(self, Self::BlockingFeed(_) | Self::TokioFeed(_))
    }
}

/// A connected blocking client.
#[expect(
    clippy::large_enum_variant,
    reason = "made once per measurement; a box would add a pointer chase to every message of one row"
)]
pub enum Blocking {
    /// The bare `recv` floor.
    Recv(tickwire_blocking::WebSocket<tickwire_blocking::MaybeTlsStream>),
    /// The feed session, and whether a delivered message carried a kernel timestamp.
    Feed(tickwire_blocking::feed::Feed, bool),
}

impl Blocking {
    /// Connects `client` (a blocking row) to `url` with `connections` feed connections.
    pub fn open(client: Client, url: &str, connections: usize) -> Self {
        match client {
            Client::BlockingRecv => {
                let mut ws = tickwire_blocking::ClientBuilder::new()
                    .nodelay(true)
                    .read_timeout(Some(READ_TIMEOUT))
                    .connect(url)
                    .unwrap_or_else(|e| panic!("{}: connect to {url}: {e}", client.name()));
                ws.send_text(SUBSCRIBE)
                    .and_then(|()| ws.flush())
                    .unwrap_or_else(|e| panic!("{}: subscribe: {e}", client.name()));
                Self::Recv(ws)
            }
            Client::BlockingFeed(timestamps) => {
                match open_feed(false, feed_config(url, connections), timestamps) {
                    AnyFeed::Blocking(feed) => Self::Feed(*feed, false),
                    AnyFeed::Tokio(_) => unreachable!("asked for the blocking driver"),
                }
            }
            other => panic!("{} is not a blocking client", other.name()),
        }
    }

    /// Waits for the next data message; returns the connections that ended meanwhile.
    pub fn next(&mut self) -> u32 {
        match self {
            Self::Recv(ws) => match ws.recv() {
                Ok(tickwire_blocking::Recv::Message(tickwire_blocking::Message::Text(text))) => {
                    black_box(text.len());
                    0
                }
                other => panic!("tickwire recv: expected text, got {other:?}"),
            },
            Self::Feed(feed, kernel) => {
                let mut ended = 0;
                loop {
                    match feed.next_event().expect("tickwire feed: wait") {
                        Some(event) => {
                            if deliver(event, &mut ended, kernel) {
                                return ended;
                            }
                        }
                        None => panic!("tickwire feed: ended"),
                    }
                }
            }
        }
    }
}

impl Blocking {
    /// True once a delivered message carried a kernel timestamp.
    pub fn kernel_stamped(&self) -> bool {
        matches!(self, Self::Feed(_, true))
    }
}

/// A connected async client (drive it on the suite's current-thread runtime).
#[expect(
    clippy::large_enum_variant,
    reason = "made once per measurement; a box would add a pointer chase to every message of one row"
)]
pub enum Async {
    /// The bare `recv` floor.
    Recv(tickwire_tokio::WebSocket<tickwire_tokio::MaybeTlsStream>),
    /// The feed session, and whether a delivered message carried a kernel timestamp.
    Feed(tickwire_tokio::feed::Feed, bool),
    /// The tokio-tungstenite loop.
    Tungstenite(TungsteniteLoop),
    /// The barter-integration stream.
    Barter(BarterFeed),
}

impl Async {
    /// Connects `client` (an async row) to `url` with `connections` feed connections.
    pub async fn open(client: Client, url: &str, connections: usize) -> Self {
        match client {
            Client::TokioRecv => {
                let mut ws = tickwire_tokio::ClientBuilder::new()
                    .nodelay(true)
                    .connect(url)
                    .await
                    .unwrap_or_else(|e| panic!("{}: connect to {url}: {e}", client.name()));
                ws.send_text(SUBSCRIBE)
                    .unwrap_or_else(|e| panic!("{}: subscribe: {e}", client.name()));
                ws.flush()
                    .await
                    .unwrap_or_else(|e| panic!("{}: subscribe: {e}", client.name()));
                Self::Recv(ws)
            }
            Client::TokioFeed(timestamps) => {
                match open_feed(true, feed_config(url, connections), timestamps) {
                    AnyFeed::Tokio(feed) => Self::Feed(*feed, false),
                    AnyFeed::Blocking(_) => unreachable!("asked for the tokio driver"),
                }
            }
            Client::TokioTungstenite => Self::Tungstenite(TungsteniteLoop::new(url)),
            Client::Barter => Self::Barter(BarterFeed::new(url)),
            other => panic!("{} is not an async client", other.name()),
        }
    }

    /// Waits for the next data message; returns the connections that ended meanwhile.
    pub async fn next(&mut self) -> u32 {
        match self {
            Self::Recv(ws) => match ws.recv().await {
                Ok(tickwire_tokio::Recv::Message(tickwire_tokio::Message::Text(text))) => {
                    black_box(text.len());
                    0
                }
                other => panic!("tickwire-tokio recv: expected text, got {other:?}"),
            },
            Self::Feed(feed, kernel) => {
                let mut ended = 0;
                loop {
                    match feed.next_event().await {
                        Some(event) => {
                            if deliver(event, &mut ended, kernel) {
                                return ended;
                            }
                        }
                        None => panic!("tickwire-tokio feed: ended"),
                    }
                }
            }
            Self::Tungstenite(feed) => feed.next_message().await,
            Self::Barter(feed) => feed.next_message().await,
        }
    }
}

impl Async {
    /// True once a delivered message carried a kernel timestamp.
    pub fn kernel_stamped(&self) -> bool {
        matches!(self, Self::Feed(_, true))
    }
}

/// A feed of either driver.
enum AnyFeed {
    Blocking(Box<tickwire_blocking::feed::Feed>),
    Tokio(Box<tickwire_tokio::feed::Feed>),
}

/// The one place a feed is built with its timestamps (`Feed::with_timestamps` of either
/// driver), so that the move of the setting onto the config changes only this function.
fn open_feed(tokio: bool, config: FeedConfig, timestamps: Timestamps) -> AnyFeed {
    if tokio {
        AnyFeed::Tokio(Box::new(
            tickwire_tokio::feed::Feed::new(
                config.with_timestamps(timestamps),
                tickwire_tokio::ClientBuilder::new().nodelay(true),
            )
            .expect("tickwire-tokio feed: configuration"),
        ))
    } else {
        AnyFeed::Blocking(Box::new(
            tickwire_blocking::feed::Feed::new(
                config.with_timestamps(timestamps),
                tickwire_blocking::ClientBuilder::new().nodelay(true),
            )
            .expect("tickwire feed: configuration"),
        ))
    }
}

/// The feed every tickwire row runs: `connections` to `url`, subscribed with [`SUBSCRIBE`],
/// the server's numbers extracted by [`server::sequence`], the back-off at [`BACKOFF`].
fn feed_config(url: &str, connections: usize) -> FeedConfig {
    FeedConfig::new(url)
        .with_connections(connections)
        .with_subscription(SUBSCRIBE)
        .with_sequence(server::sequence)
        .with_reconnect(ReconnectPolicy::new().with_backoff(Backoff {
            initial: BACKOFF,
            max: BACKOFF,
        }))
}

/// Looks at one feed event: `true` for a delivered message (its number and stamp consumed),
/// counting ended connections in `ended` and noting a kernel timestamp in `kernel`.
fn deliver(event: Event<'_>, ended: &mut u32, kernel: &mut bool) -> bool {
    match event {
        Event::Message(message) => {
            *kernel |= message.stamp.kernel_ns.is_some();
            black_box((message.seq, message.stamp, message.payload.len()));
            true
        }
        Event::Closed { .. } => {
            *ended += 1;
            false
        }
        _ => false,
    }
}

/// What a user's handler does with each text message in the peer rows: the number
/// extracted with the same [`server::sequence`], numbers already seen dropped (what the feed's
/// merge does for one key), and the two receive timestamps the feed takes.
struct UserHandler {
    last_seq: Option<u64>,
    epoch: Instant,
}

impl UserHandler {
    fn new() -> Self {
        Self {
            last_seq: None,
            epoch: Instant::now(),
        }
    }

    /// True when `payload` is a new message (handled); false for one to skip.
    fn accept(&mut self, payload: &[u8]) -> bool {
        let recv_ns = self.epoch.elapsed().as_nanos() as u64;
        let wall_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let Some((key, seq)) = server::sequence(payload) else {
            return false;
        };
        if self.last_seq.is_some_and(|last| seq <= last) {
            return false;
        }
        self.last_seq = Some(seq);
        black_box((key, seq, recv_ns, wall_ns));
        true
    }
}

type TungsteniteStream =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A tokio-tungstenite feed loop as its users write it, turned inside out so the bench can
/// ask it for one message at a time: the state a user's `loop { connect; subscribe; while let
/// Some(msg) = ws.next().await { .. } sleep }` keeps in its locals.
pub struct TungsteniteLoop {
    url: String,
    ws: Option<TungsteniteStream>,
    handler: UserHandler,
    ended: u32,
}

impl TungsteniteLoop {
    fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            ws: None,
            handler: UserHandler::new(),
            ended: 0,
        }
    }

    /// The next new message (reconnecting as needed); returns the connections that ended.
    async fn next_message(&mut self) -> u32 {
        loop {
            let Some(ws) = self.ws.as_mut() else {
                self.ws = Some(self.connect().await);
                continue;
            };
            match ws.next().await {
                Some(Ok(tokio_tungstenite::tungstenite::Message::Text(text))) => {
                    if self.handler.accept(text.as_bytes()) {
                        return std::mem::take(&mut self.ended);
                    }
                }
                Some(Ok(_)) => {}
                Some(Err(_)) | None => {
                    self.ws = None;
                    self.ended += 1;
                    tokio::time::sleep(BACKOFF).await;
                }
            }
        }
    }

    async fn connect(&self) -> TungsteniteStream {
        // Bounded by the server, which accepts every attempt while the bench runs.
        loop {
            if let Ok((mut ws, _response)) = tokio_tungstenite::connect_async(&self.url).await
                && ws
                    .send(tokio_tungstenite::tungstenite::Message::Text(
                        SUBSCRIBE.into(),
                    ))
                    .await
                    .is_ok()
            {
                return ws;
            }
            tokio::time::sleep(BACKOFF).await;
        }
    }
}

type BarterItem = barter_integration::socket::update::SocketUpdate<
    futures_util::stream::SplitSink<TungsteniteSocket, tokio_tungstenite::tungstenite::Message>,
    tokio_tungstenite::tungstenite::Message,
>;

type TungsteniteSocket = barter_integration::socket::on_stream_err_filter::OnStreamErrFilter<
    TungsteniteStream,
    fn(
        &tokio_tungstenite::tungstenite::Error,
    ) -> barter_integration::socket::on_stream_err::StreamErrorAction,
>;

/// barter-integration's reconnecting socket as its documentation composes it: a connect
/// function (`connect_async`, then the subscription) under `init_reconnecting_socket` with
/// the back-off, connect errors retried, stream errors ending the socket, and
/// `with_socket_updates` turning each reconnection into a `Reconnecting` item downstream. The
/// messages get the same extraction, drop of numbers seen and timestamps as
/// [`TungsteniteLoop`].
pub struct BarterFeed {
    updates: std::pin::Pin<Box<dyn futures_util::Stream<Item = BarterItem>>>,
    handler: UserHandler,
    ended: u32,
}

impl BarterFeed {
    fn new(url: &str) -> Self {
        use barter_integration::socket::ReconnectingSocket;
        use barter_integration::socket::on_connect_err::{ConnectError, ConnectErrorAction};
        use barter_integration::socket::on_stream_err::StreamErrorAction;
        let url = url.to_owned();
        let connect = async move || {
            let (mut ws, _response) = tokio_tungstenite::connect_async(&url).await?;
            ws.send(tokio_tungstenite::tungstenite::Message::Text(
                SUBSCRIBE.into(),
            ))
            .await?;
            Ok::<_, tokio_tungstenite::tungstenite::Error>(ws)
        };
        let reconnect: fn(&tokio_tungstenite::tungstenite::Error) -> StreamErrorAction =
            |_| StreamErrorAction::Reconnect;
        let updates = barter_integration::socket::init_reconnecting_socket(
            connect,
            Duration::from_secs(5),
            |_attempt: u32| BACKOFF,
        )
        .on_connect_err(|_: &ConnectError<tokio_tungstenite::tungstenite::Error>| {
            ConnectErrorAction::Reconnect
        })
        .on_stream_err_filter(reconnect)
        .with_socket_updates();
        Self {
            updates: Box::pin(updates),
            handler: UserHandler::new(),
            ended: 0,
        }
    }

    /// The next new message; returns the connections that ended meanwhile.
    async fn next_message(&mut self) -> u32 {
        use barter_integration::socket::update::SocketUpdate;
        // Bounded by the server, which accepts every attempt while the bench runs.
        loop {
            match self.updates.next().await {
                Some(SocketUpdate::Item(tokio_tungstenite::tungstenite::Message::Text(text))) => {
                    if self.handler.accept(text.as_bytes()) {
                        return std::mem::take(&mut self.ended);
                    }
                }
                Some(SocketUpdate::Reconnecting) => self.ended += 1,
                Some(_) => {}
                None => panic!("barter-integration: the reconnecting socket ended"),
            }
        }
    }
}
