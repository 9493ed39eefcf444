//! The pool of one origin's connections: idle ones kept LIFO, a cap on how many exist, idle
//! expiry, and the background task that replaces a connection lost while in use.
//!
//! One `std::sync::Mutex` guards the idle list and the count; it is held for a few
//! instructions (and, for an idle connection due for a liveness check, one non-blocking
//! `recv(MSG_PEEK)`), never across an await. A request waiting for a connection (the pool at its
//! cap) waits on a [`Notify`], registered while the lock is held so that no return is missed.
//!
//! A [`Checkout`] is a claim on one of the `max_connections` places: holding a connection, or
//! reserving the place while one is being opened. Its `Drop` is where cancel safety lives: a
//! connection goes back to the idle list only if the codec's rules say it may
//! ([`Conn::release`]); otherwise it is closed and, when it was lost while in use, replaced in
//! the background.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::sync::futures::Notified;

use tickwire_codec::rest::Origin;
use tickwire_core::http::HttpClientError;

use super::conn::Conn;
use super::options::Options;

/// What every handle of one client shares.
#[derive(Debug)]
pub(crate) struct Shared {
    pub(crate) origin: Origin,
    pub(crate) options: Options,
    pool: Mutex<Idle>,
    available: Notify,
    opened: AtomicU64,
}

#[derive(Debug, Default)]
struct Idle {
    /// Idle connections, the most recently returned at the back. Boxed, here and in
    /// [`Checkout`]: a connection is about 1 KiB (mostly the response reader's header table),
    /// and a request moves it from the list to its checkout, into its response and back, five
    /// to eight copies that were about 2,000 instructions of `memcpy` per request.
    conns: VecDeque<Box<Conn>>,
    /// Places taken: idle connections, connections in use, and connections being opened.
    taken: usize,
}

/// A place in the pool, with the connection in it once there is one.
#[derive(Debug)]
pub(crate) struct Checkout {
    conn: Option<Box<Conn>>,
    shared: Arc<Shared>,
}

impl Shared {
    pub(crate) fn new(origin: Origin, options: Options) -> Self {
        Self {
            origin,
            options,
            pool: Mutex::new(Idle::default()),
            available: Notify::new(),
            opened: AtomicU64::new(0),
        }
    }

    /// Connections opened so far, by requests and by the background task.
    pub(crate) fn connections_opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }

    /// Idle connections in the pool now.
    pub(crate) fn idle_connections(&self) -> usize {
        self.lock().conns.len()
    }

    /// A connection for one request: the warmest idle one the rules let carry it, else a new
    /// one when the cap allows, else the next one returned.
    pub(crate) async fn checkout(self: &Arc<Self>) -> Result<Checkout, HttpClientError> {
        loop {
            let notified = self.available.notified();
            let mut notified = std::pin::pin!(notified);
            match self.try_checkout(notified.as_mut()) {
                Some(Some(conn)) => return Ok(self.claim(Some(conn))),
                Some(None) => {
                    let mut place = self.claim(None);
                    place.conn = Some(self.open().await?);
                    return Ok(place);
                }
                None => notified.await,
            }
        }
    }

    /// Under the lock: `Some(Some(conn))`, the warmest idle connection the rules let carry a
    /// request; `Some(None)`, a place taken for a new connection; `None`, the pool is at its
    /// cap and `notified` is registered, before the lock is released, for the next return.
    fn try_checkout(&self, notified: Pin<&mut Notified<'_>>) -> Option<Option<Box<Conn>>> {
        let mut idle = self.lock();
        if let Some(conn) = self.pop_ready(&mut idle, Instant::now()) {
            return Some(Some(conn));
        }
        if idle.taken < self.options.max_connections {
            idle.taken += 1;
            return Some(None);
        }
        notified.enable();
        None
    }

    /// The warmest idle connection the rules let carry a request, if there is one: the
    /// checkout of back-to-back requests, done before any future is made. (Going through
    /// [`checkout`](Self::checkout) moved its whole future, sized for a connect, into the
    /// deadline wrapper on every request.)
    /// `now`: the request's start, read once for its deadline and for this.
    pub(crate) fn checkout_idle(self: &Arc<Self>, now: Instant) -> Option<Checkout> {
        let conn = self.pop_ready(&mut self.lock(), now)?;
        Some(self.claim(Some(conn)))
    }

    /// Under the lock: closes what expired, then pops idle connections, newest first, until
    /// one may carry a request; the others are dropped (expired, closed by the server while
    /// idle, or out of step).
    fn pop_ready(&self, idle: &mut Idle, now: Instant) -> Option<Box<Conn>> {
        self.expire(idle, now);
        let max_idle = self.options.idle_timeout;
        while let Some(mut conn) = idle.conns.pop_back() {
            // The last one left was the front, which `expire` has just found unexpired at
            // this `now`: asking again cost a clock subtraction (about 50 instructions) on
            // every request of a client with one idle connection.
            let checked = idle.conns.is_empty();
            if (checked || !conn.idle_expired(now, max_idle)) && conn.ready(now) {
                return Some(conn);
            }
            idle.taken -= 1;
        }
        None
    }

    /// Opens a connection for a place already taken.
    pub(crate) async fn open(&self) -> Result<Box<Conn>, HttpClientError> {
        let conn = Box::new(Conn::open(&self.origin, &self.options).await?);
        self.opened.fetch_add(1, Ordering::Relaxed);
        Ok(conn)
    }

    fn claim(self: &Arc<Self>, conn: Option<Box<Conn>>) -> Checkout {
        Checkout {
            conn,
            shared: Arc::clone(self),
        }
    }

    /// Closes idle connections unused for `idle_timeout`, from the front, where the oldest
    /// returns are. (A connection returned late, its response held a while, may sit behind a
    /// younger one; `try_checkout` checks the one it pops too.)
    fn expire(&self, idle: &mut Idle, now: Instant) {
        let max_idle = self.options.idle_timeout;
        while idle
            .conns
            .front()
            .is_some_and(|conn| conn.idle_expired(now, max_idle))
        {
            idle.conns.pop_front();
            idle.taken -= 1;
        }
    }

    fn lock(&self) -> MutexGuard<'_, Idle> {
        // A panic while the lock was held cannot leave the list half-changed: every change
        // is one push, pop or count update.
        self.pool
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Gives a place back: `conn` to the idle list, or the place freed.
    fn put_back(&self, conn: Option<Box<Conn>>) {
        let mut idle = self.lock();
        match conn {
            Some(conn) => idle.conns.push_back(conn),
            None => idle.taken -= 1,
        }
        drop(idle);
        self.available.notify_one();
    }
}

impl Checkout {
    /// The connection in this place.
    pub(crate) fn conn(&self) -> &Conn {
        self.conn
            .as_deref()
            .expect("a checkout handed out holds a connection")
    }

    /// The connection in this place, mutably.
    pub(crate) fn conn_mut(&mut self) -> &mut Conn {
        self.conn
            .as_deref_mut()
            .expect("a checkout handed out holds a connection")
    }

    /// Replaces the connection with a new one in the same place (the resend of an idempotent
    /// request). The old one is closed first; if opening fails or is cancelled, the place is
    /// freed.
    pub(crate) async fn reconnect(&mut self) -> Result<(), HttpClientError> {
        self.conn = None;
        self.conn = Some(self.shared.open().await?);
        Ok(())
    }
}

impl Drop for Checkout {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            // A place reserved for a connection that was never opened.
            self.shared.put_back(None);
            return;
        };
        if conn.release() {
            self.shared.put_back(Some(conn));
            return;
        }
        // Lost while in use: closed here, its place kept for a replacement opened in the
        // background, so that the next request does not connect on its own path.
        drop(conn);
        let place = Checkout {
            conn: None,
            shared: Arc::clone(&self.shared),
        };
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => {
                runtime.spawn(refill(place));
            }
            Err(_) => drop(place),
        }
    }
}

/// Opens a connection into `place` and leaves it idle in the pool, unless every handle of
/// the client is gone by then. A failure frees the place: the next request connects itself
/// (and reports the error), so a server that is down is not retried in a loop.
async fn refill(mut place: Checkout) {
    let opened = tokio::time::timeout(REFILL_LIMIT, place.shared.open()).await;
    if let Ok(Ok(conn)) = opened
        && Arc::strong_count(&place.shared) > 1
    {
        place.conn = Some(conn);
    }
}

/// Bound on a background reconnect when no connect timeout is configured.
const REFILL_LIMIT: Duration = Duration::from_secs(30);
