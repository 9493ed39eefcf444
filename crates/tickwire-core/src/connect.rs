//! [`ConnectOptions`]: how every client of every transport opens its TCP connection. One type,
//! taken by the WebSocket client, the HTTP clients and the packet client alike (the feeds
//! take the WebSocket client's), so each option is documented here once.
//!
//! The decisions are the codec's [`ConnectPlan`] (Happy Eyeballs v2, RFC 8305): addresses of
//! both families interleaved, the next attempt started [`stagger`](ConnectOptions::stagger)
//! after the last unless the last failed first, the first to connect wins and the others are
//! closed, each attempt bounded by the client's connect timeout and the whole plan by
//! [`total_timeout`](ConnectOptions::total_timeout). A plan that fails gives a
//! [`ConnectError`] with every address's reason, carried inside the `io::Error` the client
//! returns (`io_error.get_ref()` downcasts to it).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use tickwire_codec::connect::{ConnectConfig, ConnectError, ConnectPlan, Reason, ResolveEntry};

/// How a client connects: the Happy Eyeballs stagger and total deadline, fixed addresses for
/// a host, the local address or interface to connect from. The default: a 250 ms stagger, a 30 s total
/// deadline, the system resolver, the system's choice of local address.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConnectOptions {
    /// The wait between the start of one attempt and the next (RFC 8305's Connection
    /// Attempt Delay), clamped to 100 ms ..= 2 s. Default 250 ms.
    pub stagger: Duration,
    /// How long the whole connect (every attempt) may take. Default 30 s.
    pub total_timeout: Duration,
    /// Fixed addresses for a host and port, as curl's `--resolve HOST:PORT:ADDR[,ADDR...]`:
    /// the first entry that matches replaces the resolver, and its addresses are tried in
    /// the order given.
    pub resolve: Vec<ResolveEntry>,
    /// The local address to connect from (its family must match the remote address's: an
    /// address of the other family fails that attempt as `AddrNotAvailable`). `None`: the
    /// system chooses.
    pub local_address: Option<IpAddr>,
    /// The network interface to connect through (`SO_BINDTODEVICE`, Linux; needs
    /// `CAP_NET_RAW` unless the process owns the interface's namespace). Elsewhere an
    /// attempt with it set fails as `Unsupported`. `None`: the routing table chooses.
    pub device: Option<String>,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        let plan = ConnectConfig::default();
        Self {
            stagger: plan.stagger,
            total_timeout: plan.total_timeout,
            resolve: Vec::new(),
            local_address: None,
            device: None,
        }
    }
}

impl ConnectOptions {
    /// The defaults above.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the [stagger](Self::stagger).
    pub fn with_stagger(mut self, stagger: Duration) -> Self {
        self.stagger = stagger;
        self
    }

    /// Sets the [total deadline](Self::total_timeout).
    pub fn with_total_timeout(mut self, timeout: Duration) -> Self {
        self.total_timeout = timeout;
        self
    }

    /// Adds fixed addresses for a host and port (see [`resolve`](Self::resolve));
    /// [`ResolveEntry::parse`] reads curl's `HOST:PORT:ADDR[,ADDR...]`.
    pub fn with_resolve(mut self, entry: ResolveEntry) -> Self {
        self.resolve.push(entry);
        self
    }

    /// Sets the [local address](Self::local_address).
    pub fn with_local_address(mut self, address: IpAddr) -> Self {
        self.local_address = Some(address);
        self
    }

    /// Sets the [interface](Self::device) to connect through.
    pub fn with_device(mut self, name: impl Into<String>) -> Self {
        self.device = Some(name.into());
        self
    }

    /// The fixed addresses for `host` and `port`, if an entry names them.
    pub fn fixed_addresses(&self, host: &str, port: u16) -> Option<&[SocketAddr]> {
        self.resolve
            .iter()
            .find_map(|entry| entry.addresses_for(host, port))
    }

    /// The plan for `addrs`, started at `now`: `fixed` addresses in their order, resolved
    /// ones interleaved by family. `attempt_timeout` is the client's connect timeout
    /// (`None`: bounded by the total deadline only).
    pub fn plan(
        &self,
        addrs: &[SocketAddr],
        fixed: bool,
        attempt_timeout: Option<Duration>,
        now: std::time::Instant,
    ) -> ConnectPlan {
        let config = ConnectConfig::new()
            .with_stagger(self.stagger)
            .with_total_timeout(self.total_timeout)
            .with_attempt_timeout(attempt_timeout.unwrap_or(self.total_timeout));
        if fixed {
            ConnectPlan::in_order(addrs, config, now)
        } else {
            ConnectPlan::new(addrs, config, now)
        }
    }
}

/// The `io::Error` a failed plan gives: of the kind of the last address's reason (a refused
/// connect stays `ConnectionRefused`, a timed-out one `TimedOut`), carrying the
/// [`ConnectError`] with every address's reason.
pub fn connect_failed(error: ConnectError) -> io::Error {
    let kind = error
        .failures
        .iter()
        .rev()
        .map(|(_, reason)| *reason)
        .find(|reason| *reason != Reason::NotTried)
        .map_or(io::ErrorKind::TimedOut, reason_kind);
    let kind = if error.failures.is_empty() {
        io::ErrorKind::NotFound
    } else {
        kind
    };
    io::Error::new(kind, error)
}

/// The `io::ErrorKind` of one attempt's reason.
fn reason_kind(reason: Reason) -> io::ErrorKind {
    match reason {
        Reason::Refused => io::ErrorKind::ConnectionRefused,
        Reason::Unreachable => io::ErrorKind::HostUnreachable,
        Reason::TimedOut | Reason::NotTried => io::ErrorKind::TimedOut,
        Reason::Reset => io::ErrorKind::ConnectionReset,
        Reason::Other(kind) => kind,
        _ => io::ErrorKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_failed_plan_is_an_io_error_of_its_last_tried_reason_with_every_address_inside() {
        let error = ConnectError {
            failures: vec![
                (addr("127.0.0.1:1"), Reason::TimedOut),
                (addr("127.0.0.2:1"), Reason::Refused),
                (addr("127.0.0.3:1"), Reason::NotTried),
            ],
        };
        let io = connect_failed(error.clone());
        assert_eq!(io.kind(), io::ErrorKind::ConnectionRefused);
        let inner = io.get_ref().and_then(|e| e.downcast_ref::<ConnectError>());
        assert_eq!(inner, Some(&error));
        let timed_out = ConnectError {
            failures: vec![(addr("127.0.0.1:1"), Reason::NotTried)],
        };
        assert_eq!(connect_failed(timed_out).kind(), io::ErrorKind::TimedOut);
        let none = ConnectError { failures: vec![] };
        assert_eq!(connect_failed(none).kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn fixed_addresses_match_their_host_and_port_only() {
        let options = ConnectOptions::new()
            .with_resolve(ResolveEntry::parse("feed.example:443:127.0.0.2,127.0.0.1").unwrap());
        assert_eq!(
            options.fixed_addresses("feed.example", 443),
            Some(&[addr("127.0.0.2:443"), addr("127.0.0.1:443")][..])
        );
        assert_eq!(options.fixed_addresses("feed.example", 80), None);
        assert_eq!(options.fixed_addresses("other.example", 443), None);
    }

    #[test]
    fn the_client_connect_timeout_bounds_each_attempt_and_the_total_the_plan() {
        let now = std::time::Instant::now();
        let options = ConnectOptions::new().with_total_timeout(Duration::from_secs(3));
        let addrs = [addr("127.0.0.1:1")];
        let mut plan = options.plan(&addrs, true, Some(Duration::from_secs(1)), now);
        assert!(plan.poll_action(now).is_some());
        assert_eq!(plan.poll_timeout(), Some(now + Duration::from_secs(1)));
        let mut unbounded = options.plan(&addrs, true, None, now);
        assert!(unbounded.poll_action(now).is_some());
        assert_eq!(unbounded.poll_timeout(), Some(now + Duration::from_secs(3)));
    }
}
