//! [`Resolve`], the resolver hook, and [`Resolver`], the one a client's [`ConnectOptions`]
//! hold (the system's unless set).

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;

use super::ConnectOptions;

/// Where a host's addresses come from: implement it to resolve through your own cache,
/// service discovery or a DNS client of your choosing, and set it with
/// [`ConnectOptions::with_resolver`].
///
/// It is called for a name only: an IP literal, or a host and port that
/// [`ConnectOptions::resolve`] names, never reaches it. It is called where it may block:
/// the blocking transport calls it on a thread of its own, the tokio transport on the
/// runtime's blocking pool. Either way the connect waits for it at most the connect's
/// [total deadline](ConnectOptions::total_timeout) (a resolver still running then fails the
/// connect as `TimedOut`; its answer, when it comes, is dropped).
///
/// The addresses are tried as Happy Eyeballs orders resolved ones: the families
/// interleaved, each family's addresses in the order returned. No address is a connect
/// that fails as `NotFound`.
///
/// Closures `Fn(&str, u16) -> io::Result<Vec<SocketAddr>>` implement it.
pub trait Resolve: Send + Sync + 'static {
    /// The addresses of `host` at `port`.
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

impl<F> Resolve for F
where
    F: Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync + 'static,
{
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        self(host, port)
    }
}

/// The system resolver (`getaddrinfo(3)`), the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok((host, port).to_socket_addrs()?.collect())
    }
}

/// A shared [`Resolve`]: what [`ConnectOptions::resolver`] holds.
#[derive(Clone)]
pub struct Resolver(Arc<dyn Resolve>);

impl Resolver {
    /// `resolver`, shared.
    pub fn new(resolver: impl Resolve) -> Self {
        Self(Arc::new(resolver))
    }

    /// The system resolver.
    pub fn system() -> Self {
        Self::new(SystemResolver)
    }

    /// The addresses of `host` at `port` (blocking).
    pub fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        self.0.resolve(host, port)
    }
}

impl Default for Resolver {
    fn default() -> Self {
        Self::system()
    }
}

impl fmt::Debug for Resolver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resolver(..)")
    }
}

impl ConnectOptions {
    /// Where `host:port` is without asking the resolver: the fixed addresses an entry of
    /// [`resolve`](Self::resolve) names (`true`: tried in their order), else the host itself
    /// when it is an IP address (an IPv6 literal without brackets). `None`: the
    /// [resolver](Self::resolver) must be asked.
    pub fn known_addresses(&self, host: &str, port: u16) -> Option<(Vec<SocketAddr>, bool)> {
        if let Some(fixed) = self.fixed_addresses(host, port) {
            return Some((fixed.to_vec(), true));
        }
        let ip = host.parse::<IpAddr>().ok()?;
        Some((vec![SocketAddr::new(ip, port)], false))
    }
}
