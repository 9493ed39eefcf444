//! The environment rules as a table. Each row follows curl's manual pages:
//! `libcurl-env(3)` for which variable a scheme reads (https://curl.se/libcurl/c/libcurl-env.html)
//! and `CURLOPT_NOPROXY(3)` for the exclusion list
//! (https://curl.se/libcurl/c/CURLOPT_NOPROXY.html), `CURLOPT_PROXY(3)` for the proxy
//! string's default scheme and port.

use super::*;

fn lookup<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        vars.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    }
}

/// `(NO_PROXY value, host, goes direct)`.
const NO_PROXY_TABLE: &[(&str, &str, bool)] = &[
    // "a single * character, which matches all hosts"
    ("*", "anything.example", true),
    ("*", "10.1.2.3", true),
    // "matched as either a domain which contains the hostname, or the hostname itself"
    ("example.com", "example.com", true),
    ("example.com", "www.example.com", true),
    ("example.com", "notexample.com", false),
    ("example.com", "example.com.org", false),
    // a leading dot: "matches that entire domain"
    (".example.com", "www.example.com", true),
    (".example.com", "example.com", true),
    (".example.com", "home.example.com", true),
    // case and a trailing dot do not matter
    ("Example.COM", "www.example.com.", true),
    // a list, blanks around entries ignored
    ("localhost, .internal ,example.org", "api.internal", true),
    ("localhost, .internal ,example.org", "example.org", true),
    ("localhost, .internal ,example.org", "example.net", false),
    // IP addresses compared as addresses, CIDR blocks (curl 7.86+)
    ("192.168.0.0/16", "192.168.44.1", true),
    ("192.168.0.0/16", "192.169.0.1", false),
    ("10.0.0.1", "10.0.0.1", true),
    ("10.0.0.1", "10.0.0.2", false),
    // IPv6 "without enclosing brackets"; the host may come bracketed from a URL
    ("::1,fe80::/10", "[::1]", true),
    ("::1,fe80::/10", "fe80::1234", true),
    ("::1,fe80::/10", "2001:db8::1", false),
    // a name is never resolved to match an IP entry, nor an IP a name
    ("127.0.0.1", "localhost", false),
    ("localhost", "127.0.0.1", false),
    // an entry with a port is not curl syntax: it matches no host
    ("example.com:8080", "example.com", false),
    // `*` inside a list is not the wildcard
    ("example.org,*", "example.com", false),
    // an empty list excludes nothing
    ("", "example.com", false),
];

#[test]
fn no_proxy_follows_curls_rules() {
    for (list, host, direct) in NO_PROXY_TABLE {
        assert_eq!(
            NoProxy::parse(list).matches(host),
            *direct,
            "NO_PROXY={list:?} host={host:?}"
        );
    }
}

/// `(variables, scheme, host, the proxy's host or None for direct)`.
type EnvRow = (
    &'static [(&'static str, &'static str)],
    &'static str,
    &'static str,
    Option<&'static str>,
);

const ENV_TABLE: &[EnvRow] = &[
    // "except the http_proxy one which is only used lowercase"
    (&[("HTTP_PROXY", "upper:3128")], "http", "example.com", None),
    (
        &[("http_proxy", "lower:3128")],
        "http",
        "example.com",
        Some("lower"),
    ),
    // the others are read in both cases, lowercase first
    (
        &[("HTTPS_PROXY", "upper:3128")],
        "https",
        "example.com",
        Some("upper"),
    ),
    (
        &[("HTTPS_PROXY", "upper:3128"), ("https_proxy", "lower:3128")],
        "https",
        "example.com",
        Some("lower"),
    ),
    // the scheme's variable wins over ALL_PROXY; ALL_PROXY when it is unset
    (
        &[("ALL_PROXY", "all:1080"), ("https_proxy", "tls:3128")],
        "https",
        "example.com",
        Some("tls"),
    ),
    (
        &[("ALL_PROXY", "all:1080")],
        "http",
        "example.com",
        Some("all"),
    ),
    (
        &[("all_proxy", "low:1"), ("ALL_PROXY", "up:1")],
        "wss",
        "h",
        Some("low"),
    ),
    // ws and wss: their own variable first, then the http / https one
    (&[("http_proxy", "web:1")], "ws", "example.com", Some("web")),
    (
        &[("ws_proxy", "ws:1"), ("http_proxy", "web:1")],
        "ws",
        "h",
        Some("ws"),
    ),
    (
        &[("HTTPS_PROXY", "tls:1")],
        "wss",
        "example.com",
        Some("tls"),
    ),
    (
        &[("WSS_PROXY", "wss:1"), ("https_proxy", "tls:1")],
        "wss",
        "h",
        Some("wss"),
    ),
    // NO_PROXY first, lowercase first
    (
        &[("https_proxy", "p:1"), ("NO_PROXY", ".example.com")],
        "https",
        "api.example.com",
        None,
    ),
    (
        &[
            ("https_proxy", "p:1"),
            ("no_proxy", "other.org"),
            ("NO_PROXY", "*"),
        ],
        "https",
        "api.example.com",
        Some("p"),
    ),
    // empty counts as unset
    (
        &[("https_proxy", ""), ("ALL_PROXY", "all:1")],
        "https",
        "h",
        Some("all"),
    ),
    (&[], "https", "example.com", None),
];

#[test]
fn the_proxy_variable_follows_curls_rules() {
    for (vars, scheme, host, expected) in ENV_TABLE {
        let chosen = proxy_from_env(scheme, host, lookup(vars)).unwrap();
        assert_eq!(
            chosen.as_ref().map(|proxy| proxy.host.as_str()),
            *expected,
            "{vars:?} {scheme}://{host}"
        );
    }
}

#[test]
fn proxy_strings_take_curls_defaults() {
    let bare = ProxyUrl::parse("proxy.local").unwrap();
    assert_eq!((bare.kind, bare.port), (ProxyKind::Http, 1080));
    let explicit_80 = ProxyUrl::parse("http://proxy.local:80").unwrap();
    assert_eq!(explicit_80.port, 80);
    let tls = ProxyUrl::parse("https://proxy.local").unwrap();
    assert_eq!((tls.kind, tls.port), (ProxyKind::Https, 443));
    let socks = ProxyUrl::parse("socks5h://us%40r:p%3Ass@[::1]:9050").unwrap();
    assert_eq!(socks.kind, ProxyKind::Socks5h);
    assert_eq!((socks.host.as_str(), socks.port), ("::1", 9050));
    assert_eq!(socks.credentials, Some(Credentials::new("us@r", "p:ss")));
    assert_eq!(ProxyUrl::parse("socks5://h").unwrap().port, 1080);
    assert_eq!(
        ProxyUrl::parse("socks4://h:1"),
        Err(ProxyUrlError::UnsupportedScheme("socks4".into()))
    );
    assert_eq!(ProxyUrl::parse("http://"), Err(ProxyUrlError::Invalid));
}
