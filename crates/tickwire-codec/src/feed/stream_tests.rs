//! The session's decisions on what it delivers, and on sends: sequences, redundancy,
//! rotation, quotas (the harness is `tests.rs`'s).

use std::time::Duration;

use super::tests::{Driver, MS, Seen, sequenced};
use super::*;

// --- sequences ---------------------------------------------------------------------------

#[test]
fn duplicates_are_dropped_and_each_hole_is_one_gap() {
    let mut d = Driver::new(sequenced().with_resync_on_gap(true));
    d.open_all();
    for msg in [
        "a 1", "a 2", "a 2", "b 10", "a 5", "a 4", "b 11", "a 6", "b 14",
    ] {
        d.message(0, msg);
    }
    assert_eq!(
        d.delivered(),
        [(0, 1), (0, 2), (0, 10), (0, 5), (0, 11), (0, 6), (0, 14)]
    );
    let gaps: Vec<_> = d
        .seen
        .iter()
        .filter(|s| matches!(s, Seen::Gap { .. }))
        .cloned()
        .collect();
    let gap = |key: &str, from, to| Seen::Gap {
        key: key.into(),
        from,
        to,
    };
    assert_eq!(gaps, [gap("a", 3, 4), gap("b", 12, 13)]);
    // The gap comes before the message after it, and a resync cue after the gap.
    let at = d.seen.iter().position(|s| *s == gap("a", 3, 4)).unwrap();
    assert!(matches!(&d.seen[at + 1], Seen::Other(e) if e.starts_with("Resync")));
    assert!(matches!(
        &d.seen[at + 2],
        Seen::Message { seq: Some(5), .. }
    ));
    let counters = d.session.counters(d.now);
    assert_eq!(
        (counters.duplicates, counters.gaps, counters.missing),
        (2, 2, 4)
    );
    assert_eq!(
        (counters.messages, counters.delivered, counters.keys),
        (9, 7, 2)
    );
}

#[test]
fn a_hole_across_a_reconnect_is_one_gap_from_the_last_number_to_the_first_after() {
    let mut d = Driver::new(sequenced());
    d.open_all();
    d.message(0, "k 1");
    d.message(0, "k 2");
    d.session.on_closed(ConnId(0), Disconnect::Reset, d.now);
    d.next_timer();
    d.open_all();
    for msg in ["k 1", "k 2", "k 7", "k 8"] {
        d.message(0, msg);
    }
    assert_eq!(d.delivered(), [(0, 1), (0, 2), (0, 7), (0, 8)]);
    assert_eq!(d.gaps(), [(3, 6)]);
}

#[test]
fn message_events_carry_the_receive_stamps_through() {
    let mut d = Driver::new(sequenced());
    d.open_all();
    let stamp = RecvStamp {
        recv_ns: 5,
        wall_ns: 6,
        kernel_ns: Some(7),
    };
    d.session
        .on_message(ConnId(0), b"k 1", stamp, d.now)
        .unwrap();
    let Some(Event::Message(m)) = d.session.poll_event(b"k 1") else {
        panic!("a message");
    };
    assert_eq!(
        (m.stamp, m.key, m.seq, m.payload),
        (stamp, Some(KeyId(0)), Some(1), &b"k 1"[..])
    );
}

#[test]
fn past_the_key_bound_messages_go_out_unkeyed_and_it_is_said_once() {
    let mut d = Driver::new(sequenced().with_max_keys(2));
    d.open_all();
    for msg in ["a 1", "b 1", "c 1", "c 1", "d 5", "a 2"] {
        assert_eq!(d.message(0, msg), Disposition::Deliver);
    }
    let limits = d
        .events
        .iter()
        .filter(|e| e.starts_with("KeyLimit"))
        .count();
    assert_eq!(limits, 1);
    assert_eq!(d.session.counters(d.now).keys, 2);
    assert_eq!(d.delivered().len(), 6);
}

#[test]
fn on_message_refuses_to_run_before_the_last_message_was_drained() {
    let mut d = Driver::new(sequenced());
    d.open_all();
    let stamp = RecvStamp::default();
    d.session
        .on_message(ConnId(0), b"k 1", stamp, d.now)
        .unwrap();
    assert_eq!(
        d.session.on_message(ConnId(0), b"k 2", stamp, d.now),
        Err(Undrained)
    );
    d.drain(b"k 1");
    assert_eq!(d.message(0, "k 2"), Disposition::Deliver);
    assert_eq!(d.delivered(), [(0, 1), (0, 2)]);
}

#[test]
fn messages_on_a_connection_that_is_not_open_are_ignored() {
    let mut d = Driver::new(sequenced());
    d.auto_open = false;
    d.act(|_| false);
    assert_eq!(d.message(0, "k 1"), Disposition::Ignored);
    assert_eq!(d.message(7, "k 1"), Disposition::Ignored);
    assert!(d.delivered().is_empty());
}

// --- redundancy ------------------------------------------------------------------------

#[test]
fn two_connections_merge_first_arrival_wins_and_a_hole_one_filled_is_no_gap() {
    let mut d = Driver::new(sequenced().with_connections(2));
    d.open_all();
    d.message(0, "k 1");
    d.advance(2 * MS);
    d.message(1, "k 1");
    // Conn 0 misses 2; conn 1, behind, still may bring it: 3 waits.
    assert_eq!(d.message(0, "k 3"), Disposition::Held);
    d.advance(3 * MS);
    assert_eq!(d.message(1, "k 2"), Disposition::Deliver);
    assert_eq!(d.message(1, "k 3"), Disposition::Duplicate);
    assert_eq!(d.delivered(), [(0, 1), (1, 2), (0, 3)]);
    assert!(d.gaps().is_empty());
    let figures = d.session.counters(d.now);
    let [a, b] = [figures.connections()[0], figures.connections()[1]];
    assert_eq!((a.first_arrivals, b.first_arrivals), (2, 1));
    assert_eq!((a.duplicates, b.duplicates), (0, 2));
    assert_eq!(b.lag, Some(3 * MS), "conn 1's 3 came 3 ms after conn 0's");
    assert_eq!(figures.held, 0);
}

#[test]
fn a_gap_only_when_every_connection_missed_the_number() {
    let mut d = Driver::new(sequenced().with_connections(3));
    d.open_all();
    for conn in 0..3 {
        d.message(conn, "k 1");
    }
    d.message(0, "k 4");
    d.message(1, "k 3");
    assert!(d.gaps().is_empty(), "conn 2 may still bring 2 and 3");
    d.message(2, "k 5");
    assert_eq!(d.gaps(), [(2, 2)]);
    assert_eq!(d.delivered(), [(0, 1), (1, 3), (0, 4), (2, 5)]);
}

#[test]
fn a_held_message_waits_at_most_the_merge_wait() {
    let mut d = Driver::new(sequenced().with_connections(2).with_merge_wait(50 * MS));
    d.open_all();
    d.message(0, "k 1");
    assert_eq!(d.message(0, "k 3"), Disposition::Held);
    assert_eq!(d.message(0, "k 4"), Disposition::Held);
    assert_eq!(d.next_timer(), 50 * MS);
    assert_eq!(d.gaps(), [(2, 2)]);
    assert_eq!(d.delivered(), [(0, 1), (0, 3), (0, 4)]);
    // The held copies carry their own stamps and payloads.
    assert!(d.seen.contains(&Seen::Message {
        conn: 0,
        seq: Some(4),
        text: "k 4".into()
    }));
}

#[test]
fn a_full_hold_reports_the_holes_below_and_keeps_the_order() {
    let mut d = Driver::new(sequenced().with_connections(2).with_max_held(2));
    d.open_all();
    // Conn 1 has not spoken yet: conn 0's first numbers wait for it, until the hold is full.
    assert_eq!(d.message(0, "k 2"), Disposition::Held);
    assert_eq!(d.message(0, "k 3"), Disposition::Held);
    // No room for conn 1's 1: it goes out first, then what it made releasable.
    assert_eq!(d.message(1, "k 1"), Disposition::Deliver);
    assert_eq!(d.delivered(), [(1, 1), (0, 2), (0, 3)]);
    d.message(1, "k 3");
    d.message(0, "k 5");
    d.message(0, "k 7");
    // Full again with 5 and 7 held: 8 forces 5 (a gap at 4) and 7 (a gap at 6) out first.
    d.message(0, "k 8");
    assert_eq!(d.delivered()[3..], [(0, 5), (0, 7), (0, 8)]);
    assert_eq!(d.gaps(), [(4, 4), (6, 6)]);
}

#[test]
fn a_lost_connection_releases_what_only_it_could_fill() {
    let mut d = Driver::new(sequenced().with_connections(2));
    d.open_all();
    d.message(0, "k 1");
    d.message(0, "k 3");
    d.session.on_closed(ConnId(1), Disconnect::Reset, d.now);
    d.drain(b"");
    assert_eq!(d.gaps(), [(2, 2)]);
    assert_eq!(d.delivered(), [(0, 1), (0, 3)]);
}

// --- rotation ----------------------------------------------------------------------------

#[test]
fn rotation_at_age_connects_the_spare_and_switches_with_no_gap_and_no_duplicate() {
    let config = sequenced()
        .with_subscription("sub k")
        .with_rotate_after(Some(Duration::from_secs(3600)));
    let mut d = Driver::new(config);
    d.open_all();
    d.message(0, "k 1");
    d.message(0, "k 2");
    assert_eq!(d.next_timer(), Duration::from_secs(3600));
    d.open_all();
    assert_eq!(d.connects.last().map(|c| (c.0, c.1)), Some((1, 0)));
    assert_eq!(d.sent.last(), Some(&(1, "sub k".into())));
    // The new connection starts behind the old one, then reaches its last number.
    d.message(0, "k 3");
    d.message(1, "k 2");
    assert!(d.closed.is_empty(), "behind: 2 < 3");
    d.message(1, "k 3");
    assert!(
        d.take_events()
            .iter()
            .any(|e| e == "Rotated { from: ConnId(0), to: ConnId(1) }")
    );
    assert_eq!(d.closed, [(0, Some(1000))]);
    assert_eq!(
        d.message(0, "k 4"),
        Disposition::Ignored,
        "the old one is gone"
    );
    d.message(1, "k 4");
    assert_eq!(d.delivered(), [(0, 1), (0, 2), (0, 3), (1, 4)]);
    assert!(d.gaps().is_empty());
    // The old slot is the spare now, and the next rotation uses it.
    assert!(d.session.rotate(ConnId(1), d.now));
    d.open_all();
    assert_eq!(d.connects.last().map(|c| c.0), Some(0));
}

#[test]
fn a_rotation_where_the_new_connection_runs_ahead_holds_until_the_old_catches_up() {
    let mut d = Driver::new(sequenced());
    d.open_all();
    d.message(0, "k 1");
    assert!(d.session.rotate(ConnId(0), d.now));
    assert!(
        !d.session.rotate(ConnId(0), d.now),
        "one rotation at a time"
    );
    d.open_all();
    // The new connection starts at 3; the old one may still bring 2.
    assert_eq!(d.message(1, "k 3"), Disposition::Held);
    assert!(d.closed.is_empty());
    d.message(0, "k 2");
    d.message(0, "k 3");
    assert_eq!(d.delivered(), [(0, 1), (0, 2), (1, 3)]);
    d.message(1, "k 4");
    assert_eq!(d.closed, [(0, Some(1000))]);
    assert!(d.gaps().is_empty());
}

#[test]
fn when_the_old_connection_drops_during_a_rotation_the_new_one_takes_over() {
    let mut d = Driver::new(sequenced());
    d.open_all();
    d.message(0, "k 1");
    d.session.rotate(ConnId(0), d.now);
    d.open_all();
    d.session.on_closed(ConnId(0), Disconnect::Eof, d.now);
    d.drain(b"");
    let events = d.take_events();
    assert!(
        events
            .iter()
            .any(|e| e == "Rotated { from: ConnId(0), to: ConnId(1) }")
    );
    assert!(
        !events.iter().any(|e| e.starts_with("Reconnecting")),
        "{events:?}"
    );
    d.message(1, "k 2");
    assert_eq!(d.delivered(), [(0, 1), (1, 2)]);
}

#[test]
fn a_failing_rotation_target_backs_off_without_ending_the_session() {
    let policy = ReconnectPolicy::new().with_max_attempts(Some(1));
    let mut d = Driver::new(sequenced().with_reconnect(policy));
    d.open_all();
    d.message(0, "k 1");
    assert!(d.session.rotate(ConnId(0), d.now));
    d.auto_open = false;
    d.act(|_| false);
    for _ in 0..3 {
        d.session
            .on_connect_failed(ConnId(1), Disconnect::HandshakeStatus(503), d.now);
        d.drain(b"");
        d.next_timer();
    }
    assert_eq!(d.session.ended(), None);
    assert_eq!(d.connects.iter().filter(|c| c.0 == 1).count(), 4);
    d.session.on_open(ConnId(1), d.now);
    d.auto_open = true;
    d.message(1, "k 1");
    assert_eq!(d.closed, [(0, Some(1000))], "the rotation completes");
    d.message(1, "k 2");
    assert_eq!(d.delivered(), [(0, 1), (1, 2)]);
}

// --- quotas ------------------------------------------------------------------------------

#[test]
fn the_sessions_own_sends_wait_for_the_quota() {
    let topics: Vec<String> = (0..6).map(|n| format!("t{n}")).collect();
    let mut config =
        sequenced().with_send_quota(Some(SendQuota::per_window(4, Duration::from_secs(1))));
    config.subscriptions = topics.clone();
    let mut d = Driver::new(config);
    d.open_all();
    assert_eq!(d.sent.len(), 2, "the burst");
    assert!(d.take_events().iter().any(|e| e.contains("limited: Send")));
    while d.sent.len() < 6 {
        d.next_timer();
        d.act(|_| true);
    }
    assert!(d.elapsed() >= Duration::from_millis(1_500));
    let texts: Vec<_> = d.sent.iter().map(|(_, t)| t.clone()).collect();
    assert_eq!(texts, topics, "in order");
    assert!(d.take_events().iter().any(|e| e.starts_with("Subscribed")));
}

#[test]
fn try_send_says_how_long_to_wait_and_control_frames_count_where_configured() {
    let quota = SendQuota::per_window(5, Duration::from_secs(1)).with_count_control_frames(true);
    let mut d = Driver::new(sequenced().with_send_quota(Some(quota)));
    assert_eq!(
        d.session.try_send(ConnId(0), 1, d.now),
        Err(SendError::NotOpen)
    );
    d.open_all();
    assert_eq!(
        d.session.try_send(ConnId(0), 4, d.now),
        Err(SendError::WeightOverBurst {
            weight: 4,
            burst: 3
        })
    );
    d.session.on_control_sent(ConnId(0), d.now);
    assert_eq!(d.session.try_send(ConnId(0), 2, d.now), Ok(()));
    let Err(SendError::RateLimited { retry_after }) = d.session.try_send(ConnId(0), 1, d.now)
    else {
        panic!("the burst is spent");
    };
    assert_eq!(retry_after, Duration::from_millis(500));
    assert!(
        d.session
            .try_send(ConnId(0), 1, d.now + retry_after - MS)
            .is_err()
    );
    assert_eq!(
        d.session.try_send(ConnId(0), 1, d.now + retry_after),
        Ok(())
    );
}
