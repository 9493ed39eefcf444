//! The blocking feed driver's smoke suite (the cases: `feed_support.rs`).
#![cfg(unix)]

mod feed_support;

use std::time::Instant;

use feed_support::{Driver, Seen, seen};
use tickwire_blocking::ClientBuilder;
use tickwire_blocking::codec::feed::{ConnId, Counters, FeedConfig, SendError};
use tickwire_blocking::feed::{Feed, Timestamps};

impl Driver for Feed {
    fn start(config: FeedConfig, timestamps: Timestamps) -> Self {
        Feed::with_timestamps(config, ClientBuilder::new(), timestamps).unwrap()
    }

    fn next(&mut self) -> Seen {
        seen(self.next_event().unwrap().expect("the feed does not end"))
    }

    fn counters(&mut self) -> Counters {
        self.session().counters(Instant::now())
    }

    fn send(&mut self, conn: ConnId, text: &str) -> Result<(), SendError> {
        Feed::send(self, conn, text, 1)
    }
}

#[test]
fn kernel_timestamps_are_taken_after_the_send() {
    feed_support::kernel_timestamps_are_taken_after_the_send::<Feed>();
}

#[test]
fn connects_subscribes_and_delivers_stamped_messages() {
    feed_support::connects_subscribes_and_delivers_stamped_messages::<Feed>();
}

#[test]
fn a_server_close_reconnects_with_the_back_off_resubscribes_and_reports_the_gap() {
    feed_support::a_server_close_reconnects_with_the_back_off_resubscribes_and_reports_the_gap::<
        Feed,
    >();
}

#[test]
fn a_stale_connection_is_replaced() {
    feed_support::a_stale_connection_is_replaced::<Feed>();
}

#[test]
fn two_redundant_connections_one_closed_deliver_each_number_once() {
    feed_support::two_redundant_connections_one_closed_deliver_each_number_once::<Feed>();
}

#[test]
fn a_refused_handshake_is_reported_with_its_status() {
    feed_support::a_refused_handshake_is_reported_with_its_status::<Feed>();
}
