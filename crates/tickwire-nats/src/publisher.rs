//! The feed's side: numbers each topic's messages and publishes them to NATS, straight to
//! the subject (core NATS) or through the topic's JetStream stream, whose sequence numbers
//! then are the topic's.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::Duration;

use async_nats::jetstream::{self, context::PublishAckFuture, stream};
use bytes::Bytes;

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
    /// The stream's last number is not the one this publisher expected: another publisher
    /// wrote to it. The publisher has read the stream's number again; messages that went out
    /// numbered from the old one may have reached the nodes under wrong numbers.
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

fn nats(error: impl fmt::Display) -> PublishError {
    PublishError::Nats(error.to_string())
}

/// One topic's numbering.
#[derive(Debug)]
struct Numbering {
    subject: String,
    last: u64,
    /// The stream, for a JetStream topic.
    stream: Option<String>,
}

/// Publishes numbered topic messages to NATS. One publisher per topic: the numbers are its
/// (a JetStream stream refuses a message numbered from a stale last number, see
/// [`PublishError::Raced`]).
pub struct Publisher {
    client: async_nats::Client,
    jetstream: jetstream::Context,
    prefix: String,
    topics: HashMap<String, Numbering>,
    /// Stream acknowledgements not yet received, oldest first.
    acks: VecDeque<(String, PublishAckFuture)>,
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
            jetstream: jetstream::new(client.clone()),
            client,
            prefix: prefix.to_owned(),
            topics: HashMap::new(),
            acks: VecDeque::new(),
            window: 4096,
        }
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
        while self.acks.len() >= self.window {
            self.await_oldest_ack().await?;
        }
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
                    .publish_with_headers(numbering.subject.clone(), headers, payload)
                    .await
                    .map_err(nats)?;
                self.acks.push_back((stream.clone(), ack));
            }
        }
        numbering.last = seq;
        Ok(seq)
    }

    /// Waits until every message published so far is on the server (and, for JetStream
    /// topics, stored).
    pub async fn flush(&mut self) -> Result<(), PublishError> {
        while !self.acks.is_empty() {
            self.await_oldest_ack().await?;
        }
        self.client.flush().await.map_err(nats)
    }

    async fn await_oldest_ack(&mut self) -> Result<(), PublishError> {
        let Some((stream, ack)) = self.acks.pop_front() else {
            return Ok(());
        };
        match ack.await {
            Ok(_) => Ok(()),
            Err(error) => {
                // Read the stream's number again, so that the next message fits.
                self.acks.clear();
                let mut info = self.jetstream.get_stream(&stream).await.map_err(nats)?;
                let last = info.info().await.map_err(nats)?.state.last_sequence;
                for numbering in self.topics.values_mut() {
                    if numbering.stream.as_deref() == Some(stream.as_str()) {
                        numbering.last = last;
                    }
                }
                if error.kind() == jetstream::context::PublishErrorKind::WrongLastSequence {
                    Err(PublishError::Raced { stream })
                } else {
                    Err(nats(error))
                }
            }
        }
    }
}
