//! Waiting for the signals that end a long-running command (`node`, `feed`): SIGTERM or
//! SIGINT, through tokio's handlers (installed on first use; other signals keep their
//! default actions).

/// Completes at the first SIGTERM or SIGINT after the call; never, if the handlers could
/// not be installed (the command then ends only by itself or by SIGKILL).
pub(crate) async fn shutdown() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
    }
}
