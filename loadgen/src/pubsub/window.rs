//! The publisher's window: which messages are outstanding and how many deliveries each still
//! waits for. A message is done once every other subscriber received it; since each
//! subscriber receives in publish order, messages complete in order, so a ring indexed by
//! sequence number modulo the window size is enough.
//!
//! Owns the counting only; the generator (`generator.rs`) checks each subscriber's order and
//! tells this which message a delivery carried.

/// At most `size` messages outstanding, each waiting for `subscribers` deliveries.
#[derive(Debug)]
pub struct Window {
    /// remaining[s % size]: deliveries message s still waits for (s outstanding).
    remaining: Vec<u64>,
    subscribers: u64,
    published: u64,
    completed: u64,
}

impl Window {
    /// An empty window of `size` (at least 1) messages that each go to `subscribers`
    /// subscribers, the next message being `next_sequence`.
    pub fn new(size: usize, subscribers: u64, next_sequence: u64) -> Self {
        assert!(size > 0, "a window of at least one message");
        Self {
            remaining: vec![0; size],
            subscribers,
            published: next_sequence,
            completed: next_sequence,
        }
    }

    /// The sequence number of a message that may be published now, counted as published;
    /// None while the window is full.
    pub fn publish(&mut self) -> Option<u64> {
        if self.published - self.completed == self.remaining.len() as u64 {
            return None;
        }
        let sequence = self.published;
        let slot = self.slot(sequence);
        self.remaining[slot] = self.subscribers;
        self.published += 1;
        Some(sequence)
    }

    /// Counts one delivery of message `sequence`. Err when that message is not outstanding
    /// (never published, or already delivered to every subscriber).
    pub fn deliver(&mut self, sequence: u64) -> Result<(), String> {
        if sequence >= self.published {
            return Err(format!("message {sequence} was never published"));
        }
        let slot = self.slot(sequence);
        if sequence < self.completed || self.remaining[slot] == 0 {
            return Err(format!(
                "message {sequence} arrived more often than there are subscribers"
            ));
        }
        self.remaining[slot] -= 1;
        while self.completed < self.published && self.remaining[self.slot(self.completed)] == 0 {
            self.completed += 1;
        }
        Ok(())
    }

    /// Messages published, over the window's life (from the sequence it started at).
    pub fn published(&self) -> u64 {
        self.published
    }

    /// The oldest message not yet delivered to every subscriber (= `published` when none).
    pub fn oldest_outstanding(&self) -> u64 {
        self.completed
    }

    /// True when every message published reached every subscriber.
    pub fn is_empty(&self) -> bool {
        self.completed == self.published
    }

    fn slot(&self, sequence: u64) -> usize {
        (sequence % self.remaining.len() as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::Window;

    #[test]
    fn a_message_is_done_once_every_subscriber_received_it() {
        let mut window = Window::new(2, 3, 0);
        assert_eq!(window.publish(), Some(0));
        assert_eq!(window.publish(), Some(1));
        assert_eq!(
            window.publish(),
            None,
            "two outstanding fill a window of two"
        );
        for _ in 0..2 {
            window.deliver(0).expect("outstanding");
        }
        assert_eq!(
            window.publish(),
            None,
            "one subscriber still waits for message 0"
        );
        window.deliver(0).expect("outstanding");
        assert_eq!(window.oldest_outstanding(), 1);
        assert_eq!(window.publish(), Some(2));
        for sequence in [1, 1, 1, 2, 2, 2] {
            window.deliver(sequence).expect("outstanding");
        }
        assert!(window.is_empty());
        assert_eq!(window.published(), 3);
    }

    #[test]
    fn a_later_message_done_first_waits_for_the_older_one() {
        // Subscriber order makes this impossible on the wire; the count still stays right.
        let mut window = Window::new(4, 1, 10);
        assert_eq!(window.publish(), Some(10));
        assert_eq!(window.publish(), Some(11));
        window.deliver(11).expect("outstanding");
        assert_eq!(window.oldest_outstanding(), 10);
        window.deliver(10).expect("outstanding");
        assert!(window.is_empty());
    }

    #[test]
    fn a_delivery_too_many_or_of_an_unpublished_message_is_an_error() {
        let mut window = Window::new(4, 2, 0);
        assert!(window.deliver(0).is_err(), "nothing published yet");
        window.publish();
        window.deliver(0).expect("first of two");
        window.deliver(0).expect("second of two");
        assert!(
            window.deliver(0).is_err(),
            "a third delivery for two subscribers"
        );
        assert!(window.deliver(5).is_err());
    }
}
