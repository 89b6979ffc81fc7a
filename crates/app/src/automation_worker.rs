//! The background worker that runs browser automations: it turns due schedules into runs and
//! executes pending runs. Every server instance runs one; the store's claims make sure each due
//! schedule and each pending run is taken by exactly one instance.

use std::sync::Arc;
use std::time::Duration;

use compliance_domain::automation::{AutomationRun, BrowserAutomation, RunTrigger};
use compliance_ports::{AutomationRepository, BlobStore, BrowserRunner, CaptureRequest, Clock, RepoError};
use tokio::sync::Notify;

use crate::Ports;

/// Schedules looked at per tick.
const DUE_BATCH: usize = 100;

/// Tunables of the worker.
#[derive(Debug, Clone, Copy)]
pub struct AutomationSettings {
    /// The whole run: launch, navigation, load and screenshot.
    pub run_timeout: Duration,
    /// How often the worker looks for due schedules and pending runs when nothing wakes it.
    pub poll_interval: Duration,
    /// A run still `running` after this long belongs to an instance that stopped: it is failed.
    /// Always longer than a run can take (see [`AutomationSettings::stale_after`]).
    pub stale_after: Duration,
    /// Schedules may not fire more often than this.
    pub min_interval: Duration,
    /// Runs executed at once by one instance (the browser adapter has its own bound too).
    pub concurrency: usize,
}

impl Default for AutomationSettings {
    fn default() -> Self {
        Self {
            run_timeout: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            stale_after: Duration::from_secs(10 * 60),
            min_interval: Duration::from_secs(60),
            concurrency: 2,
        }
    }
}

/// What a run may take beyond its own timeout: starting the browser and connecting to it.
const LAUNCH_ALLOWANCE: Duration = Duration::from_secs(60);

impl AutomationSettings {
    /// The longest a run may take, browser start included.
    pub fn run_limit(&self) -> Duration {
        self.run_timeout + LAUNCH_ALLOWANCE
    }

    /// When a running run counts as abandoned: never while it may still be running.
    pub fn stale_cutoff(&self) -> Duration {
        self.stale_after.max(self.run_limit() * 2)
    }
}

pub struct AutomationWorker {
    automations: Arc<dyn AutomationRepository>,
    browser: Arc<dyn BrowserRunner>,
    blobs: Arc<dyn BlobStore>,
    clock: Arc<dyn Clock>,
    settings: AutomationSettings,
    work: Arc<Notify>,
}

impl AutomationWorker {
    pub(crate) fn new(ports: &Ports, settings: AutomationSettings, work: Arc<Notify>) -> Self {
        Self {
            automations: ports.automations.clone(),
            browser: ports.browser.clone(),
            blobs: ports.blobs.clone(),
            clock: ports.clock.clone(),
            settings,
            work,
        }
    }

    /// Works until the task is dropped or aborted: a tick, then a wait for a poke or the poll
    /// interval. A run cut short by shutdown stays `running` until an instance fails it as stale.
    /// Each tick runs as its own task, so that a panic in one is logged and the next tick comes.
    pub async fn run(self) {
        let worker = Arc::new(self);
        loop {
            let tick = tokio::spawn({
                let worker = worker.clone();
                async move { worker.tick().await }
            });
            if let Err(error) = tick.await {
                tracing::error!(%error, "an automation worker tick failed; going on");
            }
            tokio::select! {
                () = worker.work.notified() => {}
                () = tokio::time::sleep(worker.settings.poll_interval) => {}
            }
        }
    }

    /// One pass: fail stale runs, start due schedules, execute every pending run.
    pub async fn tick(self: &Arc<Self>) {
        if let Err(error) = self.fail_stale().await {
            tracing::warn!(%error, "could not fail stale automation runs");
        }
        if let Err(error) = self.start_due().await {
            tracing::warn!(%error, "could not start due automations");
        }
        // Batches of up to `concurrency` runs at once, until none is pending.
        loop {
            let mut batch = tokio::task::JoinSet::new();
            while batch.len() < self.settings.concurrency.max(1) {
                match self.automations.claim_pending(self.clock.now()).await {
                    Ok(Some((run, automation))) => {
                        let worker = Arc::clone(self);
                        batch.spawn(async move { worker.execute(run, &automation).await });
                    }
                    Ok(None) => break,
                    Err(error) => {
                        tracing::warn!(%error, "could not claim a pending automation run");
                        break;
                    }
                }
            }
            if batch.is_empty() {
                return;
            }
            while let Some(done) = batch.join_next().await {
                if let Err(error) = done {
                    tracing::error!(%error, "an automation run's task failed");
                }
            }
        }
    }

    async fn fail_stale(&self) -> Result<(), RepoError> {
        let stale = time::Duration::try_from(self.settings.stale_cutoff()).unwrap_or(time::Duration::hours(1));
        let cutoff = self.clock.now().plus(-stale);
        let failed = self
            .automations
            .fail_stale_runs(cutoff, "the run was interrupted (its server stopped); run it again")
            .await?;
        if failed > 0 {
            tracing::warn!(failed, "failed automation runs left running by a stopped instance");
        }
        Ok(())
    }

    async fn start_due(&self) -> Result<(), RepoError> {
        let now = self.clock.now();
        for automation in self.automations.due(now, DUE_BATCH).await? {
            let Some(previous) = automation.next_run_at else { continue };
            let next = automation.schedule.as_ref().and_then(|s| s.next_after(now));
            let run = AutomationRun::pending(&automation, RunTrigger::Schedule, now);
            self.automations.claim_due(&automation.id, previous, next, &run).await?;
        }
        Ok(())
    }

    async fn execute(&self, mut run: AutomationRun, automation: &BrowserAutomation) {
        let request = CaptureRequest {
            url: automation.target_url.clone(),
            instruction: automation.instruction.clone(),
            timeout: self.settings.run_timeout,
        };
        let capture = tokio::time::timeout(self.settings.run_limit(), self.browser.capture(&request)).await;
        let outcome = match capture {
            Ok(Ok(capture)) => {
                let key = run.screenshot_blob_key();
                match self.blobs.put(&key, capture.png, "image/png").await {
                    Ok(()) => Ok(key),
                    Err(error) => {
                        tracing::warn!(%error, run = %run.id, "could not store a screenshot");
                        Err("the screenshot could not be stored".to_owned())
                    }
                }
            }
            Ok(Err(error)) => Err(error.to_string()),
            Err(_) => Err(format!("the run did not finish within {} seconds", self.settings.run_limit().as_secs())),
        };
        run.finish(outcome, self.clock.now());
        if let Err(error) = self.automations.finish_run(&run).await {
            // Deleted or failed as stale meanwhile: the screenshot has no run left to show it.
            if let Some(key) = &run.screenshot_key
                && let Err(error) = self.blobs.delete(key).await
            {
                tracing::warn!(%error, blob = %key, "could not remove an orphaned screenshot");
            }
            tracing::warn!(%error, run = %run.id, "could not record an automation run's outcome");
        }
    }
}
