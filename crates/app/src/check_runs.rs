//! Runs of a connection's checks and their results: what a person asks for and reads. The
//! worker that executes runs is `check_run_worker.rs`; the findings they open are `findings.rs`.

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::check_result::CheckResult;
use compliance_domain::check_run::CheckRun;
use compliance_domain::{CheckRunId, ConnectionId};
use compliance_ports::{
    CheckReader, CheckRunQuery, CheckRunRepository, Clock, ConnectionRepository, Page, PageRequest, RepoError,
};
use tokio::sync::Notify;

use crate::access::require;
use crate::audit::{AuditTrail, CHECK_RUN};
use crate::{AppError, Ports, Principal};

/// Check runs.
pub struct CheckRunService {
    runs: Arc<dyn CheckRunRepository>,
    connections: Arc<dyn ConnectionRepository>,
    reader: Arc<dyn CheckReader>,
    clock: Arc<dyn Clock>,
    audit: Arc<AuditTrail>,
    /// Wakes the worker when a run is queued by hand.
    work: Arc<Notify>,
}

impl CheckRunService {
    pub(crate) fn new(ports: &Ports, audit: Arc<AuditTrail>, work: Arc<Notify>) -> Self {
        Self {
            runs: ports.check_runs.clone(),
            connections: ports.connections.clone(),
            reader: ports.check_reader.clone(),
            clock: ports.clock.clone(),
            audit,
            work,
        }
    }

    /// Queues a run of the connection's checks; the worker runs it soon (`202`).
    pub async fn run_checks(&self, caller: &Principal, connection: &ConnectionId) -> Result<CheckRun, AppError> {
        require(caller, Family::Checks, Action::Write)?;
        let org = &caller.organization_id;
        let connection = self.connections.get_connection(org, connection).await.map_err(|error| match error {
            RepoError::NotFound => AppError::NotFound("connection"),
            other => other.into(),
        })?;
        if connection.is_disconnected() {
            return Err(AppError::Conflict("the connection is disconnected: connect the provider again".into()));
        }
        if !compliance_domain::check::catalog()
            .iter()
            .any(|check| check.provider == connection.provider && self.reader.supports(&check.id))
        {
            return Err(AppError::Conflict(format!("no check reads the provider {}", connection.provider)));
        }
        let run =
            CheckRun::manual(org.clone(), connection.id, connection.provider, caller.user_id.clone(), self.clock.now());
        self.runs.queue_check_run(&run, &self.audit.change(caller, "check_run.queued", &CHECK_RUN)).await?;
        self.work.notify_one();
        Ok(run)
    }

    /// A page of the organization's runs.
    pub async fn list_runs(&self, caller: &Principal, query: &CheckRunQuery) -> Result<Page<CheckRun>, AppError> {
        require(caller, Family::Checks, Action::Read)?;
        Ok(self.runs.list_check_runs(&caller.organization_id, query).await?)
    }

    /// One run.
    pub async fn get_run(&self, caller: &Principal, id: &CheckRunId) -> Result<CheckRun, AppError> {
        require(caller, Family::Checks, Action::Read)?;
        self.runs.get_check_run(&caller.organization_id, id).await.map_err(not_found("check run"))
    }

    /// A page of a run's results, in the order the run saw them.
    pub async fn run_results(
        &self,
        caller: &Principal,
        id: &CheckRunId,
        page: &PageRequest,
    ) -> Result<Page<CheckResult>, AppError> {
        let run = self.get_run(caller, id).await?;
        Ok(self.runs.check_results_of(&caller.organization_id, &run.id, page).await?)
    }
}

pub(crate) fn not_found(what: &'static str) -> impl Fn(RepoError) -> AppError {
    move |error| match error {
        RepoError::NotFound => AppError::NotFound(what),
        other => other.into(),
    }
}
