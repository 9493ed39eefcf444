//! Reaching connections from any thread: [`ConnId`] and [`ServerHandle`].

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use tickwire_codec::ws::{CloseCode, OpCode, SharedFrame};

/// A connection's identity: its worker, its slot in the worker and the slot's generation, so
/// an id kept after its connection closed never reaches the connection that reuses the slot.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnId(u64);

impl ConnId {
    pub(crate) fn new(worker: u8, slot: u32, generation: u32) -> Self {
        Self(
            u64::from(worker) << 56
                | u64::from(generation & GENERATION_MASK) << 32
                | u64::from(slot),
        )
    }

    /// The worker (thread) the connection lives on.
    pub fn worker(self) -> usize {
        (self.0 >> 56) as usize
    }

    pub(crate) fn slot(self) -> u32 {
        self.0 as u32
    }

    pub(crate) fn generation(self) -> u32 {
        (self.0 >> 32) as u32 & GENERATION_MASK
    }

    /// The id as one number (for logs and maps keyed by `u64`).
    pub fn as_u64(self) -> u64 {
        self.0
    }
}

/// Generations are kept in 24 bits (a slot is reused 16 million times before an id repeats).
pub(crate) const GENERATION_MASK: u32 = (1 << 24) - 1;

impl fmt::Debug for ConnId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ConnId({}:{}#{})",
            self.worker(),
            self.slot(),
            self.generation()
        )
    }
}

/// What another thread asks a worker to do.
#[derive(Debug)]
pub(crate) enum Command {
    Send(ConnId, OpCode, Vec<u8>),
    Shared(ConnId, SharedFrame),
    Close(ConnId, CloseCode, String),
    Shutdown(Duration),
}

/// The way into one worker: its queue and the waker of its poll.
#[derive(Debug)]
pub(crate) struct WorkerLink {
    pub(crate) commands: mpsc::Sender<Command>,
    pub(crate) waker: mio::Waker,
}

#[derive(Debug)]
pub(crate) struct HandleShared {
    pub(crate) workers: Vec<WorkerLink>,
    pub(crate) stopping: AtomicBool,
}

/// The server's errors seen from a [`ServerHandle`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HandleError {
    /// The id names no worker of this server.
    NoSuchWorker,
    /// The server has shut down (its workers are gone).
    Stopped,
}

impl fmt::Display for HandleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::NoSuchWorker => "no such worker",
            Self::Stopped => "the server has stopped",
        })
    }
}

impl std::error::Error for HandleError {}

/// Sends to any connection, closes it, or shuts the server down, from any thread (handlers
/// included). Cheap to clone. A command for a connection that has closed meanwhile is
/// dropped: ids are never reused, so it cannot reach another connection.
///
/// Each call hands the command to the connection's worker through a queue and wakes it: the
/// message is queued on the connection and written on that worker's next wake-up. Messages
/// sent through one handle to one connection keep their order.
#[derive(Debug, Clone)]
pub struct ServerHandle {
    pub(crate) shared: Arc<HandleShared>,
}

impl ServerHandle {
    /// Queues a text message on `id`.
    pub fn send_text(&self, id: ConnId, text: &str) -> Result<(), HandleError> {
        self.command(
            id.worker(),
            Command::Send(id, OpCode::Text, text.as_bytes().to_vec()),
        )
    }

    /// Queues a binary message on `id`.
    pub fn send_binary(&self, id: ConnId, payload: &[u8]) -> Result<(), HandleError> {
        self.command(
            id.worker(),
            Command::Send(id, OpCode::Binary, payload.to_vec()),
        )
    }

    /// Queues a frame encoded once for many connections: each gets a reference to the same
    /// bytes.
    pub fn send_shared(&self, id: ConnId, frame: &SharedFrame) -> Result<(), HandleError> {
        self.command(id.worker(), Command::Shared(id, frame.clone()))
    }

    /// Starts the close handshake on `id`.
    pub fn close(&self, id: ConnId, code: CloseCode, reason: &str) -> Result<(), HandleError> {
        self.command(id.worker(), Command::Close(id, code, reason.to_owned()))
    }

    /// Starts a graceful shutdown: every worker stops accepting, sends a close with 1001
    /// (going away) on each open connection and drops connections still in their opening
    /// handshake; a connection whose close handshake has not finished `grace` later is
    /// dropped. [`Running::join`](crate::Running::join) returns when every worker is done.
    pub fn shutdown(&self, grace: Duration) {
        if self.shared.stopping.swap(true, Ordering::AcqRel) {
            return;
        }
        for worker in 0..self.shared.workers.len() {
            let _ = self.command(worker, Command::Shutdown(grace));
        }
    }

    /// Number of worker threads.
    pub fn workers(&self) -> usize {
        self.shared.workers.len()
    }

    fn command(&self, worker: usize, command: Command) -> Result<(), HandleError> {
        let link = self
            .shared
            .workers
            .get(worker)
            .ok_or(HandleError::NoSuchWorker)?;
        link.commands
            .send(command)
            .map_err(|_| HandleError::Stopped)?;
        link.waker.wake().map_err(|_| HandleError::Stopped)
    }
}
