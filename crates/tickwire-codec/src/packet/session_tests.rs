//! The session's rules: control packets answered and reported, keepalive timers on synthetic
//! instants, buffers lent out only while idle.

use std::time::{Duration, Instant};

use super::session::DEFAULT_PONG_TIMEOUT;
use super::*;

const KEEPALIVE: Keepalive = Keepalive {
    interval: Duration::from_secs(30),
    timeout: Duration::from_secs(10),
};

fn session(keepalive: Option<Keepalive>, now: Instant) -> Session {
    Session::new(PacketConfig::client(), keepalive, now)
}

/// Moves everything `from` queued into `to`, as a socket would.
fn deliver(from: &mut Session, to: &mut Session) {
    let bytes = from.transmit().to_vec();
    from.wrote(bytes.len());
    to.spare()[..bytes.len()].copy_from_slice(&bytes);
    to.received(bytes.len());
}

/// Every event `session` finds until it needs more bytes.
fn events(session: &mut Session) -> Vec<SessionEvent> {
    let mut found = Vec::new();
    loop {
        match session.poll_event().unwrap() {
            SessionEvent::NeedMore => return found,
            event => found.push(event),
        }
    }
}

#[test]
fn a_ping_is_answered_with_its_nonce_and_the_pong_disarms_the_deadline() {
    let now = Instant::now();
    let (mut a, mut b) = (session(None, now), session(None, now));
    a.ping(now).unwrap();
    assert!(a.awaits_pong());
    assert_eq!(a.poll_timeout(), Some(now + DEFAULT_PONG_TIMEOUT));
    deliver(&mut a, &mut b);
    assert_eq!(events(&mut b), []);
    assert!(b.wants_write(), "the pong is queued, not written");
    assert_eq!(b.transmit()[BASE_HEADER_LEN..], Control::Pong(1).encode());
    deliver(&mut b, &mut a);
    assert_eq!(events(&mut a), [SessionEvent::Pong]);
    assert!(!a.awaits_pong());
    assert_eq!(a.poll_timeout(), None);
}

#[test]
fn packets_and_busy_refusals_are_reported_with_their_ids() {
    let now = Instant::now();
    let (mut a, mut b) = (session(None, now), session(None, now));
    a.queue(7, b"order").unwrap();
    a.queue_control(Control::Busy(9)).unwrap();
    a.queue(8, b"").unwrap();
    deliver(&mut a, &mut b);
    let SessionEvent::Packet(header) = b.poll_event().unwrap() else {
        panic!("a packet first");
    };
    assert_eq!((header.request_id, b.payload(&header)), (7, &b"order"[..]));
    assert_eq!(b.poll_event().unwrap(), SessionEvent::Busy(9));
    let SessionEvent::Packet(header) = b.poll_event().unwrap() else {
        panic!("then the empty packet");
    };
    assert_eq!((header.request_id, b.payload(&header)), (8, &b""[..]));
    assert_eq!(b.poll_event().unwrap(), SessionEvent::NeedMore);
}

#[test]
fn a_malformed_control_packet_fails_the_session() {
    let now = Instant::now();
    let (mut a, mut b) = (session(None, now), session(None, now));
    a.queue(0, &[0x04, 0, 0, 0, 0, 0, 0, 0, 0]).unwrap();
    deliver(&mut a, &mut b);
    assert_eq!(b.poll_event(), Err(SessionError::MalformedControl));
    assert!(b.is_failed());
    assert_eq!(b.poll_event(), Err(SessionError::Failed));
}

#[test]
fn keepalive_pings_on_interval_and_fails_when_the_pong_is_late() {
    let start = Instant::now();
    let mut a = session(Some(KEEPALIVE), start);
    assert_eq!(a.poll_timeout(), Some(start + KEEPALIVE.interval));
    a.handle_timeout(start + Duration::from_secs(29)).unwrap();
    assert!(!a.wants_write(), "nothing before the interval");
    let ping_at = start + KEEPALIVE.interval;
    a.handle_timeout(ping_at).unwrap();
    assert!(a.wants_write() && a.awaits_pong());
    assert_eq!(a.poll_timeout(), Some(ping_at + KEEPALIVE.timeout));
    a.handle_timeout(ping_at + Duration::from_secs(9)).unwrap();
    assert_eq!(
        a.handle_timeout(ping_at + KEEPALIVE.timeout),
        Err(SessionError::KeepaliveTimeout)
    );
    assert!(a.is_failed());
    assert_eq!(a.poll_timeout(), None);
}

#[test]
fn a_pong_in_time_keeps_the_session_and_the_next_ping_follows_the_interval() {
    let start = Instant::now();
    let (mut a, mut b) = (session(Some(KEEPALIVE), start), session(None, start));
    let ping_at = start + KEEPALIVE.interval;
    a.handle_timeout(ping_at).unwrap();
    deliver(&mut a, &mut b);
    assert_eq!(events(&mut b), []);
    deliver(&mut b, &mut a);
    assert_eq!(events(&mut a), [SessionEvent::Pong]);
    a.handle_timeout(ping_at + KEEPALIVE.timeout).unwrap();
    assert!(!a.is_failed());
    assert_eq!(a.poll_timeout(), Some(ping_at + KEEPALIVE.interval));
}

#[test]
fn a_packet_split_anywhere_gives_the_same_event() {
    let now = Instant::now();
    let mut a = session(None, now);
    a.queue(3, b"split me").unwrap();
    let bytes = a.transmit().to_vec();
    for cut in 0..bytes.len() {
        let mut b = session(None, now);
        for part in [&bytes[..cut], &bytes[cut..]] {
            b.spare()[..part.len()].copy_from_slice(part);
            b.received(part.len());
        }
        let SessionEvent::Packet(header) = b.poll_event().unwrap() else {
            panic!("whole packet after cut {cut}");
        };
        assert_eq!(b.payload(&header), b"split me");
    }
}

#[test]
fn buffers_are_lent_only_while_idle_and_come_back_on_use() {
    let now = Instant::now();
    let (mut a, mut b) = (session(None, now), session(None, now));
    a.queue(1, b"x").unwrap();
    assert!(a.release_buffers().is_none(), "bytes are queued");
    let bytes = a.transmit().to_vec();
    b.spare()[..4].copy_from_slice(&bytes[..4]);
    b.received(4);
    assert_eq!(b.poll_event().unwrap(), SessionEvent::NeedMore);
    assert!(b.release_buffers().is_none(), "a packet is partly received");

    let mut idle = session(None, now);
    let lent = idle.release_buffers().expect("idle");
    assert!(lent.capacity() >= 16 << 10);
    assert!(idle.buffers_released());
    assert!(idle.release_buffers().is_none(), "already lent");
    assert!(idle.restore_buffers(lent).is_none());
    assert!(!idle.buffers_released());

    // A second loan swaps the same sets: the empty one is kept between loans.
    let lent = idle.release_buffers().unwrap();
    assert!(idle.restore_buffers(lent).is_none());

    // Released, then used without a restore: fresh buffers are taken.
    let _ = idle.release_buffers().unwrap();
    idle.queue(2, b"y").unwrap();
    assert!(idle.wants_write() && !idle.buffers_released());
}

#[test]
fn an_oversize_payload_is_refused_without_failing_the_session() {
    let now = Instant::now();
    let config = PacketConfig::client().with_max_payload_len(8);
    let mut a = Session::new(config, None, now);
    assert!(matches!(
        a.queue(1, &[0; 9]),
        Err(SessionError::Encode(EncodeError::PayloadTooLarge {
            len: 9,
            ..
        }))
    ));
    assert!(!a.is_failed() && !a.wants_write());
    a.queue(1, &[0; 8]).unwrap();
}

#[test]
fn output_is_full_past_max_queued_until_written() {
    let config = PacketConfig::server().with_max_queued(1_000);
    let mut session = Session::new(config, None, Instant::now());
    session.queue(1, &[7; 900]).unwrap();
    assert!(!session.output_full(), "916 bytes queued, under the cap");
    session.queue(2, &[7; 100]).unwrap();
    assert!(session.output_full(), "1,032 bytes queued, over the cap");
    let some = session.transmit().len() - 900;
    session.wrote(some);
    assert!(!session.output_full(), "back under once written");
    assert!(
        !session_with_defaults_is_ever_full(),
        "a client is never full by default"
    );
}

/// A client session with 64 MiB queued is not full: clients are uncapped by default.
fn session_with_defaults_is_ever_full() -> bool {
    let mut session = Session::new(PacketConfig::client(), None, Instant::now());
    for id in 1..=64 {
        session.queue(id, &[0; 1 << 20]).unwrap();
    }
    session.output_full()
}
