//! Runs of a connection's checks and their results: what a person asks for and reads. The
//! worker that executes runs is `check_run_worker.rs`; the findings they open are `findings.rs`.

use std::collections::HashMap;
use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::check::CheckSeverity;
use compliance_domain::check_result::CheckResult;
use compliance_domain::check_run::CheckRun;
use compliance_domain::finding::Finding;
use compliance_domain::integration::Connection;
use compliance_domain::prowler::{ImportedCheck, parse_ocsf};
use compliance_domain::{CheckRunId, ConnectionId};
use compliance_ports::{
    CheckReader, CheckRunQuery, CheckRunRepository, Clock, ConnectionRepository, Page, PageRequest, RepoError,
};
use tokio::sync::Notify;

use crate::access::require;
use crate::audit::{AuditTrail, CHECK_RUN, Provenance};
use crate::check_run_results::{Ending, RunResults, catalog_severity};
use crate::{AppError, Ports, Principal};

/// Check runs.
pub struct CheckRunService {
    runs: Arc<dyn CheckRunRepository>,
    connections: Arc<dyn ConnectionRepository>,
    reader: Arc<dyn CheckReader>,
    clock: Arc<dyn Clock>,
    audit: Arc<AuditTrail>,
    results: RunResults,
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
            results: RunResults::new(ports.check_runs.clone(), ports.clock.clone(), audit.clone()),
            audit,
            work,
        }
    }

    /// Queues a run of the connection's checks; the worker runs it soon (`202`).
    pub async fn run_checks(&self, caller: &Principal, connection: &ConnectionId) -> Result<CheckRun, AppError> {
        require(caller, Family::Checks, Action::Write)?;
        let org = &caller.organization_id;
        let connection = self.active_connection(caller, connection).await?;
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

    /// Imports a findings file Prowler wrote (`prowler aws --output-formats json-ocsf`) for an
    /// AWS connection, as a finished run whose results, findings, entries and evidence are stored
    /// exactly as for the connection's own runs (docs/checks.md, "Findings imported from
    /// Prowler"). A file that is not one, or holds several accounts, is a 400 naming the problem;
    /// a file of another account than the connection's findings name is a 409. Nothing is stored
    /// unless all of it is.
    pub async fn import_prowler(
        &self,
        caller: &Principal,
        connection: &ConnectionId,
        file: &[u8],
    ) -> Result<CheckRun, AppError> {
        require(caller, Family::Checks, Action::Write)?;
        let connection = self.active_connection(caller, connection).await?;
        if connection.provider != "aws" {
            return Err(AppError::Conflict(format!(
                "Prowler's AWS findings are imported into an AWS connection; this one is of {}",
                connection.provider
            )));
        }
        // Up to 32 MiB of JSON: read off the request's thread, which serves other requests.
        let file = file.to_vec();
        let import = tokio::task::spawn_blocking(move || parse_ocsf(&file))
            .await
            .map_err(|error| AppError::Internal(format!("reading a Prowler file stopped: {error}")))?
            .map_err(|error| AppError::invalid("file", error.to_string()))?;
        let existing = self.runs.connection_findings(&caller.organization_id, &connection.id).await?;
        require_same_account(&existing, &import.account_id)?;
        let severities: HashMap<String, CheckSeverity> = import
            .results
            .iter()
            .filter_map(|imported| match &imported.check {
                ImportedCheck::Prowler { id, severity, .. } => Some((id.clone(), *severity)),
                ImportedCheck::Ours(_) => None,
            })
            .collect();
        let results: Vec<CheckResult> = import.results.into_iter().map(|imported| imported.result).collect();
        // No check counts as read whole: a file may be of some regions, some checks, or failures
        // only, and a resource it does not list was not seen passing. Its findings resolve only
        // when a file (or a run) lists the resource passing.
        let read: [String; 0] = [];
        let run = CheckRun::imported(
            caller.organization_id.clone(),
            connection.id,
            connection.provider,
            caller.user_id.clone(),
            self.clock.now(),
        );
        let severity = |check_id: &str| severities.get(check_id).copied().unwrap_or_else(|| catalog_severity(check_id));
        let provenance = Provenance::of(caller);
        self.results.store(Ending::Imported, &run, &results, &read, &severity, &provenance).await.map_err(|error| {
            match error {
                RepoError::Conflict(_) => AppError::Conflict(
                    "the connection's findings kept changing while the file was stored; import it again".into(),
                ),
                other => other.into(),
            }
        })
    }

    /// The caller's connection, not disconnected.
    async fn active_connection(&self, caller: &Principal, id: &ConnectionId) -> Result<Connection, AppError> {
        let connection =
            self.connections.get_connection(&caller.organization_id, id).await.map_err(not_found("connection"))?;
        if connection.is_disconnected() {
            return Err(AppError::Conflict("the connection is disconnected: connect the provider again".into()));
        }
        Ok(connection)
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

/// A file of another account than the one the connection's findings are of is refused: its
/// results would be read as the state of this connection's account. The account of a finding is
/// that of an `aws.account` resource, or the account field of a resource's ARN when it is a
/// 12-digit account id (an AWS-managed policy's ARN has `aws` there, an S3 bucket's nothing); with
/// no finding naming one, any single account's file is taken.
fn require_same_account(existing: &[Finding], account: &str) -> Result<(), AppError> {
    let is_account_id = |text: &&str| text.len() == 12 && text.bytes().all(|b| b.is_ascii_digit());
    let named = existing.iter().find_map(|finding| {
        let resource = &finding.resource;
        let of_arn = resource.id.strip_prefix("arn:").and_then(|arn| arn.split(':').nth(3));
        let of_account = (resource.kind == "aws.account").then_some(resource.id.as_str());
        of_account.or(of_arn).filter(is_account_id).filter(|named| *named != account).map(str::to_owned)
    });
    match named {
        Some(other) => Err(AppError::Conflict(format!(
            "the file is of AWS account {account}, but this connection's findings are of account {other}"
        ))),
        None => Ok(()),
    }
}
