//! Shared frames queued by reference: order on the wire, vectored writes, control frames
//! around a partly written shared frame, and the cases that encode a copy instead.

use super::*;

/// Writes everything queued through `output_vectored`, each simulated `writev` taking at most
/// `limit` bytes across the slices it is given, and returns the bytes in wire order.
fn drain_vectored(conn: &mut Peer, limit: usize) -> Vec<u8> {
    let mut written = Vec::new();
    loop {
        let mut slices = [std::io::IoSlice::new(&[]); 8];
        let filled = conn.conn.output_vectored(&conn.bufs, &mut slices);
        if filled == 0 {
            assert!(
                !conn.wants_write(),
                "output_vectored empty while output is not"
            );
            return written;
        }
        let mut budget = limit;
        for slice in &slices[..filled] {
            let n = budget.min(slice.len());
            written.extend_from_slice(&slice[..n]);
            budget -= n;
        }
        conn.advance_output(limit - budget);
    }
}

/// A server queue mixing its own frames with shared ones.
fn queue_mixed(server: &mut Peer, shared: &[SharedFrame]) {
    let mut sender = server.sender();
    sender.text("own 1").unwrap();
    sender.shared(&shared[0]).unwrap();
    sender.shared(&shared[1]).unwrap();
    sender.binary(&[7; 300]).unwrap();
    sender.shared(&shared[0]).unwrap();
    sender.text("own 2").unwrap();
}

#[test]
fn shared_frames_go_out_in_queue_order_and_on_the_wire_as_a_copy_would() {
    let shared = [
        SharedFrame::text("shared tick"),
        SharedFrame::binary(&[1; 200]),
    ];
    // What the same messages look like when each connection encodes its own copy.
    let mut copy = Pair::new().server;
    {
        let mut sender = copy.sender();
        sender.text("own 1").unwrap();
        sender.text("shared tick").unwrap();
        sender.binary(&[1; 200]).unwrap();
        sender.binary(&[7; 300]).unwrap();
        sender.text("shared tick").unwrap();
        sender.text("own 2").unwrap();
    }
    let expected = drain(&mut copy, usize::MAX);
    for limit in [1, 2, 3, 7, 64, 250, usize::MAX] {
        let mut server = Pair::new().server;
        queue_mixed(&mut server, &shared);
        assert_eq!(
            server.sender().queued(),
            expected.len(),
            "queued bytes count shared frames"
        );
        assert_eq!(
            drain_vectored(&mut server, limit),
            expected,
            "writev of {limit}"
        );
        let mut server = Pair::new().server;
        queue_mixed(&mut server, &shared);
        assert_eq!(drain(&mut server, limit), expected, "write of {limit}");
    }
    assert_eq!(shared[0].share_count(), 1, "written frames are released");
}

#[test]
fn a_pong_waits_for_a_partly_written_shared_frame_then_goes_ahead_of_the_rest() {
    let mut pair = Pair::new();
    let tick = SharedFrame::binary(&[9; 100]);
    {
        let mut sender = pair.server.sender();
        sender.shared(&tick).unwrap();
        sender.shared(&tick).unwrap();
    }
    // Five bytes of the first shared frame go out, then a ping arrives.
    let first = pair.server.output()[..5].to_vec();
    pair.server.advance_output(5);
    pair.client.feed(&first, pair.at(1));
    pair.client.sender().ping(b"now").unwrap();
    pair.client_writes(pair.at(2));
    assert_eq!(events(&mut pair.server), [Got::Ping(b"now".to_vec())]);
    pair.chunk = 4;
    pair.server_writes(pair.at(3));
    assert_eq!(
        events(&mut pair.client),
        [
            Got::Binary(vec![9; 100]),
            Got::Pong(b"now".to_vec()),
            Got::Binary(vec![9; 100]),
        ],
        "the frame in progress finishes, the pong passes the second"
    );
}

#[test]
fn shared_frames_on_a_client_are_masked_copies_and_none_follow_a_close() {
    let mut pair = Pair::new();
    let tick = SharedFrame::text("to the server");
    pair.client.sender().shared(&tick).unwrap();
    assert_eq!(
        tick.share_count(),
        1,
        "a client encodes its own masked copy"
    );
    pair.client_writes(pair.at(1));
    assert_eq!(events(&mut pair.server), [text("to the server")]);

    pair.server
        .close(CloseCode::NORMAL, "", pair.at(2))
        .unwrap();
    assert_eq!(
        pair.server.sender().shared(&tick),
        Err(Error::SendAfterClose)
    );
    // With a fragment size below its payload, a server encodes it in fragments instead.
    let mut config = Config::server();
    config.fragment_size = Some(4);
    let mut pair = Pair::with(Config::client(), config);
    pair.server.sender().shared(&tick).unwrap();
    assert_eq!(tick.share_count(), 1);
    pair.server_writes(pair.at(1));
    assert_eq!(events(&mut pair.client), [text("to the server")]);
}

#[test]
fn dropping_labelled_frames_keeps_the_stream_whole_and_the_count_right() {
    let label = |seq: u64, key: u64| SharedLabel { group: 1, key, seq };
    let ticks: Vec<SharedFrame> = (0..4u8).map(|i| SharedFrame::binary(&[i; 50])).collect();
    let mut server = Pair::new().server;
    {
        let mut sender = server.sender();
        sender.shared_labeled(&ticks[0], label(0, 7)).unwrap();
        sender.text("own").unwrap();
        sender.shared(&ticks[1]).unwrap();
        sender.shared_labeled(&ticks[2], label(2, 7)).unwrap();
        sender.shared_labeled(&ticks[3], label(3, 8)).unwrap();
    }
    // The first labelled frame starts going out: it must finish, whatever is dropped.
    let mut slices = [std::io::IoSlice::new(&[]); 8];
    server.conn.output_vectored(&server.bufs, &mut slices);
    server.advance_output(10);
    let before = server.bufs.queued_data();
    let dropped = server.bufs.drop_shared(|l, _| Some(l.key == 7));
    assert_eq!(dropped.frames, 1, "only the unstarted frame with key 7");
    assert_eq!(dropped.bytes, ticks[2].wire().len());
    assert_eq!(server.bufs.queued_data(), before - dropped.bytes);
    // A scan that stops at once drops nothing.
    assert_eq!(server.bufs.drop_shared(|_, _| None).frames, 0);
    let mut expected = ticks[0].wire()[10..].to_vec();
    let mut copy = Pair::new().server;
    {
        let mut sender = copy.sender();
        sender.text("own").unwrap();
        sender.binary(&[1; 50]).unwrap();
        sender.binary(&[3; 50]).unwrap();
    }
    expected.extend(drain(&mut copy, usize::MAX));
    assert_eq!(drain_vectored(&mut server, 7), expected);
    assert_eq!(server.bufs.queued_data(), 0);
    assert_eq!(ticks[2].share_count(), 1, "the dropped frame is released");
}
