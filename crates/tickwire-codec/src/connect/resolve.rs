//! Address order: the RFC 8305 interleaving of resolved addresses and fixed addresses for a
//! host in the form of curl's `--resolve HOST:PORT:ADDR[,ADDR...]`.

use core::fmt;
use std::net::{IpAddr, SocketAddr};

/// Orders resolved addresses for Happy Eyeballs (RFC 8305 section 4): the family of the
/// first address first, `first_family_count` of it (at least one), then one of the other
/// family and one of the first in turn; when one family runs out the rest of the other
/// follows. Order within a family is kept; an address given twice is kept once (its first
/// place), so a plan never tries one address twice.
pub fn interleave(addrs: &[SocketAddr], first_family_count: usize) -> Vec<SocketAddr> {
    let unique = dedup(addrs);
    let Some(first) = unique.first() else {
        return unique;
    };
    let first_v6 = first.is_ipv6();
    let (preferred, other): (Vec<SocketAddr>, Vec<SocketAddr>) =
        unique.iter().partition(|addr| addr.is_ipv6() == first_v6);
    let mut out = Vec::with_capacity(unique.len());
    let lead = first_family_count.max(1).min(preferred.len());
    out.extend_from_slice(&preferred[..lead]);
    let mut preferred = preferred[lead..].iter();
    let mut other = other.iter();
    loop {
        match (other.next(), preferred.next()) {
            (None, None) => return out,
            (a, b) => out.extend(a.into_iter().chain(b).copied()),
        }
    }
}

/// The addresses in their order, each once.
pub(super) fn dedup(addrs: &[SocketAddr]) -> Vec<SocketAddr> {
    let mut out: Vec<SocketAddr> = Vec::with_capacity(addrs.len());
    for addr in addrs {
        if !out.contains(addr) {
            out.push(*addr);
        }
    }
    out
}

/// Fixed addresses for one host and port, as curl's `--resolve HOST:PORT:ADDR[,ADDR...]`
/// gives them: the driver skips the resolver for a matching host and port and tries the
/// addresses in the order given ([`ConnectPlan::in_order`](super::ConnectPlan::in_order)).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ResolveEntry {
    /// The host name, lowercased; `*` matches every host (curl 7.80+).
    pub host: String,
    /// The port it applies to.
    pub port: u16,
    /// The addresses, in the order to try them.
    pub addrs: Vec<SocketAddr>,
}

/// Why a `--resolve` entry was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResolveError {
    /// Not `HOST:PORT:ADDR[,ADDR...]`: a part is missing or empty.
    Format,
    /// The port is not a number from 0 to 65535.
    Port,
    /// An address is not an IPv4 address or an IPv6 one (bracketed or not).
    Address(String),
}

impl fmt::Display for ResolveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Format => f.write_str("expected HOST:PORT:ADDR[,ADDR...]"),
            Self::Port => f.write_str("the port is not a number from 0 to 65535"),
            Self::Address(addr) => write!(f, "{addr:?} is not an IP address"),
        }
    }
}

impl std::error::Error for ResolveError {}

impl ResolveEntry {
    /// Parses `[+]HOST:PORT:ADDR[,ADDR...]`. A leading `+` (curl's "entries time out")
    /// is accepted and means nothing here: entries never expire. IPv6 addresses may be
    /// bracketed (`[::1]`) or not (`::1`: everything after the second colon is the list).
    pub fn parse(text: &str) -> Result<Self, ResolveError> {
        let text = text.strip_prefix('+').unwrap_or(text);
        let (host, rest) = text.split_once(':').ok_or(ResolveError::Format)?;
        let (port, list) = rest.split_once(':').ok_or(ResolveError::Format)?;
        if host.is_empty() || list.is_empty() {
            return Err(ResolveError::Format);
        }
        let port = port.parse::<u16>().map_err(|_| ResolveError::Port)?;
        let addrs = list
            .split(',')
            .map(|item| {
                let item = item.trim();
                let bare = item
                    .strip_prefix('[')
                    .and_then(|inner| inner.strip_suffix(']'))
                    .unwrap_or(item);
                bare.parse::<IpAddr>()
                    .map(|ip| SocketAddr::new(ip, port))
                    .map_err(|_| ResolveError::Address(item.to_owned()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self {
            host: host.to_ascii_lowercase(),
            port,
            addrs,
        })
    }

    /// The entry's addresses when it applies to `host` and `port` (host compared without
    /// case; `*` applies to every host).
    pub fn addresses_for(&self, host: &str, port: u16) -> Option<&[SocketAddr]> {
        let host_matches = self.host == "*" || self.host.eq_ignore_ascii_case(host);
        (host_matches && self.port == port).then_some(&self.addrs[..])
    }
}
