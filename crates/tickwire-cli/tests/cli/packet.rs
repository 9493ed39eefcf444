//! `tickwire packet serve` and `tickwire packet send` together: lines in, the same lines
//! back, over plain TCP and TLS, with and without compression.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};

use crate::echo::{PATIENCE, Pki, tickwire};
use crate::support::wait_bounded;

/// A running `tickwire packet serve --port 0 ARGS`, killed when dropped, and its port.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(extra: &[&str]) -> (Serve, u16) {
    let mut child = tickwire()
        .args(["packet", "serve", "--port", "0"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(
        first.starts_with("tickwire: packet echo server listening on "),
        "{first}"
    );
    let port = first
        .trim_end()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    (Serve(child), port)
}

/// Runs `tickwire packet send ADDRESS ARGS` with `input` on stdin; returns its stdout.
fn send(address: &str, extra: &[&str], input: &str) -> String {
    let mut child = tickwire()
        .args(["packet", "send", address])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let finished = wait_bounded(child, PATIENCE, "tickwire packet send");
    assert!(finished.status.success(), "{}", finished.stderr);
    String::from_utf8(finished.stdout).unwrap()
}

#[test]
fn send_prints_each_line_echoed_by_serve() {
    let (_server, port) = serve(&[]);
    let input = "order 1\n{\"px\":101.5}\n\nlast line\n";
    assert_eq!(send(&format!("127.0.0.1:{port}"), &[], input), input);
}

#[test]
fn compressed_lines_come_back_whole() {
    let (_server, port) = serve(&["--compress", "zstd"]);
    let long = "tick,".repeat(400);
    let input = format!("short\n{long}\n");
    let address = format!("127.0.0.1:{port}");
    for codec in ["lz4", "zstd", "auto"] {
        assert_eq!(send(&address, &["--compress", codec], &input), input);
    }
}

#[test]
fn send_over_tls_trusts_the_given_ca() {
    let pki = Pki::new("packet");
    let (cert, key) = (pki.file("server.pem"), pki.file("server.key"));
    let (_server, port) = serve(&["--tls-cert", &cert, "--tls-key", &key]);
    let input = "a\nb\nc\n";
    let ca = pki.file("ca.pem");
    assert_eq!(
        send(&format!("localhost:{port}"), &["--ca", &ca], input),
        input
    );
}
