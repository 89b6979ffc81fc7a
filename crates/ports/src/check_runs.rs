//! Storage of check runs, their results and the findings they open and resolve.

use async_trait::async_trait;
use compliance_domain::audit::AuditDraft;
use compliance_domain::check::CheckSeverity;
use compliance_domain::check_result::CheckResult;
use compliance_domain::check_run::{CheckRun, CheckRunStatus, CheckRunTrigger};
use compliance_domain::evidence::Observation;
use compliance_domain::finding::{Finding, FindingChanges, FindingStatus, OrganizationDeadlines};
use compliance_domain::integration::Connection;
use compliance_domain::task::Task;
use compliance_domain::{CheckRunId, ConnectionId, FindingId, OrganizationId, Timestamp};

use crate::{AuditOf, ListQuery, Page, PageRequest, RepoError};

/// Check runs: `connectionId`, `status`, `trigger`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct CheckRunFilter {
    /// `connectionId=`: rows of any of these connections (empty: all).
    pub connection: Vec<ConnectionId>,
    /// `status=`: rows with any of these (empty: all).
    pub status: Vec<CheckRunStatus>,
    /// `trigger=`: rows with any of these (empty: all).
    pub trigger: Vec<CheckRunTrigger>,
}

/// The fields check runs sort by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CheckRunSort {
    /// `queuedAt` (`-queuedAt`: descending; the default).
    QueuedAt,
}

/// What a list of check runs is asked for.
pub type CheckRunQuery = ListQuery<CheckRunFilter, CheckRunSort>;

/// Findings: `status`, `severity`, `checkId`, `connectionId`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FindingFilter {
    /// `status=`: rows with any of these (empty: all).
    pub status: Vec<FindingStatus>,
    /// `severity=`: rows with any of these (empty: all).
    pub severity: Vec<CheckSeverity>,
    /// `checkId=`: rows of any of these checks (empty: all).
    pub check: Vec<String>,
    /// `connectionId=`: rows of any of these connections (empty: all).
    pub connection: Vec<ConnectionId>,
}

/// The fields findings sort by (`sort=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FindingSort {
    /// `lastSeenAt` (`-lastSeenAt`: descending; the default).
    LastSeenAt,
    /// `firstSeenAt`.
    FirstSeenAt,
    /// `dueAt`.
    DueAt,
}

/// What a list of findings is asked for.
pub type FindingQuery = ListQuery<FindingFilter, FindingSort>;

/// Check runs, their results and the organization's findings.
#[async_trait]
pub trait CheckRunRepository: Send + Sync {
    /// Queues a run a member asked for, with its entry; `RepoError::Conflict` when one the
    /// connection's member asked for is still queued.
    async fn queue_check_run(&self, run: &CheckRun, audit: &AuditOf<'_, CheckRun>) -> Result<(), RepoError>;
    /// Up to `limit` active connections to `providers` with no scheduled run for `period`, every
    /// organization's (the scheduler's read).
    async fn due_connections(
        &self,
        providers: &[&str],
        period: i64,
        limit: usize,
    ) -> Result<Vec<Connection>, RepoError>;
    /// Queues scheduled runs; a run whose connection already has one for its period is skipped
    /// (the database's unique key decides, so racing instances queue it once). How many were queued.
    async fn queue_scheduled(&self, runs: &[CheckRun]) -> Result<usize, RepoError>;
    /// Claims the oldest run that is queued, or running with a lease that lapsed before `now`,
    /// whose connection has no other run held, and whose organization is not in `skip_orgs` nor
    /// its provider in `skip_providers` (the worker's bounds): it is `running` until
    /// `lease_until`, its `attempts` one more.
    async fn claim_check_run(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        skip_orgs: &[OrganizationId],
        skip_providers: &[String],
    ) -> Result<Option<CheckRun>, RepoError>;
    /// Every finding of a connection, whatever its status.
    async fn connection_findings(
        &self,
        org: &OrganizationId,
        connection: &ConnectionId,
    ) -> Result<Vec<Finding>, RepoError>;
    /// Stores a finished run in one transaction: the run, every result, the findings' changes,
    /// their entries (`finding_entries`), the evidence its checks record for the controls linked
    /// to them (`evidence`, one observation per check) and the run's entry, if the run is still held by the
    /// claim it was read with (`running`, the same `attempts`). `RepoError::NotFound` when it is
    /// not (another instance claimed it after its lease lapsed): nothing is written. A finding
    /// changed since it was read (`findings.read_at`) is `RepoError::Conflict`: nothing is written.
    async fn finish_check_run(
        &self,
        run: &CheckRun,
        results: &[CheckResult],
        findings: &FindingChanges,
        finding_entries: Vec<AuditDraft>,
        evidence: &[Observation],
        audit: &AuditOf<'_, CheckRun>,
    ) -> Result<(), RepoError>;
    /// Stores the run of an imported findings file, finished, with what
    /// [`CheckRunRepository::finish_check_run`] stores, in one transaction: the run is inserted
    /// (it was never queued). A finding changed since it was read is `RepoError::Conflict`:
    /// nothing is written.
    async fn record_imported_run(
        &self,
        run: &CheckRun,
        results: &[CheckResult],
        findings: &FindingChanges,
        finding_entries: Vec<AuditDraft>,
        evidence: &[Observation],
        audit: &AuditOf<'_, CheckRun>,
    ) -> Result<(), RepoError>;
    /// Stores a failed run, under the same condition as [`CheckRunRepository::finish_check_run`].
    async fn fail_check_run(&self, run: &CheckRun, audit: &AuditOf<'_, CheckRun>) -> Result<(), RepoError>;
    /// Gives back the runs this instance holds (it is stopping), each by the attempt it claimed:
    /// queued again, the attempt not counted. A run claimed again since (its lease lapsed) is left
    /// to that claim.
    async fn release_check_runs(&self, runs: &[(CheckRunId, u32)]) -> Result<(), RepoError>;
    /// One run; `RepoError::NotFound` when it is not the organization's.
    async fn get_check_run(&self, org: &OrganizationId, id: &CheckRunId) -> Result<CheckRun, RepoError>;
    /// A page of the organization's runs.
    async fn list_check_runs(&self, org: &OrganizationId, query: &CheckRunQuery) -> Result<Page<CheckRun>, RepoError>;
    /// A page of a run's results, in the order the run saw them.
    async fn check_results_of(
        &self,
        org: &OrganizationId,
        run: &CheckRunId,
        page: &PageRequest,
    ) -> Result<Page<CheckResult>, RepoError>;
    /// A page of the organization's findings.
    async fn list_findings(&self, org: &OrganizationId, query: &FindingQuery) -> Result<Page<Finding>, RepoError>;
    /// One finding; `RepoError::NotFound` when it is not the organization's.
    async fn get_finding(&self, org: &OrganizationId, id: &FindingId) -> Result<Finding, RepoError>;
    /// Replaces a finding's status, exception and task if it has not changed since `read_at`
    /// (its `updated_at` then), with its entry. `RepoError::NotFound` when it changed.
    async fn update_finding(
        &self,
        finding: &Finding,
        read_at: Timestamp,
        audit: &AuditOf<'_, Finding>,
    ) -> Result<(), RepoError>;
    /// Stores `task`, made for `finding`, and links them both ways (`finding.task_id` as given, the
    /// task's `finding_id`), with both entries, in one transaction, if the finding has not changed
    /// since `read_at`. `RepoError::NotFound` when it changed: nothing is written.
    async fn create_finding_task(
        &self,
        finding: &Finding,
        read_at: Timestamp,
        task: &Task,
        task_audit: &AuditOf<'_, Task>,
        finding_audit: &AuditOf<'_, Finding>,
    ) -> Result<(), RepoError>;
    /// The organization's finding deadlines: the defaults (no `updated_at`) when it set none.
    async fn finding_deadlines(&self, org: &OrganizationId) -> Result<OrganizationDeadlines, RepoError>;
    /// Replaces the organization's finding deadlines, with the entry (over what was kept before).
    async fn put_finding_deadlines(
        &self,
        deadlines: &OrganizationDeadlines,
        audit: &AuditOf<'_, OrganizationDeadlines>,
    ) -> Result<(), RepoError>;
    /// Up to `limit` excepted findings whose exception ended at or before `now`, every organization's.
    async fn lapsed_exceptions(&self, now: Timestamp, limit: usize) -> Result<Vec<Finding>, RepoError>;
}
