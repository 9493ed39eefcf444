//! Proves rule 6 of docs/ARCHITECTURE.md: after warm-up, receiving a single-frame message and sending one
//! allocate nothing, in both roles; and rule 11: a server connection whose buffers went back
//! to a pool holds no heap at all, in at most 256 bytes of state. A counting global allocator
//! wraps the system allocator for this test binary only.

use std::sync::Arc;
use std::time::Instant;

use tickwire_codec::buf::WriteBuf;
use tickwire_codec::ws::{
    Buffers, Config, Connection, Event, FrameWriter, MaskSource, Message, Role, SharedFrame,
};
use tickwire_test_support::alloc::CountingAlloc;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc::with_heap_totals();

/// Frames as the peer of `role` would send them: text, binary, ping.
fn peer_frames(role: Role) -> Vec<u8> {
    let peer = if role == Role::Server {
        Role::Client
    } else {
        Role::Server
    };
    let mut writer = FrameWriter::new(peer, MaskSource::seeded(9));
    let mut out = WriteBuf::new(4096, 14);
    writer.text(&mut out, &"{\"px\":\"101.25\",\"qty\":\"3\"}".repeat(4));
    writer.binary(&mut out, &[7; 128]);
    writer.ping(&mut out, b"keepalive").unwrap();
    out.as_slice().to_vec()
}

/// Feeds one batch through the socket-facing path, echoes data messages while they are
/// borrowed, and drains the output as a transport would. Returns messages seen.
fn round(conn: &mut Connection, bufs: &mut Buffers, input: &[u8], now: Instant) -> usize {
    let spare = conn.spare(bufs);
    spare[..input.len()].copy_from_slice(input);
    conn.filled(bufs, input.len(), now);
    let mut seen = 0;
    loop {
        let (event, mut sender) = conn.poll_with_sender(bufs).expect("valid frames");
        match event {
            Event::Message(Message::Text(text)) => sender.text(text).unwrap(),
            Event::Message(Message::Binary(data)) => sender.binary(data).unwrap(),
            Event::Message(_) => {}
            Event::NeedMore => break,
            Event::Closed => panic!("unexpected close"),
        }
        seen += 1;
    }
    while conn.wants_write(bufs) {
        let n = conn.output(bufs).len();
        conn.advance_output(bufs, n);
    }
    seen
}

fn assert_steady_state_allocates_nothing(role: Role) {
    let input = peer_frames(role);
    let now = Instant::now();
    let config = if role == Role::Server {
        Config::server()
    } else {
        Config::client()
    };
    let mut bufs = Buffers::new(&config);
    let mut conn = Connection::new(role, config, MaskSource::seeded(1), now);
    for _ in 0..100 {
        assert_eq!(round(&mut conn, &mut bufs, &input, now), 3);
    }
    let region = ALLOC.heap_region();
    let mut seen = 0;
    for _ in 0..10_000 {
        seen += round(&mut conn, &mut bufs, &input, now);
    }
    let change = region.change();
    assert_eq!(seen, 30_000);
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "{role:?}: steady-state receive + echo + pong allocated"
    );
}

/// 1,000 server connections share one configuration and one pooled set of buffers, as a
/// reactor worker runs them: each receives a burst (a fragmented message among the frames),
/// echoes it, and gives the buffers back once it is idle. Afterwards the connections hold
/// no heap: everything allocated on their behalf was freed, and their state is inline.
fn idle_connections_hold_no_buffer() {
    const CONNECTIONS: usize = 1_000;
    let state = size_of::<Connection>();
    assert!(state <= 256, "per-connection state is {state} bytes");

    let config = Arc::new(Config::server());
    let now = Instant::now();
    let mut input = peer_frames(Role::Server);
    let mut writer = FrameWriter::new(Role::Client, MaskSource::seeded(3));
    writer.set_fragment_size(Some(16));
    let mut out = WriteBuf::new(256, 14);
    writer.text(&mut out, "a fragmented message of several frames");
    input.extend_from_slice(out.as_slice());

    let mut pool = vec![Buffers::new(&config)];
    let mut conns = Vec::with_capacity(CONNECTIONS);
    let region = ALLOC.heap_region();
    for i in 0..CONNECTIONS {
        conns.push(Connection::new(
            Role::Server,
            Arc::clone(&config),
            MaskSource::seeded(i as u64),
            now,
        ));
    }
    let made = region.change();
    assert_eq!(
        (made.allocations, made.bytes_allocated),
        (0, 0),
        "opening a server connection allocated"
    );
    for conn in &mut conns {
        let mut bufs = pool.pop().expect("the set was given back");
        assert_eq!(round(conn, &mut bufs, &input, now), 4);
        conn.release(&mut bufs);
        assert!(conn.is_idle(&bufs), "nothing buffered after the burst");
        conn.trim();
        pool.push(bufs);
    }
    let change = region.change();
    let held = change.held();
    assert_eq!(
        held, 0,
        "{CONNECTIONS} idle connections still hold heap ({} allocations during the bursts)",
        change.allocations
    );
    assert_eq!(
        Arc::strong_count(&config),
        CONNECTIONS + 1,
        "one shared Config"
    );
    println!(
        "zero_alloc: {CONNECTIONS} idle server connections: {state} bytes of state each, 0 bytes of heap, one shared Config"
    );
}

/// A 16 KiB broadcast frame queued on 1,000 server connections: each queue holds a
/// reference, not a copy. The heap that queueing takes is the queue entries (each
/// connection's first one allocates its small queue), three orders of magnitude under
/// 1,000 copies; each connection then writes the frame's bytes as they are.
fn broadcast_is_queued_by_reference() {
    const CONNECTIONS: usize = 1_000;
    const PAYLOAD: usize = 16 << 10;
    let config = Arc::new(Config::server());
    let now = Instant::now();
    let mut conns: Vec<(Connection, Buffers)> = (0..CONNECTIONS)
        .map(|i| {
            let conn = Connection::new(
                Role::Server,
                Arc::clone(&config),
                MaskSource::seeded(i as u64),
                now,
            );
            (conn, Buffers::new(&config))
        })
        .collect();
    let frame = SharedFrame::binary(&vec![0x5a; PAYLOAD]);

    let region = ALLOC.heap_region();
    for (conn, bufs) in &mut conns {
        conn.sender(bufs).shared(&frame).expect("open connection");
    }
    let queued = region.change();
    assert_eq!(frame.share_count(), CONNECTIONS + 1);
    let per_connection = queued.bytes_allocated / CONNECTIONS as u64;
    // The queue's first allocation (room for four entries), not the payload.
    assert!(
        per_connection <= 4 * Buffers::SHARED_ENTRY_BYTES as u64,
        "queueing took {per_connection} bytes per connection for a {PAYLOAD}-byte frame"
    );
    for (conn, bufs) in &mut conns {
        let mut wire = Vec::new();
        loop {
            let mut slices = [std::io::IoSlice::new(&[]); 4];
            let filled = conn.output_vectored(bufs, &mut slices);
            if filled == 0 {
                break;
            }
            let n: usize = slices[..filled].iter().map(|s| s.len()).sum();
            for slice in &slices[..filled] {
                wire.extend_from_slice(slice);
            }
            conn.advance_output(bufs, n);
        }
        assert_eq!(wire, frame.wire(), "the shared bytes, as they are");
    }
    assert_eq!(frame.share_count(), 1, "every queue released its reference");
    println!(
        "zero_alloc: a {PAYLOAD}-byte frame queued on {CONNECTIONS} connections: {} bytes allocated in all ({per_connection} per connection), no copy",
        queued.bytes_allocated
    );
}

/// One test function on purpose: the counter is process-wide, so a second test running on
/// another thread would be counted too.
/// Runs without the libtest harness (`harness = false` in Cargo.toml): the counting
/// allocator sees every thread, and libtest's own threads allocate while a test runs, which
/// made this check fail at random. Here the measuring thread is the only thread.
fn main() {
    let mut passed = 0;
    for role in [Role::Server, Role::Client] {
        assert_steady_state_allocates_nothing(role);
        println!("zero_alloc: {role:?}: receive + echo + pong, 30 000 messages, 0 allocations");
        passed += 1;
    }
    idle_connections_hold_no_buffer();
    passed += 1;
    broadcast_is_queued_by_reference();
    passed += 1;
    println!("zero_alloc: {passed} passed, 0 failed");
}
