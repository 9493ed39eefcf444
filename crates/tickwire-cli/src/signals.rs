//! Waiting for the signals that end a long-running command (`node`, `feed`): SIGTERM or
//! SIGINT, through tokio's handlers (other signals keep their default actions). A command
//! that prints before it waits installs the handlers first ([`Shutdown::install`]), so a
//! signal sent after its first line is never met by the default action.

use tokio::signal::unix::{Signal, SignalKind, signal};

/// SIGTERM and SIGINT handlers, installed.
pub(crate) struct Shutdown {
    term: Signal,
    int: Signal,
}

impl Shutdown {
    /// Installs both handlers now; call within a tokio runtime's context.
    pub(crate) fn install() -> Result<Self, String> {
        let install = |kind| signal(kind).map_err(|e| format!("signal handlers: {e}"));
        Ok(Self {
            term: install(SignalKind::terminate())?,
            int: install(SignalKind::interrupt())?,
        })
    }

    /// Completes at the first SIGTERM or SIGINT since [`install`](Self::install).
    pub(crate) async fn wait(mut self) {
        tokio::select! {
            _ = self.term.recv() => {}
            _ = self.int.recv() => {}
        }
    }
}

/// Completes at the first SIGTERM or SIGINT after the call; never, if the handlers could
/// not be installed (the command then ends only by itself or by SIGKILL).
pub(crate) async fn shutdown() {
    match Shutdown::install() {
        Ok(shutdown) => shutdown.wait().await,
        Err(_) => std::future::pending().await,
    }
}
