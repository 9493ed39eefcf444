//! The default adaptive busy polling spends the worker's core only while traffic comes back
//! quickly: a quiet server, or connections paced slower than the cap, cost what a sleeping
//! worker costs. The CPU time is the worker thread's own (`/proc/self/task/TID/schedstat`),
//! so the client and other threads do not count; this file holds one test so that no other
//! test's workers run beside it.

mod support;

use std::thread;
use std::time::Duration;

use support::Fixture;
use tickwire_blocking::{ClientBuilder, Message, Recv};
use tickwire_server::ServerBuilder;

/// Nanoseconds on the CPU of this process's reactor worker threads, summed.
fn workers_cpu_ns() -> u64 {
    let mut total = 0;
    let mut workers = 0;
    for task in std::fs::read_dir("/proc/self/task").unwrap() {
        let path = task.unwrap().path();
        let comm = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        if !comm.starts_with("tickwire-worke") {
            continue;
        }
        let stat = std::fs::read_to_string(path.join("schedstat")).unwrap();
        total += stat
            .split_whitespace()
            .next()
            .unwrap()
            .parse::<u64>()
            .unwrap();
        workers += 1;
    }
    assert_eq!(workers, 1, "one worker thread in this test");
    total
}

fn echo(ws: &mut tickwire_blocking::WebSocket<tickwire_blocking::MaybeTlsStream>, text: &str) {
    ws.send_text_now(text).unwrap();
    assert_eq!(ws.recv().unwrap(), Recv::Message(Message::Text(text)));
}

#[test]
fn polling_stops_when_the_traffic_is_quiet_or_slower_than_the_cap() {
    let fixture = Fixture::start(ServerBuilder::new().workers(1));
    let mut ws = ClientBuilder::new().connect(&fixture.url("/")).unwrap();

    // Back-to-back round trips: gaps of tens of microseconds, which grow the window.
    for i in 0..2_000 {
        echo(&mut ws, &format!("burst {i}"));
    }

    // A client paced at 2 ms: every gap is longer than the 200 µs cap, so the window shrinks
    // to nothing within a few messages and the worker sleeps between them. Polling that did
    // not shrink would add up to 200 µs per message, 40 ms over these 200.
    let before = workers_cpu_ns();
    for i in 0..200 {
        thread::sleep(Duration::from_millis(2));
        echo(&mut ws, &format!("paced {i}"));
    }
    let paced = workers_cpu_ns() - before;

    // Quiet: nothing arrives, and the worker must not poll at all.
    let before = workers_cpu_ns();
    thread::sleep(Duration::from_millis(500));
    let quiet = workers_cpu_ns() - before;

    eprintln!(
        "busy_poll: paced 200 echoes cost the worker {} µs, 500 ms quiet {} µs",
        paced / 1_000,
        quiet / 1_000
    );
    assert!(
        paced < 20_000_000,
        "200 paced echoes cost the worker {paced} ns of CPU"
    );
    assert!(
        quiet < 5_000_000,
        "a quiet worker spent {quiet} ns on the CPU"
    );
}
