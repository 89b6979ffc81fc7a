//! Graceful shutdown on SIGTERM and SIGINT.
//!
//! actix-server by itself stops gracefully only on SIGTERM: SIGINT and SIGQUIT stop it at once,
//! dropping requests in flight. We hand it our own stop signal instead, so that both SIGTERM
//! (orchestrators) and SIGINT (Ctrl-C) stop it gracefully: the listener closes, keep-alive
//! connections close after their current response, and requests in flight get
//! `SHUTDOWN_TIMEOUT_SECONDS` to finish. A second signal ends the process at once.

use std::time::Duration;

use actix_web::rt::signal::unix::{Signal, SignalKind, signal};
use anyhow::Context as _;

/// Once the HTTP server has stopped, the background runtime shuts down: tasks still on it (the
/// automation worker's last tick) are cancelled, and work already on a blocking thread gets this
/// long to end. A cancelled task commits nothing: its open transaction is rolled back with its
/// connection.
pub const RUNTIME_SHUTDOWN: Duration = Duration::from_secs(5);

/// The exit code after a second signal cut the graceful shutdown short.
const FORCED_EXIT: i32 = 130;

/// SIGTERM and SIGINT, caught from the moment [`StopSignals::install`] runs.
pub struct StopSignals {
    term: Signal,
    int: Signal,
    timeout: Duration,
}

impl StopSignals {
    /// Installs the handlers now (on the actix runtime), so that a signal arriving before the server
    /// runs starts a graceful stop instead of killing the process.
    pub fn install(timeout: Duration) -> anyhow::Result<Self> {
        let term = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
        let int = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
        Ok(Self { term, int, timeout })
    }

    /// Resolves at the first SIGTERM or SIGINT, which starts the graceful stop; from then on, another
    /// one exits at once.
    pub async fn received(mut self) {
        let name = self.next().await;
        tracing::info!(
            signal = name,
            timeout_seconds = self.timeout.as_secs(),
            "shutting down: no new connections, finishing the requests in flight"
        );
        actix_web::rt::spawn(async move {
            let name = self.next().await;
            tracing::warn!(signal = name, "second signal: exiting without finishing the requests in flight");
            std::process::exit(FORCED_EXIT);
        });
    }

    async fn next(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}
