//! The background worker that runs connections' checks: it queues each active connection's
//! scheduled run once per period, claims queued runs under a lease (so two instances never run
//! one connection's checks at once, and a run whose instance stopped is claimed again once its
//! lease lapses), reads the provider through the [`CheckReader`] port, and stores every result
//! with the findings it opens and resolves in one transaction. It also opens again the findings
//! whose exception lapsed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use compliance_domain::CheckRunId;
use compliance_domain::check::catalog;
use compliance_domain::check_result::normalize;
use compliance_domain::check_run::{CheckRun, MAX_ATTEMPTS, period_of};
use compliance_domain::finding::{Finding, FindingStatus};
use compliance_ports::{
    CheckReader, CheckRunRepository, CheckTarget, Clock, ConnectionRepository, DevicePerson, DeviceScope,
    MemberRepository, OrganizationRepository, PageRequest, PersonQuery, RepoError,
};
use tokio::sync::{Notify, watch};

use crate::audit::{AuditTrail, CHECK_RUN, FINDING, Provenance};
use crate::check_run_results::{Ending, RunResults, catalog_severity};
use crate::integrations::IntegrationService;
use crate::{Ports, Settings};

/// The system part entries of scheduled and finished runs name.
const ACTOR: &str = "checks";
/// Connections scheduled per statement.
const SCHEDULE_BATCH: usize = 200;
/// Lapsed exceptions opened again per tick.
const LAPSED_BATCH: usize = 200;
/// The provider whose checks read the deployment's FleetDM, by the organization's label.
const FLEETDM: &str = "fleetdm";
/// People read per statement for the FleetDM checks.
const PEOPLE_PAGE: usize = 500;

/// Tunables of the check runs.
#[derive(Debug, Clone)]
pub struct CheckRunSettings {
    /// How often each active connection's checks run (`CHECK_FREQUENCY_HOURS`, daily by default);
    /// zero schedules nothing (runs are then only asked for).
    pub frequency: Duration,
    /// How often the worker looks for work when nothing wakes it.
    pub poll_interval: Duration,
    /// The longest a run may read before it fails (`CHECK_RUN_TIMEOUT_SECONDS`).
    pub run_timeout: Duration,
    /// Runs at once in one instance (`CHECK_RUN_CONCURRENCY`).
    pub concurrency: usize,
    /// Runs of one provider at once in one instance, so one slow provider cannot take every slot.
    pub per_provider: usize,
}

impl Default for CheckRunSettings {
    fn default() -> Self {
        Self {
            frequency: Duration::from_secs(24 * 60 * 60),
            poll_interval: Duration::from_secs(5),
            run_timeout: Duration::from_secs(15 * 60),
            concurrency: 4,
            per_provider: 2,
        }
    }
}

impl CheckRunSettings {
    /// How long a claim holds a run: its timeout and a minute to store what it found. A lease
    /// that lapses belongs to an instance that stopped.
    pub fn lease(&self) -> Duration {
        self.run_timeout + Duration::from_secs(60)
    }
}

/// Runs queued and scheduled check runs.
pub struct CheckRunWorker {
    runs: Arc<dyn CheckRunRepository>,
    connections: Arc<dyn ConnectionRepository>,
    organizations: Arc<dyn OrganizationRepository>,
    members: Arc<dyn MemberRepository>,
    reader: Arc<dyn CheckReader>,
    integrations: IntegrationService,
    clock: Arc<dyn Clock>,
    audit: Arc<AuditTrail>,
    results: RunResults,
    settings: CheckRunSettings,
    work: Arc<Notify>,
    /// The runs this instance holds, by the attempt it claimed, given back when it stops.
    held: Mutex<HashMap<CheckRunId, u32>>,
}

impl CheckRunWorker {
    pub(crate) fn new(ports: &Ports, settings: &Settings, work: Arc<Notify>) -> Self {
        let audit = Arc::new(AuditTrail::new(ports.renderer.clone(), ports.clock.clone()));
        Self {
            runs: ports.check_runs.clone(),
            connections: ports.connections.clone(),
            organizations: ports.organizations.clone(),
            members: ports.members.clone(),
            reader: ports.check_reader.clone(),
            integrations: IntegrationService::new(ports, settings, audit.clone()),
            clock: ports.clock.clone(),
            results: RunResults::new(ports.check_runs.clone(), ports.clock.clone(), audit.clone()),
            audit,
            settings: settings.checks.clone(),
            work,
            held: Mutex::new(HashMap::new()),
        }
    }

    /// Works until `stop` turns true: a tick, then a wait for a poke, the poll interval or the
    /// stop. On stop, the runs in flight are abandoned and given back (queued again, the attempt
    /// not counted), so another instance runs them at once rather than after their lease.
    pub async fn run(self, mut stop: watch::Receiver<bool>) {
        let worker = Arc::new(self);
        loop {
            let tick = tokio::spawn({
                let worker = worker.clone();
                async move { worker.tick().await }
            });
            let abort = tick.abort_handle();
            tokio::select! {
                done = tick => if let Err(error) = done {
                    tracing::error!(%error, "a check run worker tick failed; going on");
                },
                () = stopped(&mut stop) => {
                    abort.abort();
                    worker.give_back().await;
                    return;
                }
            }
            tokio::select! {
                () = worker.work.notified() => {}
                () = tokio::time::sleep(worker.settings.poll_interval) => {}
                () = stopped(&mut stop) => {
                    worker.give_back().await;
                    return;
                }
            }
        }
    }

    async fn give_back(&self) {
        let held: Vec<(CheckRunId, u32)> = self.held.lock().unwrap_or_else(PoisonError::into_inner).drain().collect();
        if held.is_empty() {
            return;
        }
        match self.runs.release_check_runs(&held).await {
            Ok(()) => tracing::info!(runs = held.len(), "stopping: check runs in flight queued again"),
            Err(error) => {
                tracing::warn!(%error, "stopping: check runs in flight will be claimed again when their lease lapses")
            }
        }
    }

    /// One pass: the housekeeping, then what is queued (housekeeping again at each wake while
    /// runs run).
    pub async fn tick(self: &Arc<Self>) {
        self.housekeeping().await;
        self.run_queued().await;
    }

    /// Schedules the period's runs and opens lapsed exceptions again.
    async fn housekeeping(&self) {
        if let Err(error) = self.schedule().await {
            tracing::warn!(%error, "could not schedule check runs");
        }
        if let Err(error) = self.open_lapsed_exceptions().await {
            tracing::warn!(%error, "could not open findings whose exception lapsed");
        }
    }

    /// Queues this period's run of every active connection whose provider has checks, once.
    async fn schedule(&self) -> Result<(), RepoError> {
        if self.settings.frequency.is_zero() {
            return Ok(());
        }
        let providers = self.providers();
        let providers: Vec<&str> = providers.iter().map(String::as_str).collect();
        if providers.is_empty() {
            return Ok(());
        }
        let now = self.clock.now();
        let period = period_of(now, self.settings.frequency);
        loop {
            let due = self.runs.due_connections(&providers, period, SCHEDULE_BATCH).await?;
            let runs: Vec<CheckRun> = due
                .into_iter()
                .map(|c| CheckRun::scheduled(c.organization_id, c.id, c.provider, period, now))
                .collect();
            // Most ticks find nothing due: no write transaction for them (SQLite has one writer).
            if runs.is_empty() {
                return Ok(());
            }
            let queued = self.runs.queue_scheduled(&runs).await?;
            if queued > 0 {
                self.work.notify_one();
            }
            if runs.len() < SCHEDULE_BATCH || queued == 0 {
                return Ok(());
            }
        }
    }

    /// The providers some check of the catalog is read for.
    fn providers(&self) -> Vec<String> {
        let mut providers: Vec<String> = catalog()
            .iter()
            .filter(|check| self.reader.supports(&check.id))
            .map(|check| check.provider.clone())
            .collect();
        providers.sort();
        providers.dedup();
        providers
    }

    async fn open_lapsed_exceptions(&self) -> Result<(), RepoError> {
        let now = self.clock.now();
        for finding in self.runs.lapsed_exceptions(now, LAPSED_BATCH).await? {
            let opened = Finding { status: FindingStatus::Open, exception: None, updated_at: now, ..finding.clone() };
            let provenance = Provenance::system(ACTOR, &finding.organization_id);
            let audit = self.audit.change_by(provenance, |_, _| "finding.exception_expired", &FINDING);
            match self.runs.update_finding(&opened, finding.updated_at, &audit).await {
                Ok(()) | Err(RepoError::NotFound) => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    }

    /// Claims and runs queued runs, at most `concurrency` at once and `per_provider` of one
    /// provider, until none is left. A slot that frees, a poke (a run asked for on this instance)
    /// or the poll interval claims again: a run queued meanwhile never waits for a long one.
    async fn run_queued(self: &Arc<Self>) {
        let mut running = tokio::task::JoinSet::new();
        // Each task's run and provider by task id: a task that panics still gives its slot back.
        let mut tasks: HashMap<tokio::task::Id, (CheckRunId, String)> = HashMap::new();
        let mut per_provider: HashMap<String, usize> = HashMap::new();
        loop {
            self.claim_into(&mut running, &mut tasks, &mut per_provider).await;
            if running.is_empty() {
                return;
            }
            let done = tokio::select! {
                done = running.join_next_with_id() => done,
                () = self.work.notified() => {
                    self.housekeeping().await;
                    continue;
                }
                () = tokio::time::sleep(self.settings.poll_interval) => {
                    self.housekeeping().await;
                    continue;
                }
            };
            let id = match done {
                Some(Ok((id, ()))) => id,
                Some(Err(error)) => {
                    tracing::error!(%error, "a check run's task failed");
                    error.id()
                }
                None => return,
            };
            if let Some((run, provider)) = tasks.remove(&id) {
                self.held.lock().unwrap_or_else(PoisonError::into_inner).remove(&run);
                if let Some(n) = per_provider.get_mut(&provider) {
                    *n = n.saturating_sub(1);
                }
            }
        }
    }

    /// Claims queued runs into the free slots.
    async fn claim_into(
        self: &Arc<Self>,
        running: &mut tokio::task::JoinSet<()>,
        tasks: &mut HashMap<tokio::task::Id, (CheckRunId, String)>,
        per_provider: &mut HashMap<String, usize>,
    ) {
        while running.len() < self.settings.concurrency.max(1) {
            let full: Vec<String> = per_provider
                .iter()
                .filter(|(_, n)| **n >= self.settings.per_provider.max(1))
                .map(|(provider, _)| provider.clone())
                .collect();
            let now = self.clock.now();
            let lease = time::Duration::try_from(self.settings.lease()).unwrap_or(time::Duration::HOUR);
            match self.runs.claim_check_run(now, now.plus(lease), &[], &full).await {
                Ok(Some(run)) => {
                    *per_provider.entry(run.provider.clone()).or_default() += 1;
                    self.held.lock().unwrap_or_else(PoisonError::into_inner).insert(run.id.clone(), run.attempts);
                    let (id, provider) = (run.id.clone(), run.provider.clone());
                    let worker = Arc::clone(self);
                    let task = running.spawn(async move { worker.execute(run).await });
                    tasks.insert(task.id(), (id, provider));
                }
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(%error, "could not claim a check run");
                    return;
                }
            }
        }
    }

    /// Runs one claimed run to its end: finished with its results, or failed with why. A run
    /// whose results could not be stored fails (with a message fit to show), rather than wait
    /// out its lease to be read again.
    async fn execute(&self, run: CheckRun) {
        let outcome = match self.read(&run).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(RepoError::NotFound)) => Err(RepoError::NotFound),
            Ok(Err(error)) => {
                tracing::warn!(%error, run = %run.id, "could not store a check run's results");
                self.fail(&run, "its results could not be stored; it runs again at its next period".into()).await
            }
            Err(why) => self.fail(&run, why).await,
        };
        match outcome {
            Ok(()) => {}
            Err(RepoError::NotFound) => {
                tracing::info!(run = %run.id, "a check run was claimed by another instance meanwhile");
            }
            Err(error) => tracing::warn!(%error, run = %run.id, "could not store a check run"),
        }
    }

    /// Reads the provider and stores what it found; `Err` says why the run fails as a whole.
    async fn read(&self, run: &CheckRun) -> Result<Result<(), RepoError>, String> {
        if run.attempts > MAX_ATTEMPTS {
            return Err(format!("the run was interrupted {MAX_ATTEMPTS} times (its server stopped); run it again"));
        }
        let connection = match self.connections.get_connection(&run.organization_id, &run.connection_id).await {
            Ok(connection) if !connection.is_disconnected() => connection,
            Ok(_) | Err(RepoError::NotFound) => return Err("the connection is disconnected".into()),
            Err(error) => return Ok(Err(error)),
        };
        let (auth, values) = match self.integrations.read_credentials(&connection).await {
            Ok(Ok(credentials)) => credentials,
            Ok(Err(why)) => return Err(format!("the connection's credentials cannot be used: {why}")),
            Err(error) => {
                // Our own store's failure, not the credentials': said in the log, not to the tenant.
                tracing::warn!(%error, run = %run.id, "could not read a connection's credentials for its checks");
                return Err("the connection's credentials could not be read; it runs again at its next period".into());
            }
        };
        let checks: Vec<String> = catalog()
            .iter()
            .filter(|check| check.provider == run.provider && self.reader.supports(&check.id))
            .map(|check| check.id.clone())
            .collect();
        let devices = match run.provider.as_str() {
            FLEETDM => match self.device_scope(run).await {
                Ok(scope) => scope,
                Err(error) => return Ok(Err(error)),
            },
            _ => DeviceScope::default(),
        };
        let now = self.clock.now();
        let target = CheckTarget {
            provider: run.provider.clone(),
            auth,
            values,
            checks,
            period_start: self.window_start(run, now),
            now,
            devices,
        };
        let results = tokio::time::timeout(self.settings.run_timeout, self.reader.read(&target))
            .await
            .map_err(|_| format!("the run read for longer than {} seconds", self.settings.run_timeout.as_secs()))?;
        let results = normalize(results);
        let provenance = Provenance::system(ACTOR, &run.organization_id);
        Ok(self
            .results
            .store(Ending::Claimed, run, &results, &target.checks, &catalog_severity, &provenance)
            .await
            .map(drop))
    }

    /// The run's organization's FleetDM label and people: read here, from the organization,
    /// so that no connection can name another organization's label.
    async fn device_scope(&self, run: &CheckRun) -> Result<DeviceScope, RepoError> {
        let org = &run.organization_id;
        let label_id = self.organizations.get(org).await?.device_manager_label_id;
        let mut people = Vec::new();
        let mut query = PersonQuery::unfiltered(PageRequest::first(PEOPLE_PAGE).uncounted());
        loop {
            let page = self.members.list(org, true, &query).await?;
            people.extend(page.items.into_iter().map(|person| DevicePerson {
                member_id: person.member.id,
                name: person.user.name,
                email: person.user.email,
                active: person.member.is_active,
            }));
            match page.next {
                Some(next) => query.page.after = Some(next),
                None => return Ok(DeviceScope { label_id, people }),
            }
        }
    }

    /// Where a population over a period (pull requests merged) starts: for a scheduled run, the
    /// start of the period before its own, so that consecutive periods' runs overlap and leave no
    /// gap wherever in its period each ran; for one asked for, a period's length (a day at least)
    /// before now.
    fn window_start(&self, run: &CheckRun, now: compliance_domain::Timestamp) -> compliance_domain::Timestamp {
        let seconds = |duration: std::time::Duration| i64::try_from(duration.as_secs()).unwrap_or(i64::MAX);
        let start = match run.period {
            Some(period) if !self.settings.frequency.is_zero() => {
                period.saturating_sub(1).saturating_mul(seconds(self.settings.frequency))
            }
            _ => now.as_unix_seconds().saturating_sub(seconds(self.settings.frequency).max(86_400)),
        };
        now.plus(time::Duration::seconds(start.saturating_sub(now.as_unix_seconds())))
    }

    async fn fail(&self, run: &CheckRun, why: String) -> Result<(), RepoError> {
        let failed = run.failed(why, self.clock.now());
        let provenance = Provenance::system(ACTOR, &run.organization_id);
        let audit = self.audit.change_by(provenance, |_, _| "check_run.failed", &CHECK_RUN);
        self.runs.fail_check_run(&failed, &audit).await
    }
}

/// Resolves once `stop` holds true (or its sender is gone: the server is stopping).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    while !*stop.borrow_and_update() {
        if stop.changed().await.is_err() {
            return;
        }
    }
}
