//! The same keep-alive server as `server.rs` (the same checks, the same fixed response), on
//! one thread with an edge-triggered mio `Poll` (epoll) for every connection, for the
//! workloads with several requests in flight.
//!
//! With a thread per connection, eight connections put eight threads on the peer core, and at
//! eight requests in flight that core saturated first (the tokio suite, 2026-11-28: the
//! server core 0% idle, the client's 20%): the rates then measured the server's context
//! switches, the same for every client. One thread reading every ready connection per
//! wake-up costs the core far less per request, so the clients' own costs set the rate.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token};

use super::fixtures;
use super::server::{Input, Served, Server};
use crate::harness;

/// The listener's token; connections are their index in the slab.
const LISTENER: Token = Token(usize::MAX);

/// How long the thread waits for the clients' connections to close after [`Server::finish`]
/// (a client that failed cannot leave the thread behind forever).
const CLOSE_LIMIT: Duration = Duration::from_secs(30);

/// One connection: its request bytes and the answers the socket has not taken yet.
struct Conn {
    stream: TcpStream,
    input: Input,
    output: Vec<u8>,
    /// Registered for writable events (only while `output` waits for room).
    writable: bool,
}

/// Starts the server on an ephemeral 127.0.0.1 port, its thread pinned to `peer_core`.
pub(crate) fn spawn(peer_core: usize) -> Server {
    let listener = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind a loopback listener on 127.0.0.1:0");
    let addr = listener.local_addr().expect("the listener's address");
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = Arc::clone(&stop);
    let thread = thread::Builder::new()
        .name("http-evented".to_owned())
        .spawn(move || {
            harness::pin_to(peer_core);
            run(TcpListener::from_std(listener), &stopping)
                .unwrap_or_else(|e| panic!("the evented HTTP server failed: {e}"))
        })
        .expect("spawn the evented HTTP server thread");
    Server::from_parts(addr, stop, thread)
}

/// Serves until `stop` is set and every connection has closed.
fn run(mut listener: TcpListener, stop: &AtomicBool) -> io::Result<Served> {
    let response = fixtures::response();
    let mut poll = Poll::new()?;
    poll.registry()
        .register(&mut listener, LISTENER, Interest::READABLE)?;
    let mut events = Events::with_capacity(64);
    let mut conns: Vec<Option<Conn>> = Vec::new();
    let mut served = Served::default();
    let mut stopped_at: Option<Instant> = None;
    loop {
        if stopped_at.is_none() && stop.load(Ordering::Acquire) {
            stopped_at = Some(Instant::now());
        }
        if let Some(at) = stopped_at
            && (conns.iter().all(Option::is_none) || at.elapsed() > CLOSE_LIMIT)
        {
            return Ok(served);
        }
        match poll.poll(&mut events, Some(Duration::from_millis(50))) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        }
        for event in &events {
            if event.token() == LISTENER {
                accept(&listener, &poll, &mut conns, stop, &mut served)?;
                continue;
            }
            let index = event.token().0;
            let Some(conn) = conns[index].as_mut() else {
                continue;
            };
            if !serve(conn, &response, &mut served) {
                let mut conn = conns[index].take().expect("the connection just served");
                let _ = poll.registry().deregister(&mut conn.stream);
                continue;
            }
            let waiting = !conn.output.is_empty();
            if waiting != conn.writable {
                let interest = if waiting {
                    Interest::READABLE | Interest::WRITABLE
                } else {
                    Interest::READABLE
                };
                poll.registry()
                    .reregister(&mut conn.stream, Token(index), interest)?;
                conn.writable = waiting;
            }
        }
    }
}

/// Accepts every pending connection; after [`Server::finish`] the one that woke the thread
/// is dropped uncounted.
fn accept(
    listener: &TcpListener,
    poll: &Poll,
    conns: &mut Vec<Option<Conn>>,
    stop: &AtomicBool,
    served: &mut Served,
) -> io::Result<()> {
    loop {
        let mut stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if stop.load(Ordering::Acquire) {
            continue;
        }
        let _ = stream.set_nodelay(true);
        let index = conns.iter().position(Option::is_none).unwrap_or_else(|| {
            conns.push(None);
            conns.len() - 1
        });
        poll.registry()
            .register(&mut stream, Token(index), Interest::READABLE)?;
        conns[index] = Some(Conn {
            stream,
            input: Input::default(),
            output: Vec::new(),
            writable: false,
        });
        served.connections += 1;
    }
}

/// Reads what the socket holds, answers every complete request and writes what the socket
/// takes. False: the connection is done (closed by the client, failed, or rejected).
fn serve(conn: &mut Conn, response: &[u8], served: &mut Served) -> bool {
    loop {
        let room = conn.input.room();
        let wanted = room.len();
        match conn.stream.read(room) {
            Ok(0) => return false,
            Ok(n) => {
                conn.input.filled(n);
                let output = &mut conn.output;
                let answered = conn.input.answer(response, served, |bytes| {
                    output.extend_from_slice(bytes);
                    Ok(())
                });
                if answered.is_err() {
                    // The rejection, if the socket takes it now.
                    let _ = conn.stream.write(&conn.output);
                    return false;
                }
                // Edge-triggered: a read shorter than the room emptied the socket.
                if n < wanted {
                    break;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    while !conn.output.is_empty() {
        match conn.stream.write(&conn.output) {
            Ok(0) => return false,
            Ok(n) => {
                conn.output.drain(..n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    true
}
