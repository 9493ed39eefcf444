//! `connect --resolve`, `--connect-timeout`, `--max-time` and `--proxy`, as curl names them:
//! a host name mapped to fixed addresses tried in order (a refused first address costs
//! nothing), a connect that a black hole holds ends at the timeout with one line naming the
//! address, a session ends at the maximum time, on both runtimes; an `https://` proxy is
//! trusted by `--proxy-cacert`.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use tickwire_test_support::connect::black_hole_beside;

use crate::echo::{Server, args, assert_fails_naming, connect};

const LINES: &str = "first\nsecond\n";

/// The port of a `Server`'s `ws://127.0.0.1:PORT/` URL.
fn port_of(server: &Server) -> u16 {
    let url = server.url();
    let port = url
        .trim_end_matches('/')
        .rsplit(':')
        .next()
        .unwrap()
        .to_owned();
    port.parse().unwrap()
}

#[test]
fn a_fixed_address_list_reaches_the_server_past_a_refused_first_address() {
    let server = Server::start_with(&[]);
    let port = port_of(&server);
    for runtime in ["blocking", "tokio"] {
        let resolve = format!("echo.test:{port}:127.0.0.2,127.0.0.1");
        let url = format!("ws://echo.test:{port}/");
        let outcome = connect(
            &args(&[&url, "--runtime", runtime, "--resolve", &resolve]),
            LINES,
        );
        assert!(outcome.status.success(), "{runtime}: {}", outcome.stderr);
        assert_eq!(outcome.stdout, LINES, "{runtime}");
    }
}

#[test]
fn connect_timeout_ends_a_connect_that_a_black_hole_holds() {
    let (hole, _live) =
        black_hole_beside(Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 1)).unwrap();
    let port = hole.addr.port();
    for runtime in ["blocking", "tokio"] {
        let resolve = format!("hole.test:{port}:127.0.0.2");
        let url = format!("ws://hole.test:{port}/");
        let started = Instant::now();
        let outcome = connect(
            &args(&[
                &url,
                "--runtime",
                runtime,
                "--resolve",
                &resolve,
                "--connect-timeout",
                "0.4",
            ]),
            "",
        );
        assert_fails_naming(&outcome, &format!("127.0.0.2:{port} timed out"));
        assert!(
            started.elapsed() >= Duration::from_millis(400),
            "{runtime}: failed after {:?}, before the timeout",
            started.elapsed()
        );
    }
}

#[test]
fn max_time_ends_a_session_that_never_closes_and_a_connect_a_black_hole_holds() {
    // The echo server never closes: `--echo` runs until the time is over.
    let server = Server::start_with(&[]);
    let (hole, _live) =
        black_hole_beside(Ipv4Addr::new(127, 0, 0, 2), Ipv4Addr::new(127, 0, 0, 1)).unwrap();
    let hole_url = format!("ws://{}/", hole.addr);
    for runtime in ["blocking", "tokio"] {
        for url in [server.url(), hole_url.clone()] {
            let started = Instant::now();
            let outcome = connect(
                &args(&[&url, "--runtime", runtime, "--echo", "--max-time", "0.6"]),
                "",
            );
            let took = started.elapsed();
            let cause = if url == hole_url {
                "timed out"
            } else {
                "operation timed out after 600 ms"
            };
            assert_fails_naming(&outcome, cause);
            assert!(
                took >= Duration::from_millis(600) && took < Duration::from_secs(8),
                "{runtime} {url}: ended after {took:?}"
            );
        }
    }
}

#[test]
fn a_malformed_resolve_or_timeout_is_refused_before_connecting() {
    for (flag, bad) in [
        ("--resolve", "no-port-here"),
        ("--resolve", "host:80:not-an-address"),
        ("--connect-timeout", "0"),
        ("--connect-timeout", "soon"),
        ("--max-time", "later"),
    ] {
        let outcome = connect(&args(&["ws://127.0.0.1:9/", flag, bad]), "");
        assert!(!outcome.status.success(), "{flag} {bad} was accepted");
        assert!(
            outcome.stderr.contains(flag),
            "{flag} {bad}: {:?}",
            outcome.stderr
        );
    }
}

#[test]
fn connect_goes_through_a_proxy_given_with_its_credentials_on_both_runtimes() {
    use tickwire_test_support::proxies::Proxy;
    let server = Server::start_with(&[]);
    for proxy in [Proxy::tinyproxy(true), Proxy::microsocks(true)] {
        for runtime in ["blocking", "tokio"] {
            let outcome = connect(
                &args(&[&server.url(), "--runtime", runtime, "--proxy", &proxy.url()]),
                LINES,
            );
            assert!(
                outcome.status.success(),
                "{runtime} {}: {}",
                proxy.url(),
                outcome.stderr
            );
            assert_eq!(outcome.stdout, LINES, "{runtime}");
            // Wrong credentials: the proxy's refusal, on one line.
            let wrong = proxy.url_with("mallory", "nope");
            let outcome = connect(
                &args(&[&server.url(), "--runtime", runtime, "--proxy", &wrong]),
                "",
            );
            assert_fails_naming(&outcome, "proxy");
        }
    }
}

#[test]
fn connect_goes_through_an_https_proxy_it_trusts_by_proxy_cacert_on_both_runtimes() {
    use crate::echo::Pki;
    use tickwire_test_support::proxies::Proxy;
    let pki = Pki::new("https-proxy");
    let read = |name: &str| std::fs::read_to_string(pki.file(name)).unwrap();
    let proxy = Proxy::tinyproxy_tls(true, &read("server.pem"), &read("server.key"));
    let server = Server::start_with(&[]);
    let ca = pki.file("ca.pem");
    for runtime in ["blocking", "tokio"] {
        let through = [&server.url(), "--runtime", runtime, "--proxy", &proxy.url()];
        let mut trusting = through.to_vec();
        trusting.extend(["--proxy-cacert", &ca]);
        let outcome = connect(&args(&trusting), LINES);
        assert!(outcome.status.success(), "{runtime}: {}", outcome.stderr);
        assert_eq!(outcome.stdout, LINES, "{runtime}");
        // Without the proxy's CA the Mozilla roots do not vouch for it.
        let outcome = connect(&args(&through), "");
        assert_fails_naming(&outcome, "certificate");
    }
}
