//! `tickwire packet serve` and `tickwire packet send` together: lines in, the same lines
//! back, over plain TCP and TLS, with and without compression, on either runtime.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Stdio};

use crate::echo::{PATIENCE, Pki, tickwire};
use crate::support::wait_bounded;

/// A running `tickwire --runtime RUNTIME packet serve --port 0 ARGS`, killed when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts it; returns it and its port.
fn serve(runtime: &str, extra: &[&str]) -> (Serve, u16) {
    let mut child = tickwire()
        .args(["--runtime", runtime, "packet", "serve", "--port", "0"])
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
    let (_server, port) = serve("blocking", &[]);
    let input = "order 1\n{\"px\":101.5}\n\nlast line\n";
    assert_eq!(send(&format!("127.0.0.1:{port}"), &[], input), input);
}

#[test]
fn compressed_lines_come_back_whole() {
    let (_server, port) = serve("blocking", &["--compress", "zstd"]);
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
    let (_server, port) = serve("blocking", &["--tls-cert", &cert, "--tls-key", &key]);
    let input = "a\nb\nc\n";
    let ca = pki.file("ca.pem");
    assert_eq!(
        send(&format!("localhost:{port}"), &["--ca", &ca], input),
        input
    );
}

#[test]
fn every_pairing_of_runtimes_echoes_the_same_lines() {
    let long = "tick,".repeat(400);
    let input = format!("first\n\n{long}\nlast\n");
    for server_runtime in ["blocking", "tokio"] {
        let (_server, port) = serve(server_runtime, &["--compress", "lz4"]);
        let address = format!("127.0.0.1:{port}");
        for client_runtime in ["blocking", "tokio"] {
            assert_eq!(
                send(
                    &address,
                    &["--runtime", client_runtime, "--compress", "zstd"],
                    &input
                ),
                input,
                "{server_runtime} server, {client_runtime} client"
            );
        }
    }
}

#[test]
fn tokio_send_over_tls_to_a_tokio_server() {
    let pki = Pki::new("packet-tokio");
    let (cert, key) = (pki.file("server.pem"), pki.file("server.key"));
    let (_server, port) = serve("tokio", &["--tls-cert", &cert, "--tls-key", &key]);
    let ca = pki.file("ca.pem");
    assert_eq!(
        send(
            &format!("localhost:{port}"),
            &["--runtime", "tokio", "--ca", &ca],
            "a\nb\n"
        ),
        "a\nb\n"
    );
}

#[test]
fn the_reactor_runtime_refuses_packet_commands() {
    let out = tickwire()
        .args(["--runtime", "reactor", "packet", "serve", "--port", "0"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("`packet` runs on blocking or tokio"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
