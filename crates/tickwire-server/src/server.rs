//! Configuration, binding and starting the workers.

use std::io;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::Duration;

use mio::{Poll, Token};
use socket2::{Domain, Protocol, Socket, Type};
use tickwire_codec::handshake::{ServerLimits, ServerOptions};
use tickwire_codec::ws::{Config, Limits};

use crate::BusyPoll;
use crate::handle::{HandleShared, ServerHandle, WorkerLink};
use crate::transport::Transport;
use crate::worker::{Settings, WAKER, Worker};
use crate::{Handler, WorkerContext};

/// Options of a reactor server. Defaults: one worker per CPU the process may run on,
/// [`Config::server`] (1 MiB frames and messages, 16 KiB buffers), 8 KiB request head and 32
/// headers at most, a 10 s handshake timeout, 1 MiB of queued output before a connection's
/// reads pause, 65,536 connections per worker, TCP_NODELAY on, permessage-deflate off.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ServerBuilder {
    options: ServerOptions,
    settings: Settings,
    workers: Option<usize>,
    backlog: i32,
    #[cfg(feature = "tls")]
    tls: Option<std::sync::Arc<tickwire_tls::ServerTlsConfig>>,
}

impl Default for ServerBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ServerBuilder {
    /// The defaults above.
    pub fn new() -> Self {
        Self {
            options: ServerOptions::default(),
            settings: Settings::default(),
            workers: None,
            backlog: 1024,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }

    /// Worker threads (at least 1, at most 255; default: the CPUs this process may run on,
    /// which `taskset` narrows). Each has its own listener on the port (SO_REUSEPORT: the
    /// kernel spreads new connections), poll, buffers and handler.
    pub fn workers(mut self, workers: usize) -> Self {
        self.workers = Some(workers.clamp(1, 255));
        self
    }

    /// The connection configuration (limits, timers, buffer sizes), shared by every
    /// connection.
    pub fn config(mut self, config: Config) -> Self {
        self.options.config = config;
        self
    }

    /// Receive limits (frame, message and fragment count).
    pub fn limits(mut self, limits: Limits) -> Self {
        self.options.config.limits = limits;
        self
    }

    /// Limits on the upgrade request head (answered with 431 past them).
    pub fn head_limits(mut self, limits: ServerLimits) -> Self {
        self.options.limits = limits;
        self
    }

    /// How long a client has to send its whole upgrade request before it is dropped
    /// (a client trickling its request a byte at a time included).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.settings.handshake_timeout = timeout;
        self
    }

    /// Sends a ping when nothing was received for `interval`, and fails the connection when
    /// no pong comes within `pong_timeout` (close 1001).
    pub fn keepalive(mut self, interval: Option<Duration>, pong_timeout: Duration) -> Self {
        self.options.config.ping_interval = interval;
        self.options.config.pong_timeout = pong_timeout;
        self
    }

    /// Fails connections that send nothing for `timeout` (close 1001).
    pub fn idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.options.config.idle_timeout = timeout;
        self
    }

    /// How long to wait for the peer's close reply after sending a close.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.options.config.close_timeout = timeout;
        self
    }

    /// Bytes of queued output past which the worker stops reading a connection until its
    /// output drains (default 1 MiB).
    pub fn backpressure_limit(mut self, bytes: usize) -> Self {
        self.settings.backpressure_limit = bytes.max(1);
        self
    }

    /// Connections per worker (default 65,536); past it, a new connection is answered with
    /// 503 and closed.
    pub fn max_connections_per_worker(mut self, connections: usize) -> Self {
        self.settings.max_connections = connections;
        self
    }

    /// Idle buffer sets each worker keeps for connections that need one (default 64); sets
    /// beyond it are freed when given back.
    pub fn buffer_pool(mut self, sets: usize) -> Self {
        self.settings.pool_size = sets;
        self
    }

    /// TCP_NODELAY on accepted sockets (default on).
    pub fn nodelay(mut self, nodelay: bool) -> Self {
        self.settings.nodelay = nodelay;
        self
    }

    /// The send budget of each connection (default 256 KiB): the memory its queued data
    /// frames take, each queued topic message counted as its frame's bytes plus its queue
    /// entry ([`Buffers::SHARED_ENTRY_BYTES`](tickwire_codec::ws::Buffers::SHARED_ENTRY_BYTES)):
    /// a topic message that would take a subscriber past it is handled by the topic's
    /// [`SlowConsumer`](crate::SlowConsumer) policy instead of being queued. Pings, pongs and
    /// closes do not count and are never dropped. The connection's own messages (sent by
    /// handlers or through the handle) are not dropped either; they are bounded by reads
    /// pausing at the backpressure limit.
    pub fn send_budget(mut self, bytes: usize) -> Self {
        self.settings.send_budget = bytes;
        self
    }

    /// SO_SNDBUF of every accepted socket (default: the kernel's, which Linux grows on its
    /// own up to `net.ipv4.tcp_wmem`'s maximum, 4 MiB by default). A fan-out server with
    /// many subscribers may cap it: what a client that stops reading can hold in the kernel
    /// is then this (doubled by Linux) plus its receive window, and the send budget governs
    /// the rest.
    pub fn socket_send_buffer(mut self, bytes: Option<usize>) -> Self {
        self.settings.socket_send_buffer = bytes;
        self
    }

    /// Busy polling: after a wake-up's work, a worker polls again at once for a while
    /// before it sleeps in `epoll_wait`. Traffic that comes back within that window is picked
    /// up without the wake-up of a sleeping thread, which on a virtual machine costs tens of
    /// microseconds; the price is the core's time spent polling.
    ///
    /// The default, [`BusyPoll::Adaptive`] up to 200 µs, sizes the window from the gaps the
    /// worker sees (see [`BusyPoll`]): a worker whose events come back quickly (a
    /// request-reply client, a busy feed) polls, one whose connections are quiet soon does
    /// not poll at all. [`BusyPoll::Off`] always sleeps; [`BusyPoll::Fixed`] always polls
    /// for its window.
    pub fn busy_poll(mut self, mode: BusyPoll) -> Self {
        self.settings.busy_poll = mode;
        self
    }

    /// Batched sends (default on), Linux and plain servers only: the replies a wake-up's
    /// handlers make (a run of up to 16 KiB per connection) go out together in one io_uring
    /// submission after the wake-up's events, and a round of a topic's messages goes to every
    /// subscriber that owed nothing before it in one submission, instead of one `send(2)`
    /// per connection. Where io_uring is unavailable or refused, each connection is written
    /// on its own whatever this says. Bytes on the wire are the same either way; off is for
    /// measuring the difference.
    pub fn batched_sends(mut self, on: bool) -> Self {
        self.settings.batched_sends = on;
        self
    }

    /// The listen backlog of each worker's listener (default 1024).
    pub fn backlog(mut self, backlog: i32) -> Self {
        self.backlog = backlog;
        self
    }

    /// Speaks `protocol`: when the upgrade hook's response selects no subprotocol, the first
    /// one the client offered among these is selected.
    pub fn subprotocol(mut self, protocol: impl Into<String>) -> Self {
        self.options.subprotocols.push(protocol.into());
        self
    }

    /// Adds a header to every 101.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.options.headers.push((name.into(), value.into()));
        self
    }

    /// Accepts permessage-deflate (RFC 7692) with `config` when a client offers it.
    #[cfg(feature = "deflate")]
    pub fn deflate(mut self, config: crate::DeflateConfig) -> Self {
        self.options.deflate = Some(config);
        self
    }

    /// Serves wss://: every connection does the TLS handshake (rustls, through the sans-IO
    /// `TlsCodec`) before the upgrade request; the handshake timeout covers both.
    #[cfg(feature = "tls")]
    pub fn tls(mut self, config: tickwire_tls::ServerTlsConfig) -> Self {
        self.tls = Some(std::sync::Arc::new(config));
        self
    }

    /// Binds one listener per worker to `addr` (port 0: the first listener picks a free
    /// port and the others share it).
    pub fn bind(self, addr: impl ToSocketAddrs) -> io::Result<Server> {
        let addr = addr
            .to_socket_addrs()?
            .next()
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no address to bind"))?;
        let workers = match self.workers {
            Some(workers) => workers,
            None => std::thread::available_parallelism().map_or(1, |n| n.get().min(255)),
        };
        let mut listeners = Vec::with_capacity(workers);
        let mut local = addr;
        for _ in 0..workers {
            let listener = listen(local, self.backlog)?;
            local = listener
                .local_addr()?
                .as_socket()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not an IP address"))?;
            listeners.push(listener);
        }
        Ok(Server {
            builder: self,
            listeners,
            local,
        })
    }
}

fn listen(addr: SocketAddr, backlog: i32) -> io::Result<Socket> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    #[cfg(all(unix, not(any(target_os = "solaris", target_os = "illumos"))))]
    socket.set_reuse_port(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(backlog)?;
    Ok(socket)
}

/// A bound server, not yet running.
#[derive(Debug)]
pub struct Server {
    builder: ServerBuilder,
    listeners: Vec<Socket>,
    local: SocketAddr,
}

impl Server {
    /// The address the listeners are bound to (with the chosen port).
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Starts the workers, each with the handler `factory` makes for it (called on the
    /// worker's own thread with its [`WorkerContext`], so a handler need not be `Send`).
    pub fn start<H, F>(self, factory: F) -> io::Result<Running>
    where
        H: Handler,
        F: Fn(&WorkerContext) -> H + Send + Sync + 'static,
    {
        #[cfg(feature = "tls")]
        if let Some(tls) = self.builder.tls.clone() {
            return self.start_with::<H, F, crate::transport::Tls>(factory, tls);
        }
        self.start_with::<H, F, mio::net::TcpStream>(factory, ())
    }

    fn start_with<H, F, T>(self, factory: F, setup: T::Setup) -> io::Result<Running>
    where
        H: Handler,
        F: Fn(&WorkerContext) -> H + Send + Sync + 'static,
        T: Transport,
    {
        let factory = Arc::new(factory);
        let options = Arc::new(self.builder.options);
        let mut links = Vec::with_capacity(self.listeners.len());
        let mut parts = Vec::with_capacity(self.listeners.len());
        for listener in self.listeners {
            let poll = Poll::new()?;
            let waker = mio::Waker::new(poll.registry(), Token(WAKER))?;
            let (tx, rx) = mpsc::channel();
            links.push(WorkerLink {
                commands: tx,
                waker,
            });
            parts.push((poll, rx, listener));
        }
        let handle = ServerHandle {
            shared: Arc::new(HandleShared {
                workers: links,
                stopping: AtomicBool::new(false),
                topics: crate::topic::Registry::default(),
            }),
        };
        let mut threads = Vec::with_capacity(parts.len());
        for (index, (poll, rx, listener)) in parts.into_iter().enumerate() {
            let factory = Arc::clone(&factory);
            let options = Arc::clone(&options);
            let settings = self.builder.settings.clone();
            let setup = setup.clone();
            let context = WorkerContext {
                index,
                handle: handle.clone(),
            };
            let listener = mio::net::TcpListener::from_std(listener.into());
            let thread = std::thread::Builder::new()
                .name(format!("tickwire-worker-{index}"))
                .spawn(move || {
                    crate::handle::enter_worker(&context.handle, index);
                    let handler = factory(&context);
                    Worker::<H, T>::new(
                        index as u8,
                        poll,
                        listener,
                        rx,
                        handler,
                        setup,
                        options,
                        settings,
                    )
                    .and_then(Worker::run)
                })?;
            threads.push(thread);
        }
        Ok(Running {
            handle,
            threads,
            local: self.local,
        })
    }
}

/// A running server: its handle and its worker threads.
#[derive(Debug)]
pub struct Running {
    handle: ServerHandle,
    threads: Vec<JoinHandle<io::Result<()>>>,
    local: SocketAddr,
}

impl Running {
    /// The handle for sending to connections and shutting down.
    pub fn handle(&self) -> &ServerHandle {
        &self.handle
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// Waits for every worker to end (after [`ServerHandle::shutdown`]); returns the first
    /// error a worker stopped with (an I/O error of its poll), if any.
    pub fn join(self) -> io::Result<()> {
        let mut result = Ok(());
        for thread in self.threads {
            let outcome = thread
                .join()
                .unwrap_or_else(|_| Err(io::Error::other("a worker thread panicked")));
            if result.is_ok() {
                result = outcome;
            }
        }
        result
    }

    /// Shuts down with `grace` and waits (see [`ServerHandle::shutdown`]).
    pub fn shutdown(self, grace: Duration) -> io::Result<()> {
        self.handle.shutdown(grace);
        self.join()
    }
}
