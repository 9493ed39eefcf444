//! The `tickwire` binary over TLS on loopback: `serve --tls-cert/--tls-key[/--tls-client-ca]`
//! and `connect wss://… [--ca] [--cert --key] [--insecure]`, as a user at a terminal sees them
//! (exit status, stdout, one line on stderr). Certificates are generated at test time.

use crate::echo::{Pki, Server, args, assert_fails_naming, connect};

#[test]
fn connect_to_an_untrusted_server_fails_with_one_line_naming_the_cause() {
    let pki = Pki::new("untrusted");
    let server = Server::start(&pki, &[]);
    // Without --ca the client trusts Mozilla's roots only.
    let outcome = connect(&[server.url()], "never sent\n");
    assert_fails_naming(&outcome, "untrusted certificate");
}

#[test]
fn connect_to_the_wrong_host_name_fails_with_one_line_naming_the_cause() {
    // A certificate for the name only: connecting to the address does not match it.
    let pki = Pki::with_server_names("hostname", &["localhost"]);
    let server = Server::start(&pki, &[]);
    let outcome = connect(&[server.url(), "--ca".into(), pki.file("ca.pem")], "");
    assert_fails_naming(&outcome, "not valid for the host name");
}

#[test]
fn connect_with_the_ca_echoes_stdin_lines() {
    let pki = Pki::new("echo");
    let server = Server::start(&pki, &[]);
    let outcome = connect(
        &[server.url(), "--ca".into(), pki.file("ca.pem")],
        "first line\nsecond line, ünïcode\n",
    );
    assert!(outcome.status.success(), "stderr: {}", outcome.stderr);
    assert_eq!(outcome.stdout, "first line\nsecond line, ünïcode\n");
    assert_eq!(outcome.stderr, "");
}

#[test]
fn insecure_connects_to_an_untrusted_server() {
    let pki = Pki::new("insecure");
    let server = Server::start(&pki, &[]);
    let outcome = connect(&[server.url(), "--insecure".into()], "anyway\n");
    assert!(outcome.status.success(), "stderr: {}", outcome.stderr);
    assert_eq!(outcome.stdout, "anyway\n");
}

#[test]
fn mutual_tls_needs_the_client_certificate() {
    let pki = Pki::new("mtls");
    let server = Server::start(&pki, &args(&["--tls-client-ca", &pki.file("ca.pem")]));
    let ca = args(&["--ca", &pki.file("ca.pem")]);
    let with_identity = args(&[
        "--cert",
        &pki.file("client.pem"),
        "--key",
        &pki.file("client.key"),
    ]);
    let outcome = connect(
        &[vec![server.url()], ca.clone(), with_identity].concat(),
        "it is me\n",
    );
    assert!(outcome.status.success(), "stderr: {}", outcome.stderr);
    assert_eq!(outcome.stdout, "it is me\n");
    // Without a certificate the server refuses with certificate_required.
    let outcome = connect(&[vec![server.url()], ca].concat(), "anonymous\n");
    assert_fails_naming(&outcome, "CertificateRequired");
}
