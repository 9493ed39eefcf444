//! [`Resolve`], the resolver hook, and [`Resolver`], the one a client's [`ConnectOptions`]
//! hold (the system's unless set).

use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

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

/// Where a connect's addresses come from: known at once, or a question for the resolver.
#[derive(Debug)]
pub enum Lookup {
    /// The fixed addresses an entry of [`ConnectOptions::resolve`] names (`true`: tried in
    /// their order), or the host itself when it is an IP address (`false`).
    Known(Vec<SocketAddr>, bool),
    /// A name to ask the resolver for (its addresses are Happy Eyeballs-ordered: `false`).
    Ask(Query),
}

/// A name the [resolver](ConnectOptions::resolver) must be asked for: [`run`](Self::run)
/// where blocking is allowed, waiting for it at most [`budget`](Self::budget).
#[derive(Debug)]
pub struct Query {
    resolver: Resolver,
    host: String,
    port: u16,
    /// How long the connect waits for the answer: its total deadline.
    pub budget: Duration,
}

impl Query {
    /// Asks the resolver (blocking).
    pub fn run(self) -> io::Result<Vec<SocketAddr>> {
        self.resolver.resolve(&self.host, self.port)
    }

    /// The error of a resolver that did not answer within the budget.
    pub fn timed_out() -> io::Error {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "the resolver did not answer in time",
        )
    }
}

impl ConnectOptions {
    /// Where `host:port` is: the addresses these options know for it (fixed ones, or the
    /// host as an IP literal, an IPv6 one without brackets), else the question for the
    /// resolver.
    pub fn lookup(&self, host: &str, port: u16) -> Lookup {
        if let Some(fixed) = self.fixed_addresses(host, port) {
            return Lookup::Known(fixed.to_vec(), true);
        }
        match host.parse::<IpAddr>() {
            Ok(ip) => Lookup::Known(vec![SocketAddr::new(ip, port)], false),
            Err(_) => Lookup::Ask(Query {
                resolver: self.resolver.clone(),
                host: host.to_owned(),
                port,
                budget: self.total_timeout,
            }),
        }
    }
}
