//! A connection cut into a [`ReadHalf`] and a [`WriteHalf`]: a lent message never needs the
//! write half, what the reader owes goes out through it in the whole connection's order, and
//! the close handshake ends the same way.

use super::*;

/// Copies `bytes` into the read half as socket reads would, `chunk` bytes at a time.
fn read_in(read: &mut ReadHalf, bytes: &[u8], now: Instant) {
    for piece in bytes.chunks(7) {
        let spare = read.spare();
        spare[..piece.len()].copy_from_slice(piece);
        read.filled_with(piece.len(), || now);
    }
}

/// Everything the write half has queued, written in one go.
fn written(write: &mut WriteHalf) -> Vec<u8> {
    let mut out = Vec::new();
    while write.wants_write() {
        let bytes = write.output();
        out.extend_from_slice(bytes);
        let n = bytes.len();
        write.advance_output(n);
    }
    out
}

/// [`ReadHalf::advance`], and how many times it asked for the write half.
fn advance_counting(read: &mut ReadHalf, write: &mut WriteHalf) -> (Result<Progress, Error>, u32) {
    let mut asked = 0;
    let progress = read.advance(|| {
        asked += 1;
        &mut *write
    });
    (progress, asked)
}

/// A client whose halves are split, and the server peer it talks to.
fn split_client() -> (ReadHalf, WriteHalf, Peer, Instant) {
    let pair = Pair::new();
    let t0 = pair.t0;
    let (read, write) = pair.client.conn.split(pair.client.bufs);
    (read, write, pair.server, t0)
}

#[test]
fn a_data_message_is_lent_without_the_write_half_which_sends_meanwhile() {
    let (mut read, mut write, mut server, t0) = split_client();
    server.sender().text("tick").unwrap();
    read_in(&mut read, &drain(&mut server, usize::MAX), t0);

    assert_eq!(
        advance_counting(&mut read, &mut write),
        (Ok(Progress::Ready), 0)
    );
    let message = read.message(|| -> &mut WriteHalf { unreachable_write() });
    let Ok(Message::Text(tick)) = message else {
        panic!("expected the text, got {message:?}");
    };
    // The message is still borrowed from the read half while the writer sends.
    write.sender().text("order").unwrap();
    assert_eq!(tick, "tick");

    server.feed(&written(&mut write), t0);
    assert_eq!(events(&mut server), [text("order")]);
}

/// A write half no test path may ask for: returning one would hide a call that should not
/// happen, so the test fails here instead.
fn unreachable_write() -> &'static mut WriteHalf {
    panic!("the write half was asked for a data message")
}

#[test]
fn a_ping_is_answered_through_the_write_half_ahead_of_data_not_started() {
    let (mut read, mut write, mut server, t0) = split_client();
    write.sender().text("queued first").unwrap();
    server.sender().ping(b"p1").unwrap();
    read_in(&mut read, &drain(&mut server, usize::MAX), t0);

    // The pong is queued on the write half: it was asked for once.
    assert_eq!(
        advance_counting(&mut read, &mut write),
        (Ok(Progress::Ready), 1)
    );
    assert_eq!(read.message(|| &mut write), Ok(Message::Ping(&b"p1"[..])));
    server.feed(&written(&mut write), t0);
    assert_eq!(
        events(&mut server),
        [Got::Pong(b"p1".to_vec()), text("queued first")]
    );
}

#[test]
fn the_peers_close_is_answered_once_reported_as_closed_and_kept() {
    let (mut read, mut write, mut server, t0) = split_client();
    server.sender().text("last").unwrap();
    server
        .close(CloseCode::GOING_AWAY, "maintenance", t0)
        .unwrap();
    read_in(&mut read, &drain(&mut server, usize::MAX), t0);

    assert_eq!(read.advance(|| &mut write), Ok(Progress::Ready));
    assert_eq!(read.message(|| &mut write), Ok(Message::Text("last")));
    assert_eq!(read.advance(|| &mut write), Ok(Progress::Closed));
    assert!(!read.is_reading());
    assert_eq!(write.state(), ConnectionState::Closed);
    let expected = CloseFrame {
        code: CloseCode::GOING_AWAY,
        reason: "maintenance",
    };
    assert_eq!(read.peer_close(), Some(expected));
    assert_eq!(read.advance(|| &mut write), Ok(Progress::Closed), "again");
    assert_eq!(read.peer_close(), Some(expected));
    assert_eq!(
        write.sender().text("late"),
        Err(Error::SendAfterClose),
        "the reply is queued"
    );
    assert_eq!(
        client_frames(&written(&mut write)),
        [Got::Close(Some((CloseCode::GOING_AWAY.0, String::new())))]
    );
    assert!(write.should_close_transport());
}

#[test]
fn a_protocol_error_fails_both_halves_and_queues_its_close() {
    let (mut read, mut write, _server, t0) = split_client();
    read_in(&mut read, &masked(0x81, b"hi"), t0);
    assert_eq!(read.advance(|| &mut write), Err(Error::MaskedFrame));
    assert_eq!(write.state(), ConnectionState::Failed);
    assert_eq!(
        read.advance(|| &mut write),
        Err(Error::Failed(CloseCode::PROTOCOL_ERROR))
    );
    assert_eq!(
        client_frames(&written(&mut write)),
        [Got::Close(Some((
            CloseCode::PROTOCOL_ERROR.0,
            String::new()
        )))]
    );
}

#[test]
fn keepalive_runs_from_the_read_half_and_unsplit_gives_the_connection_back() {
    let config = Config::client().with_ping_interval(Some(Duration::from_secs(1)));
    let mut pair = Pair::with(config, Config::server());
    let t0 = pair.t0;
    pair.server.sender().text("before").unwrap();
    let (mut read, mut write) = pair.client.conn.split(pair.client.bufs);
    assert_eq!(read.poll_timeout(&write), Some(t0 + Duration::from_secs(1)));
    read.handle_timeout(&mut write, t0 + Duration::from_secs(1))
        .unwrap();
    assert_eq!(
        client_frames(&written(&mut write)),
        [Got::Ping(keepalive_payload(1))]
    );
    write
        .close(CloseCode::NORMAL, "", t0 + Duration::from_millis(1500))
        .unwrap();
    assert_eq!(write.state(), ConnectionState::CloseSent);

    let (conn, bufs) = read.unsplit(write);
    let mut client = Peer { conn, bufs };
    assert_eq!(client.state(), ConnectionState::CloseSent);
    assert_eq!(
        client_frames(&drain(&mut client, usize::MAX)),
        [Got::Close(Some((CloseCode::NORMAL.0, String::new())))]
    );
    let reply = drain(&mut pair.server, usize::MAX);
    client.feed(&reply, t0 + Duration::from_millis(1600));
    assert_eq!(events(&mut client), [text("before")]);
}
