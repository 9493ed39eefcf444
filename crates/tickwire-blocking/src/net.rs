//! TCP connection setup shared by the WebSocket, HTTP and packet clients: the codec's connect
//! plan (Happy Eyeballs v2) driven over non-blocking sockets and `poll(2)`, the proxy tunnel
//! (tickwire-core's [`Tunnel`]) through the proxy the options name, and the TLS handshake on
//! top.

use std::io::{self, ErrorKind};
use std::net::{SocketAddr, TcpStream};
use std::time::Instant;

use socket2::{Domain, Protocol, SockRef, Socket, Type};
use tickwire_codec::connect::{Action, AttemptId, ConnectPlan, ProxyUrl, Reason};
use tickwire_core::connect::{ConnectOptions, Lookup, Query, Route, Tunnel, connect_failed};

use crate::{MaybeTlsStream, Transport, TransportError};

/// A TCP stream to `route`'s host and port, the way every client of this crate opens its
/// connection: the addresses the options know or their resolver gives, the connect plan over
/// them (Happy Eyeballs v2), through the proxy the options name for the route's scheme if
/// any, TCP_NODELAY set as the route asks. Each attempt is bounded by the route's attempt
/// timeout (`None`: by the plan's total deadline), the proxy's handshake by the same timeout
/// (else the total deadline) as a whole. A failed plan is an `io::Error` carrying the
/// codec's `ConnectError` (every address and why); TLS, when the route is `secure`, is the
/// caller's next step. The tunnel through an `https://` proxy is no bare TCP stream: such a
/// proxy is an `InvalidInput` error here (the crate's clients take it).
pub fn tcp_connect(route: &Route<'_>) -> io::Result<TcpStream> {
    let Some(proxy) = route.proxy()? else {
        return direct(route.host, route.port, route);
    };
    if Tunnel::over_tls(&proxy) {
        return Err(io::Error::new(
            ErrorKind::InvalidInput,
            "the tunnel through an https:// proxy runs over TLS, not a bare TCP stream",
        ));
    }
    let (mut tcp, mut tunnel, deadline) = to_proxy(route, &proxy)?;
    open_tunnel(&mut tcp, &mut tunnel, deadline)?;
    Ok(tcp)
}

/// The stream to `route`'s host and port every client of this crate starts from: TCP as
/// [`tcp_connect`] opens it, or through an `https://` proxy TLS to the proxy (its handshake
/// and the tunnel's within the tunnel budget) with the tunnel inside. The server's TLS is
/// the caller's next step ([`tls_connect`]).
pub(crate) fn open(route: &Route<'_>) -> Result<MaybeTlsStream, TransportError> {
    let Some(proxy) = route.proxy()? else {
        return Ok(MaybeTlsStream::plain(direct(
            route.host, route.port, route,
        )?));
    };
    let (mut tcp, mut tunnel, deadline) = to_proxy(route, &proxy)?;
    if !Tunnel::over_tls(&proxy) {
        open_tunnel(&mut tcp, &mut tunnel, deadline)?;
        return Ok(MaybeTlsStream::plain(tcp));
    }
    #[cfg(feature = "tls")]
    {
        let codec = tickwire_core::connect::proxy_tls_codec(&proxy, route.options)?;
        let mut tls = crate::TlsStream::new(tcp, codec);
        tls.handshake(deadline)?;
        open_tunnel(&mut tls, &mut tunnel, deadline)?;
        Ok(MaybeTlsStream::through_proxy(tls))
    }
    #[cfg(not(feature = "tls"))]
    unreachable!("Tunnel::new refuses an https:// proxy without the tls feature")
}

/// TCP to `proxy`, the handshake it expects for `route`, and the deadline of the tunnel
/// (TLS to the proxy included) as a whole.
fn to_proxy(route: &Route<'_>, proxy: &ProxyUrl) -> io::Result<(TcpStream, Tunnel, Instant)> {
    let tcp = direct(&proxy.host, proxy.port, route)?;
    let deadline = Instant::now() + route.tunnel_budget();
    let mut resolved = Vec::new();
    if Tunnel::resolves_locally(proxy) {
        resolved = addresses(route.host, route.port, route.options)?.0;
    }
    Ok((tcp, route.tunnel(proxy, &resolved)?, deadline))
}

/// Where `host:port` is: the addresses the options know for it (fixed ones: `true`), or
/// their resolver's answer (`false`).
fn addresses(
    host: &str,
    port: u16,
    options: &ConnectOptions,
) -> io::Result<(Vec<SocketAddr>, bool)> {
    let query = match options.lookup(host, port) {
        Lookup::Known(addrs, fixed) => return Ok((addrs, fixed)),
        Lookup::Ask(query) => query,
    };
    // On a thread of its own, so that the budget bounds the wait: a resolver that hangs
    // keeps only its thread.
    let budget = query.budget;
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("tickwire-resolve".into())
        .spawn(move || {
            let _ = tx.send(query.run());
        })?;
    Ok((
        rx.recv_timeout(budget).map_err(|_| Query::timed_out())??,
        false,
    ))
}

/// Connects to `host:port` (the route's, or its proxy's) itself: its addresses, then the
/// connect plan, TCP_NODELAY set as the route asks. A plan that fails is an `io::Error`
/// carrying every address's reason ([`connect_failed`]).
fn direct(host: &str, port: u16, route: &Route<'_>) -> io::Result<TcpStream> {
    let (addrs, fixed) = addresses(host, port, route.options)?;
    let plan = route
        .options
        .plan(&addrs, fixed, route.attempt_timeout, Instant::now());
    let tcp = Attempts::new(plan, route.options).run()?;
    tcp.set_nodelay(route.nodelay)?;
    Ok(tcp)
}

/// Moves `tunnel`'s bytes over `tcp` (TCP to the proxy, or TLS to it) until the proxy has
/// opened it, before `deadline`.
fn open_tunnel<S: Transport>(
    tcp: &mut S,
    tunnel: &mut Tunnel,
    deadline: Instant,
) -> io::Result<()> {
    let left = || {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            Err(io::Error::new(
                ErrorKind::TimedOut,
                "the proxy did not open the tunnel in time",
            ))
        } else {
            Ok(left)
        }
    };
    let mut buf = [0u8; 2048];
    loop {
        while !tunnel.pending_write().is_empty() {
            Transport::set_write_timeout(tcp, Some(left()?))?;
            match tcp.write(tunnel.pending_write()) {
                Ok(0) => return Err(ErrorKind::WriteZero.into()),
                Ok(n) => tunnel.written(n),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    left()?;
                }
                Err(e) => return Err(e),
            }
        }
        Transport::set_read_timeout(tcp, Some(left()?))?;
        let n = match tcp.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                left()?;
                continue;
            }
            Err(e) => return Err(e),
        };
        if tunnel.receive(&buf[..n])? {
            Transport::set_read_timeout(tcp, None)?;
            Transport::set_write_timeout(tcp, None)?;
            return Ok(());
        }
    }
}

/// One plan's sockets: an attempt's socket while it connects.
struct Attempts<'o> {
    plan: ConnectPlan,
    options: &'o ConnectOptions,
    sockets: Vec<Option<Socket>>,
}

impl<'o> Attempts<'o> {
    fn new(plan: ConnectPlan, options: &'o ConnectOptions) -> Self {
        let sockets = (0..plan.addresses().len()).map(|_| None).collect();
        Self {
            plan,
            options,
            sockets,
        }
    }

    /// Follows the plan's actions and waits on the attempts' sockets until it ends.
    fn run(mut self) -> io::Result<TcpStream> {
        loop {
            while let Some(action) = self.plan.poll_action(Instant::now()) {
                match action {
                    Action::Attempt { id, addr } => self.start(id, addr),
                    Action::Abandon { id } => self.sockets[id.0] = None,
                    Action::Connected { id, .. } => {
                        let socket = self.sockets[id.0]
                            .take()
                            .ok_or_else(|| io::Error::other("the plan's winner has no socket"))?;
                        blocking_again(&socket)?;
                        return Ok(socket.into());
                    }
                    Action::Failed(error) => return Err(connect_failed(error)),
                    _ => {}
                }
            }
            self.wait()?;
        }
    }

    /// Starts a non-blocking connect to `addr`; a connect that ends at once is reported.
    fn start(&mut self, id: AttemptId, addr: SocketAddr) {
        match self.open(addr) {
            Ok((socket, connected)) => {
                self.sockets[id.0] = Some(socket);
                if connected {
                    self.plan.on_connected(id, Instant::now());
                }
            }
            Err(e) => self
                .plan
                .on_failed(id, Reason::from_io(e.kind()), Instant::now()),
        }
    }

    /// A socket connecting to `addr` (from the local address, if one is set), and whether
    /// the connect already completed.
    fn open(&self, addr: SocketAddr) -> io::Result<(Socket, bool)> {
        let socket = nonblocking_socket(addr)?;
        self.options.prepare(SockRef::from(&socket), addr)?;
        match socket.connect(&addr.into()) {
            Ok(()) => Ok((socket, true)),
            Err(e) if connecting(&e) => Ok((socket, false)),
            Err(e) => Err(e),
        }
    }

    /// Waits until an attempt's connect ends or the plan's next deadline, and reports what
    /// happened.
    #[cfg(unix)]
    fn wait(&mut self) -> io::Result<()> {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let timeout = self
            .plan
            .poll_timeout()
            .map(|at| at.saturating_duration_since(Instant::now()));
        let mut ids = Vec::with_capacity(self.sockets.len());
        let mut fds = Vec::with_capacity(self.sockets.len());
        for (index, socket) in self.sockets.iter().enumerate() {
            if let Some(socket) = socket {
                ids.push(AttemptId(index));
                fds.push(PollFd::new(socket, PollFlags::OUT));
            }
        }
        // A bound too far to represent is no bound.
        let timeout = timeout.and_then(|t| Timespec::try_from(t).ok());
        match poll(&mut fds, timeout.as_ref()) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
        let ended: Vec<AttemptId> = fds
            .iter()
            .zip(ids)
            .filter(|(fd, _)| !fd.revents().is_empty())
            .map(|(_, id)| id)
            .collect();
        drop(fds);
        let now = Instant::now();
        for id in ended {
            self.report(id, now);
        }
        self.plan.handle_timeout(now);
        Ok(())
    }

    /// Without `poll(2)`: each socket in turn, its connect checked once a millisecond.
    #[cfg(not(unix))]
    fn wait(&mut self) -> io::Result<()> {
        std::thread::sleep(std::time::Duration::from_millis(1));
        let now = Instant::now();
        for index in 0..self.sockets.len() {
            if let Some(socket) = &self.sockets[index]
                && (socket.peer_addr().is_ok() || matches!(socket.take_error(), Ok(Some(_))))
            {
                self.report(AttemptId(index), now);
            }
        }
        self.plan.handle_timeout(now);
        Ok(())
    }

    /// An attempt whose socket is writable or failed: connected, or its error.
    fn report(&mut self, id: AttemptId, now: Instant) {
        let Some(socket) = &self.sockets[id.0] else {
            return;
        };
        match socket.take_error() {
            Ok(None) => match socket.peer_addr() {
                Ok(_) => self.plan.on_connected(id, now),
                Err(e) => {
                    self.sockets[id.0] = None;
                    self.plan.on_failed(id, Reason::from_io(e.kind()), now);
                }
            },
            Ok(Some(e)) | Err(e) => {
                self.sockets[id.0] = None;
                self.plan.on_failed(id, Reason::from_io(e.kind()), now);
            }
        }
    }
}

/// An unconnected TCP socket for `addr`, non-blocking: from the start on Linux
/// (`SOCK_NONBLOCK`, no `fcntl` pair before the connect), made so elsewhere.
fn nonblocking_socket(addr: SocketAddr) -> io::Result<Socket> {
    let domain = Domain::for_address(addr);
    #[cfg(any(target_os = "linux", target_os = "android"))]
    let socket = Socket::new(domain, Type::STREAM.nonblocking(), Some(Protocol::TCP))?;
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let socket = {
        let socket = Socket::new(domain, Type::STREAM, Some(Protocol::TCP))?;
        socket.set_nonblocking(true)?;
        socket
    };
    Ok(socket)
}

/// The winner back to blocking: one `ioctl(FIONBIO)` (socket2's is an `fcntl` get and set).
#[cfg(unix)]
fn blocking_again(socket: &Socket) -> io::Result<()> {
    Ok(rustix::io::ioctl_fionbio(socket, false)?)
}

#[cfg(not(unix))]
fn blocking_again(socket: &Socket) -> io::Result<()> {
    socket.set_nonblocking(false)
}

/// A non-blocking connect still in progress.
fn connecting(error: &io::Error) -> bool {
    error.kind() == ErrorKind::WouldBlock || error.raw_os_error() == Some(EINPROGRESS)
}

#[cfg(unix)]
const EINPROGRESS: i32 = libc::EINPROGRESS;
#[cfg(not(unix))]
const EINPROGRESS: i32 = 10036; // WSAEINPROGRESS

/// Puts the server's TLS for `host` (SNI and certificate name; an IP address is checked
/// against the certificate's IP SANs) on `stream` (TCP, or TLS to an `https://` proxy) and
/// completes the handshake before `deadline`.
#[cfg(feature = "tls")]
pub(crate) fn tls_connect(
    stream: MaybeTlsStream,
    host: &str,
    config: Option<&tickwire_tls::ClientTlsConfig>,
    deadline: Instant,
) -> Result<MaybeTlsStream, TransportError> {
    stream.with_tls(tickwire_core::connect::tls_codec(host, config)?, deadline)
}
