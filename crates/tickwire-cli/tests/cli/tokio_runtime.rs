//! `--runtime tokio`: `serve` and `connect` through the tickwire-tokio transports on loopback,
//! over ws:// and wss://, as a user at a terminal sees them (exit status, stdout, one line on
//! stderr), and the same output as the blocking transports in every pairing.

use crate::echo::{Pki, Server, args, assert_fails_naming, connect};

const LINES: &str =
    "first line\nsecond line, ünïcode\n{\"op\":\"subscribe\",\"args\":[\"BTC-USD\"]}\n";

#[test]
fn tokio_serve_and_connect_echo_stdin_lines_with_deflate() {
    let server = Server::start_with(&args(&["--runtime", "tokio", "--deflate"]));
    let outcome = connect(
        &[
            server.url(),
            "--runtime".into(),
            "tokio".into(),
            "--deflate".into(),
        ],
        LINES,
    );
    assert!(outcome.status.success(), "stderr: {}", outcome.stderr);
    assert_eq!(outcome.stdout, LINES);
    assert_eq!(outcome.stderr, "");
}

#[test]
fn every_pairing_of_runtimes_prints_the_same_echo() {
    for server_runtime in ["blocking", "tokio"] {
        let server = Server::start_with(&args(&["--runtime", server_runtime, "--deflate"]));
        for client_runtime in ["blocking", "tokio"] {
            for deflate in [false, true] {
                let mut client = args(&[&server.url(), "--runtime", client_runtime]);
                if deflate {
                    client.push("--deflate".into());
                }
                let outcome = connect(&client, LINES);
                let pairing =
                    format!("serve {server_runtime}, connect {client_runtime}, deflate {deflate}");
                assert!(outcome.status.success(), "{pairing}: {}", outcome.stderr);
                assert_eq!(outcome.stdout, LINES, "{pairing}");
                assert_eq!(outcome.stderr, "", "{pairing}");
            }
        }
    }
}

#[test]
fn tokio_serve_and_connect_echo_over_wss() {
    let pki = Pki::new("tokio-wss");
    let server = Server::start(&pki, &args(&["--runtime", "tokio"]));
    let outcome = connect(
        &args(&[
            &server.url(),
            "--runtime",
            "tokio",
            "--ca",
            &pki.file("ca.pem"),
        ]),
        LINES,
    );
    assert!(outcome.status.success(), "stderr: {}", outcome.stderr);
    assert_eq!(outcome.stdout, LINES);
    assert_eq!(outcome.stderr, "");
}

#[test]
fn tokio_mutual_tls_needs_the_client_certificate() {
    let pki = Pki::new("tokio-mtls");
    let server = Server::start(
        &pki,
        &args(&["--runtime", "tokio", "--tls-client-ca", &pki.file("ca.pem")]),
    );
    let client = args(&[
        &server.url(),
        "--runtime",
        "tokio",
        "--ca",
        &pki.file("ca.pem"),
    ]);
    let identity = args(&[
        "--cert",
        &pki.file("client.pem"),
        "--key",
        &pki.file("client.key"),
    ]);
    let outcome = connect(&[client.clone(), identity].concat(), "it is me\n");
    assert!(outcome.status.success(), "stderr: {}", outcome.stderr);
    assert_eq!(outcome.stdout, "it is me\n");
    let outcome = connect(&client, "anonymous\n");
    assert_fails_naming(&outcome, "CertificateRequired");
}

#[test]
fn tokio_connect_to_an_untrusted_server_fails_with_one_line_naming_the_cause() {
    let pki = Pki::new("tokio-untrusted");
    let server = Server::start(&pki, &args(&["--runtime", "tokio"]));
    let outcome = connect(
        &args(&[&server.url(), "--runtime", "tokio"]),
        "never sent\n",
    );
    assert_fails_naming(&outcome, "untrusted certificate");
}

#[test]
fn tokio_connect_to_a_closed_port_fails_with_one_line() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("ws://127.0.0.1:{port}/");
    let outcome = connect(&args(&[&url, "--runtime", "tokio"]), "");
    assert_fails_naming(&outcome, "refused");
}
