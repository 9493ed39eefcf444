//! Proves DESIGN rule 6: after warm-up, receiving a single-frame message and sending one
//! allocate nothing, in both roles. A counting global allocator wraps the system allocator
//! for this test binary only.

use std::alloc::System;
use std::time::Instant;

use stats_alloc::{INSTRUMENTED_SYSTEM, Region, StatsAlloc};
use tickwire_codec::buf::WriteBuf;
use tickwire_codec::ws::{Config, Connection, Event, FrameWriter, MaskSource, Message, Role};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

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
fn round(conn: &mut Connection, input: &[u8], now: Instant) -> usize {
    let spare = conn.spare();
    spare[..input.len()].copy_from_slice(input);
    conn.filled(input.len(), now);
    let mut seen = 0;
    loop {
        let (event, sender) = conn.poll_with_sender().expect("valid frames");
        match event {
            Event::Message(Message::Text(text)) => sender.text(text).unwrap(),
            Event::Message(Message::Binary(data)) => sender.binary(data).unwrap(),
            Event::Message(_) => {}
            Event::NeedMore => break,
            Event::Closed => panic!("unexpected close"),
        }
        seen += 1;
    }
    while conn.wants_write() {
        let n = conn.output().len();
        conn.advance_output(n);
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
    let mut conn = Connection::new(role, config, MaskSource::seeded(1), now);
    for _ in 0..100 {
        assert_eq!(round(&mut conn, &input, now), 3);
    }
    let region = Region::new(GLOBAL);
    let mut seen = 0;
    for _ in 0..10_000 {
        seen += round(&mut conn, &input, now);
    }
    let change = region.change();
    assert_eq!(seen, 30_000);
    assert_eq!(
        (change.allocations, change.reallocations),
        (0, 0),
        "{role:?}: steady-state receive + echo + pong allocated"
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
    println!("zero_alloc: {passed} passed, 0 failed");
}
