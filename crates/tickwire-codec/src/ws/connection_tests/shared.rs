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

/// A server's own frames (text, binary, text), a first write of `first` bytes, a ping from
/// the client, the server's close; the rest written `limit` bytes at a time, through
/// `output_vectored` or through `output`. Returns the bytes on the wire.
fn own_frames_with_a_ping_after(first: usize, limit: usize, vectored: bool) -> Vec<u8> {
    let mut pair = Pair::new();
    {
        let mut sender = pair.server.sender();
        sender.text("own 1").unwrap();
        sender.binary(&[7; 300]).unwrap();
        sender.text("own 2").unwrap();
    }
    let mut wire = if vectored {
        let mut slices = [std::io::IoSlice::new(&[]); 8];
        let filled = pair
            .server
            .conn
            .output_vectored(&pair.server.bufs, &mut slices);
        assert_eq!(filled, 1, "own frames only: one run");
        slices[0][..first].to_vec()
    } else {
        pair.server.output()[..first].to_vec()
    };
    pair.server.advance_output(first);
    pair.client.sender().ping(b"mid").unwrap();
    pair.client_writes(pair.at(2));
    assert_eq!(events(&mut pair.server), [Got::Ping(b"mid".to_vec())]);
    pair.server
        .close(CloseCode::NORMAL, "bye", pair.at(3))
        .unwrap();
    wire.extend(if vectored {
        drain_vectored(&mut pair.server, limit)
    } else {
        drain(&mut pair.server, limit)
    });
    assert!(!pair.server.wants_write(), "everything written");
    wire
}

#[test]
fn own_frames_through_writev_match_single_writes_and_a_pong_waits_for_the_frame_in_progress() {
    // Frame starts on the wire: "own 1" at 0 (7 bytes), the binary at 7 (304), "own 2" at
    // 311 (7); the close is queued after the ping.
    for first in [1, 6, 7, 8, 200, 311, 312, 318] {
        for limit in [1, 3, 64, usize::MAX] {
            let through_writev = own_frames_with_a_ping_after(first, limit, true);
            assert_eq!(
                through_writev,
                own_frames_with_a_ping_after(first, limit, false),
                "first write {first}, then {limit} at a time"
            );
            let mut client = Pair::new().client;
            client.feed(&through_writev, Instant::now());
            let mut expected = vec![
                text("own 1"),
                Got::Binary(vec![7; 300]),
                text("own 2"),
                closed_with(CloseCode::NORMAL, "bye"),
            ];
            // The pong follows every frame the first write started, and nothing else.
            let started = [0, 7, 311].iter().filter(|&&at| at < first).count();
            expected.insert(started, Got::Pong(b"mid".to_vec()));
            let got = events(&mut client);
            assert_eq!(got[..expected.len()], expected, "first write {first}");
        }
    }
}
