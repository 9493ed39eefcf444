//! The proxy a URL takes from the environment, read the way curl reads it: the rules are
//! on [`proxy_from_env`].

use core::fmt;
use std::net::IpAddr;

use super::proxy::Credentials;

/// The kind of proxy a proxy URL's scheme names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyKind {
    /// `http://` (or no scheme): HTTP CONNECT over plain TCP.
    Http,
    /// `https://`: HTTP CONNECT over TLS to the proxy.
    Https,
    /// `socks5://`: SOCKS5, the name resolved locally.
    Socks5,
    /// `socks5h://`: SOCKS5, the name resolved by the proxy.
    Socks5h,
}

/// A parsed proxy string, as `-x` / `ALL_PROXY` take it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ProxyUrl {
    /// The kind of proxy.
    pub kind: ProxyKind,
    /// Its host (an IPv6 address without brackets).
    pub host: String,
    /// Its port.
    pub port: u16,
    /// The user name and password in the URL, percent-decoded.
    pub credentials: Option<Credentials>,
}

/// Why a proxy string was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ProxyUrlError {
    /// The string is not a URL with a host.
    Invalid,
    /// A scheme this crate has no handshake for (`socks4://`, ...).
    UnsupportedScheme(String),
}

impl fmt::Display for ProxyUrlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid => f.write_str("the proxy is not a URL with a host"),
            Self::UnsupportedScheme(scheme) => write!(f, "unsupported proxy scheme {scheme:?}"),
        }
    }
}

impl std::error::Error for ProxyUrlError {}

impl ProxyUrl {
    /// Parses `[scheme://][user[:password]@]host[:port]`.
    pub fn parse(text: &str) -> Result<Self, ProxyUrlError> {
        let text = text.trim();
        let with_scheme = if text.contains("://") {
            text.to_owned()
        } else {
            format!("http://{text}")
        };
        let url = url::Url::parse(&with_scheme).map_err(|_| ProxyUrlError::Invalid)?;
        let kind = match url.scheme() {
            "http" => ProxyKind::Http,
            "https" => ProxyKind::Https,
            "socks5" => ProxyKind::Socks5,
            "socks5h" => ProxyKind::Socks5h,
            other => return Err(ProxyUrlError::UnsupportedScheme(other.to_owned())),
        };
        let host = match url.host() {
            Some(url::Host::Ipv6(ip)) => ip.to_string(),
            Some(host) => host.to_string(),
            None => return Err(ProxyUrlError::Invalid),
        };
        let fallback = if kind == ProxyKind::Https { 443 } else { 1080 };
        // `url` drops a port equal to the scheme's own default (80 for http://): an
        // explicit `:80` is still the port asked for.
        let port = url
            .port()
            .unwrap_or_else(|| match url.port_or_known_default() {
                Some(default) if authority(&with_scheme).ends_with(&format!(":{default}")) => {
                    default
                }
                _ => fallback,
            });
        let credentials = (!url.username().is_empty()).then(|| {
            Credentials::new(
                &percent_decode(url.username()),
                &percent_decode(url.password().unwrap_or("")),
            )
        });
        Ok(Self {
            kind,
            host,
            port,
            credentials,
        })
    }
}

/// A `NO_PROXY` list, parsed once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoProxy {
    all: bool,
    entries: Vec<Entry>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    Name(String),
    Block(IpAddr, u8),
}

impl NoProxy {
    /// Parses the list (rule 1 of [`proxy_from_env`]).
    pub fn parse(list: &str) -> Self {
        let all = list.trim() == "*";
        let entries = list
            .split(',')
            .map(|entry| entry.trim_matches([' ', '\t']))
            .filter(|entry| !entry.is_empty())
            .map(|entry| {
                let (addr, bits) = match entry.split_once('/') {
                    Some((addr, bits)) => (addr, bits.parse::<u8>().ok()),
                    None => (entry, None),
                };
                match addr.parse::<IpAddr>() {
                    Ok(ip) => {
                        let max = if ip.is_ipv4() { 32 } else { 128 };
                        Entry::Block(ip, bits.unwrap_or(max).min(max))
                    }
                    Err(_) => Entry::Name(normalise(entry.strip_prefix('.').unwrap_or(entry))),
                }
            })
            .collect();
        Self { all, entries }
    }

    /// Whether `host` (a name, or an IP address, bracketed or not) goes direct.
    pub fn matches(&self, host: &str) -> bool {
        if self.all {
            return true;
        }
        let bare = host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(host);
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return self.entries.iter().any(|entry| match entry {
                Entry::Block(block, bits) => in_block(ip, *block, *bits),
                Entry::Name(_) => false,
            });
        }
        let host = normalise(host);
        self.entries.iter().any(|entry| match entry {
            Entry::Name(name) => {
                host == *name
                    || (host.len() > name.len()
                        && host.ends_with(name.as_str())
                        && host.as_bytes()[host.len() - name.len() - 1] == b'.')
            }
            Entry::Block(..) => false,
        })
    }
}

/// The proxy for a request to `scheme://host` (`http`, `https`, `ws`, `wss`), from the
/// variables `env` returns; `Ok(None)`: connect directly. `env` is
/// `|name| std::env::var(name).ok()` in production.
///
/// The rules, from curl's `libcurl-env(3)` (`[scheme]_proxy`, `ALL_PROXY`, `NO_PROXY`),
/// `CURLOPT_NOPROXY(3)` and `CURLOPT_PROXY(3)` (curl 8.x manual pages):
///
/// 1. `no_proxy`, else `NO_PROXY`: a comma-separated list (blanks around entries ignored).
///    The value `*` alone matches every host. An entry matches the host itself or any
///    name in its domain (`example.com` matches `www.example.com`, not `notexample.com`);
///    a leading dot is dropped (`.example.com` matches `example.com` and every name under
///    it, as curl strips the dot before comparing). Names compare without case
///    and without a trailing dot. An IP host matches an entry that is the same address or
///    a CIDR block holding it (`192.168.0.0/16`, `fe80::/10`, IPv6 without brackets); a
///    name never matches an IP entry (nothing is resolved). The target's port plays no
///    part (`example.com` matches `example.com:80`); an entry with a port is a name that
///    matches no host. An empty list excludes nothing.
/// 2. The scheme's variable, lowercase first: `http_proxy` (lowercase only: curl never
///    reads `HTTP_PROXY`, which a CGI server could set from a request's `Proxy:` header),
///    `https_proxy` / `HTTPS_PROXY`; `ws_proxy` / `WS_PROXY` then `http_proxy` for `ws`,
///    `wss_proxy` / `WSS_PROXY` then the https pair for `wss`.
/// 3. Else `all_proxy` / `ALL_PROXY`.
///
/// A variable set to the empty string counts as unset. A proxy string without a scheme is
/// an HTTP proxy; without a port it is port 1080, 443 for an `https://` proxy.
pub fn proxy_from_env(
    scheme: &str,
    host: &str,
    env: impl Fn(&str) -> Option<String>,
) -> Result<Option<ProxyUrl>, ProxyUrlError> {
    let read = |name: &str| env(name).filter(|value| !value.is_empty());
    if let Some(list) = read("no_proxy").or_else(|| read("NO_PROXY"))
        && NoProxy::parse(&list).matches(host)
    {
        return Ok(None);
    }
    let names: &[&str] = match scheme.to_ascii_lowercase().as_str() {
        "http" => &["http_proxy"],
        "https" => &["https_proxy", "HTTPS_PROXY"],
        "ws" => &["ws_proxy", "WS_PROXY", "http_proxy"],
        "wss" => &["wss_proxy", "WSS_PROXY", "https_proxy", "HTTPS_PROXY"],
        _ => &[],
    };
    let chosen = names
        .iter()
        .chain(&["all_proxy", "ALL_PROXY"])
        .find_map(|name| read(name));
    chosen.map(|text| ProxyUrl::parse(&text)).transpose()
}

/// Lowercase, without a trailing dot.
fn normalise(name: &str) -> String {
    name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase()
}

fn in_block(ip: IpAddr, block: IpAddr, bits: u8) -> bool {
    match (ip, block) {
        (IpAddr::V4(ip), IpAddr::V4(block)) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            u32::from(ip) & mask == u32::from(block) & mask
        }
        (IpAddr::V6(ip), IpAddr::V6(block)) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            u128::from(ip) & mask == u128::from(block) & mask
        }
        _ => false,
    }
}

/// The authority of `scheme://[userinfo@]host[:port]/...`, without the user info.
fn authority(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..end];
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
}

/// `%XX` sequences decoded (lossy UTF-8); others kept as they are.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = bytes
            .get(at + 1..at + 3)
            .filter(|pair| pair.iter().all(u8::is_ascii_hexdigit))
            .and_then(|pair| core::str::from_utf8(pair).ok())
            .and_then(|pair| u8::from_str_radix(pair, 16).ok());
        match (bytes[at], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                at += 3;
            }
            (byte, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}
