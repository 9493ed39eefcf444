//! The blocking feed driver's smoke suite (the cases: `feed_support/`).
#![cfg(unix)]

mod feed_support;
#[cfg(feature = "tls")]
#[path = "feed_support/tls.rs"]
mod feed_tls;
#[cfg(feature = "tls")]
#[expect(dead_code, reason = "the feed uses the certificate helpers only")]
mod tls_support;

use tickwire_blocking::feed::Feed;

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

#[test]
fn a_connect_that_hangs_does_not_hold_up_the_open_connection() {
    feed_support::a_connect_that_hangs_does_not_hold_up_the_open_connection::<Feed>();
}

#[test]
fn pongs_count_against_a_quota_that_counts_control_frames() {
    feed_support::pongs_count_against_a_quota_that_counts_control_frames::<Feed>();
}

#[cfg(feature = "tls")]
#[test]
fn kernel_timestamps_are_taken_under_tls() {
    feed_tls::kernel_timestamps_are_taken_under_tls::<Feed>();
}
