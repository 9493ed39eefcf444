//! The bridge's loop: one task on the bridge's thread that owns every topic's state, so that
//! a topic's live messages, gap fills and resumes reach the server in one order.
//!
//! Per topic: subscribed to its subject while the server has subscribers for it (or a resume
//! waits); the last number relayed; a bounded history of what was relayed (messages and
//! reported gaps) for resumes; and the topic's JetStream stream, when one backs it.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use async_nats::jetstream::context::GetStreamErrorKind;
use async_nats::jetstream::{self, consumer, stream::Stream};
use async_nats::{Client, Event, Subscriber};
use futures_util::StreamExt;
use tickwire_server::{ConnId, Gap, HandleError, Replay, ServerHandle, Topic};
use tokio::sync::mpsc;
use tokio_stream::StreamMap;

use crate::stats::Counters;
use crate::wire::{self, Incoming, Refused};

/// What the bridge's thread is asked to do.
pub(crate) enum Request {
    /// The server to relay to (the first request that counts).
    Attach(ServerHandle),
    /// The topic's subscriber count crossed 0: subscribe or unsubscribe as it now stands.
    Interest(Topic),
    Resume {
        id: ConnId,
        topic: Topic,
        after: u64,
    },
    Nats(Event),
    Shutdown,
}

/// The bridge's settings ([`BridgeBuilder`](crate::BridgeBuilder)).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) prefix: String,
    pub(crate) history: usize,
    pub(crate) max_replay: u64,
    pub(crate) fetch_timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            prefix: "tw".to_owned(),
            history: 8_192,
            max_replay: 10_000,
            fetch_timeout: Duration::from_secs(2),
        }
    }
}

/// One entry of a topic's recent history, in number order.
#[derive(Debug, Clone)]
enum Entry {
    Message(Incoming),
    Missed(Gap),
}

impl Entry {
    fn last_seq(&self) -> u64 {
        match self {
            Self::Message(message) => message.seq,
            Self::Missed(gap) => gap.last_seq,
        }
    }

    fn replay(&self) -> Replay {
        match self {
            Self::Message(m) => Replay::Message {
                seq: m.seq,
                key: m.key,
                frame: m.frame.clone(),
            },
            Self::Missed(gap) => Replay::Missed(*gap),
        }
    }
}

/// One topic's state.
struct TopicState {
    topic: Topic,
    /// Subscribed to the subject.
    subscribed: bool,
    /// The stream that backs the topic, looked up when subscribing.
    stream: Option<Stream>,
    /// Whether a stream was looked for and JetStream answered (found, or not there); a
    /// lookup that could not reach JetStream is tried again at the next connect.
    looked_up: bool,
    /// The last number relayed (or reported missed) since subscribing; `None` until known
    /// (a core topic learns it from its first message).
    last: Option<u64>,
    /// What was relayed and reported, oldest first, at most `history` entries.
    history: VecDeque<Entry>,
    /// Resumes waiting for `last` to be known.
    parked: Vec<(ConnId, u64)>,
    /// When the topic lost its last subscriber (it is left `LINGER` later if none came).
    idle_since: Option<Instant>,
    /// When a resume was last handed to the server: its subscription may not be counted yet.
    resumed_at: Option<Instant>,
}

/// How long a topic stays subscribed with no subscriber: a client that reconnects at once
/// finds it live, and a resume whose subscription the worker has not applied yet (so the
/// count does not show it) never meets an unsubscribed topic.
const LINGER: Duration = Duration::from_secs(1);

impl TopicState {
    fn new(topic: Topic) -> Self {
        Self {
            topic,
            subscribed: false,
            stream: None,
            looked_up: false,
            last: None,
            history: VecDeque::new(),
            parked: Vec::new(),
            idle_since: None,
            resumed_at: None,
        }
    }
}

pub(crate) struct Relay {
    server: ServerHandle,
    client: Client,
    jetstream: jetstream::Context,
    settings: Settings,
    stats: Arc<Counters>,
    topics: HashMap<String, TopicState>,
    live: StreamMap<String, Subscriber>,
}

/// Every message of a topic relayed in order needs the server; once it has stopped, so does
/// the bridge.
struct Stopped;

impl From<HandleError> for Stopped {
    fn from(_: HandleError) -> Self {
        Stopped
    }
}

impl Relay {
    fn new(server: ServerHandle, client: Client, settings: Settings, stats: Arc<Counters>) -> Self {
        Self {
            server,
            jetstream: jetstream::new(client.clone()),
            client,
            settings,
            stats,
            topics: HashMap::new(),
            live: StreamMap::new(),
        }
    }

    /// Waits for the server to relay to, then relays until shut down.
    pub(crate) async fn run(
        client: Client,
        settings: Settings,
        stats: Arc<Counters>,
        mut inbox: mpsc::UnboundedReceiver<Request>,
    ) {
        if client.connection_state() == async_nats::connection::State::Connected {
            stats.connected.store(true, Ordering::Relaxed);
        }
        // Until a server is attached, requests wait (resumes, interest); connection events
        // only count.
        let mut waiting = Vec::new();
        let server = loop {
            match inbox.recv().await {
                None | Some(Request::Shutdown) => return,
                Some(Request::Attach(server)) => break server,
                Some(Request::Nats(event)) => count_event(&stats, &event),
                Some(other) => waiting.push(other),
            }
        };
        let topics = server.topics();
        let mut relay = Self::new(server, client, settings, stats);
        for topic in topics {
            if relay.interest(topic).await.is_err() {
                return;
            }
        }
        for request in waiting {
            if relay.request(request, &mut inbox).await.is_err() {
                return;
            }
        }
        relay.relay_until_shutdown(inbox).await;
    }

    async fn relay_until_shutdown(mut self, mut inbox: mpsc::UnboundedReceiver<Request>) {
        let mut linger = tokio::time::interval(LINGER / 4);
        linger.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            let step = tokio::select! {
                _ = linger.tick() => {
                    self.linger();
                    Ok(())
                }
                request = inbox.recv() => match request {
                    None | Some(Request::Shutdown) => return,
                    Some(request) => self.request(request, &mut inbox).await,
                },
                Some((name, message)) = self.live.next(), if !self.live.is_empty() => {
                    self.live_message(&name, message).await
                }
            };
            if step.is_err() {
                return;
            }
        }
    }

    async fn request(
        &mut self,
        request: Request,
        inbox: &mut mpsc::UnboundedReceiver<Request>,
    ) -> Result<(), Stopped> {
        match request {
            Request::Interest(topic) => self.interest(topic).await,
            Request::Resume { id, topic, after } => {
                // Resumes come in bursts (the clients of a node that went away): every one
                // queued now is served with one look at the history per topic.
                let mut resumes = vec![(id, topic, after)];
                let mut others = Vec::new();
                while let Ok(next) = inbox.try_recv() {
                    match next {
                        Request::Resume { id, topic, after } => resumes.push((id, topic, after)),
                        other => others.push(other),
                    }
                }
                self.resumes(resumes).await?;
                for other in others {
                    match other {
                        Request::Shutdown => return Err(Stopped),
                        other => Box::pin(self.request(other, inbox)).await?,
                    }
                }
                Ok(())
            }
            Request::Nats(event) => self.event(event).await,
            // One server per bridge.
            Request::Attach(_) => Ok(()),
            Request::Shutdown => Err(Stopped),
        }
    }

    fn state(&mut self, topic: &Topic) -> &mut TopicState {
        self.topics
            .entry(topic.name().to_owned())
            .or_insert_with(|| TopicState::new(topic.clone()))
    }

    /// Subscribes to the topic's subject if it is wanted and unsubscribes if not.
    async fn interest(&mut self, topic: Topic) -> Result<(), Stopped> {
        let name = topic.name().to_owned();
        let state = self.state(&topic);
        let wanted = topic.subscribers() > 0 || !state.parked.is_empty();
        if wanted {
            state.idle_since = None;
            if !state.subscribed {
                self.subscribe(&name).await?;
            }
        } else if state.subscribed && state.idle_since.is_none() {
            // Left at the next look after `LINGER` (`linger`), if still idle.
            state.idle_since = Some(Instant::now());
        }
        Ok(())
    }

    /// Unsubscribes the topics idle for `LINGER` (and not resumed meanwhile).
    fn linger(&mut self) {
        let now = Instant::now();
        let recent = |at: Option<Instant>| at.is_some_and(|at| now - at < LINGER);
        for (name, state) in &mut self.topics {
            let idle = state.subscribed
                && state.idle_since.is_some()
                && !recent(state.idle_since)
                && !recent(state.resumed_at)
                && state.parked.is_empty()
                && state.topic.subscribers() == 0;
            if idle {
                self.live.remove(name);
                state.subscribed = false;
                state.idle_since = None;
                state.last = None;
                state.history.clear();
            } else if state.topic.subscribers() > 0 {
                state.idle_since = None;
            }
        }
    }

    async fn subscribe(&mut self, name: &str) -> Result<(), Stopped> {
        let subject = wire::subject(&self.settings.prefix, name);
        // Queued while the client is away: it subscribes again on every connect.
        let subscriber = match self.client.subscribe(subject).await {
            Ok(subscriber) => subscriber,
            // The client is closed for good: nothing will come.
            Err(_) => return Ok(()),
        };
        self.live.insert(name.to_owned(), subscriber);
        let state = self.topics.get_mut(name).expect("known topic");
        state.subscribed = true;
        state.looked_up = false;
        if self.connected() {
            self.look_up_stream(name).await?;
        }
        Ok(())
    }

    fn connected(&self) -> bool {
        self.client.connection_state() == async_nats::connection::State::Connected
    }

    /// Finds the stream that backs the topic, if any. Once found, the topic's last number is
    /// the stream's (when not known already) and waiting resumes are served.
    async fn look_up_stream(&mut self, name: &str) -> Result<(), Stopped> {
        let timeout = self.settings.fetch_timeout;
        let lookup = self
            .jetstream
            .get_stream(wire::stream_name(&self.settings.prefix, name));
        let found = match tokio::time::timeout(timeout, lookup).await {
            Ok(Ok(stream)) => Some(stream),
            // JetStream answered: no such stream (or no JetStream), a core topic.
            Ok(Err(error)) if matches!(error.kind(), GetStreamErrorKind::JetStream(_)) => None,
            // No answer: try again at the next connect.
            _ => return Ok(()),
        };
        let state = self.topics.get_mut(name).expect("known topic");
        state.looked_up = true;
        state.stream = found;
        if state.stream.is_none() {
            return Ok(());
        }
        // The subscription is on the server once flushed: from the stream's last number on,
        // every message reaches this node live or is a gap it will see.
        let _ = tokio::time::timeout(timeout, self.client.flush()).await;
        let last = self.stream_last(name).await;
        let state = self.topics.get_mut(name).expect("known topic");
        if state.last.is_none() {
            state.last = last;
        }
        self.serve_parked(name).await
    }

    /// The last number of the topic's stream (`None` when it cannot be read).
    async fn stream_last(&mut self, name: &str) -> Option<u64> {
        let stream = self.topics.get_mut(name)?.stream.as_mut()?;
        let info = tokio::time::timeout(self.settings.fetch_timeout, stream.info())
            .await
            .ok()?
            .ok()?;
        Some(info.state.last_sequence)
    }

    async fn live_message(
        &mut self,
        name: &str,
        message: async_nats::Message,
    ) -> Result<(), Stopped> {
        Counters::add(&self.stats.received, 1);
        let entry = match wire::incoming(message.headers.as_ref(), &message.payload) {
            Ok(incoming) => Entry::Message(incoming),
            Err(Refused::NoSequence) => {
                Counters::add(&self.stats.refused, 1);
                return Ok(());
            }
            Err(Refused::Malformed(seq)) => Entry::Missed(Gap::range(seq, seq).expect("one")),
            Err(Refused::Lost { first, last }) => {
                Entry::Missed(Gap::range(first, last).expect("checked by wire"))
            }
        };
        let seq = match &entry {
            Entry::Message(m) => m.seq,
            Entry::Missed(gap) => gap.first_seq,
        };
        let state = self.topics.get_mut(name).expect("subscribed topic");
        let last = match state.last {
            Some(last) => last,
            None => {
                // A core topic's first message: the numbering starts here for this node.
                state.last = Some(seq - 1);
                self.serve_parked(name).await?;
                seq - 1
            }
        };
        if seq <= last {
            Counters::add(&self.stats.repeats, 1);
            return Ok(());
        }
        if seq > last + 1 {
            self.fill(name, last + 1, seq - 1).await?;
        }
        self.relay(name, entry)
    }

    /// Hands one entry to the server and keeps it in the history.
    fn relay(&mut self, name: &str, entry: Entry) -> Result<(), Stopped> {
        let state = self.topics.get_mut(name).expect("known topic");
        match &entry {
            Entry::Message(m) => {
                match self
                    .server
                    .publish_at(&state.topic, m.seq, m.key, |_| m.frame.clone())
                {
                    Ok(()) => Counters::add(&self.stats.relayed, 1),
                    // Something else published on the topic with higher numbers: this one
                    // would go out of order.
                    Err(HandleError::StaleSequence(_)) => {
                        Counters::add(&self.stats.repeats, 1);
                    }
                    Err(error) => return Err(error.into()),
                }
            }
            Entry::Missed(gap) => {
                self.server.report_gap(&state.topic, *gap)?;
                Counters::add(&self.stats.gaps, 1);
                Counters::add(&self.stats.missed, gap.dropped);
            }
        }
        state.last = Some(entry.last_seq());
        if self.settings.history > 0 {
            if state.history.len() == self.settings.history {
                state.history.pop_front();
            }
            state.history.push_back(entry);
        }
        Ok(())
    }

    /// Numbers `first..=last` did not arrive live: relays what the topic's stream still
    /// holds of them and reports the rest.
    async fn fill(&mut self, name: &str, first: u64, last: u64) -> Result<(), Stopped> {
        let fetched = self.fetch(name, first, last).await;
        Counters::add(&self.stats.filled, fetched.len() as u64);
        for entry in with_gaps(first, last, fetched) {
            self.relay(name, entry)?;
        }
        Ok(())
    }

    /// The messages numbered `first..=last` the topic's stream holds, in order (holes where
    /// it has none, or where a message could not be read or framed); nothing for a core
    /// topic or when JetStream does not answer within the fetch timeout.
    async fn fetch(&mut self, name: &str, first: u64, last: u64) -> Vec<Entry> {
        let timeout = self.settings.fetch_timeout;
        if self.topics.get(name).is_some_and(|s| s.stream.is_none()) {
            // The stream may have been made since the topic was subscribed (a publisher
            // that started after the node's first client): look again.
            let lookup = self
                .jetstream
                .get_stream(wire::stream_name(&self.settings.prefix, name));
            if let Ok(Ok(stream)) = tokio::time::timeout(timeout, lookup).await
                && let Some(state) = self.topics.get_mut(name)
            {
                state.stream = Some(stream);
            }
        }
        let Some(stream) = self.topics.get(name).and_then(|s| s.stream.clone()) else {
            return Vec::new();
        };
        let mut got = Vec::new();
        let fetch = async {
            let consumer = stream
                .create_consumer(consumer::pull::OrderedConfig {
                    deliver_policy: consumer::DeliverPolicy::ByStartSequence {
                        start_sequence: first,
                    },
                    ..Default::default()
                })
                .await
                .ok()?;
            let mut messages = consumer.messages().await.ok()?;
            while let Some(Ok(message)) = messages.next().await {
                let seq = message.info().ok()?.stream_sequence;
                if seq > last {
                    break;
                }
                match wire::incoming(message.headers.as_ref(), &message.payload) {
                    Ok(incoming) if incoming.seq == seq => got.push(Entry::Message(incoming)),
                    // Not numbered by its stream (another publisher): not this topic's
                    // message under this number.
                    _ => {}
                }
                if seq == last {
                    break;
                }
            }
            Some(())
        };
        let _ = tokio::time::timeout(timeout, fetch).await;
        got
    }

    async fn resumes(&mut self, resumes: Vec<(ConnId, Topic, u64)>) -> Result<(), Stopped> {
        let mut by_topic: Vec<(Topic, Vec<(ConnId, u64)>)> = Vec::new();
        for (id, topic, after) in resumes {
            match by_topic.iter_mut().find(|(t, _)| *t == topic) {
                Some((_, list)) => list.push((id, after)),
                None => by_topic.push((topic, vec![(id, after)])),
            }
        }
        for (topic, list) in by_topic {
            let name = topic.name().to_owned();
            self.state(&topic).parked.extend(list);
            let subscribed = self.state(&topic).subscribed;
            if !subscribed {
                // Subscribing serves them once the topic's last number is known.
                self.subscribe(&name).await?;
            } else {
                self.serve_parked(&name).await?;
            }
        }
        Ok(())
    }

    /// Serves the topic's parked resumes if its last number is known.
    async fn serve_parked(&mut self, name: &str) -> Result<(), Stopped> {
        let Some(state) = self.topics.get_mut(name) else {
            return Ok(());
        };
        let Some(last) = state.last else {
            return Ok(());
        };
        if state.parked.is_empty() {
            return Ok(());
        }
        let parked = std::mem::take(&mut state.parked);
        let mut resumed = false;
        let max_replay = self.settings.max_replay;
        // The oldest number any of them wants, within the replay cap.
        let lowest = parked
            .iter()
            .map(|&(_, after)| (after + 1).max(last.saturating_sub(max_replay) + 1))
            .min()
            .unwrap_or(last + 1);
        // What the history holds from `lowest` on, after what the stream holds below it.
        let history_first = state.history.front().map_or(last + 1, first_seq);
        let mut older = Vec::new();
        if lowest < history_first {
            older = with_gaps(
                lowest,
                history_first - 1,
                self.fetch(name, lowest, history_first - 1).await,
            );
        }
        let state = self.topics.get(name).expect("known topic");
        let entries: Vec<&Entry> = older.iter().chain(state.history.iter()).collect();
        for (id, after) in parked {
            let from = (after + 1).max(last.saturating_sub(max_replay) + 1);
            let mut replay: Vec<Replay> = Gap::range(after + 1, from - 1)
                .map(Replay::Missed)
                .into_iter()
                .collect();
            for entry in &entries {
                if entry.last_seq() < from {
                    continue;
                }
                replay.push(match entry {
                    Entry::Missed(gap) if gap.first_seq < from => {
                        Replay::Missed(Gap::range(from, gap.last_seq).expect("in range"))
                    }
                    entry => entry.replay(),
                });
            }
            let replayed = replay
                .iter()
                .filter(|r| matches!(r, Replay::Message { .. }))
                .count();
            self.server.resume(id, &state.topic, after, replay)?;
            Counters::add(&self.stats.resumes, 1);
            resumed = true;
            Counters::add(&self.stats.replayed, replayed as u64);
        }
        if resumed && let Some(state) = self.topics.get_mut(name) {
            state.resumed_at = Some(Instant::now());
        }
        Ok(())
    }

    async fn event(&mut self, event: Event) -> Result<(), Stopped> {
        count_event(&self.stats, &event);
        if !matches!(event, Event::Connected) {
            return Ok(());
        }
        // Topics subscribed while NATS was away: find their streams now.
        let unknown: Vec<String> = self
            .topics
            .iter()
            .filter(|(_, s)| s.subscribed && !s.looked_up)
            .map(|(name, _)| name.clone())
            .collect();
        for name in unknown {
            self.look_up_stream(&name).await?;
        }
        // Messages of a stream-backed topic published while this node was away are in the
        // stream: fill them now rather than at the next live message.
        let names: Vec<String> = self
            .topics
            .iter()
            .filter(|(_, s)| s.subscribed && s.stream.is_some() && s.last.is_some())
            .map(|(name, _)| name.clone())
            .collect();
        for name in names {
            let known = self.topics[&name].last.unwrap_or(0);
            if let Some(stream_last) = self.stream_last(&name).await
                && stream_last > known
            {
                self.fill(&name, known + 1, stream_last).await?;
            }
        }
        Ok(())
    }
}

/// Connection state and counters for a NATS client event.
fn count_event(stats: &Counters, event: &Event) {
    match event {
        Event::Connected => {
            stats.connected.store(true, Ordering::Relaxed);
            Counters::add(&stats.connects, 1);
        }
        Event::Disconnected | Event::Closed => stats.connected.store(false, Ordering::Relaxed),
        Event::SlowConsumer(_) => Counters::add(&stats.slow, 1),
        _ => {}
    }
}

fn first_seq(entry: &Entry) -> u64 {
    match entry {
        Entry::Message(m) => m.seq,
        Entry::Missed(gap) => gap.first_seq,
    }
}

/// `fetched` (in order, within `first..=last`) with a [`Entry::Missed`] for every hole.
fn with_gaps(first: u64, last: u64, fetched: Vec<Entry>) -> Vec<Entry> {
    let mut out = Vec::with_capacity(fetched.len() + 1);
    let mut next = first;
    for entry in fetched {
        let seq = first_seq(&entry);
        if seq < next || seq > last {
            continue;
        }
        if let Some(gap) = Gap::range(next, seq - 1) {
            out.push(Entry::Missed(gap));
        }
        next = entry.last_seq() + 1;
        out.push(entry);
    }
    if let Some(gap) = Gap::range(next, last) {
        out.push(Entry::Missed(gap));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tickwire_server::SharedFrame;

    fn message(seq: u64) -> Entry {
        Entry::Message(Incoming {
            seq,
            key: 0,
            frame: SharedFrame::binary(&seq.to_be_bytes()),
        })
    }

    fn shape(entries: &[Entry]) -> Vec<(u64, u64)> {
        entries
            .iter()
            .map(|e| (first_seq(e), e.last_seq()))
            .collect()
    }

    #[test]
    fn holes_in_a_fetch_become_missed_ranges() {
        let fetched = vec![message(3), message(4), message(7)];
        assert_eq!(
            shape(&with_gaps(1, 9, fetched)),
            [(1, 2), (3, 3), (4, 4), (5, 6), (7, 7), (8, 9)]
        );
        assert_eq!(shape(&with_gaps(5, 6, Vec::new())), [(5, 6)]);
        // Out of range or repeated entries are not relayed twice.
        let fetched = vec![message(1), message(2), message(2), message(9)];
        assert_eq!(shape(&with_gaps(2, 3, fetched)), [(2, 2), (3, 3)]);
    }
}
