//! Opening many WebSocket client connections at once from one thread, for both load
//! generators (the echo suite's `generator.rs` and the pub/sub suite's `pubsub/generator.rs`):
//! non-blocking sockets on one mio `Poll` (epoll, edge-triggered), each bound to one of a few
//! 127.0.0.x source addresses, SO_LINGER 0 so that closing leaves no TIME_WAIT, opened in
//! bounded batches and upgraded with a request the caller gives.
//!
//! Owns the connect and the upgrade only: what the connections carry afterwards, and what
//! an upgrade response must say beyond the status line, belong to the caller.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use mio::net::TcpStream;
use mio::{Events, Interest, Poll, Token};
use socket2::{Domain, Protocol, Socket, Type};

/// Source addresses 127.0.0.1 ..= 127.0.0.SOURCE_ADDRESSES, used in turn: each has its own
/// ephemeral port range, so 19,000 connections stay far from exhausting one.
const SOURCE_ADDRESSES: usize = 4;

/// Handshakes in progress at once: below every server's accept backlog (std's is 128), so a
/// burst of SYNs is never dropped.
const HANDSHAKES_AT_ONCE: usize = 100;

/// A handshake not done after this long is retried on a new socket.
const HANDSHAKE_LIMIT: Duration = Duration::from_secs(3);

/// Attempts per connection before the whole connect fails.
const ATTEMPTS: u8 = 5;

/// EINPROGRESS on Linux: a non-blocking connect has started.
const EINPROGRESS: i32 = 115;

/// What to connect and how to tell a good upgrade response.
pub struct Dial<'a> {
    /// The server.
    pub server: SocketAddr,
    /// Connections to open.
    pub count: usize,
    /// Time to open all of them.
    pub budget: Duration,
    /// The upgrade request every connection sends.
    pub request: &'a [u8],
    /// The verdict on the response bytes read so far: Ok(true) once upgraded, Ok(false)
    /// while the head is incomplete, Err for a refusal another socket will not fix.
    pub accept: &'a dyn Fn(&[u8]) -> Result<bool, String>,
}

/// Open connections, each registered on `poll` with its index as token, for readable and
/// writable events.
pub struct Dialed {
    /// The poll every connection is registered on.
    pub poll: Poll,
    /// The connections, in token order.
    pub streams: Vec<TcpStream>,
}

impl Dial<'_> {
    /// Opens every connection. Err when they are not all open within the budget, a
    /// connection fails `ATTEMPTS` times, or the server refuses the upgrade.
    pub fn open(&self) -> Result<Dialed, String> {
        let mut poll = Poll::new().map_err(|e| format!("epoll: {e}"))?;
        let mut events = Events::with_capacity(1024);
        let mut streams: Vec<TcpStream> = Vec::with_capacity(self.count);
        let mut handshakes: Vec<Handshake> = Vec::with_capacity(self.count);
        let mut buffer = vec![0; 16 << 10];
        let started = Instant::now();
        let mut last_scan = started;
        let (mut open, mut upgrading) = (0, 0);
        while open < self.count {
            while upgrading < HANDSHAKES_AT_ONCE && streams.len() < self.count {
                streams.push(self.open_socket(&poll, streams.len())?);
                handshakes.push(Handshake::new());
                upgrading += 1;
            }
            if started.elapsed() > self.budget {
                return Err(format!(
                    "{open} of {} connections open after {} s",
                    self.count,
                    self.budget.as_secs()
                ));
            }
            poll.poll(&mut events, Some(Duration::from_millis(10)))
                .map_err(|e| format!("epoll_wait: {e}"))?;
            let ready: Vec<usize> = events.iter().map(|e| e.token().0).collect();
            let scan = last_scan.elapsed() > Duration::from_millis(250);
            let stuck: Vec<usize> = if scan {
                last_scan = Instant::now();
                (0..handshakes.len())
                    .filter(|&i| {
                        !handshakes[i].open && handshakes[i].since.elapsed() > HANDSHAKE_LIMIT
                    })
                    .collect()
            } else {
                Vec::new()
            };
            for index in ready {
                let handshake = &mut handshakes[index];
                if handshake.open {
                    continue;
                }
                match self.advance(&mut streams[index], handshake, &mut buffer) {
                    Ok(true) => {
                        handshake.open = true;
                        handshake.head = Vec::new();
                        open += 1;
                        upgrading -= 1;
                    }
                    Ok(false) => {}
                    Err(Step::Retry(why)) => {
                        self.retry(&poll, &mut streams[index], index, handshake, &why)?;
                    }
                    Err(Step::Fail(why)) => return Err(why),
                }
            }
            for index in stuck {
                if !handshakes[index].open {
                    let handshake = &mut handshakes[index];
                    self.retry(&poll, &mut streams[index], index, handshake, "timed out")?;
                }
            }
        }
        Ok(Dialed { poll, streams })
    }

    /// Makes the socket for connection `index` (bound to its source address, nodelay, SO_LINGER
    /// 0), starts its connect and registers it.
    fn open_socket(&self, poll: &Poll, index: usize) -> Result<TcpStream, String> {
        let socket = || -> io::Result<Socket> {
            let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
            socket.set_nonblocking(true)?;
            socket.set_tcp_nodelay(true)?;
            socket.set_linger(Some(Duration::ZERO))?;
            socket.set_reuse_address(true)?;
            let source = Ipv4Addr::new(127, 0, 0, 1 + (index % SOURCE_ADDRESSES) as u8);
            socket.bind(&SocketAddr::from((source, 0)).into())?;
            match socket.connect(&self.server.into()) {
                Err(e) if e.raw_os_error() != Some(EINPROGRESS) => Err(e),
                _ => Ok(socket),
            }
        };
        let socket = socket().map_err(|e| format!("connection {index}: {e}"))?;
        let mut stream = TcpStream::from_std(socket.into());
        poll.registry()
            .register(
                &mut stream,
                Token(index),
                Interest::READABLE | Interest::WRITABLE,
            )
            .map_err(|e| format!("epoll_ctl: {e}"))?;
        Ok(stream)
    }

    /// Moves a connection's handshake on after an event: Ok(true) once upgraded.
    fn advance(
        &self,
        stream: &mut TcpStream,
        handshake: &mut Handshake,
        buffer: &mut [u8],
    ) -> Result<bool, Step> {
        if !handshake.requested {
            if let Ok(Some(e)) = stream.take_error() {
                return Err(Step::Retry(e.to_string()));
            }
            if stream.peer_addr().is_err() {
                // Not connected yet (or refused; the error event says which).
                return Ok(false);
            }
            stream
                .write_all(self.request)
                .map_err(|e| Step::Retry(format!("writing the upgrade request: {e}")))?;
            handshake.requested = true;
        }
        loop {
            match stream.read(buffer) {
                Ok(0) => return Err(Step::Retry("closed during the upgrade".to_owned())),
                Ok(n) => handshake.head.extend_from_slice(&buffer[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Step::Retry(e.to_string())),
            }
        }
        (self.accept)(&handshake.head).map_err(Step::Fail)
    }

    /// Replaces connection `index`'s socket with a new one, or Err after `ATTEMPTS`.
    fn retry(
        &self,
        poll: &Poll,
        stream: &mut TcpStream,
        index: usize,
        handshake: &mut Handshake,
        why: &str,
    ) -> Result<(), String> {
        if handshake.attempts >= ATTEMPTS {
            return Err(format!(
                "connection {index} failed {ATTEMPTS} times (last: {why})"
            ));
        }
        let _ = poll.registry().deregister(stream);
        *stream = self.open_socket(poll, index)?;
        *handshake = Handshake {
            attempts: handshake.attempts + 1,
            ..Handshake::new()
        };
        Ok(())
    }
}

/// A connection's upgrade in progress.
struct Handshake {
    attempts: u8,
    since: Instant,
    requested: bool,
    open: bool,
    head: Vec<u8>,
}

impl Handshake {
    fn new() -> Self {
        Self {
            attempts: 1,
            since: Instant::now(),
            requested: false,
            open: false,
            head: Vec::new(),
        }
    }
}

/// Why a handshake step stopped: worth another socket, or a refusal that another will not fix.
enum Step {
    Retry(String),
    Fail(String),
}
