//! What the WebSocket CLI tests share (the `tls` and `tokio_runtime` modules): test
//! certificates made with rcgen, a running `tickwire serve`, and a bounded `tickwire connect`
//! with what it left behind.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::tls_support::{Ca, Identity};

/// The bound on every wait: a hung child fails the test instead of hanging it.
pub(crate) const PATIENCE: Duration = Duration::from_secs(20);

/// PEM files in a directory of their own: a CA, a server certificate signed by it, and a
/// client certificate signed by it.
pub(crate) struct Pki {
    dir: PathBuf,
}

impl Pki {
    /// A server certificate for 127.0.0.1 and localhost.
    pub(crate) fn new(test: &str) -> Self {
        Self::with_server_names(test, &["127.0.0.1", "localhost"])
    }

    pub(crate) fn with_server_names(test: &str, server_names: &[&str]) -> Self {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("tls_cli-{test}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ca = Ca::new(test);
        let write = |name: &str, identity: Identity| {
            std::fs::write(dir.join(format!("{name}.pem")), identity.chain_pem).unwrap();
            std::fs::write(dir.join(format!("{name}.key")), identity.key_pem).unwrap();
        };
        write("server", ca.server_cert(server_names));
        write("client", ca.client_cert("trading-client"));
        std::fs::write(dir.join("ca.pem"), ca.pem()).unwrap();
        Self { dir }
    }

    pub(crate) fn file(&self, name: &str) -> String {
        self.dir.join(name).to_str().unwrap().to_owned()
    }
}

impl Drop for Pki {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

pub(crate) fn tickwire() -> Command {
    Command::new(env!("CARGO_BIN_EXE_tickwire"))
}

/// Starts `tickwire ARGS` (stdin closed, stderr dropped); the first `lines` lines it prints
/// arrive on the receiver (empty ones once stdout has closed).
pub(crate) fn spawn_reading_lines(
    args: &[String],
    lines: usize,
) -> (Child, mpsc::Receiver<String>) {
    let mut child = tickwire()
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let mut stdout = BufReader::new(stdout);
        for _ in 0..lines {
            let mut line = String::new();
            let _ = stdout.read_line(&mut line);
            let _ = tx.send(line);
        }
    });
    (child, rx)
}

/// A running `tickwire serve`, killed when dropped (also when a test fails).
pub(crate) struct Server {
    child: Child,
    scheme: &'static str,
    port: u16,
}

impl Server {
    /// Starts `tickwire serve --port 0` with the server certificate (and `extra` arguments)
    /// and reads the chosen port from its first line of output.
    pub(crate) fn start(pki: &Pki, extra: &[String]) -> Self {
        let tls = args(&[
            "--tls-cert",
            &pki.file("server.pem"),
            "--tls-key",
            &pki.file("server.key"),
        ]);
        Self::start_with(&[tls, extra.to_vec()].concat())
    }

    /// Starts `tickwire serve --port 0 ARGS` (ws://, or wss:// when ARGS name a certificate).
    pub(crate) fn start_with(serve_args: &[String]) -> Self {
        let serve = [args(&["serve", "--port", "0"]), serve_args.to_vec()].concat();
        let (child, rx) = spawn_reading_lines(&serve, 1);
        // The guard exists before anything can fail, so the child is always killed.
        let mut server = Self {
            child,
            scheme: "ws",
            port: 0,
        };
        let line = rx
            .recv_timeout(PATIENCE)
            .expect("serve printed its address");
        let address = line
            .trim_end()
            .strip_prefix("tickwire: echo server listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
        let port = if let Some(port) = address.strip_prefix("wss://127.0.0.1:") {
            server.scheme = "wss";
            port
        } else {
            address
                .strip_prefix("ws://127.0.0.1:")
                .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
        };
        server.port = port.parse().unwrap();
        server
    }

    pub(crate) fn url(&self) -> String {
        format!("{}://127.0.0.1:{}/", self.scheme, self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What a finished `tickwire connect` left behind.
pub(crate) struct Outcome {
    pub(crate) status: ExitStatus,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs `tickwire connect` with `args`, feeds it `stdin` and waits (bounded) for it to exit.
pub(crate) fn connect(args: &[String], stdin: &str) -> Outcome {
    let mut child = tickwire()
        .arg("connect")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A client that fails at once may exit before reading its input: ignore EPIPE.
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin.as_bytes());
    drop(input);
    let crate::support::Finished {
        status,
        stdout,
        stderr,
    } = crate::support::wait_bounded(child, PATIENCE, "connect");
    Outcome {
        status,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr,
    }
}

pub(crate) fn args(items: &[&str]) -> Vec<String> {
    items.iter().map(|item| item.to_string()).collect()
}

/// Asserts a failed run: non-zero exit, nothing on stdout, exactly one line on stderr that
/// contains `cause`.
pub(crate) fn assert_fails_naming(outcome: &Outcome, cause: &str) {
    assert!(!outcome.status.success(), "exit status {}", outcome.status);
    assert_eq!(outcome.stdout, "");
    let lines: Vec<&str> = outcome.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "stderr: {:?}", outcome.stderr);
    assert!(lines[0].starts_with("tickwire: "), "{:?}", lines[0]);
    assert!(
        lines[0].contains(cause),
        "{:?} does not name {cause:?}",
        lines[0]
    );
}
