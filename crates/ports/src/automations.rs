//! Storage of browser automations and their runs, and the claims that let several server
//! instances share the work: each due schedule and each pending run is taken by exactly one.

use async_trait::async_trait;
use compliance_domain::automation::{AutomationRun, BrowserAutomation};
use compliance_domain::etag::IfMatch;
use compliance_domain::{AutomationId, AutomationRunId, OrganizationId, TaskId, Timestamp};

use crate::{AuditOf, Page, RepoError, RunQuery};

/// Browser automations, their schedules and runs; every method is scoped to an organization.
#[async_trait]
pub trait AutomationRepository: Send + Sync {
    /// Inserts the automation and `audit`'s entry of it, in one transaction.
    async fn insert(
        &self,
        automation: &BrowserAutomation,
        audit: &AuditOf<'_, BrowserAutomation>,
    ) -> Result<(), RepoError>;
    /// One automation; `RepoError::NotFound` when it is not the organization's.
    async fn get(&self, org: &OrganizationId, id: &AutomationId) -> Result<BrowserAutomation, RepoError>;
    /// Oldest first.
    async fn list_for_task(&self, org: &OrganizationId, task: &TaskId) -> Result<Vec<BrowserAutomation>, RepoError>;
    /// Replaces every mutable field, if the row is still as `previous` (its `updated_at` and
    /// `next_run_at`): neither another PATCH nor a schedule claimed meanwhile is overwritten.
    /// `RepoError::NotFound` when there is no such automation or it changed since.
    async fn update(
        &self,
        automation: &BrowserAutomation,
        previous: &BrowserAutomation,
        audit: &AuditOf<'_, BrowserAutomation>,
    ) -> Result<(), RepoError>;
    /// Deletes the automation and its runs; the deleted runs (their screenshots are to be removed).
    async fn delete(
        &self,
        org: &OrganizationId,
        id: &AutomationId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, BrowserAutomation>,
    ) -> Result<Vec<AutomationRun>, RepoError>;

    /// `RepoError::Conflict` when the automation already has a pending or running run: one run
    /// at a time per automation.
    async fn insert_run(&self, run: &AutomationRun, audit: &AuditOf<'_, AutomationRun>) -> Result<(), RepoError>;
    /// A page of the automation's runs, newest first (by `created_at`, then id).
    async fn runs(
        &self,
        org: &OrganizationId,
        automation: &AutomationId,
        query: &RunQuery,
    ) -> Result<Page<AutomationRun>, RepoError>;
    /// Deletes up to `limit` completed or failed runs (of every organization) created before
    /// `created_before`, oldest first; the deleted runs (their screenshots are to be removed).
    async fn delete_finished_runs(
        &self,
        created_before: Timestamp,
        limit: usize,
    ) -> Result<Vec<AutomationRun>, RepoError>;
    /// One run; `RepoError::NotFound` when it is not the organization's.
    async fn get_run(&self, org: &OrganizationId, id: &AutomationRunId) -> Result<AutomationRun, RepoError>;

    /// Enabled automations (of every organization) whose `next_run_at` is at or before `now`,
    /// earliest first, at most `limit`.
    async fn due(&self, now: Timestamp, limit: usize) -> Result<Vec<BrowserAutomation>, RepoError>;
    /// Moves `automation`'s `next_run_at` from `previous` to `next` and inserts `run`, in one
    /// transaction, only if `next_run_at` is still `previous`: of several instances that saw it
    /// due, exactly one claims it. When the automation already has a pending or running run, the
    /// claim still advances the schedule but adds no run. Whether `run` was added: `false` when
    /// another caller claimed it first, or when this one advanced the schedule but skipped the run.
    /// A claim writes `audit`'s entry: `audit(None, Some(run))` when it added the run,
    /// `audit(Some(run), None)` when it skipped it.
    async fn claim_due(
        &self,
        automation: &AutomationId,
        previous: Timestamp,
        next: Option<Timestamp>,
        run: &AutomationRun,
        audit: &AuditOf<'_, AutomationRun>,
    ) -> Result<bool, RepoError>;
    /// Takes the oldest pending run of any organization but those in `skip` (those at their bound
    /// of runs at once) and marks it running from `now`, if no other worker took it first; with its
    /// automation.
    async fn claim_pending(
        &self,
        now: Timestamp,
        skip: &[OrganizationId],
    ) -> Result<Option<(AutomationRun, BrowserAutomation)>, RepoError>;
    /// Stores a run's outcome (status, completion, duration, screenshot, error) if the run is
    /// still running; `RepoError::NotFound` otherwise (deleted, or failed as stale meanwhile).
    /// With `audit`'s entry, made from the run as it was and as it finished.
    async fn finish_run(&self, run: &AutomationRun, audit: &AuditOf<'_, AutomationRun>) -> Result<(), RepoError>;
    /// The runs of every organization running since before `started_before` (their instance
    /// stopped or crashed), oldest first, at most `limit`. The worker fails each with
    /// [`finish_run`](Self::finish_run), so each has its audit entry and its evidence.
    async fn stale_runs(&self, started_before: Timestamp, limit: usize) -> Result<Vec<AutomationRun>, RepoError>;
}
