//! The node's side: a thread with its own tokio runtime that subscribes to a topic's NATS
//! subject while the server has local subscribers for it, and relays what arrives to them
//! through [`ServerHandle::publish_at`], in sequence order, with gaps filled or reported.
//!
//! Owns the public surface ([`BridgeBuilder`], [`Bridge`], [`BridgeHandle`],
//! [`BridgeStats`]) and the thread; the relaying itself is `relay.rs`'s.

use std::fmt;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use tickwire_server::{ConnId, ServerHandle, Topic};
use tokio::sync::mpsc;

use crate::relay::{Relay, Request, Settings};
pub use crate::stats::BridgeStats;
use crate::stats::Counters;

/// Configures and starts a [`Bridge`].
#[derive(Debug, Clone)]
pub struct BridgeBuilder {
    servers: Vec<String>,
    settings: Settings,
    subscription_capacity: usize,
    name: String,
}

impl BridgeBuilder {
    /// A bridge to the NATS server(s) at `url` (`nats://127.0.0.1:4222`; several, comma
    /// separated, for a cluster).
    pub fn new(url: &str) -> Self {
        Self {
            servers: url.split(',').map(|s| s.trim().to_owned()).collect(),
            settings: Settings::default(),
            subscription_capacity: 65_536,
            name: "tickwire-node".to_owned(),
        }
    }

    /// The subject prefix (`tw` by default: topic `book` is subject `tw.book`).
    pub fn prefix(mut self, prefix: &str) -> Self {
        self.settings.prefix = prefix.to_owned();
        self
    }

    /// How many recent messages per topic the node keeps to replay to a resuming client
    /// without asking JetStream (8,192 by default; the only history of a core topic).
    pub fn history(mut self, messages: usize) -> Self {
        self.settings.history = messages;
        self
    }

    /// The most messages one resume replays (10,000 by default); older ones are reported
    /// missed. Replays count against the server's send budget too.
    pub fn max_replay(mut self, messages: u64) -> Self {
        self.settings.max_replay = messages.max(1);
        self
    }

    /// How long a fill or a replay may wait for JetStream (2 s by default); what has not
    /// arrived by then is reported missed.
    pub fn fetch_timeout(mut self, timeout: Duration) -> Self {
        self.settings.fetch_timeout = timeout;
        self
    }

    /// Messages the NATS client buffers per subscription before it drops them (65,536 by
    /// default; a drop is a gap the node then fills or reports).
    pub fn subscription_capacity(mut self, messages: usize) -> Self {
        self.subscription_capacity = messages.max(1);
        self
    }

    /// The connection name the NATS server shows.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.to_owned();
        self
    }

    /// Starts the bridge: it connects to NATS in the background, retrying with backoff
    /// until it can (a node comes up, and keeps its clients, while NATS is away), and
    /// relays to the server [`attach`](Bridge::attach)ed to it. Its [`handle`](Bridge::handle)
    /// can be given to the server's handlers before the server starts.
    pub fn start(self) -> std::io::Result<Bridge> {
        let (requests, inbox) = mpsc::unbounded_channel();
        let stats = Arc::new(Counters::default());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        let events = requests.clone();
        let options = async_nats::ConnectOptions::new()
            .name(&self.name)
            .retry_on_initial_connect()
            .max_reconnects(None)
            .subscription_capacity(self.subscription_capacity)
            .reconnect_delay_callback(backoff)
            .event_callback(move |event| {
                let events = events.clone();
                async move {
                    let _ = events.send(Request::Nats(event));
                }
            });
        let counters = Arc::clone(&stats);
        let settings = self.settings;
        let servers = self.servers;
        let thread = thread::Builder::new()
            .name("tickwire-nats".to_owned())
            .spawn(move || {
                runtime.block_on(async move {
                    let client = match options.connect(servers.as_slice()).await {
                        Ok(client) => client,
                        Err(error) => {
                            counters.set_error(error.to_string());
                            return;
                        }
                    };
                    Relay::run(client, settings, counters, inbox).await;
                });
            })?;
        Ok(Bridge {
            handle: BridgeHandle { requests, stats },
            thread: Some(thread),
        })
    }
}

/// Reconnect delays: 0 for the first attempt, then doubling from 50 ms up to 2 s, so that a
/// restarted NATS server is found within 2 s and a dead one is not hammered.
fn backoff(attempt: usize) -> Duration {
    if attempt == 0 {
        return Duration::ZERO;
    }
    let ms = 50u64 << (attempt - 1).min(6);
    Duration::from_millis(ms.min(2_000))
}

/// A running bridge. Dropping it stops the bridge (the server keeps running; its topics stop
/// receiving from NATS).
#[derive(Debug)]
pub struct Bridge {
    handle: BridgeHandle,
    thread: Option<thread::JoinHandle<()>>,
}

impl Bridge {
    /// A handle for handlers and other threads.
    pub fn handle(&self) -> &BridgeHandle {
        &self.handle
    }

    /// Relays to `server`'s topics from now on: the bridge watches their interest
    /// (replacing any listener set with [`ServerHandle::watch_interest`]) and subscribes to
    /// the subject of each topic that has subscribers. Attach one server, once.
    pub fn attach(&self, server: &ServerHandle) {
        let watcher = self.handle.requests.clone();
        server.watch_interest(move |topic: &Topic| {
            let _ = watcher.send(Request::Interest(topic.clone()));
        });
        let _ = self.handle.requests.send(Request::Attach(server.clone()));
    }

    /// Stops the bridge and waits for its thread.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        let _ = self.handle.requests.send(Request::Shutdown);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl Drop for Bridge {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Reaches a running [`Bridge`] from any thread (handlers included); cheap to clone.
#[derive(Clone)]
pub struct BridgeHandle {
    requests: mpsc::UnboundedSender<Request>,
    stats: Arc<Counters>,
}

impl fmt::Debug for BridgeHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BridgeHandle")
            .field("stats", &self.stats())
            .finish()
    }
}

impl BridgeHandle {
    /// Subscribes connection `id` to `topic` from the number after `after` (the last one
    /// the client has): the messages it missed are replayed from the node's recent history
    /// or the topic's JetStream stream, what neither holds is reported to
    /// [`Handler::on_gap`](tickwire_server::Handler::on_gap), then the live messages follow
    /// ([`ServerHandle::resume`]). Never waits: the bridge's thread does the work.
    pub fn resume(&self, id: ConnId, topic: &Topic, after: u64) {
        let _ = self.requests.send(Request::Resume {
            id,
            topic: topic.clone(),
            after,
        });
    }

    /// Counters so far.
    pub fn stats(&self) -> BridgeStats {
        self.stats.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reconnects_start_at_once_and_back_off_to_two_seconds() {
        let delays: Vec<u64> = (0..10).map(|n| backoff(n).as_millis() as u64).collect();
        assert_eq!(delays, [0, 50, 100, 200, 400, 800, 1600, 2000, 2000, 2000]);
    }
}
