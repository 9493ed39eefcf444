//! Addresses for connect tests on loopback: a black hole (connects to it never complete)
//! beside a good listener on the same port of another loopback address, as a resolver that
//! returns a dead address before a live one gives them; [`in_new_netns`], a network
//! namespace of the test's own (IPv6 and IPv4 on its loopback); and [`find_error`], the typed
//! error inside a client's error.

use std::io;
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
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

/// A black hole on `black` and a listener that accepts on `good`, on one port (the two
/// addresses of one family or of both).
pub fn black_hole_beside(
    black: impl Into<IpAddr>,
    good: impl Into<IpAddr>,
) -> io::Result<(BlackHole, TcpListener)> {
    let (black, good) = (black.into(), good.into());
    for _ in 0..50 {
        let black_addr = SocketAddr::new(black, 0);
        let listener = Socket::new(
            Domain::for_address(black_addr),
            Type::STREAM,
            Some(Protocol::TCP),
        )?;
        listener.bind(&black_addr.into())?;
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
        let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
        match socket.connect_timeout(&addr.into(), Duration::from_millis(200)) {
            Ok(()) => fillers.push(socket),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Ok(fillers),
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("the accept queue never filled"))
}

/// What a [`recording`] resolver was asked: each host and port, in order.
pub type Asked = Arc<Mutex<Vec<(String, u16)>>>;

/// A resolver hook (a client's `ConnectOptions::with_resolver` takes the closure) that
/// answers `answer` to every name and records what it was asked.
pub fn recording(
    answer: Vec<SocketAddr>,
) -> (
    impl Fn(&str, u16) -> io::Result<Vec<SocketAddr>> + Send + Sync + 'static,
    Asked,
) {
    let asked = Asked::default();
    let record = asked.clone();
    let resolver = move |host: &str, port: u16| {
        record
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((host.to_owned(), port));
        Ok(answer.clone())
    };
    (resolver, asked)
}

/// Runs `test` on a thread of its own in a new network namespace (`unshare(CLONE_NEWNET)`,
/// which needs `CAP_SYS_ADMIN`: the tests run as root) whose loopback is up, with 127.0.0.1
/// and ::1 on it and nothing else: the sockets `test` opens, and those of the threads it
/// starts, are in that namespace. A thread that cannot have the namespace panics, naming why.
#[cfg(target_os = "linux")]
pub fn in_new_netns<T: Send + 'static>(test: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        #[expect(unsafe_code, reason = "unshare(2), one call; docs/UNSAFE.md")]
        // SAFETY: CLONE_NEWNET moves only this thread into a new network namespace; it
        // shares no memory, descriptors or credentials differently afterwards.
        let unshared = unsafe { libc::unshare(libc::CLONE_NEWNET) };
        assert_eq!(
            unshared,
            0,
            "unshare(CLONE_NEWNET) (needs CAP_SYS_ADMIN): {}",
            io::Error::last_os_error()
        );
        // `ip` runs in this thread's namespace: a child starts in its parent thread's.
        let up = std::process::Command::new("ip")
            .args(["link", "set", "lo", "up"])
            .status()
            .expect("ip(8) from iproute2, to bring the namespace's loopback up");
        assert!(up.success(), "ip link set lo up: {up}");
        test()
    })
    .join()
    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
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
