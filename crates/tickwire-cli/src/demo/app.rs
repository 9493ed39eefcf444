//! The demo's server application on tickwire-server: every connection subscribes to the
//! topics its path names (`/book,trades,status`) when it opens, is greeted with `{"type":"hello"}` once its subscriptions are in place,
//! and is sent a gap notice whenever its topics' policies dropped messages for it.
//!
//! Owns the handler only; the topics and their policies are made in [`super::start_server`].

use std::fmt::Write as _;
use std::net::SocketAddr;

use tickwire::server::{Conn, Decision, Gap, Handler, Message, Request, Topic};

/// The handler of one worker.
pub(crate) struct Feeds {
    pub(crate) topics: Vec<Topic>,
    /// Reused for gap notices.
    notice: String,
}

impl Feeds {
    pub(crate) fn new(topics: Vec<Topic>) -> Self {
        Self {
            topics,
            notice: String::with_capacity(128),
        }
    }
}

impl Handler for Feeds {
    /// The topics the connection subscribes to (indexes into `topics`).
    type State = Vec<usize>;

    fn upgrade(&mut self, request: &Request, _peer: SocketAddr) -> Decision<Vec<usize>> {
        let path = request.path().trim_start_matches('/');
        let wanted: Option<Vec<usize>> = path
            .split(',')
            .map(|name| self.topics.iter().position(|t| t.name() == name))
            .collect();
        match wanted {
            Some(topics) => Decision::accept(request, topics),
            None => Decision::reject(404),
        }
    }

    fn on_open(&mut self, conn: &mut Conn<'_, Vec<usize>>) {
        for &index in conn.state().clone().iter() {
            conn.subscribe(&self.topics[index]);
        }
        // Subscriptions take effect when this returns, before the worker handles any
        // publication: a client that has the hello gets every message published after it.
        let _ = conn.send_text(r#"{"type":"hello"}"#);
    }

    fn on_message(&mut self, _conn: &mut Conn<'_, Vec<usize>>, _message: Message<'_>) {
        // The clients only listen.
    }

    fn on_gap(&mut self, conn: &mut Conn<'_, Vec<usize>>, topic: &Topic, gap: Gap) {
        send_gap_notice(&mut self.notice, conn, topic, gap);
    }
}

/// Sends `conn` the gap notice for `gap` of `topic`, written into `notice` (reused).
pub(crate) fn send_gap_notice<S>(
    notice: &mut String,
    conn: &mut Conn<'_, S>,
    topic: &Topic,
    gap: Gap,
) {
    notice.clear();
    gap_notice(
        notice,
        topic.name(),
        gap.dropped,
        gap.first_seq,
        gap.last_seq,
    );
    // Fails only when the connection is closing: no one left to tell.
    let _ = conn.send_text(notice);
}

/// `{"type":"gap","topic":..,"dropped":..,"first":..,"last":..}`: `dropped` messages with
/// numbers from `first` to `last` will not arrive (conflation may drop some numbers of the
/// range and keep others).
pub(crate) fn gap_notice(out: &mut String, topic: &str, dropped: u64, first: u64, last: u64) {
    let _ = write!(
        out,
        r#"{{"type":"gap","topic":"{topic}","dropped":{dropped},"first":{first},"last":{last}}}"#
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::demo::check::{SeqCheck, field_str, field_u64};

    #[test]
    fn a_gap_notice_reads_back_into_the_clients_check() {
        let mut notice = String::new();
        gap_notice(&mut notice, "book", 3, 5, 9);
        assert_eq!(
            notice,
            r#"{"type":"gap","topic":"book","dropped":3,"first":5,"last":9}"#
        );
        assert_eq!(field_str(&notice, "type"), Some("gap"));
        assert_eq!(field_str(&notice, "topic"), Some("book"));
        // Conflation kept 6 and 8 out of 5 to 9: the client sees 4, 6, 8, 10 and the notice.
        let mut check = SeqCheck::from(4);
        for seq in [4, 6, 8, 10] {
            check.message(seq);
        }
        check.gap(
            field_u64(&notice, "dropped").unwrap(),
            field_u64(&notice, "first").unwrap(),
        );
        assert!(check.complete(10));
    }
}
