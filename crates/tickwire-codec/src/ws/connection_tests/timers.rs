//! The connection's timers: the close timeout, keepalive pings and their pong deadline, the
//! idle timeout, when the clock is read, and what a failure leaves a transport to do
//! ([`Connection::failure`], [`Connection::drains_before_close`]).

use super::*;

#[test]
fn close_timeout_fails_at_its_deadline() {
    let mut pair = Pair::new();
    pair.server
        .close(CloseCode::NORMAL, "", pair.at(1000))
        .unwrap();
    assert_eq!(pair.server.poll_timeout(), Some(pair.at(6000)));
    assert_eq!(drain(&mut pair.server, 1), [0x88, 0x02, 0x03, 0xe8]);
    assert_eq!(pair.server.handle_timeout(pair.at(5999)), Ok(()));
    assert_eq!(pair.server.state(), ConnectionState::CloseSent);
    assert_eq!(pair.server.poll_timeout(), Some(pair.at(6000)));
    assert_eq!(
        pair.server.handle_timeout(pair.at(6000)),
        Err(Error::CloseTimeout)
    );
    assert!(pair.server.should_close_transport());
    assert_eq!(pair.server.poll_timeout(), None);
}

#[test]
fn close_queued_through_the_sender_arms_the_timer_at_the_next_timer_call() {
    let mut pair = Pair::new();
    pair.client.sender().text("please leave").unwrap();
    pair.client_writes(pair.at(2000));
    {
        let (event, mut sender) = pair.server.poll_with_sender().unwrap();
        assert_eq!(event, Event::Message(Message::Text("please leave")));
        sender.close(CloseCode::POLICY_VIOLATION, "ok").unwrap();
    }
    // Not armed yet: the deadline is "now" (the last instant the connection saw).
    assert_eq!(pair.server.poll_timeout(), Some(pair.at(2000)));
    assert_eq!(pair.server.handle_timeout(pair.at(3000)), Ok(()));
    assert_eq!(pair.server.state(), ConnectionState::CloseSent);
    assert_eq!(pair.server.poll_timeout(), Some(pair.at(8000)));
    assert_eq!(pair.server.handle_timeout(pair.at(7999)), Ok(()));
    assert_eq!(
        pair.server.handle_timeout(pair.at(8000)),
        Err(Error::CloseTimeout)
    );
    assert_eq!(
        drain(&mut pair.server, 1),
        [0x88, 0x04, 0x03, 0xf0, b'o', b'k']
    );
}

// ---- keepalive and idle timers ----

#[test]
fn keepalive_ping_is_answered_and_the_pong_clears_the_deadline() {
    let client = Config {
        ping_interval: Some(Duration::from_secs(5)),
        ..Config::client()
    };
    let mut pair = Pair::with(client, Config::server());
    assert_eq!(pair.client.poll_timeout(), Some(pair.at(5000)));
    assert_eq!(pair.client.handle_timeout(pair.at(4999)), Ok(()));
    assert!(!pair.client.wants_write());
    assert_eq!(pair.client.handle_timeout(pair.at(5000)), Ok(()));
    assert!(pair.client.wants_write());
    assert_eq!(pair.client.poll_timeout(), Some(pair.at(15_000)));

    pair.client_writes(pair.at(5000));
    assert_eq!(events(&mut pair.server), [Got::Ping(keepalive_payload(1))]);
    assert_eq!(
        pair.server.output(),
        [0x8a, 0x08, 0, 0, 0, 0, 0, 0, 0, 0x01]
    );
    pair.server_writes(pair.at(6000));
    assert_eq!(events(&mut pair.client), [Got::Pong(keepalive_payload(1))]);
    assert_eq!(pair.client.poll_timeout(), Some(pair.at(11_000)));

    // At what would have been the pong deadline: no failure, the next ping goes out.
    assert_eq!(pair.client.handle_timeout(pair.at(15_000)), Ok(()));
    assert_eq!(pair.client.state(), ConnectionState::Open);
    let wire = drain(&mut pair.client, 3);
    assert_eq!(client_frames(&wire), [Got::Ping(keepalive_payload(2))]);
}

#[test]
fn keepalive_without_a_pong_fails_with_pong_timeout_and_close_1001() {
    let client = Config {
        ping_interval: Some(Duration::from_secs(5)),
        pong_timeout: Duration::from_secs(3),
        ..Config::client()
    };
    let mut pair = Pair::with(client, Config::server());
    assert_eq!(pair.client.handle_timeout(pair.at(5000)), Ok(()));
    let ping = drain(&mut pair.client, 7);
    assert_eq!(client_frames(&ping), [Got::Ping(keepalive_payload(1))]);
    // The ping is lost: the server never answers.
    assert_eq!(pair.client.poll_timeout(), Some(pair.at(8000)));
    assert_eq!(pair.client.handle_timeout(pair.at(7999)), Ok(()));
    assert!(pair.client.drains_before_close());
    assert_eq!(
        pair.client.handle_timeout(pair.at(8000)),
        Err(Error::PongTimeout)
    );
    assert_eq!(pair.client.state(), ConnectionState::Failed);
    assert_eq!(pair.client.conn.failure(), Some(Fault::Timeout));
    // The peer stopped answering: a transport closes without waiting for its FIN.
    assert!(!pair.client.drains_before_close());
    assert_eq!(pair.client.poll_timeout(), None);
    assert_eq!(
        events(&mut pair.client),
        [Got::Error(Error::Failed(CloseCode::GOING_AWAY))]
    );
    assert!(!pair.client.should_close_transport());
    let close = drain(&mut pair.client, 2);
    assert_eq!(
        client_frames(&close),
        [Got::Close(Some((CloseCode::GOING_AWAY.0, String::new())))]
    );
    assert!(pair.client.should_close_transport());
}

/// A peer that broke the protocol is still answering: the transport reads until its FIN
/// before closing, so the close frame it owes is not lost to a reset.
#[test]
fn a_protocol_failure_is_the_peers_fault_and_is_drained_before_the_close() {
    let mut pair = Pair::with(Config::client(), Config::server());
    assert_eq!(pair.server.conn.failure(), None);
    // An unmasked text frame from the client (RFC 6455 §5.1: the server must fail).
    pair.server.feed(&[0x81, 0x02, b'h', b'i'], pair.at(10));
    assert_eq!(events(&mut pair.server), [Got::Error(Error::UnmaskedFrame)]);
    assert_eq!(pair.server.state(), ConnectionState::Failed);
    assert_eq!(pair.server.conn.failure(), Some(Fault::Peer));
    assert!(pair.server.drains_before_close());
}

/// While our close is pending no keepalive ping may be sent, so its deadline must not be
/// reported either: a deadline that `handle_timeout` does nothing about is returned again
/// and again, and a transport that sleeps until `poll_timeout` spins until the close timeout.
#[test]
fn keepalive_deadline_is_not_reported_while_closing() {
    let client = Config {
        ping_interval: Some(Duration::from_secs(2)),
        ..Config::client()
    };
    let mut pair = Pair::with(client, Config::server());
    pair.client
        .close(CloseCode::NORMAL, "", pair.at(1000))
        .unwrap();
    assert_eq!(pair.client.handle_timeout(pair.at(2000)), Ok(()));
    // As offsets from t0, so a failure reads "2s, expected 6s".
    let deadline = pair.client.poll_timeout().map(|at| at - pair.t0);
    assert_eq!(deadline, Some(Duration::from_secs(6)));
}

#[test]
fn idle_timeout_fails_when_nothing_arrives_and_bytes_push_it_back() {
    let server = Config {
        idle_timeout: Some(Duration::from_secs(10)),
        ..Config::server()
    };
    let mut pair = Pair::with(Config::client(), server);
    assert_eq!(pair.server.poll_timeout(), Some(pair.at(10_000)));
    pair.client.sender().text("tick").unwrap();
    pair.client_writes(pair.at(4000));
    assert_eq!(events(&mut pair.server), [text("tick")]);
    assert_eq!(pair.server.poll_timeout(), Some(pair.at(14_000)));
    // An empty read is not a sign of life.
    pair.server.feed(&[], pair.at(9000));
    assert_eq!(pair.server.poll_timeout(), Some(pair.at(14_000)));
    assert_eq!(pair.server.handle_timeout(pair.at(10_000)), Ok(()));
    assert_eq!(pair.server.handle_timeout(pair.at(13_999)), Ok(()));
    assert_eq!(
        pair.server.handle_timeout(pair.at(14_000)),
        Err(Error::IdleTimeout)
    );
    assert_eq!(pair.server.state(), ConnectionState::Failed);
    assert!(!pair.server.drains_before_close());
    assert_eq!(pair.server.output(), [0x88, 0x02, 0x03, 0xe9]);
    assert_eq!(
        events(&mut pair.server),
        [Got::Error(Error::Failed(CloseCode::GOING_AWAY))]
    );
}

#[test]
fn a_read_asks_the_clock_only_when_a_timer_counts_from_received_bytes() {
    let idle = Config {
        idle_timeout: Some(Duration::from_secs(10)),
        ..Config::server()
    };
    let keepalive = Config {
        ping_interval: Some(Duration::from_secs(10)),
        ..Config::server()
    };
    for (server, counted) in [(Config::server(), false), (idle, true), (keepalive, true)] {
        let mut pair = Pair::with(Config::client(), server);
        pair.client.sender().text("tick").unwrap();
        let frame = pair.client.output().to_vec();
        let spare = pair.server.conn.spare(&mut pair.server.bufs);
        spare[..frame.len()].copy_from_slice(&frame);
        let mut asked = 0;
        let at = pair.at(4000);
        pair.server
            .conn
            .filled_with(&mut pair.server.bufs, frame.len(), || {
                asked += 1;
                at
            });
        assert_eq!(asked, usize::from(counted), "clock reads");
        assert_eq!(
            events(&mut pair.server),
            [text("tick")],
            "the bytes were taken"
        );
        let deadline = pair.server.poll_timeout();
        if counted {
            assert_eq!(deadline, Some(pair.at(14_000)), "counted from the read");
        } else {
            assert_eq!(deadline, None, "no timer");
        }
    }
}
