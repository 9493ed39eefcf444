//! What a demo client checks on every message: the per-topic sequence numbers the feed
//! embeds and the gap notices the server sends ([`SeqCheck`]), and reading the few fields it
//! needs out of a message without a JSON parser ([`field_u64`], [`field_str`]).
//!
//! Owns no I/O and no clock: the client loop feeds it what arrived.

/// One topic's sequence on one connection: every number must be higher than the last, and
/// every number skipped must be covered by a gap notice (which the server sends after the
/// round of deliveries that dropped the messages, so a notice may arrive after the message
/// that follows the hole).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SeqCheck {
    /// The first sequence number this connection is accountable for (`None` until a
    /// connection that joined mid-stream sees its first message or gap).
    start: Option<u64>,
    /// The number the next message should carry if nothing is dropped.
    next: u64,
    /// Messages received.
    pub(crate) received: u64,
    /// Numbers skipped between received messages (or before the first one).
    pub(crate) skipped: u64,
    /// Messages the server said it dropped (sum of the gap notices).
    pub(crate) reported: u64,
    /// Messages whose number was not above the previous one's.
    pub(crate) out_of_order: u64,
}

impl SeqCheck {
    /// A connection subscribed before message `start` was published: it is accountable for
    /// every message from `start` on.
    pub(crate) fn from(start: u64) -> Self {
        Self {
            start: Some(start),
            next: start,
            received: 0,
            skipped: 0,
            reported: 0,
            out_of_order: 0,
        }
    }

    /// A connection that subscribed while messages were being published: it is accountable
    /// from the first message (or reported gap) it sees.
    pub(crate) fn joining() -> Self {
        Self {
            start: None,
            ..Self::from(0)
        }
    }

    /// A message with sequence number `seq` arrived.
    pub(crate) fn message(&mut self, seq: u64) {
        if self.start.is_none() {
            self.start = Some(seq);
            self.next = seq;
        }
        if seq < self.next {
            self.out_of_order += 1;
            return;
        }
        self.skipped += seq - self.next;
        self.received += 1;
        self.next = seq + 1;
    }

    /// The server reported `dropped` messages of this topic, the lowest numbered `first`,
    /// that will never arrive.
    pub(crate) fn gap(&mut self, dropped: u64, first: u64) {
        self.reported += dropped;
        match self.start {
            None => {
                self.start = Some(first);
                self.next = first;
            }
            // A joining connection lost messages before its first one arrived.
            Some(start) if first < start => {
                self.skipped += start - first;
                self.start = Some(first);
            }
            Some(_) => {}
        }
    }

    /// Messages this connection has accounted for, received or reported dropped, out of the
    /// `published` so far (the last sequence number given out).
    pub(crate) fn accounted(&self) -> u64 {
        self.received + self.reported
    }

    /// How many of the messages from `start` to `published` were neither received nor
    /// reported dropped (0 for a client that saw everything or was told about every gap).
    pub(crate) fn unaccounted(&self, published: u64) -> u64 {
        let Some(start) = self.start else {
            return 0;
        };
        let owed = (published + 1).saturating_sub(start);
        owed.saturating_sub(self.accounted())
    }

    /// True when every message up to `published` arrived in order, or its loss was reported.
    pub(crate) fn complete(&self, published: u64) -> bool {
        self.out_of_order == 0 && self.unaccounted(published) == 0 && self.skipped <= self.reported
    }

    /// True when every message up to `published` arrived, in order, with no gap at all.
    pub(crate) fn gapless(&self, published: u64) -> bool {
        self.complete(published) && self.reported == 0 && self.skipped == 0
    }
}

/// The unsigned number after `"name":` in a flat JSON object, if there is one.
pub(crate) fn field_u64(message: &str, name: &str) -> Option<u64> {
    let rest = after_key(message, name)?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    rest[..digits].parse().ok()
}

/// The string after `"name":` in a flat JSON object (no escapes inside), if there is one.
pub(crate) fn field_str<'a>(message: &'a str, name: &str) -> Option<&'a str> {
    let rest = after_key(message, name)?.strip_prefix('"')?;
    rest.find('"').map(|end| &rest[..end])
}

/// What follows `"name":` (the first occurrence of the key), spaces skipped.
fn after_key<'a>(message: &'a str, name: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(at) = message[from..].find(name) {
        let start = from + at;
        let end = start + name.len();
        let quoted = start > 0
            && message.as_bytes()[start - 1] == b'"'
            && message.as_bytes().get(end) == Some(&b'"');
        if quoted {
            let rest = message[end + 1..].trim_start();
            if let Some(value) = rest.strip_prefix(':') {
                return Some(value.trim_start());
            }
        }
        from = end;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_in_order_is_gapless() {
        let mut check = SeqCheck::from(1);
        for seq in 1..=10 {
            check.message(seq);
        }
        assert!(check.gapless(10));
        assert_eq!(check.unaccounted(10), 0);
        // One more was published and has not arrived yet.
        assert!(!check.complete(11));
        assert_eq!(check.unaccounted(11), 1);
    }

    #[test]
    fn a_hole_is_complete_only_once_its_gap_notice_arrives() {
        let mut check = SeqCheck::from(1);
        check.message(1);
        check.message(2);
        // 3, 4 and 6 dropped (conflation drops need not be contiguous); the notice comes
        // after the messages that follow them.
        check.message(5);
        check.message(7);
        assert_eq!(check.skipped, 3);
        assert!(!check.complete(7));
        check.gap(3, 3);
        assert!(check.complete(7));
        assert!(!check.gapless(7));
    }

    #[test]
    fn a_number_repeated_or_going_back_is_out_of_order() {
        let mut check = SeqCheck::from(1);
        check.message(1);
        check.message(3);
        check.message(2);
        check.message(3);
        check.gap(1, 2);
        assert_eq!(check.out_of_order, 2);
        assert!(!check.complete(3));
    }

    #[test]
    fn dropped_messages_at_the_tail_are_owed_until_reported() {
        let mut check = SeqCheck::from(1);
        check.message(1);
        assert_eq!(check.unaccounted(4), 3);
        check.gap(3, 2);
        assert!(check.complete(4));
    }

    #[test]
    fn a_connection_joining_late_owes_only_what_followed_its_start() {
        let mut check = SeqCheck::joining();
        assert_eq!(check.unaccounted(99), 0);
        check.message(100);
        check.message(101);
        assert!(check.gapless(101));
    }

    #[test]
    fn a_joining_connection_told_of_losses_before_its_first_message_is_complete() {
        let mut check = SeqCheck::joining();
        check.message(50);
        check.message(51);
        // 47 to 49 were dropped before 50 could be queued.
        check.gap(3, 47);
        assert_eq!(check.skipped, 3);
        assert!(check.complete(51));
        let mut check = SeqCheck::joining();
        check.gap(2, 10);
        check.message(12);
        assert!(check.complete(12));
    }

    #[test]
    fn fields_are_read_by_exact_key() {
        let m = r#"{"type":"book","seq":42,"ts":123456789,"sym":"BTC-USD","sequence":7}"#;
        assert_eq!(field_str(m, "type"), Some("book"));
        assert_eq!(field_u64(m, "seq"), Some(42));
        assert_eq!(field_u64(m, "ts"), Some(123_456_789));
        assert_eq!(field_str(m, "sym"), Some("BTC-USD"));
        assert_eq!(field_u64(m, "sequence"), Some(7));
        assert_eq!(field_u64(m, "missing"), None);
        // A key that is only a value, or not a number.
        assert_eq!(field_u64(r#"{"a":"seq","seq": 9}"#, "seq"), Some(9));
        assert_eq!(field_u64(r#"{"seq":"x"}"#, "seq"), None);
    }
}
