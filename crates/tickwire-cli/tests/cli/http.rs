//! `tickwire http METHOD URL` against a scripted loopback server, as a user at a terminal sees
//! it: what reaches the server, what is printed on stdout, the one stderr line of a failure and
//! the exit status; with `--runtime tokio` (the async client), the same as without.

use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::thread::{self, JoinHandle};
use std::time::Duration;

/// The bound on every wait: a hung child or server fails the test instead of hanging it.
const PATIENCE: Duration = Duration::from_secs(20);

/// A server on 127.0.0.1 that reads one request (head and Content-Length body), answers it
/// with `response` and returns the request's bytes.
fn one_shot_server(response: &'static [u8]) -> (u16, JoinHandle<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let handle = thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        stream.set_write_timeout(Some(PATIENCE)).unwrap();
        let request = read_request(&mut stream);
        stream.write_all(response).unwrap();
        request
    });
    (port, handle)
}

fn read_request(stream: &mut TcpStream) -> Vec<u8> {
    let mut request = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        if let Some(at) = request.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&request[..at]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|line| line.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse::<usize>().unwrap());
            if request.len() >= at + 4 + length {
                return request;
            }
        }
        match stream.read(&mut chunk) {
            Ok(0) => panic!("the client closed inside a request: {request:?}"),
            Ok(n) => request.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => panic!("no request within {PATIENCE:?}: {e}"),
        }
    }
}

/// What a finished `tickwire http` left behind.
struct Outcome {
    status: ExitStatus,
    stdout: Vec<u8>,
    stderr: String,
}

impl Outcome {
    fn stdout(&self) -> &str {
        std::str::from_utf8(&self.stdout).unwrap()
    }

    /// Asserts a successful run with nothing on stderr.
    fn assert_success(&self) {
        assert!(self.status.success(), "exit status {}", self.status);
        assert_eq!(self.stderr, "");
    }

    /// Asserts a failed run: non-zero exit, nothing on stdout, one stderr line starting with
    /// `tickwire:` that contains `cause`.
    fn assert_fails_naming(&self, cause: &str) {
        assert!(!self.status.success(), "exit status {}", self.status);
        assert_eq!(self.stdout(), "");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "stderr: {:?}", self.stderr);
        assert!(lines[0].starts_with("tickwire: "), "{:?}", lines[0]);
        assert!(
            lines[0].contains(cause),
            "{:?} does not name {cause:?}",
            lines[0]
        );
    }
}

/// Runs `tickwire http` with `args` and waits (bounded) for it to exit.
fn http(args: &[&str]) -> Outcome {
    http_on("blocking", args)
}

/// Runs `tickwire http --runtime RUNTIME` with `args`.
fn http_on(runtime: &str, args: &[&str]) -> Outcome {
    let child = Command::new(env!("CARGO_BIN_EXE_tickwire"))
        .args(["http", "--runtime", runtime])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let crate::support::Finished {
        status,
        stdout,
        stderr,
    } = crate::support::wait_bounded(child, PATIENCE, "tickwire http");
    Outcome {
        status,
        stdout,
        stderr,
    }
}

const HELLO: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Test: yes\r\nContent-Length: 12\r\n\r\nhello\nworld\n";

#[test]
fn get_prints_the_body_only() {
    let (port, server) = one_shot_server(HELLO);
    let outcome = http(&["GET", &format!("http://127.0.0.1:{port}/greeting")]);
    outcome.assert_success();
    assert_eq!(outcome.stdout(), "hello\nworld\n");
    let request = String::from_utf8(server.join().unwrap()).unwrap();
    assert!(
        request.starts_with("GET /greeting HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(
        request.contains(&format!("\r\nHost: 127.0.0.1:{port}\r\n")),
        "{request}"
    );
}

#[test]
fn the_query_reaches_the_server_as_typed() {
    let (port, server) = one_shot_server(HELLO);
    let url = format!("http://127.0.0.1:{port}/search?q=a+b&path=%2Fx&flag&tz=+01:00");
    http(&["get", &url]).assert_success();
    let request = String::from_utf8(server.join().unwrap()).unwrap();
    assert!(
        request.starts_with("GET /search?q=a+b&path=%2Fx&flag&tz=+01:00 HTTP/1.1\r\n"),
        "{request}"
    );
}

#[test]
fn include_prints_the_status_line_and_headers_first() {
    let (port, server) = one_shot_server(HELLO);
    let outcome = http(&["GET", &format!("http://127.0.0.1:{port}/"), "-i"]);
    outcome.assert_success();
    assert_eq!(
        outcome.stdout(),
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Test: yes\r\nContent-Length: 12\r\n\r\n\
         hello\nworld\n"
    );
    server.join().unwrap();
}

#[test]
fn headers_and_a_body_arrive_at_the_server() {
    for runtime in ["blocking", "tokio"] {
        headers_and_a_body_arrive_at_the_server_on(runtime);
    }
}

fn headers_and_a_body_arrive_at_the_server_on(runtime: &str) {
    let (port, server) = one_shot_server(b"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok");
    let outcome = http_on(
        runtime,
        &[
            "POST",
            &format!("http://127.0.0.1:{port}/orders"),
            "-H",
            "X-Api-Key: secret",
            "-H",
            "Content-Type:application/json",
            "-d",
            r#"{"qty":"0.5"}"#,
        ],
    );
    outcome.assert_success();
    assert_eq!(outcome.stdout(), "ok");
    let request = String::from_utf8(server.join().unwrap()).unwrap();
    assert!(
        request.starts_with("POST /orders HTTP/1.1\r\n"),
        "{request}"
    );
    assert!(request.contains("\r\nX-Api-Key: secret\r\n"), "{request}");
    assert!(
        request.contains("\r\nContent-Type: application/json\r\n"),
        "{request}"
    );
    assert!(
        request.ends_with("\r\nContent-Length: 13\r\n\r\n{\"qty\":\"0.5\"}"),
        "{request}"
    );
}

#[test]
fn a_body_from_a_file_arrives_at_the_server() {
    let file = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("http_cli-body-{}.bin", std::process::id()));
    let body: Vec<u8> = (0..=255u8).cycle().take(3000).collect();
    std::fs::write(&file, &body).unwrap();
    let (port, server) = one_shot_server(b"HTTP/1.1 204 No Content\r\n\r\n");
    let data = format!("@{}", file.display());
    let outcome = http(&["PUT", &format!("http://127.0.0.1:{port}/blob"), "-d", &data]);
    std::fs::remove_file(&file).unwrap();
    outcome.assert_success();
    assert_eq!(outcome.stdout(), "");
    let request = server.join().unwrap();
    assert!(request.starts_with(b"PUT /blob HTTP/1.1\r\n"));
    assert!(request.ends_with(&[b"Content-Length: 3000\r\n\r\n".as_slice(), &body].concat()));
}

#[test]
fn a_missing_body_file_fails_with_one_line() {
    http(&[
        "POST",
        "http://127.0.0.1:9/",
        "-d",
        "@/nonexistent/tickwire-body",
    ])
    .assert_fails_naming("/nonexistent/tickwire-body");
}

#[test]
fn a_404_prints_its_body_and_exits_zero() {
    let (port, server) =
        one_shot_server(b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found");
    let outcome = http(&["GET", &format!("http://127.0.0.1:{port}/missing")]);
    outcome.assert_success();
    assert_eq!(outcome.stdout(), "not found");
    server.join().unwrap();
}

#[test]
fn a_refused_connection_fails_with_one_line() {
    // A port that was just free: nothing listens on it.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    http(&["GET", &format!("http://127.0.0.1:{port}/")]).assert_fails_naming("refused");
}

#[test]
fn an_invalid_method_or_header_fails_with_one_line() {
    http(&["FETCH", "http://127.0.0.1:9/"]).assert_fails_naming("FETCH");
    http(&["CONNECT", "http://127.0.0.1:9/"]).assert_fails_naming("CONNECT");
    http(&["GET", "http://127.0.0.1:9/", "-H", "no colon"]).assert_fails_naming("no colon");
    http(&["GET", "ftp://127.0.0.1:9/"]).assert_fails_naming("ftp");
}

#[test]
fn tokio_get_sends_and_prints_exactly_what_blocking_does() {
    let run = |runtime| {
        let (port, server) = one_shot_server(HELLO);
        let url = format!("http://127.0.0.1:{port}/search?q=a+b&tz=+01:00");
        let outcome = http_on(runtime, &["GET", &url, "-i", "-H", "X-Api-Key: secret"]);
        outcome.assert_success();
        let request = String::from_utf8(server.join().unwrap()).unwrap();
        (outcome.stdout().to_owned(), request)
    };
    let (blocking_out, blocking_request) = run("blocking");
    let (tokio_out, tokio_request) = run("tokio");
    assert_eq!(
        tokio_out,
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Test: yes\r\nContent-Length: 12\r\n\r\n\
         hello\nworld\n"
    );
    assert_eq!(tokio_out, blocking_out);
    assert!(
        tokio_request.starts_with("GET /search?q=a+b&tz=+01:00 HTTP/1.1\r\n"),
        "{tokio_request}"
    );
    // The port differs between the two runs; everything else on the wire is the same.
    let without_host = |request: &str| {
        request
            .lines()
            .filter(|line| !line.starts_with("Host: "))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(
        without_host(&tokio_request),
        without_host(&blocking_request)
    );
}

#[test]
fn tokio_failures_are_one_line_as_with_blocking() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    http_on("tokio", &["GET", &format!("http://127.0.0.1:{port}/")]).assert_fails_naming("refused");
    http_on("tokio", &["FETCH", "http://127.0.0.1:9/"]).assert_fails_naming("FETCH");
    http_on("tokio", &["GET", "ftp://127.0.0.1:9/"]).assert_fails_naming("ftp");
}

#[test]
fn resolve_sends_to_the_fixed_address_with_the_name_in_host_on_both_runtimes() {
    for runtime in ["blocking", "tokio"] {
        let (port, server) = one_shot_server(HELLO);
        let resolve = format!("api.test:{port}:127.0.0.1");
        let url = format!("http://api.test:{port}/x");
        let outcome = http_on(runtime, &["GET", &url, "--resolve", &resolve]);
        outcome.assert_success();
        assert_eq!(outcome.stdout(), "hello\nworld\n", "{runtime}");
        let request = String::from_utf8(server.join().unwrap()).unwrap();
        assert!(
            request.contains(&format!("\r\nHost: api.test:{port}\r\n")),
            "{runtime}: {request:?}"
        );
    }
}

#[test]
fn max_time_ends_a_request_the_server_never_answers_on_both_runtimes() {
    for runtime in ["blocking", "tokio"] {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // Accepts and reads, never answers, until the client closes.
        let server = thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut sink = Vec::new();
            let _ = stream.read_to_end(&mut sink);
        });
        let url = format!("http://127.0.0.1:{port}/");
        let started = std::time::Instant::now();
        let outcome = http_on(runtime, &["GET", &url, "--max-time", "0.5"]);
        outcome.assert_fails_naming("within its 500ms deadline");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(500) && took < PATIENCE,
            "{runtime}: ended after {took:?}"
        );
        server.join().unwrap();
    }
}
