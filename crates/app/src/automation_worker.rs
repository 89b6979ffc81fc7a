//! The background worker that runs browser automations: it turns due schedules into runs and
//! executes pending runs. Every server instance runs one; the store's claims make sure each due
//! schedule and each pending run is taken by exactly one instance.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use compliance_domain::allowed_host::AllowedHostUse;
use compliance_domain::automation::{AutomationRun, BrowserAutomation, Instruction, RunTrigger, Verdict};
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{
    AllowedHostRepository, AutomationRepository, BlobStore, BrowserPage, BrowserRunner, Clock, RepoError,
};
use tokio::sync::Notify;

use crate::Ports;
use crate::audit::{AUTOMATION_RUN, AuditTrail, Provenance, scheduled_run_action};
use crate::automation_agent::{AgentExecutor, AgentRun, AgentSettings};
use crate::automation_recorder::RunRecorder;
use crate::automation_report::TaskReporter;
use crate::automation_secrets::{AutomationSecrets, TypedSecrets};
use crate::automation_steps::StepExecutor;

/// Schedules looked at per tick.
const DUE_BATCH: usize = 100;
/// Stale runs read at a time.
const STALE_BATCH: usize = 100;
/// The error of a run its instance left running.
const INTERRUPTED: &str = "the run was interrupted (its server stopped); run it again";
/// Expired runs removed per statement of the retention sweep.
const RETENTION_BATCH: usize = 500;
/// How often the retention sweep runs (by the worker's clock).
const RETENTION_EVERY: time::Duration = time::Duration::hours(1);

/// Tunables of the worker.
#[derive(Debug, Clone)]
pub struct AutomationSettings {
    /// Each navigation or load of a run's page, and the whole run's work after the browser started.
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
    /// `AUTOMATION_ALLOWED_HOSTS`: the hosts an automation may reach at internal addresses, and the
    /// only ones its `allowedOrigins` may name over plain `http`.
    pub allowed_hosts: Vec<String>,
    /// Runs of one organization executed at once by one instance, so that one tenant's runs
    /// cannot take every browser; 1 by default.
    pub runs_per_organization: usize,
    /// Finished runs older than this are removed with their screenshots.
    pub run_retention: Duration,
    /// The bounds of free-text (agent) runs.
    pub agent: AgentSettings,
}

impl Default for AutomationSettings {
    fn default() -> Self {
        Self {
            run_timeout: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            stale_after: Duration::from_secs(10 * 60),
            min_interval: Duration::from_secs(60),
            concurrency: 2,
            allowed_hosts: Vec::new(),
            runs_per_organization: 1,
            run_retention: Duration::from_secs(90 * 24 * 60 * 60),
            agent: AgentSettings::default(),
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

/// Runs due schedules and pending runs in the browser;
/// [`App::take_worker`](crate::App::take_worker) hands it to the process that runs it in the
/// background.
pub struct AutomationWorker {
    automations: Arc<dyn AutomationRepository>,
    browser: Arc<dyn BrowserRunner>,
    /// The internal hosts the operator granted to each organization.
    grants: Arc<dyn AllowedHostRepository>,
    blobs: Arc<dyn BlobStore>,
    clock: Arc<dyn Clock>,
    secrets: AutomationSecrets,
    agent: AgentExecutor,
    reporter: TaskReporter,
    /// Runs it starts on schedule and finishes are the system's (`automation-worker`).
    audit: AuditTrail,
    settings: AutomationSettings,
    work: Arc<Notify>,
    /// When the retention sweep last ran.
    last_sweep: std::sync::Mutex<Option<Timestamp>>,
}

impl AutomationWorker {
    pub(crate) fn new(ports: &Ports, settings: AutomationSettings, work: Arc<Notify>) -> Self {
        Self {
            automations: ports.automations.clone(),
            browser: ports.browser.clone(),
            grants: ports.allowed_hosts.clone(),
            blobs: ports.blobs.clone(),
            clock: ports.clock.clone(),
            secrets: AutomationSecrets::new(ports),
            agent: AgentExecutor::new(ports, &settings),
            reporter: TaskReporter::new(ports),
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
            settings,
            work,
            last_sweep: std::sync::Mutex::new(None),
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

    /// One pass: remove expired runs (hourly), fail stale runs, start due schedules, execute every
    /// pending run.
    pub async fn tick(self: &Arc<Self>) {
        if let Err(error) = self.remove_expired().await {
            tracing::warn!(%error, "could not remove expired automation runs");
        }
        if let Err(error) = self.fail_stale().await {
            tracing::warn!(%error, "could not fail stale automation runs");
        }
        if let Err(error) = self.start_due().await {
            tracing::warn!(%error, "could not start due automations");
        }
        // Batches of up to `concurrency` runs at once, at most `runs_per_organization` of one
        // organization (the others' runs are claimed past theirs), until none is pending.
        loop {
            let mut batch = tokio::task::JoinSet::new();
            let mut per_organization: HashMap<OrganizationId, usize> = HashMap::new();
            while batch.len() < self.settings.concurrency.max(1) {
                let bound = self.settings.runs_per_organization.max(1);
                let full: Vec<OrganizationId> =
                    per_organization.iter().filter(|(_, runs)| **runs >= bound).map(|(org, _)| org.clone()).collect();
                match self.automations.claim_pending(self.clock.now(), &full).await {
                    Ok(Some((run, automation))) => {
                        *per_organization.entry(run.organization_id.clone()).or_default() += 1;
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

    /// Removes finished runs older than the retention, with every screenshot they point at; at
    /// most once per [`RETENTION_EVERY`] per instance.
    async fn remove_expired(&self) -> Result<(), RepoError> {
        let now = self.clock.now();
        {
            let mut last = self.last_sweep.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.is_some_and(|at| now < at.plus(RETENTION_EVERY)) {
                return Ok(());
            }
            *last = Some(now);
        }
        let retention = time::Duration::try_from(self.settings.run_retention).unwrap_or(time::Duration::MAX);
        let cutoff = now.plus(-retention);
        loop {
            let removed = self.automations.delete_finished_runs(cutoff, RETENTION_BATCH).await?;
            for key in removed.iter().flat_map(AutomationRun::blob_keys) {
                if let Err(error) = self.blobs.delete(key).await {
                    tracing::warn!(%error, blob = %key, "could not remove an expired run's screenshot");
                }
            }
            if removed.len() < RETENTION_BATCH {
                return Ok(());
            }
        }
    }

    /// Fails the runs a stopped instance left running, each as the worker finishes a run: with
    /// its audit entry and the evidence a failed run is (its controls fail).
    async fn fail_stale(&self) -> Result<(), RepoError> {
        let stale = time::Duration::try_from(self.settings.stale_cutoff()).unwrap_or(time::Duration::hours(1));
        let cutoff = self.clock.now().plus(-stale);
        let mut failed = 0;
        loop {
            let runs = self.automations.stale_runs(cutoff, STALE_BATCH).await?;
            let seen = runs.len();
            for mut run in runs {
                run.interrupt(INTERRUPTED, cutoff);
                let provenance = Provenance::system("automation-worker", &run.organization_id);
                let audit = self.audit.change_by(provenance, |_, _| "automation.run_finished", &AUTOMATION_RUN);
                match self.automations.finish_run(&run, &audit).await {
                    Ok(()) => failed += 1,
                    // Finished (or deleted) since it was read: nothing left to fail.
                    Err(RepoError::NotFound) => {}
                    Err(error) => return Err(error),
                }
            }
            if seen < STALE_BATCH {
                break;
            }
        }
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
            let provenance = Provenance::system("automation-worker", &automation.organization_id);
            let audit = self.audit.change_by(provenance, scheduled_run_action, &AUTOMATION_RUN);
            self.automations.claim_due(&automation.id, previous, next, &run, &audit).await?;
        }
        Ok(())
    }

    async fn execute(&self, mut run: AutomationRun, automation: &BrowserAutomation) {
        let limit = self.settings.run_limit();
        let mut recorder = RunRecorder::new(self.blobs.clone(), &run);
        let (outcome, screenshot) = match tokio::time::timeout(
            limit,
            self.carry_out(automation, &mut recorder, Instant::now() + limit),
        )
        .await
        {
            Ok(done) => done,
            Err(_) => (Err(format!("the run did not finish within {} seconds", limit.as_secs())), None),
        };
        run.steps = recorder.into_steps();
        run.finish(outcome, screenshot, self.clock.now());
        let provenance = Provenance::system("automation-worker", &automation.organization_id);
        let audit = self.audit.change_by(provenance, |_, _| "automation.run_finished", &AUTOMATION_RUN);
        match self.automations.finish_run(&run, &audit).await {
            Ok(()) => self.reporter.report(automation, &run).await,
            Err(error) => {
                // Deleted or failed as stale meanwhile: the screenshots have no run left to show them.
                for key in run.blob_keys() {
                    if let Err(error) = self.blobs.delete(key).await {
                        tracing::warn!(%error, blob = %key, "could not remove an orphaned screenshot");
                    }
                }
                tracing::warn!(%error, run = %run.id, "could not record an automation run's outcome");
            }
        }
    }

    /// Opens the target and carries out the instruction: the verdict (or why the run could not be
    /// carried out) and, for a completed run, the final screenshot's key.
    async fn carry_out(
        &self,
        automation: &BrowserAutomation,
        recorder: &mut RunRecorder,
        deadline: Instant,
    ) -> (Result<Verdict, String>, Option<String>) {
        let granted = match self.grants.hosts(&automation.organization_id, AllowedHostUse::Automations).await {
            Ok(granted) => granted,
            Err(error) => return (Err(format!("the organization's allowed hosts could not be read: {error}")), None),
        };
        let mut page = match self.browser.open(&automation.target_url, &granted, self.settings.run_timeout).await {
            Ok(page) => page,
            Err(error) => return (Err(error.to_string()), None),
        };
        // The page stays on the target's origin and the allowed ones, whatever a step, a link or
        // the model asks for.
        let origins = automation.navigable_origins();
        let outcome = match page.keep_to_origins(&origins).await {
            Ok(()) => self.follow(page.as_mut(), automation, &origins, recorder, deadline).await,
            Err(error) => Err(error.to_string()),
        };
        let screenshot = match outcome {
            Ok(_) => recorder.final_screenshot(page.as_mut()).await,
            Err(_) => None,
        };
        page.close().await;
        (outcome, screenshot)
    }

    async fn follow(
        &self,
        page: &mut dyn BrowserPage,
        automation: &BrowserAutomation,
        origins: &[String],
        recorder: &mut RunRecorder,
        deadline: Instant,
    ) -> Result<Verdict, String> {
        match automation.parsed_instruction() {
            Instruction::Steps(steps) => {
                // `wait for` is bounded by the run timeout, well inside the run's own limit.
                let deadline = deadline.min(Instant::now() + self.settings.run_timeout);
                let typed = TypedSecrets::default();
                let secrets = &self.secrets;
                let executor = StepExecutor { page, automation, secrets, recorder, deadline, origins, typed };
                executor.run(&steps).await
            }
            Instruction::FreeText(instruction) => {
                let run = AgentRun {
                    page,
                    automation,
                    instruction: &instruction,
                    recorder,
                    secrets: &self.secrets,
                    deadline,
                    origins,
                };
                self.agent.run(run).await
            }
        }
    }
}
