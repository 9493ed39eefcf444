//! The feed's side: numbers each topic's messages and publishes them to NATS, straight to
//! the subject (core NATS) or through the topic's JetStream stream, whose sequence numbers
//! then are the topic's.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::time::Duration;

use async_nats::HeaderMap;
use async_nats::jetstream::context::PublishError as AckError;
use async_nats::jetstream::{self, stream};
use bytes::Bytes;
use futures_util::FutureExt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;

use crate::wire::{self, Kind};

/// How a topic's messages are kept on the bus.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backing {
    /// Core NATS only: a node that misses messages reports the gap; nothing can replay
    /// them. The publisher numbers the topic from `first_seq`.
    Core {
        /// The first number (1 for a new feed; a restarted publisher should go on above
        /// the last number it sent, or the nodes take its messages for repeats).
        first_seq: u64,
    },
    /// A JetStream stream per topic (made if missing, with these limits): a node fills a
    /// gap from it, and a client resumes from any number it still holds. The topic's
    /// numbers are the stream's, so a restarted publisher goes on where the stream is.
    JetStream {
        /// How long the stream keeps a message.
        max_age: Duration,
        /// How many messages it keeps at most.
        max_messages: i64,
    },
}

impl Backing {
    /// A stream keeping the last `max_messages` for up to `max_age`.
    pub fn jetstream(max_age: Duration, max_messages: i64) -> Self {
        Self::JetStream {
            max_age,
            max_messages,
        }
    }
}

/// Why publishing failed.
#[derive(Debug)]
#[non_exhaustive]
pub enum PublishError {
    /// NATS refused or could not take the message (the client's error, as text).
    Nats(String),
    /// The stream's last number is not the one this publisher expected: it lost messages
    /// (a NATS server that restarted), or another publisher wrote to it. The publisher reads
    /// the stream's number again before the topic's next message and stores again, under
    /// their own numbers, the messages it lacks; with another publisher writing to the same
    /// stream, numbers can be given to two messages, so do not run two.
    Raced {
        /// The stream.
        stream: String,
    },
}

impl fmt::Display for PublishError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Nats(error) => write!(f, "nats: {error}"),
            Self::Raced { stream } => write!(f, "another publisher wrote to stream {stream}"),
        }
    }
}

impl std::error::Error for PublishError {}

/// See [`Publisher::ack_timeout`].
const DEFAULT_ACK_TIMEOUT: Duration = Duration::from_secs(1);

fn context(client: &async_nats::Client, timeout: Duration) -> jetstream::Context {
    jetstream::ContextBuilder::new()
        .timeout(timeout)
        .build(client.clone())
}

fn nats(error: impl fmt::Display) -> PublishError {
    PublishError::Nats(error.to_string())
}

/// A stored message's acknowledgement: polled without waiting before each publish, so that
/// a failure is noticed at once rather than when the window fills.
type Ack = Pin<Box<dyn Future<Output = Result<jetstream::publish::PublishAck, AckError>> + Send>>;

/// A message sent to a stream, waiting for its acknowledgement.
struct Unacked {
    stream: String,
    seq: u64,
    headers: HeaderMap,
    payload: Bytes,
    ack: Ack,
}

/// One topic's numbering.
#[derive(Debug)]
struct Numbering {
    subject: String,
    last: u64,
    /// The stream, for a JetStream topic.
    stream: Option<String>,
    /// A stored message was not acknowledged: the stream's last number must be read again
    /// before the next message.
    resync: bool,
    /// Numbers given out (nodes may have relayed them) that the stream lost, up to this
    /// one: they go into the stream again before the next message (or, for those no longer
    /// held, markers saying they were lost), so that no number is given to two messages.
    lost_until: Option<u64>,
    /// Messages whose acknowledgement failed, by number, to store again.
    unstored: BTreeMap<u64, (HeaderMap, Bytes)>,
}

/// Publishes numbered topic messages to NATS. One publisher per topic: the numbers are its
/// (a JetStream stream refuses a message numbered from a stale last number, see
/// [`PublishError::Raced`]).
pub struct Publisher {
    client: async_nats::Client,
    jetstream: jetstream::Context,
    prefix: String,
    topics: HashMap<String, Numbering>,
    /// Stored messages not yet acknowledged, oldest first, kept until they are: a stream
    /// that loses them gets them again under the same numbers.
    acks: VecDeque<Unacked>,
    window: usize,
}

impl fmt::Debug for Publisher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Publisher")
            .field("prefix", &self.prefix)
            .field("topics", &self.topics)
            .field("acks", &self.acks.len())
            .finish()
    }
}

impl Publisher {
    /// A publisher on `client`, with subjects under `prefix` (`tw`: topic `book` goes to
    /// `tw.book`).
    pub fn new(client: async_nats::Client, prefix: &str) -> Self {
        Self {
            jetstream: context(&client, DEFAULT_ACK_TIMEOUT),
            client,
            prefix: prefix.to_owned(),
            topics: HashMap::new(),
            acks: VecDeque::new(),
            window: 4096,
        }
    }

    /// How long a stored message's acknowledgement (and any JetStream request) may take
    /// before the publisher reads the stream's number again and stores what it lost (1 s
    /// by default): after a NATS restart, messages the stream refused meanwhile reach it
    /// this much later, and a node waiting to fill a gap waits that long for them
    /// ([`BridgeBuilder::fetch_timeout`](crate::BridgeBuilder::fetch_timeout), 2 s).
    pub fn ack_timeout(mut self, timeout: Duration) -> Self {
        self.jetstream = context(&self.client, timeout);
        self
    }

    /// How many stream acknowledgements may be outstanding before
    /// [`publish`](Self::publish) waits for the oldest (4,096 by default).
    pub fn ack_window(mut self, window: usize) -> Self {
        self.window = window.max(1);
        self
    }

    /// Declares `topic` and how it is kept. For [`Backing::JetStream`], makes the stream if
    /// it does not exist and goes on from its last number.
    pub async fn topic(&mut self, topic: &str, backing: Backing) -> Result<(), PublishError> {
        let subject = wire::subject(&self.prefix, topic);
        let numbering = match backing {
            Backing::Core { first_seq } => Numbering {
                subject,
                last: first_seq.max(1) - 1,
                stream: None,
                resync: false,
                lost_until: None,
                unstored: BTreeMap::new(),
            },
            Backing::JetStream {
                max_age,
                max_messages,
            } => {
                let name = wire::stream_name(&self.prefix, topic);
                let mut stream = self
                    .jetstream
                    .get_or_create_stream(stream::Config {
                        name: name.clone(),
                        subjects: vec![subject.clone()],
                        max_age,
                        max_messages,
                        storage: stream::StorageType::File,
                        ..Default::default()
                    })
                    .await
                    .map_err(nats)?;
                let last = stream.info().await.map_err(nats)?.state.last_sequence;
                Numbering {
                    subject,
                    last,
                    stream: Some(name),
                    resync: false,
                    lost_until: None,
                    unstored: BTreeMap::new(),
                }
            }
        };
        self.topics.insert(topic.to_owned(), numbering);
        Ok(())
    }

    /// The last number given out on `topic` (0 before the first message; `None` for a
    /// topic not declared).
    pub fn last_seq(&self, topic: &str) -> Option<u64> {
        self.topics.get(topic).map(|n| n.last)
    }

    /// Publishes on `topic` (declared with [`topic`](Self::topic)) the payload `encode`
    /// makes from the message's number, and returns the number. `key` is what a node's
    /// conflating topic keeps the newest of. A JetStream topic's message is stored before a
    /// node can replay it; its acknowledgement is awaited later (see
    /// [`ack_window`](Self::ack_window) and [`flush`](Self::flush)).
    pub async fn publish(
        &mut self,
        topic: &str,
        key: u64,
        kind: Kind,
        encode: impl FnOnce(u64) -> Bytes,
    ) -> Result<u64, PublishError> {
        self.take_settled_acks()?;
        while self.acks.len() >= self.window {
            self.await_oldest_ack().await?;
        }
        self.settle(topic).await?;
        let numbering = self
            .topics
            .get_mut(topic)
            .ok_or_else(|| PublishError::Nats(format!("topic {topic} was not declared")))?;
        let seq = numbering.last + 1;
        let mut headers = wire::headers(seq, key, kind);
        let payload = encode(seq);
        match &numbering.stream {
            None => {
                self.client
                    .publish_with_headers(numbering.subject.clone(), headers, payload)
                    .await
                    .map_err(nats)?;
            }
            Some(stream) => {
                // The stream refuses the message unless its last number is the one before:
                // the topic's numbers and the stream's stay the same.
                headers.insert(
                    async_nats::header::NATS_EXPECTED_LAST_SEQUENCE,
                    (seq - 1).to_string().as_str(),
                );
                let ack = self
                    .jetstream
                    .publish_with_headers(
                        numbering.subject.clone(),
                        headers.clone(),
                        payload.clone(),
                    )
                    .await
                    .map_err(nats)?;
                self.acks.push_back(Unacked {
                    stream: stream.clone(),
                    seq,
                    headers,
                    payload,
                    ack: ack.into_future(),
                });
            }
        }
        numbering.last = seq;
        Ok(seq)
    }

    /// Waits until every message published so far is on the server (and, for JetStream
    /// topics, stored); numbers a stream lost meanwhile are marked lost in it (see
    /// [`wire`](crate::wire)), so that the nodes report them.
    pub async fn flush(&mut self) -> Result<(), PublishError> {
        loop {
            while !self.acks.is_empty() {
                // A failed acknowledgement leaves its topic to settle below.
                let _ = self.await_oldest_ack().await;
            }
            let unsettled: Vec<String> = self
                .topics
                .iter()
                .filter(|(_, n)| n.resync || n.lost_until.is_some())
                .map(|(name, _)| name.clone())
                .collect();
            if unsettled.is_empty() {
                return self.client.flush().await.map_err(nats);
            }
            for topic in unsettled {
                self.settle(&topic).await?;
            }
        }
    }

    /// Drops the acknowledgements already received from the front of the queue, and
    /// handles the first failed one.
    fn take_settled_acks(&mut self) -> Result<(), PublishError> {
        while let Some(front) = self.acks.front_mut() {
            match (&mut front.ack).now_or_never() {
                None => return Ok(()),
                Some(Ok(_)) => {
                    self.acks.pop_front();
                }
                Some(Err(error)) => {
                    let failed = self.acks.pop_front().expect("the front");
                    return Err(self.ack_failed(failed, error));
                }
            }
        }
        Ok(())
    }

    async fn await_oldest_ack(&mut self) -> Result<(), PublishError> {
        let Some(mut oldest) = self.acks.pop_front() else {
            return Ok(());
        };
        match (&mut oldest.ack).await {
            Ok(_) => Ok(()),
            Err(error) => Err(self.ack_failed(oldest, error)),
        }
    }

    /// `oldest`'s stream did not store it: every unacknowledged message of the stream is
    /// kept to store again, and the stream's number is read again before its next message.
    fn ack_failed(&mut self, oldest: Unacked, error: AckError) -> PublishError {
        // The stream's later acknowledgements are moot: its number is read again before
        // the topic's next message, and what it does not hold is stored again.
        let stream = oldest.stream;
        let mut unstored = BTreeMap::new();
        unstored.insert(oldest.seq, (oldest.headers, oldest.payload));
        let mut kept = VecDeque::with_capacity(self.acks.len());
        for unacked in self.acks.drain(..) {
            if unacked.stream == stream {
                unstored.insert(unacked.seq, (unacked.headers, unacked.payload));
            } else {
                kept.push_back(unacked);
            }
        }
        self.acks = kept;
        for numbering in self.topics.values_mut() {
            if numbering.stream.as_deref() == Some(stream.as_str()) {
                numbering.resync = true;
                numbering.unstored.append(&mut unstored);
            }
        }
        if error.kind() == jetstream::context::PublishErrorKind::WrongLastSequence {
            PublishError::Raced { stream }
        } else {
            nats(error)
        }
    }

    /// Before `topic`'s next message: reads its stream's last number again after a failed
    /// acknowledgement, and marks as lost the numbers given out that the stream does not
    /// hold (a NATS server that restarted can lose the last messages it took).
    async fn settle(&mut self, topic: &str) -> Result<(), PublishError> {
        let Some(numbering) = self.topics.get_mut(topic) else {
            return Ok(());
        };
        let Some(stream) = numbering.stream.clone() else {
            return Ok(());
        };
        if numbering.resync {
            let mut info = self.jetstream.get_stream(&stream).await.map_err(nats)?;
            let stored = info.info().await.map_err(nats)?.state.last_sequence;
            if stored < numbering.last {
                let lost = numbering.lost_until.unwrap_or(0).max(numbering.last);
                numbering.lost_until = Some(lost);
            }
            numbering.last = stored;
            numbering.resync = false;
            // What the stream holds needs nothing more.
            numbering.unstored.retain(|&seq, _| seq > stored);
        }
        let Some(lost) = numbering.lost_until else {
            return Ok(());
        };
        // Each lost number again, in order: its message if this publisher still has it,
        // else a marker (the stream's numbers are the topic's, so every number needs one
        // message); a marker says where the loss ends, so a node reports the whole range
        // at the first marker it meets.
        let mut acks = Vec::new();
        for seq in numbering.last + 1..=lost {
            let (mut headers, payload) = match numbering.unstored.get(&seq).cloned() {
                Some(message) => message,
                None => {
                    let mut headers = wire::headers(seq, 0, Kind::Binary);
                    headers.insert(wire::LOST_HEADER, lost.to_string().as_str());
                    (headers, Bytes::new())
                }
            };
            headers.insert(
                async_nats::header::NATS_EXPECTED_LAST_SEQUENCE,
                (seq - 1).to_string().as_str(),
            );
            let ack = self
                .jetstream
                .publish_with_headers(numbering.subject.clone(), headers, payload)
                .await
                .map_err(nats)?;
            acks.push(ack);
        }
        for ack in acks {
            if let Err(error) = ack.await {
                // Kept in `unstored`: the next try stores what the stream still lacks.
                numbering.resync = true;
                return Err(nats(error));
            }
        }
        numbering.unstored.clear();
        numbering.last = lost;
        numbering.lost_until = None;
        Ok(())
    }
}
