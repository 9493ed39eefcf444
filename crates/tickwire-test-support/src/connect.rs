//! Addresses for connect tests on loopback: a black hole (connects to it never complete)
//! beside a good listener on the same port of another loopback address, as a resolver that
//! returns a dead address before a live one gives them; and [`find_error`], the typed error
//! inside a client's error.

use std::io;
use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};

/// A listener that never accepts, its accept queue full: the kernel drops further SYNs, so
/// a connect to [`addr`](Self::addr) neither completes nor fails until its own timeout.
pub struct BlackHole {
    /// Where connects hang.
    pub addr: SocketAddr,
    _listener: Socket,
    _fillers: Vec<Socket>,
}

/// A black hole on `black` and a listener that accepts on `good`, on one port.
pub fn black_hole_beside(black: Ipv4Addr, good: Ipv4Addr) -> io::Result<(BlackHole, TcpListener)> {
    for _ in 0..50 {
        let listener = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        listener.bind(&SocketAddr::from((black, 0)).into())?;
        listener.listen(0)?;
        let addr = listener
            .local_addr()?
            .as_socket()
            .ok_or_else(|| io::Error::other("not an inet address"))?;
        let Ok(live) = TcpListener::bind((good, addr.port())) else {
            continue; // The port is taken on the good address: another one.
        };
        let fillers = fill(addr)?;
        return Ok((
            BlackHole {
                addr,
                _listener: listener,
                _fillers: fillers,
            },
            live,
        ));
    }
    Err(io::Error::other("no port free on both loopback addresses"))
}

/// Connects to `addr` until a connect no longer completes: the accept queue is full.
fn fill(addr: SocketAddr) -> io::Result<Vec<Socket>> {
    let mut fillers = Vec::new();
    for _ in 0..32 {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
        match socket.connect_timeout(&addr.into(), Duration::from_millis(200)) {
            Ok(()) => fillers.push(socket),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Ok(fillers),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("the accept queue never filled"))
}

/// The error of type `T` in `error`'s source chain, looking inside every `io::Error` on the
/// way (an `io::Error`'s `source` is its inner error's source; the inner one is `get_ref`).
pub fn find_error<'a, T: std::error::Error + 'static>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a T> {
    let mut next = Some(error);
    while let Some(error) = next {
        let inner = error
            .downcast_ref::<io::Error>()
            .and_then(|io| io.get_ref())
            .and_then(|inner| inner.downcast_ref::<T>());
        if let Some(found) = error.downcast_ref::<T>().or(inner) {
            return Some(found);
        }
        next = error.source();
    }
    None
}
