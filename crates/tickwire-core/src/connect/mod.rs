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

mod resolver;
mod socket;

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

pub use resolver::{Lookup, Query, Resolve, Resolver, SystemResolver};
pub use socket::{Keepalive, SocketOptions};

use tickwire_codec::connect::{
    ConnectConfig, ConnectError, ConnectPlan, DEFAULT_MAX_HEAD_BYTES, HttpConnect, HttpProxyError,
    NoProxy, Progress, ProxyKind, ProxyUrl, Reason, ResolveEntry, Socks5, Socks5Error, Target,
    proxy_from_env,
};

/// How a client connects: the Happy Eyeballs stagger and total deadline, the resolver and
/// fixed addresses for a host, the local address or interface to connect from, the socket
/// options, the proxy. The default: a 250 ms stagger, a 30 s total deadline, the system
/// resolver, the system's choice of local address and socket options, the environment's
/// proxy.
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
    /// Where other names' addresses come from (an IP literal needs none). Default: the
    /// system resolver.
    pub resolver: Resolver,
    /// The local address to connect from (its family must match the remote address's: an
    /// address of the other family fails that attempt as `AddrNotAvailable`). `None`: the
    /// system chooses.
    pub local_address: Option<IpAddr>,
    /// The network interface to connect through (`SO_BINDTODEVICE`, Linux; needs
    /// `CAP_NET_RAW` unless the process owns the interface's namespace). Elsewhere an
    /// attempt with it set fails as `Unsupported`. `None`: the routing table chooses.
    pub device: Option<String>,
    /// Set on each attempt's socket before it connects. Default: none.
    pub socket: SocketOptions,
    /// The proxy to tunnel through. Default [`Proxy::FromEnv`].
    pub proxy: Proxy,
    /// The TLS client configuration for an `https://` proxy (the roots its certificate is
    /// checked against, as curl's `--proxy-cacert`); the proxy's host name is the server
    /// name. `None`: [`ClientTlsConfig::shared_default`](crate::ClientTlsConfig::shared_default).
    /// The server's own TLS, through the tunnel, takes the client's TLS configuration.
    #[cfg(feature = "tls")]
    pub proxy_tls: Option<crate::ClientTlsConfig>,
}

/// Which proxy a client tunnels through: the environment's (the default), none, or one set in
/// code. The tunnel is HTTP CONNECT (`http://` proxies) or SOCKS5 (`socks5://`, the name
/// resolved here; `socks5h://`, by the proxy), for every scheme alike (`http://` targets
/// are tunnelled too, not sent in absolute form). An `https://` proxy is HTTP CONNECT over
/// TLS to the proxy (checked against [`ConnectOptions::proxy_tls`]); a `wss://` or
/// `https://` server's TLS then runs inside it. Without the `tls` feature such a proxy fails
/// the connect as `Unsupported`.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Proxy {
    /// The proxy the environment names for the URL's scheme, read the way curl reads it
    /// (`no_proxy`, the scheme's variable, `all_proxy`: see
    /// [`proxy_from_env`]); none when nothing is
    /// set.
    #[default]
    FromEnv,
    /// Straight to the server, whatever the environment says.
    Direct,
    /// This proxy for every host `except` does not match.
    Fixed {
        /// The proxy.
        url: ProxyUrl,
        /// The hosts reached directly (curl's `--noproxy` list).
        except: NoProxy,
    },
}

impl Default for ConnectOptions {
    fn default() -> Self {
        let plan = ConnectConfig::default();
        Self {
            stagger: plan.stagger,
            total_timeout: plan.total_timeout,
            resolve: Vec::new(),
            resolver: Resolver::system(),
            local_address: None,
            device: None,
            socket: SocketOptions::default(),
            proxy: Proxy::FromEnv,
            #[cfg(feature = "tls")]
            proxy_tls: None,
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

    /// Sets the [resolver](Self::resolver).
    pub fn with_resolver(mut self, resolver: impl Resolve) -> Self {
        self.resolver = Resolver::new(resolver);
        self
    }

    /// Sets the [socket options](Self::socket).
    pub fn with_socket(mut self, socket: SocketOptions) -> Self {
        self.socket = socket;
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

    /// Sets the [proxy](Self::proxy).
    pub fn with_proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// Sets the [TLS configuration for an `https://` proxy](Self::proxy_tls).
    #[cfg(feature = "tls")]
    pub fn with_proxy_tls(mut self, config: crate::ClientTlsConfig) -> Self {
        self.proxy_tls = Some(config);
        self
    }

    /// The proxy for a connection to `host` over `scheme` (`ws`, `wss`, `http`, `https`;
    /// another scheme takes only `all_proxy` from the environment); `None`: direct. A proxy
    /// variable that is not a proxy URL is an `InvalidInput` error carrying the codec's
    /// `ProxyUrlError`.
    pub fn proxy_for(&self, scheme: &str, host: &str) -> io::Result<Option<ProxyUrl>> {
        match &self.proxy {
            Proxy::Direct => Ok(None),
            Proxy::FromEnv => proxy_from_env(scheme, host, |name| std::env::var(name).ok())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e)),
            Proxy::Fixed { url, except } => Ok((!except.matches(host)).then(|| url.clone())),
        }
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

/// One TCP connection a client asks its transport for, given whole to the transport's
/// connect: the host and port, the URL scheme (the proxy rules depend on it), the
/// per-attempt timeout, TCP_NODELAY, the connect options, and whether TLS goes on top (the
/// transport's next step, to [`host`](Self::host)).
#[derive(Debug, Clone, Copy)]
pub struct Route<'a> {
    /// `ws`, `wss`, `http`, `https`; `tcp` for the packet client.
    pub scheme: &'a str,
    /// The host to resolve (or the proxy to resolve), and TLS's server name.
    pub host: &'a str,
    /// The port.
    pub port: u16,
    /// Of each attempt (`None`: bounded by the plan's total deadline); of the proxy's
    /// handshake as a whole (else the total deadline).
    pub attempt_timeout: Option<Duration>,
    /// TCP_NODELAY on the connected stream.
    pub nodelay: bool,
    /// Whether TLS goes on the stream once it is connected.
    pub secure: bool,
    /// How to connect.
    pub options: &'a ConnectOptions,
}

impl<'a> Route<'a> {
    /// A plain TCP route to `host:port` for `scheme` (`tcp` when it is no URL's) under
    /// `options`: each attempt bounded by the total deadline only, TCP_NODELAY on, no TLS.
    pub fn new(scheme: &'a str, host: &'a str, port: u16, options: &'a ConnectOptions) -> Self {
        Self {
            scheme,
            host,
            port,
            attempt_timeout: None,
            nodelay: true,
            secure: false,
            options,
        }
    }

    /// The proxy the route goes through (its options' for its scheme and host); `None`:
    /// direct.
    pub fn proxy(&self) -> io::Result<Option<ProxyUrl>> {
        self.options.proxy_for(self.scheme, self.host)
    }

    /// The handshake through `proxy` to the route's host and port. A `socks5://` proxy
    /// ([`Tunnel::resolves_locally`]) is given the first of `resolved`, the addresses the
    /// client resolved the host to (`NotFound` when there are none); other proxies are given
    /// the name, and `resolved` is not looked at.
    pub fn tunnel(&self, proxy: &ProxyUrl, resolved: &[SocketAddr]) -> io::Result<Tunnel> {
        let target = if Tunnel::resolves_locally(proxy) {
            let first = resolved.first().ok_or(io::ErrorKind::NotFound)?;
            Target::new(&first.ip().to_string(), self.port)
        } else {
            Target::new(self.host, self.port)
        };
        Tunnel::new(proxy, &target)
    }

    /// How long the proxy may take to open the tunnel: the attempt timeout, else the total
    /// deadline.
    pub fn tunnel_budget(&self) -> Duration {
        self.attempt_timeout.unwrap_or(self.options.total_timeout)
    }
}

/// The TLS client a connect puts on its stream for `host` (SNI, and the name or IP address
/// the certificate is checked against) under `config` (`None`:
/// [`ClientTlsConfig::shared_default`](crate::ClientTlsConfig::shared_default)). Every
/// client of both transports starts its TLS here.
#[cfg(feature = "tls")]
pub fn tls_codec(
    host: &str,
    config: Option<&crate::ClientTlsConfig>,
) -> Result<tickwire_tls::TlsCodec, crate::TlsError> {
    let config = config
        .cloned()
        .unwrap_or_else(crate::ClientTlsConfig::shared_default);
    tickwire_tls::TlsCodec::client(&config, host)
}

/// The TLS client a connect puts on its stream to an `https://` `proxy`
/// ([`Tunnel::over_tls`]): the proxy's host as the server name, checked against
/// [`ConnectOptions::proxy_tls`].
#[cfg(feature = "tls")]
pub fn proxy_tls_codec(
    proxy: &ProxyUrl,
    options: &ConnectOptions,
) -> Result<tickwire_tls::TlsCodec, crate::TlsError> {
    tls_codec(&proxy.host, options.proxy_tls.as_ref())
}

/// A proxy handshake between socket calls: the bytes owed to the proxy and what its answer
/// means, for a driver that moves the bytes (write [`pending_write`](Self::pending_write),
/// read into [`receive`](Self::receive) until it says the tunnel is up). Errors are
/// `io::Error`s carrying the codec's [`HttpProxyError`] (with the proxy's status) or
/// [`Socks5Error`] (with its reply code).
#[derive(Debug)]
pub enum Tunnel {
    /// HTTP CONNECT.
    Http(HttpConnect),
    /// SOCKS5, with username/password authentication when the proxy URL has credentials.
    Socks5(Socks5),
}

impl Tunnel {
    /// The handshake through `proxy` to `target`. For a `socks5://` proxy (the name resolved
    /// here, [`resolves_locally`](Self::resolves_locally)) `target`'s host must already be
    /// the resolved address.
    pub fn new(proxy: &ProxyUrl, target: &Target) -> io::Result<Self> {
        let credentials = proxy.credentials.as_ref();
        match proxy.kind {
            #[cfg(not(feature = "tls"))]
            ProxyKind::Https => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "an https:// proxy needs TLS, and tickwire was built without the tls feature",
            )),
            ProxyKind::Socks5 | ProxyKind::Socks5h => Socks5::new(target, credentials)
                .map(Self::Socks5)
                .map_err(socks_failed),
            // `http://`, and `https://` once TLS to the proxy is up.
            _ => HttpConnect::new(target, credentials, DEFAULT_MAX_HEAD_BYTES)
                .map(Self::Http)
                .map_err(http_failed),
        }
    }

    /// Whether the connection to `proxy` takes TLS before the tunnel's handshake (an
    /// `https://` proxy): [`proxy_tls_codec`] is that TLS.
    pub fn over_tls(proxy: &ProxyUrl) -> bool {
        proxy.kind == ProxyKind::Https
    }

    /// Whether the target's name is resolved by the client (`socks5://`) rather than sent
    /// to the proxy.
    pub fn resolves_locally(proxy: &ProxyUrl) -> bool {
        proxy.kind == ProxyKind::Socks5
    }

    /// The bytes owed to the proxy now.
    pub fn pending_write(&self) -> &[u8] {
        match self {
            Self::Http(h) => h.pending_write(),
            Self::Socks5(s) => s.pending_write(),
        }
    }

    /// `n` bytes of [`pending_write`](Self::pending_write) were written.
    pub fn written(&mut self, n: usize) {
        match self {
            Self::Http(h) => h.written(n),
            Self::Socks5(s) => s.written(n),
        }
    }

    /// The proxy's next bytes (an empty slice: it closed the connection). `Ok(true)`: the
    /// tunnel is up. Bytes from the target before the client's first ones are an
    /// `InvalidData` error: every protocol tunnelled here has the client speak first.
    pub fn receive(&mut self, bytes: &[u8]) -> io::Result<bool> {
        let progress = match (&mut *self, bytes.is_empty()) {
            (Self::Http(h), false) => h.receive(bytes).map_err(http_failed)?,
            (Self::Http(h), true) => h.receive_eof().map_err(http_failed)?,
            (Self::Socks5(s), false) => s.receive(bytes).map_err(socks_failed)?,
            (Self::Socks5(s), true) => s.receive_eof().map_err(socks_failed)?,
        };
        if progress == Progress::NeedMore {
            return Ok(false);
        }
        let early = match self {
            Self::Http(h) => h.tunnel_bytes().len(),
            Self::Socks5(s) => s.tunnel_bytes().len(),
        };
        if early > 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("{early} bytes came through the tunnel before the client spoke"),
            ));
        }
        Ok(true)
    }
}

/// An HTTP CONNECT failure as an `io::Error` of a kind that says whose it is.
fn http_failed(error: HttpProxyError) -> io::Error {
    let kind = match &error {
        HttpProxyError::Refused {
            status: 401 | 407, ..
        } => io::ErrorKind::PermissionDenied,
        HttpProxyError::Refused { .. } => io::ErrorKind::ConnectionRefused,
        HttpProxyError::Closed => io::ErrorKind::UnexpectedEof,
        HttpProxyError::InvalidTarget | HttpProxyError::InvalidCredentials => {
            io::ErrorKind::InvalidInput
        }
        _ => io::ErrorKind::InvalidData,
    };
    io::Error::new(kind, error)
}

/// A SOCKS5 failure as an `io::Error` of a kind that says whose it is.
fn socks_failed(error: Socks5Error) -> io::Error {
    let kind = match &error {
        Socks5Error::AuthFailed(_) | Socks5Error::NoAcceptableMethod => {
            io::ErrorKind::PermissionDenied
        }
        Socks5Error::Reply(_) => io::ErrorKind::ConnectionRefused,
        Socks5Error::Closed => io::ErrorKind::UnexpectedEof,
        Socks5Error::InvalidTarget | Socks5Error::InvalidCredentials => io::ErrorKind::InvalidInput,
        _ => io::ErrorKind::InvalidData,
    };
    io::Error::new(kind, error)
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
