//! Browser automations of a task: their configuration, their runs, and the screenshots runs take.

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::allowed_host::AllowedHostUse;
use compliance_domain::automation::{
    AutomationChanges, AutomationPatch, AutomationRun, BrowserAutomation, NewAutomation, RunTrigger,
};
use compliance_domain::etag::IfMatch;
use compliance_domain::network::is_allowed;
use compliance_domain::schedule::Schedule;
use compliance_domain::{AutomationId, AutomationRunId, ConnectionId, OrganizationId, TaskId};
use compliance_ports::{
    AllowedHostRepository, AutomationRepository, BrowserRunner, CaptureError, Clock, ConnectionRepository, Page,
    RepoError, RunQuery, TaskRepository,
};
use tokio::sync::Notify;

use crate::access::require;
use crate::audit::{AUTOMATION, AUTOMATION_RUN, AuditTrail};
use crate::blob_links::{BlobLinks, LinkTarget};
use crate::{AppError, Ports, Principal, Settings};

/// How often an update re-reads an automation changed between reading and writing.
const UPDATE_ATTEMPTS: usize = 3;
/// Firings looked at to find a schedule's shortest interval.
const INTERVAL_SAMPLES: usize = 16;

/// A run as callers see it: its screenshots as links that work for a limited time.
#[derive(Debug, Clone)]
pub struct RunView {
    /// The run as stored.
    pub run: AutomationRun,
    /// A signed link to the final screenshot, if the run took one.
    pub screenshot_url: Option<String>,
    /// The link to each step's screenshot, in the order of `run.steps`.
    pub step_screenshot_urls: Vec<Option<String>>,
}

/// Browser automations of a task, their schedules and their runs.
pub struct AutomationService {
    automations: Arc<dyn AutomationRepository>,
    tasks: Arc<dyn TaskRepository>,
    connections: Arc<dyn ConnectionRepository>,
    browser: Arc<dyn BrowserRunner>,
    /// The internal hosts the operator granted to each organization.
    grants: Arc<dyn AllowedHostRepository>,
    clock: Arc<dyn Clock>,
    settings: Arc<Settings>,
    links: BlobLinks,
    /// Wakes the worker when a run is started by hand.
    work: Arc<Notify>,
    audit: AuditTrail,
}

impl AutomationService {
    pub(crate) fn new(ports: &Ports, settings: Arc<Settings>, work: Arc<Notify>) -> Self {
        Self {
            automations: ports.automations.clone(),
            tasks: ports.tasks.clone(),
            connections: ports.connections.clone(),
            browser: ports.browser.clone(),
            grants: ports.allowed_hosts.clone(),
            clock: ports.clock.clone(),
            links: BlobLinks::new(ports.blobs.clone(), ports.clock.clone(), settings.clone()),
            settings,
            work,
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    /// A new automation on one of the organization's tasks.
    pub async fn create(&self, caller: &Principal, input: NewAutomation) -> Result<BrowserAutomation, AppError> {
        require(caller, Family::Automations, Action::Write)?;
        if input.connection_id.is_some() {
            require_connection_rights(caller)?;
        }
        let org = &caller.organization_id;
        let task = BrowserAutomation::task_id(&input).map_err(AppError::Validation)?;
        self.require_task(org, &task, TaskRefusal::InvalidField).await?;
        let automation = BrowserAutomation::create(org.clone(), task, caller.user_id.clone(), input, self.clock.now())?;
        if let Some(schedule) = &automation.schedule {
            self.check_interval(schedule)?;
        }
        if let Some(connection) = &automation.connection_id {
            self.check_connection(caller, connection).await?;
        }
        self.check_target(org, &automation.target_url).await?;
        self.check_origins(org, &automation.allowed_origins).await?;
        self.automations.insert(&automation, &self.audit.change(caller, "automation.created", &AUTOMATION)).await?;
        Ok(automation)
    }

    /// One automation of the caller's organization; another organization's is [`AppError::NotFound`].
    pub async fn get(&self, caller: &Principal, id: &AutomationId) -> Result<BrowserAutomation, AppError> {
        require(caller, Family::Automations, Action::Read)?;
        self.automation(&caller.organization_id, id).await
    }

    /// The task's automations; 404 for a task the organization does not have.
    pub async fn list_for_task(&self, caller: &Principal, task: &TaskId) -> Result<Vec<BrowserAutomation>, AppError> {
        require(caller, Family::Automations, Action::Read)?;
        let org = &caller.organization_id;
        self.require_task(org, task, TaskRefusal::NotFound).await?;
        Ok(self.automations.list_for_task(org, task).await?)
    }

    /// Applies `changes` (only the fields given); a schedule change recomputes the next run.
    pub async fn update(
        &self,
        caller: &Principal,
        id: &AutomationId,
        changes: AutomationChanges,
        if_match: &IfMatch,
    ) -> Result<BrowserAutomation, AppError> {
        require(caller, Family::Automations, Action::Write)?;
        let patch = AutomationPatch::new(changes)?;
        if patch.connection_id().is_some() {
            require_connection_rights(caller)?;
        }
        if let Some(schedule) = patch.schedule() {
            self.check_interval(schedule)?;
        }
        if let Some(target) = patch.target_url() {
            self.check_target(&caller.organization_id, target).await?;
        }
        if let Some(origins) = patch.allowed_origins() {
            self.check_origins(&caller.organization_id, origins).await?;
        }
        if let Some(connection) = patch.connection_id() {
            self.check_connection(caller, connection).await?;
        }
        for _ in 0..UPDATE_ATTEMPTS {
            let previous = self.automation(&caller.organization_id, id).await?;
            // The store writes only while the row is still `previous` (compare-and-swap), so a
            // precondition that holds for `previous` holds at the commit; a write that got there
            // first makes the next attempt read a new tag, and answer 412.
            if_match.check(&previous.etag())?;
            if patch.is_empty() {
                return Ok(previous);
            }
            // Its runs type the connection's credentials: whoever changes what they do (the target,
            // the steps, where they may go) could send them elsewhere.
            if previous.connection_id.is_some() {
                require_connection_rights(caller)?;
            }
            let mut automation = previous.clone();
            automation.apply(&patch, self.clock.now());
            let audit = self.audit.change(caller, "automation.updated", &AUTOMATION);
            match self.automations.update(&automation, &previous, &audit).await {
                Ok(()) => return Ok(automation),
                Err(RepoError::NotFound) => continue, // changed meanwhile (or deleted): read again
                Err(other) => return Err(other.into()),
            }
        }
        Err(AppError::Conflict("the automation kept changing during the update; try again".into()))
    }

    /// Refuses schedules that fire more often than the configured minimum interval.
    fn check_interval(&self, schedule: &Schedule) -> Result<(), AppError> {
        let minimum = self.settings.automations.min_interval;
        let Some(shortest) = schedule.shortest_gap(self.clock.now(), INTERVAL_SAMPLES) else { return Ok(()) };
        if shortest >= minimum {
            return Ok(());
        }
        Err(AppError::invalid(
            "schedule",
            format!("fires more often than every {} seconds, the shortest interval allowed", minimum.as_secs()),
        ))
    }

    /// Deletes the automation, its runs and their screenshots (the steps' too).
    pub async fn delete(
        &self,
        caller: &Principal,
        id: &AutomationId,
        if_match: &IfMatch,
    ) -> Result<BrowserAutomation, AppError> {
        require(caller, Family::Automations, Action::Write)?;
        let org = &caller.organization_id;
        let automation = self.automation(org, id).await?;
        let audit = self.audit.change(caller, "automation.deleted", &AUTOMATION);
        let runs = self
            .automations
            .delete(org, id, if_match, &audit)
            .await
            .map_err(|e| AppError::from_repo(e, "automation"))?;
        let screenshots: Vec<&str> = runs.iter().flat_map(AutomationRun::blob_keys).collect();
        self.links.remove(&screenshots, "screenshot").await;
        Ok(automation)
    }

    /// A page of the automation's runs, newest first.
    pub async fn runs(
        &self,
        caller: &Principal,
        id: &AutomationId,
        query: &RunQuery,
    ) -> Result<Page<RunView>, AppError> {
        require(caller, Family::Automations, Action::Read)?;
        let org = &caller.organization_id;
        self.automation(org, id).await?;
        let runs = self.automations.runs(org, id, query).await?;
        let mut views = Vec::with_capacity(runs.items.len());
        for run in runs.items {
            views.push(self.view(run).await?);
        }
        Ok(Page { items: views, total: runs.total, next: runs.next })
    }

    /// Queues a run now; 409 while one is pending or running.
    pub async fn start_run(&self, caller: &Principal, id: &AutomationId) -> Result<RunView, AppError> {
        require(caller, Family::Automations, Action::Write)?;
        let automation = self.automation(&caller.organization_id, id).await?;
        let run = AutomationRun::pending(&automation, RunTrigger::Manual, self.clock.now());
        let audit = self.audit.change(caller, "automation.run_started", &AUTOMATION_RUN);
        self.automations.insert_run(&run, &audit).await.map_err(|e| match e {
            RepoError::Conflict(_) => {
                AppError::Conflict("a run of this automation is already pending or running".into())
            }
            other => other.into(),
        })?;
        self.work.notify_one();
        Ok(RunView { run, screenshot_url: None, step_screenshot_urls: Vec::new() })
    }

    /// The PNG behind a screenshot link this service signed: the run's, or with `step` the one
    /// taken after that step. Tampering or expiry is a 403.
    pub async fn screenshot(
        &self,
        org: &str,
        run: &str,
        step: Option<u32>,
        expires: i64,
        signature: &str,
    ) -> Result<Vec<u8>, AppError> {
        const REFUSED: AppError = AppError::Forbidden("the screenshot link is invalid or has expired");
        if !self.links.accepts(org, &screenshot_subject(run, step), expires, signature) {
            return Err(REFUSED);
        }
        let (Ok(org), Ok(run)) = (OrganizationId::parse(org), AutomationRunId::parse(run)) else { return Err(REFUSED) };
        let run = self.automations.get_run(&org, &run).await.map_err(|e| AppError::from_repo(e, "run"))?;
        let key = match step {
            None => run.screenshot_key,
            Some(index) => run.steps.into_iter().find(|s| s.index == index).and_then(|s| s.screenshot_key),
        };
        self.links.read(&key.ok_or(AppError::NotFound("screenshot"))?, "screenshot").await
    }

    async fn view(&self, run: AutomationRun) -> Result<RunView, AppError> {
        let screenshot_url = match &run.screenshot_key {
            Some(key) => Some(self.screenshot_link(&run, key, None).await?),
            None => None,
        };
        let mut step_screenshot_urls = Vec::with_capacity(run.steps.len());
        for step in &run.steps {
            step_screenshot_urls.push(match &step.screenshot_key {
                Some(key) => Some(self.screenshot_link(&run, key, Some(step.index)).await?),
                None => None,
            });
        }
        Ok(RunView { run, screenshot_url, step_screenshot_urls })
    }

    async fn screenshot_link(&self, run: &AutomationRun, key: &str, step: Option<u32>) -> Result<String, AppError> {
        let subject = screenshot_subject(run.id.as_str(), step);
        let path = match step {
            None => format!("/v1/browser/runs/{}/screenshot", run.id),
            Some(index) => format!("/v1/browser/runs/{}/screenshot?step={index}", run.id),
        };
        let target =
            LinkTarget { key, org: run.organization_id.as_str(), subject: &subject, path: &path, what: "screenshot" };
        Ok(self.links.link(&target).await?.url)
    }

    async fn automation(&self, org: &OrganizationId, id: &AutomationId) -> Result<BrowserAutomation, AppError> {
        self.automations.get(org, id).await.map_err(|e| AppError::from_repo(e, "automation"))
    }

    async fn require_task(&self, org: &OrganizationId, task: &TaskId, refusal: TaskRefusal) -> Result<(), AppError> {
        match self.tasks.get_task(org, task).await {
            Ok(_) => Ok(()),
            Err(RepoError::NotFound) => Err(match refusal {
                TaskRefusal::InvalidField => AppError::invalid("taskId", "is not a task of this organization"),
                TaskRefusal::NotFound => AppError::NotFound("task"),
            }),
            Err(other) => Err(other.into()),
        }
    }

    /// Only a live connection of the organization may be handed to an automation (the caller's
    /// right to do so is [`require_connection_rights`]).
    async fn check_connection(&self, caller: &Principal, connection: &ConnectionId) -> Result<(), AppError> {
        match self.connections.get_connection(&caller.organization_id, connection).await {
            Ok(found) if found.is_disconnected() => Err(AppError::invalid("connectionId", "is disconnected")),
            Ok(_) => Ok(()),
            Err(RepoError::NotFound) => {
                Err(AppError::invalid("connectionId", "is not a connection of this organization"))
            }
            Err(other) => Err(other.into()),
        }
    }

    /// Each of `allowedOrigins` must be `https`, or `http` on a host `AUTOMATION_ALLOWED_HOSTS`
    /// names or the operator granted to `org`, and pass the target's checks.
    async fn check_origins(&self, org: &OrganizationId, origins: &[String]) -> Result<(), AppError> {
        if origins.is_empty() {
            return Ok(());
        }
        let granted = self.grants.hosts(org, AllowedHostUse::Automations).await?;
        let allowed_hosts = &self.settings.automations.allowed_hosts;
        for origin in origins {
            if let Some(host) = origin.strip_prefix("http://")
                && !is_allowed(host_of(host), allowed_hosts)
                && !is_allowed(host_of(host), &granted)
            {
                return Err(AppError::invalid(
                    "allowedOrigins",
                    format!(
                        "{origin} must use https (http only for a host AUTOMATION_ALLOWED_HOSTS names or the operator \
                         granted to this organization)"
                    ),
                ));
            }
            if let Err(CaptureError::Refused(why)) = self.browser.check_target(origin, &granted).await {
                return Err(AppError::invalid("allowedOrigins", format!("{origin}: {why}")));
            }
        }
        Ok(())
    }

    /// Refuses targets the browser may not open (private addresses not allow-listed for every
    /// organization nor granted to `org`, …).
    async fn check_target(&self, org: &OrganizationId, url: &str) -> Result<(), AppError> {
        let granted = self.grants.hosts(org, AllowedHostUse::Automations).await?;
        match self.browser.check_target(url, &granted).await {
            Err(CaptureError::Refused(why)) => Err(AppError::invalid("targetUrl", why)),
            // Anything else (a host that does not resolve today) is for the run to report.
            _ => Ok(()),
        }
    }
}

/// A connection's credentials are typed by the automation's runs, so attaching one to an
/// automation, or changing an automation that has one, writes integrations too: the caller's role
/// and, for an API key, its scopes must allow `integrations:write` (a key scoped to
/// `automations:write` alone may not hand itself the credentials).
fn require_connection_rights(caller: &Principal) -> Result<(), AppError> {
    require(caller, Family::Integrations, Action::Write).map(|_| ()).map_err(|error| match error {
        AppError::Denied(why) => {
            AppError::Denied(format!("{why}, which an automation using a connection's credentials needs"))
        }
        other => other,
    })
}

/// A task named in a body is an invalid field; a task in the path is a missing resource.
enum TaskRefusal {
    InvalidField,
    NotFound,
}

/// The host of an origin's `host[:port]` (an IPv6 literal keeps its brackets off).
fn host_of(authority: &str) -> &str {
    match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(host, _)| host),
    }
}

/// What a screenshot link signs: the purpose keeps it from ever passing for another kind of link,
/// and the step from passing for another step's (or the run's) screenshot.
pub(crate) fn screenshot_subject(run: &str, step: Option<u32>) -> String {
    match step {
        None => format!("screenshot:{run}"),
        Some(index) => format!("screenshot:{run}:step:{index}"),
    }
}
