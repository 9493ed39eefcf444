//! What the async HTTP client tests add to the scripted servers of `tickwire`'s
//! `tests/http_support` (included beside this module): both runtimes, a client builder for
//! a loopback port, and a server that answers many connections at once, counting them.

use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use tickwire_tokio::{HttpClient, HttpClientBuilder};

use super::http_support::{Conn, PATIENCE, Received, Server};

/// Runs `test` on a current_thread runtime, then (a fresh instance) on a multi_thread one.
/// Both with time and I/O enabled.
pub(crate) fn on_both_runtimes<F: Future<Output = ()>>(test: impl Fn() -> F) {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(test());
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(test());
}

/// The scripted server's result, waited for off the runtime's threads (so that tasks the
/// client left, such as a background reconnect, still run). Drop the client first.
pub(crate) async fn joined<T: Send + 'static>(server: Server<T>) -> T {
    tokio::task::spawn_blocking(move || server.join())
        .await
        .unwrap()
}

/// [`ManyServer::stop`], waited for off the runtime's threads. Drop the client first.
pub(crate) async fn stopped(server: ManyServer) -> (usize, usize) {
    tokio::task::spawn_blocking(move || server.stop())
        .await
        .unwrap()
}

/// A client for the server on `port`, its connect and reads bounded by [`PATIENCE`].
pub(crate) fn client(port: u16) -> HttpClientBuilder {
    HttpClient::builder(&format!("http://127.0.0.1:{port}"))
        .connect_timeout(Some(PATIENCE))
        .read_timeout(Some(PATIENCE))
}

/// A server answering every connection on its own thread, each request with what `answer`
/// returns, until [`stop`](Self::stop).
pub(crate) struct ManyServer {
    port: u16,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    requests: Arc<AtomicUsize>,
    acceptor: JoinHandle<Vec<JoinHandle<()>>>,
}

impl ManyServer {
    pub(crate) fn start(answer: impl Fn(&Received) -> Vec<u8> + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(AtomicUsize::new(0));
        let answer = Arc::new(answer);
        let acceptor = {
            let (stop, accepted, requests) = (stop.clone(), accepted.clone(), requests.clone());
            thread::spawn(move || {
                let mut workers = Vec::new();
                while !stop.load(Ordering::SeqCst) {
                    let Ok((stream, _)) = listener.accept() else {
                        thread::sleep(Duration::from_millis(1));
                        continue;
                    };
                    accepted.fetch_add(1, Ordering::SeqCst);
                    stream.set_nonblocking(false).unwrap();
                    stream.set_nodelay(true).unwrap();
                    stream.set_read_timeout(Some(PATIENCE)).unwrap();
                    stream.set_write_timeout(Some(PATIENCE)).unwrap();
                    let (answer, requests) = (answer.clone(), requests.clone());
                    workers.push(thread::spawn(move || {
                        let mut conn = Conn::new(stream);
                        while let Some(request) = conn.read_request() {
                            requests.fetch_add(1, Ordering::SeqCst);
                            // The client may have given up on this request and closed.
                            if !conn.try_send(&answer(&request)) {
                                break;
                            }
                        }
                    }));
                }
                workers
            })
        };
        Self {
            port,
            stop,
            accepted,
            requests,
            acceptor,
        }
    }

    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    /// Connections accepted so far.
    pub(crate) fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    /// Stops accepting and waits for every connection to end (drop the client first);
    /// returns `(connections accepted, requests read)`.
    pub(crate) fn stop(self) -> (usize, usize) {
        self.stop.store(true, Ordering::SeqCst);
        let counts = (self.accepted(), self.requests.load(Ordering::SeqCst));
        for worker in self.acceptor.join().unwrap() {
            worker.join().unwrap();
        }
        counts
    }
}
