//! Running the built `tickwire` binary with a bound on how long it may take.

use std::io::Read;
use std::process::{Child, ExitStatus};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// What a finished command left behind.
pub(crate) struct Finished {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: String,
}

/// Collects `child`'s stdout and stderr (both piped) until it exits; kills it and panics,
/// naming `what` and its stderr, when stdout is still open after `patience`.
pub(crate) fn wait_bounded(mut child: Child, patience: Duration, what: &str) -> Finished {
    let mut stdout = child.stdout.take().expect("stdout piped");
    let mut stderr = child.stderr.take().expect("stderr piped");
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stdout.read_to_end(&mut bytes);
        let _ = tx.send(bytes);
    });
    let stderr = thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    // stdout closes when the command exits.
    let stdout = rx.recv_timeout(patience);
    if stdout.is_err() {
        let _ = child.kill();
    }
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    let stdout = stdout.unwrap_or_else(|_| panic!("{what} did not exit; stderr: {stderr}"));
    Finished {
        status,
        stdout,
        stderr,
    }
}
