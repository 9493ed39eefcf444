//! The tokio feed driver's smoke suite: the blocking driver's cases
//! (tickwire-blocking/tests/feed_support), on [`Feed`] in a current-thread runtime.

#[path = "../../tickwire-blocking/tests/feed_support/mod.rs"]
mod feed_support;

#[cfg(feature = "tls")]
#[path = "../../tickwire-blocking/tests/feed_support/tls.rs"]
mod feed_tls;
#[path = "feed_tokio/mod.rs"]
mod feed_tokio;
#[cfg(feature = "tls")]
#[expect(dead_code, reason = "the feed uses the certificate helpers only")]
#[path = "../../tickwire-blocking/tests/tls_support/mod.rs"]
mod tls_support;

use std::time::Instant;

use feed_tokio::OnTokio;
use tickwire_tokio::ClientBuilder;
use tickwire_tokio::feed::Feed;

#[test]
fn kernel_timestamps_are_taken_after_the_send() {
    feed_support::kernel_timestamps_are_taken_after_the_send::<OnTokio>();
}

#[test]
fn connects_subscribes_and_delivers_stamped_messages() {
    feed_support::connects_subscribes_and_delivers_stamped_messages::<OnTokio>();
}

#[test]
fn a_server_close_reconnects_with_the_back_off_resubscribes_and_reports_the_gap() {
    feed_support::a_server_close_reconnects_with_the_back_off_resubscribes_and_reports_the_gap::<
        OnTokio,
    >();
}

#[test]
fn a_stale_connection_is_replaced() {
    feed_support::a_stale_connection_is_replaced::<OnTokio>();
}

#[test]
fn two_redundant_connections_one_closed_deliver_each_number_once() {
    feed_support::two_redundant_connections_one_closed_deliver_each_number_once::<OnTokio>();
}

#[test]
fn a_refused_handshake_is_reported_with_its_status() {
    feed_support::a_refused_handshake_is_reported_with_its_status::<OnTokio>();
}

#[test]
fn a_connect_that_hangs_does_not_hold_up_the_open_connection() {
    feed_support::a_connect_that_hangs_does_not_hold_up_the_open_connection::<OnTokio>();
}

#[test]
fn pongs_count_against_a_quota_that_counts_control_frames() {
    feed_support::pongs_count_against_a_quota_that_counts_control_frames::<OnTokio>();
}

#[cfg(feature = "tls")]
#[test]
fn kernel_timestamps_are_taken_under_tls() {
    feed_tls::kernel_timestamps_are_taken_under_tls::<OnTokio>();
}

#[test]
fn next_event_is_cancel_safe() {
    use std::time::Duration;
    use tickwire_tokio::codec::feed::Event;
    // Messages paced slower than the timeout that cancels each wait.
    let server = feed_support::serve(&[], |_, ws| {
        for n in 1..=20 {
            feed_support::send(ws, "BTC", [n]);
            std::thread::sleep(Duration::from_millis(3));
        }
        feed_support::hold(ws, Duration::from_secs(3));
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut feed = Feed::new(feed_support::config(&server.url), ClientBuilder::new()).unwrap();
        let (mut numbers, mut cancelled) = (Vec::new(), 0);
        let give_up = Instant::now() + Duration::from_secs(10);
        while numbers.len() < 20 && Instant::now() < give_up {
            match tokio::time::timeout(Duration::from_millis(1), feed.next_event()).await {
                Ok(Some(Event::Message(m))) => numbers.push(m.seq.unwrap()),
                Ok(Some(Event::Gap { from, to, .. })) => panic!("gap {from}..={to}"),
                Ok(_) => {}
                Err(_) => cancelled += 1,
            }
        }
        assert_eq!(numbers, (1..=20).collect::<Vec<_>>());
        assert!(cancelled > 0, "no wait was cancelled");
    });
}
