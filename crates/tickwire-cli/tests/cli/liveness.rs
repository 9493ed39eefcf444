//! `connect --keepalive` and `--idle-timeout` against a server that opens the connection,
//! then neither reads nor writes (a peer that hung, or a link that black-holed): the command
//! ends with a non-zero status and one line naming the timer that fired, on both runtimes.

use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use crate::echo::{args, assert_fails_naming, connect};

/// A server that accepts one WebSocket, then holds it without reading (so no ping is ever
/// answered) until the returned sender is dropped.
fn silent_server() -> (String, mpsc::Sender<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ws://{}", listener.local_addr().unwrap());
    let (hold, held) = mpsc::channel::<()>();
    thread::spawn(move || {
        let (tcp, _) = listener.accept().unwrap();
        let _ws = tickwire_blocking::accept(tcp).unwrap();
        let _ = held.recv_timeout(Duration::from_secs(60));
    });
    (url, hold)
}

/// `connect --echo` (it reads no stdin) with `flags` on `runtime`; asserts the failure names
/// `cause` and came no sooner than `after`, the timer's own span.
fn fails_after(runtime: &str, flags: &[&str], cause: &str, after: Duration) {
    let (url, _hold) = silent_server();
    let mut command = args(&["--runtime", runtime, &url, "--echo"]);
    command.extend(args(flags));
    let started = Instant::now();
    let outcome = connect(&command, "");
    assert_fails_naming(&outcome, cause);
    assert!(
        started.elapsed() >= after,
        "{runtime} {flags:?} failed after {:?}, before the timer could fire",
        started.elapsed()
    );
}

#[test]
fn an_idle_timeout_ends_a_silent_connection_on_both_runtimes() {
    for runtime in ["blocking", "tokio"] {
        let flags = ["--keepalive", "off", "--idle-timeout", "600ms"];
        fails_after(runtime, &flags, "idle timeout", Duration::from_millis(600));
    }
}

#[test]
fn an_unanswered_keepalive_ping_ends_the_connection_on_both_runtimes() {
    for runtime in ["blocking", "tokio"] {
        let flags = ["--keepalive", "300ms:400ms"];
        fails_after(runtime, &flags, "pong", Duration::from_millis(700));
    }
}

#[test]
fn a_keepalive_that_is_not_a_duration_is_refused_before_connecting() {
    for bad in ["0s", "5s:0s", "fast", "5s:soon"] {
        let outcome = connect(&args(&["ws://127.0.0.1:9", "--keepalive", bad]), "");
        assert!(!outcome.status.success(), "--keepalive {bad} was accepted");
        assert!(
            outcome.stderr.contains("--keepalive"),
            "--keepalive {bad}: {:?}",
            outcome.stderr
        );
    }
}
