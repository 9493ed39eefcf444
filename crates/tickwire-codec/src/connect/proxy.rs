//! What both proxy handshakes share: the target, the credentials, the progress they report
//! and the bytes they owe the proxy.

use core::fmt;
use std::net::IpAddr;

/// Where the tunnel goes: a host name or an IP address (as text) and a port. Through
/// SOCKS5 a name is sent for the proxy to resolve (`socks5h`); to resolve locally
/// (`socks5`), pass the resolved address as the host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// A host name or an IP address; an IPv6 address without brackets.
    pub host: String,
    /// The port.
    pub port: u16,
}

impl Target {
    /// A target from a host and a port. An IPv6 host may come bracketed, as in a URL.
    pub fn new(host: &str, port: u16) -> Self {
        let host = host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .unwrap_or(host);
        Self {
            host: host.to_owned(),
            port,
        }
    }

    /// The host as an IP address, when it is one.
    pub fn ip(&self) -> Option<IpAddr> {
        self.host.parse().ok()
    }

    /// Whether the host is non-empty and holds no byte a request line or a SOCKS request
    /// could be confused by (controls, space, DEL).
    pub(super) fn is_valid(&self) -> bool {
        !self.host.is_empty() && self.host.bytes().all(|b| b > 0x20 && b != 0x7f)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.ip() {
            Some(IpAddr::V6(ip)) => write!(f, "[{ip}]:{}", self.port),
            _ => write!(f, "{}:{}", self.host, self.port),
        }
    }
}

/// A user name and password for the proxy: `Proxy-Authorization: Basic` (RFC 7617) for
/// HTTP CONNECT, RFC 1929 for SOCKS5.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// The user name.
    pub username: String,
    /// The password.
    pub password: String,
}

impl Credentials {
    /// Credentials from a user name and a password.
    pub fn new(username: &str, password: &str) -> Self {
        Self {
            username: username.to_owned(),
            password: password.to_owned(),
        }
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

/// How far a proxy handshake got after the bytes it was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Write what it owes (`pending_write`), then read and give it more.
    NeedMore,
    /// The tunnel is up: the bytes that followed the proxy's answer
    /// (`tunnel_bytes`) are the first bytes from the target.
    Tunnel,
}

/// Bytes owed to the proxy, written out in any number of pieces.
#[derive(Debug, Default)]
pub(super) struct Outbox {
    bytes: Vec<u8>,
    sent: usize,
}

impl Outbox {
    pub(super) fn push(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
    }

    pub(super) fn pending(&self) -> &[u8] {
        &self.bytes[self.sent..]
    }

    pub(super) fn written(&mut self, n: usize) {
        self.sent = self.sent.saturating_add(n).min(self.bytes.len());
        if self.sent == self.bytes.len() {
            self.bytes.clear();
            self.sent = 0;
        }
    }
}

/// Moves bytes from `input` into `held` until it holds `want`; whether it does.
pub(super) fn fill(held: &mut Vec<u8>, want: usize, input: &mut &[u8]) -> bool {
    let take = want.saturating_sub(held.len()).min(input.len());
    held.extend_from_slice(&input[..take]);
    *input = &input[take..];
    held.len() >= want
}
