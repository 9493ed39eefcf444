//! Connection setup shared by the crate's clients (the WebSocket's, the HTTP client's, the
//! packet client's): the codec's connect plan (Happy Eyeballs v2) driven over tokio's
//! sockets and timer, and the TLS handshakes that turn a `TcpStream` into a [`MaybeTls`].
//! Below every protocol: it knows TCP and TLS, nothing else.

use std::future::{Future, poll_fn};
use std::io::{self, ErrorKind};
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::stream::MaybeTls;
use tickwire_codec::connect::{Action, AttemptId, ConnectPlan, ProxyUrl, Reason};
use tickwire_core::TransportError;
use tickwire_core::connect::{ConnectOptions, Lookup, Query, Route, Tunnel, connect_failed};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
#[cfg(feature = "tls")]
use {crate::tls::TlsStream, tokio::time::Instant};

use crate::core::now;

/// A TCP stream to `route`'s host and port, the way every client of this crate opens its
/// connection: the addresses the options know or their resolver gives, the connect plan over
/// them (Happy Eyeballs v2), through the proxy the options name for the route's scheme if
/// any, TCP_NODELAY set as the route asks. Each attempt is bounded by the route's attempt
/// timeout (`None`: by the plan's total deadline), the proxy's handshake by the same timeout
/// (else the total deadline) as a whole. A failed plan is an `io::Error` carrying the
/// codec's `ConnectError` (every address and why); TLS, when the route is `secure`, is the
/// caller's next step.
pub async fn tcp_connect(route: &Route<'_>) -> io::Result<TcpStream> {
    let Some(proxy) = route.proxy()? else {
        return direct(route.host, route.port, route).await;
    };
    if Tunnel::over_tls(&proxy) {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            "the tunnel through an https:// proxy runs over TLS, not a bare TCP stream",
        ));
    }
    let (mut tcp, mut tunnel, budget) = to_proxy(route, &proxy).await?;
    within(budget, open_tunnel(&mut tcp, &mut tunnel)).await?;
    Ok(tcp)
}

/// The stream to `route`'s host and port every client of this crate starts from: TCP as
/// [`tcp_connect`] opens it, or through an `https://` proxy TLS to the proxy (its handshake
/// and the tunnel's within the tunnel budget) with the tunnel inside. The server's TLS is
/// the caller's next step ([`tls_connect`]).
pub(crate) async fn open(route: &Route<'_>) -> Result<MaybeTls, TransportError> {
    let Some(proxy) = route.proxy()? else {
        return Ok(MaybeTls::Plain(
            direct(route.host, route.port, route).await?,
        ));
    };
    let (mut tcp, mut tunnel, budget) = to_proxy(route, &proxy).await?;
    if !Tunnel::over_tls(&proxy) {
        within(budget, open_tunnel(&mut tcp, &mut tunnel)).await?;
        return Ok(MaybeTls::Plain(tcp));
    }
    #[cfg(feature = "tls")]
    {
        let deadline = tokio::time::Instant::now() + budget;
        let codec = tickwire_core::connect::proxy_tls_codec(&proxy, route.options)?;
        let mut tls = TlsStream::new(tcp, codec);
        tls.handshake(deadline).await?;
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        within(left, open_tunnel(&mut tls, &mut tunnel)).await?;
        Ok(MaybeTls::ProxyTls(Box::new(tls)))
    }
    #[cfg(not(feature = "tls"))]
    unreachable!("Tunnel::new refuses an https:// proxy without the tls feature")
}

/// TCP to `proxy`, the handshake it expects for `route`, and the time the tunnel (TLS to
/// the proxy included) may take as a whole.
async fn to_proxy(
    route: &Route<'_>,
    proxy: &ProxyUrl,
) -> io::Result<(TcpStream, Tunnel, std::time::Duration)> {
    let tcp = direct(&proxy.host, proxy.port, route).await?;
    let resolved = match Tunnel::resolves_locally(proxy) {
        true => addresses(route.host, route.port, route.options).await?.0,
        false => Vec::new(),
    };
    Ok((tcp, route.tunnel(proxy, &resolved)?, route.tunnel_budget()))
}

/// `opening` within `budget`, else `TimedOut`.
async fn within(
    budget: std::time::Duration,
    opening: impl Future<Output = io::Result<()>>,
) -> io::Result<()> {
    tokio::time::timeout(budget, opening).await.map_err(|_| {
        io::Error::new(
            ErrorKind::TimedOut,
            "the proxy did not open the tunnel in time",
        )
    })?
}

/// The addresses of `host:port`: those the options know (fixed ones: `true`), or the
/// resolver's answer (`false`), asked on the blocking pool within the query's budget.
async fn addresses(
    host: &str,
    port: u16,
    options: &ConnectOptions,
) -> io::Result<(Vec<SocketAddr>, bool)> {
    match options.lookup(host, port) {
        Lookup::Known(addrs, fixed) => Ok((addrs, fixed)),
        Lookup::Ask(query) => {
            let budget = query.budget;
            let asking = tokio::task::spawn_blocking(move || query.run());
            let answer = tokio::time::timeout(budget, asking).await;
            Ok((
                answer
                    .map_err(|_| Query::timed_out())?
                    .map_err(io::Error::other)??,
                false,
            ))
        }
    }
}

/// Connects to `host:port` (the route's, or its proxy's) itself: its addresses, then the
/// connect plan, TCP_NODELAY set as the route asks. A plan that fails is an `io::Error`
/// carrying every address's reason ([`connect_failed`]).
async fn direct(host: &str, port: u16, route: &Route<'_>) -> io::Result<TcpStream> {
    let (addrs, fixed) = addresses(host, port, route.options).await?;
    let plan = route
        .options
        .plan(&addrs, fixed, route.attempt_timeout, now());
    let tcp = Attempts::new(plan, route.options).run().await?;
    tcp.set_nodelay(route.nodelay)?;
    Ok(tcp)
}

/// Moves `tunnel`'s bytes over `tcp` (TCP to the proxy, or TLS to it) until the proxy has
/// opened it.
async fn open_tunnel<S>(tcp: &mut S, tunnel: &mut Tunnel) -> io::Result<()>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut buf = [0u8; 2048];
    loop {
        while !tunnel.pending_write().is_empty() {
            match tcp.write(tunnel.pending_write()).await? {
                0 => return Err(ErrorKind::WriteZero.into()),
                n => tunnel.written(n),
            }
        }
        let n = tcp.read(&mut buf).await?;
        if tunnel.receive(&buf[..n])? {
            return Ok(());
        }
    }
}

/// An attempt's connect.
type Connecting = Pin<Box<dyn Future<Output = io::Result<TcpStream>> + Send>>;

/// One plan's attempts: an attempt's connect while it runs, its stream once it connected.
struct Attempts<'a> {
    plan: ConnectPlan,
    options: &'a ConnectOptions,
    connecting: Vec<Option<Connecting>>,
    connected: Vec<Option<TcpStream>>,
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<'a> Attempts<'a> {
    fn new(plan: ConnectPlan, options: &'a ConnectOptions) -> Self {
        let len = plan.addresses().len();
        Self {
            plan,
            options,
            connecting: (0..len).map(|_| None).collect(),
            connected: (0..len).map(|_| None).collect(),
            timer: None,
        }
    }

    async fn run(mut self) -> io::Result<TcpStream> {
        poll_fn(|cx| self.poll(cx)).await
    }

    /// Follows the plan's actions, polls the running attempts and sleeps until the plan's
    /// next deadline.
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<TcpStream>> {
        loop {
            while let Some(action) = self.plan.poll_action(now()) {
                match action {
                    Action::Attempt { id, addr } => {
                        self.connecting[id.0] = Some(match socket_for(addr, self.options) {
                            Ok(socket) => Box::pin(socket.connect(addr)),
                            Err(e) => Box::pin(std::future::ready(Err(e))),
                        });
                    }
                    Action::Abandon { id } => {
                        self.connecting[id.0] = None;
                        self.connected[id.0] = None;
                    }
                    Action::Connected { id, .. } => {
                        return Poll::Ready(
                            self.connected[id.0]
                                .take()
                                .ok_or_else(|| io::Error::other("the plan's winner has no stream")),
                        );
                    }
                    Action::Failed(error) => return Poll::Ready(Err(connect_failed(error))),
                    _ => {}
                }
            }
            if self.poll_attempts(cx) {
                continue;
            }
            let Some(at) = self.plan.poll_timeout() else {
                return Poll::Pending;
            };
            let at = tokio::time::Instant::from_std(at);
            let timer = self
                .timer
                .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(at)));
            if timer.deadline() != at {
                timer.as_mut().reset(at);
            }
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.plan.handle_timeout(now());
        }
    }

    /// Polls every running attempt once; `true` when one ended (the plan has news).
    fn poll_attempts(&mut self, cx: &mut Context<'_>) -> bool {
        let mut ended = false;
        for index in 0..self.connecting.len() {
            let Some(connecting) = &mut self.connecting[index] else {
                continue;
            };
            let Poll::Ready(outcome) = connecting.as_mut().poll(cx) else {
                continue;
            };
            self.connecting[index] = None;
            ended = true;
            let id = AttemptId(index);
            match outcome {
                Ok(tcp) => {
                    self.connected[index] = Some(tcp);
                    self.plan.on_connected(id, now());
                }
                Err(e) => self.plan.on_failed(id, Reason::from_io(e.kind()), now()),
            }
        }
        ended
    }
}

/// An unconnected socket to `addr`, prepared as `options` say ([`ConnectOptions::prepare`]).
fn socket_for(addr: SocketAddr, options: &ConnectOptions) -> io::Result<TcpSocket> {
    let socket = if addr.is_ipv6() {
        TcpSocket::new_v6()?
    } else {
        TcpSocket::new_v4()?
    };
    options.prepare(socket2::SockRef::from(&socket), addr)?;
    Ok(socket)
}

/// Puts the server's TLS for `host` (SNI and certificate name; an IP address is checked
/// against the certificate's IP SANs; `config` `None` is
/// [`ClientTlsConfig::shared_default`]) on `stream` (TCP, or TLS to an `https://` proxy) and
/// completes the handshake before `deadline` (else [`TransportError::HandshakeTimeout`]).
///
/// [`ClientTlsConfig::shared_default`]: tickwire_tls::ClientTlsConfig::shared_default
#[cfg(feature = "tls")]
pub(crate) async fn tls_connect(
    stream: MaybeTls,
    host: &str,
    config: Option<&tickwire_tls::ClientTlsConfig>,
    deadline: Instant,
) -> Result<MaybeTls, TransportError> {
    let codec = tickwire_core::connect::tls_codec(host, config)?;
    match stream {
        MaybeTls::Plain(tcp) => {
            let mut stream = TlsStream::new(tcp, codec);
            stream.handshake(deadline).await?;
            Ok(MaybeTls::Tls(Box::new(stream)))
        }
        MaybeTls::ProxyTls(proxy) => {
            let mut stream = TlsStream::new(*proxy, codec);
            stream.handshake(deadline).await?;
            Ok(MaybeTls::TlsInTls(Box::new(stream)))
        }
        MaybeTls::Tls(_) | MaybeTls::TlsInTls(_) => Err(TransportError::Io(io::Error::new(
            ErrorKind::InvalidInput,
            "the stream already carries the server's TLS",
        ))),
    }
}

/// The server side of [`tls_connect`]: the TLS handshake on an accepted `tcp` with `config`,
/// before `deadline`. A client that sent plaintext gets an HTTP 400; one that failed the
/// handshake gets the alert rustls chose.
#[cfg(feature = "tls")]
pub(crate) async fn tls_accept(
    tcp: TcpStream,
    config: &tickwire_tls::ServerTlsConfig,
    deadline: Instant,
) -> Result<MaybeTls, TransportError> {
    let codec = tickwire_tls::TlsCodec::server(config)?;
    let mut stream = TlsStream::new(tcp, codec);
    stream.handshake(deadline).await?;
    Ok(MaybeTls::Tls(Box::new(stream)))
}
