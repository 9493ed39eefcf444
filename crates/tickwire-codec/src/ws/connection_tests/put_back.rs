//! A run of output copied out and recorded written before the write happens (a transport
//! that writes many connections' runs in one system call), and the rest put back when the
//! write takes less: the bytes still leave whole and in order, a pong never splits the frame
//! the write stopped in, and anything that would break the order is refused.

use super::*;

/// Takes the server's run out as such a transport does: copied, then recorded written, and
/// the server's set replaced by a fresh one (the run's set goes on to another connection).
fn take_run(server: &mut Peer) -> Vec<u8> {
    let run = server
        .conn
        .data_run(&server.bufs)
        .expect("only data frames queued")
        .to_vec();
    server.advance_output(run.len());
    assert!(!server.wants_write());
    server.bufs = Buffers::new(&Config::server());
    run
}

#[test]
fn the_rest_of_a_run_goes_out_first_and_a_pong_waits_for_the_frame_in_progress() {
    let mut pair = Pair::new();
    pair.server.sender().text("first").unwrap();
    pair.server.sender().text("second").unwrap();
    let run = take_run(&mut pair.server);
    assert_eq!(run.len(), 7 + 8);
    // The write took 3 bytes: the rest goes back, the frame it stopped in first.
    assert!(
        pair.server
            .conn
            .put_back_output(&mut pair.server.bufs, &run, 3)
    );
    pair.client.sender().ping(b"p").unwrap();
    pair.client_writes(pair.at(1));
    assert_eq!(events(&mut pair.server), [Got::Ping(b"p".to_vec())]);
    pair.server.sender().text("third").unwrap();
    let mut expected = b"irst".to_vec();
    expected.extend_from_slice(&[0x8a, 0x01, b'p']);
    expected.extend_from_slice(&[0x81, 0x06]);
    expected.extend_from_slice(b"second");
    expected.extend_from_slice(&[0x81, 0x05]);
    expected.extend_from_slice(b"third");
    assert_eq!(drain(&mut pair.server, 4), expected);
}

#[test]
fn a_run_put_back_on_a_frame_boundary_lets_a_pong_go_first() {
    let mut pair = Pair::new();
    pair.server.sender().text("first").unwrap();
    pair.server.sender().text("second").unwrap();
    let run = take_run(&mut pair.server);
    assert!(
        pair.server
            .conn
            .put_back_output(&mut pair.server.bufs, &run, 7)
    );
    pair.client.sender().ping(b"p").unwrap();
    pair.client_writes(pair.at(1));
    assert_eq!(events(&mut pair.server), [Got::Ping(b"p".to_vec())]);
    let mut expected = vec![0x8a, 0x01, b'p', 0x81, 0x06];
    expected.extend_from_slice(b"second");
    assert_eq!(drain(&mut pair.server, 5), expected);
}

#[test]
fn nothing_put_back_when_the_write_took_it_all() {
    let mut pair = Pair::new();
    pair.server.sender().binary(&[9; 200]).unwrap();
    let run = take_run(&mut pair.server);
    assert!(
        pair.server
            .conn
            .put_back_output(&mut pair.server.bufs, &run, run.len())
    );
    assert!(!pair.server.wants_write());
}

#[test]
fn only_a_queue_of_own_data_frames_from_a_boundary_is_a_run() {
    // A pong queued.
    let mut pair = Pair::new();
    pair.server.sender().text("data").unwrap();
    pair.client.sender().ping(b"p").unwrap();
    pair.client_writes(pair.at(1));
    let _ = events(&mut pair.server);
    assert!(pair.server.conn.data_run(&pair.server.bufs).is_none());
    // A frame partly written.
    let mut pair = Pair::new();
    pair.server.sender().text("data").unwrap();
    pair.server.advance_output(1);
    assert!(pair.server.conn.data_run(&pair.server.bufs).is_none());
    // A shared frame queued.
    let mut pair = Pair::new();
    pair.server.sender().text("data").unwrap();
    pair.server
        .sender()
        .shared(&SharedFrame::text("tick"))
        .unwrap();
    assert!(pair.server.conn.data_run(&pair.server.bufs).is_none());
    // A close queued (it must be known written when it is).
    let mut pair = Pair::new();
    pair.server.sender().text("data").unwrap();
    pair.server
        .close(CloseCode::NORMAL, "", pair.at(0))
        .unwrap();
    assert!(pair.server.conn.data_run(&pair.server.bufs).is_none());
    // Nothing queued.
    let pair = Pair::new();
    assert!(pair.server.conn.data_run(&pair.server.bufs).is_none());
}

#[test]
fn a_put_back_behind_later_output_is_refused() {
    let mut pair = Pair::new();
    pair.server.sender().text("first").unwrap();
    let run = take_run(&mut pair.server);
    // Something was queued after the run was taken: the rest cannot go ahead of it.
    pair.server.sender().text("later").unwrap();
    assert!(
        !pair
            .server
            .conn
            .put_back_output(&mut pair.server.bufs, &run, 2)
    );
    assert_eq!(
        drain(&mut pair.server, 64),
        [0x81, 0x05, b'l', b'a', b't', b'e', b'r']
    );
    // A close queued after the run was taken: refused too.
    let mut pair = Pair::new();
    pair.server.sender().text("first").unwrap();
    let run = take_run(&mut pair.server);
    pair.server
        .close(CloseCode::NORMAL, "", pair.at(0))
        .unwrap();
    let _ = drain(&mut pair.server, 64);
    assert!(
        !pair
            .server
            .conn
            .put_back_output(&mut pair.server.bufs, &run, 2)
    );
    assert!(!pair.server.wants_write());
}
