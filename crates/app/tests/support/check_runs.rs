//! Check runs as an empty store that refuses writes: the use-case tests here exercise other
//! services; runs, results and findings are tested over both databases in tests/api.

use async_trait::async_trait;
use compliance_domain::audit::AuditDraft;
use compliance_domain::check_result::CheckResult;
use compliance_domain::check_run::CheckRun;
use compliance_domain::finding::{Finding, FindingChanges, FindingDeadlines, OrganizationDeadlines};
use compliance_domain::integration::Connection;
use compliance_domain::task::Task;
use compliance_domain::{CheckRunId, ConnectionId, FindingId, OrganizationId, Timestamp};
use compliance_ports::{AuditOf, CheckRunQuery, CheckRunRepository, FindingQuery, Page, PageRequest, RepoError};

use super::records::empty;

fn refused() -> RepoError {
    RepoError::Unavailable("no check runs in these tests".into())
}

pub struct NoCheckRuns;

#[async_trait]
impl CheckRunRepository for NoCheckRuns {
    async fn queue_check_run(&self, _: &CheckRun, _: &AuditOf<'_, CheckRun>) -> Result<(), RepoError> {
        Err(refused())
    }
    async fn due_connections(&self, _: &[&str], _: i64, _: usize) -> Result<Vec<Connection>, RepoError> {
        Ok(Vec::new())
    }
    async fn queue_scheduled(&self, _: &[CheckRun]) -> Result<usize, RepoError> {
        Err(refused())
    }
    async fn claim_check_run(
        &self,
        _: Timestamp,
        _: Timestamp,
        _: &[OrganizationId],
        _: &[String],
    ) -> Result<Option<CheckRun>, RepoError> {
        Ok(None)
    }
    async fn connection_findings(&self, _: &OrganizationId, _: &ConnectionId) -> Result<Vec<Finding>, RepoError> {
        Ok(Vec::new())
    }
    async fn finish_check_run(
        &self,
        _: &CheckRun,
        _: &[CheckResult],
        _: &FindingChanges,
        _: Vec<AuditDraft>,
        _: &[compliance_domain::evidence::Observation],
        _: &AuditOf<'_, CheckRun>,
    ) -> Result<(), RepoError> {
        Err(refused())
    }
    async fn fail_check_run(&self, _: &CheckRun, _: &AuditOf<'_, CheckRun>) -> Result<(), RepoError> {
        Err(refused())
    }
    async fn release_check_runs(&self, _: &[(CheckRunId, u32)]) -> Result<(), RepoError> {
        Ok(())
    }
    async fn get_check_run(&self, _: &OrganizationId, _: &CheckRunId) -> Result<CheckRun, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn list_check_runs(&self, _: &OrganizationId, _: &CheckRunQuery) -> Result<Page<CheckRun>, RepoError> {
        Ok(empty())
    }
    async fn check_results_of(
        &self,
        _: &OrganizationId,
        _: &CheckRunId,
        _: &PageRequest,
    ) -> Result<Page<CheckResult>, RepoError> {
        Ok(empty())
    }
    async fn list_findings(&self, _: &OrganizationId, _: &FindingQuery) -> Result<Page<Finding>, RepoError> {
        Ok(empty())
    }
    async fn get_finding(&self, _: &OrganizationId, _: &FindingId) -> Result<Finding, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn update_finding(&self, _: &Finding, _: Timestamp, _: &AuditOf<'_, Finding>) -> Result<(), RepoError> {
        Err(refused())
    }
    async fn lapsed_exceptions(&self, _: Timestamp, _: usize) -> Result<Vec<Finding>, RepoError> {
        Ok(Vec::new())
    }
    async fn record_imported_run(
        &self,
        _: &CheckRun,
        _: &[CheckResult],
        _: &FindingChanges,
        _: Vec<AuditDraft>,
        _: &[compliance_domain::evidence::Observation],
        _: &AuditOf<'_, CheckRun>,
    ) -> Result<(), RepoError> {
        Err(refused())
    }
    async fn create_finding_task(
        &self,
        _: &Finding,
        _: Timestamp,
        _: &Task,
        _: &AuditOf<'_, Task>,
        _: &AuditOf<'_, Finding>,
    ) -> Result<(), RepoError> {
        Err(refused())
    }
    async fn finding_deadlines(&self, org: &OrganizationId) -> Result<OrganizationDeadlines, RepoError> {
        Ok(OrganizationDeadlines {
            organization_id: org.clone(),
            deadlines: FindingDeadlines::default(),
            updated_at: None,
        })
    }
    async fn put_finding_deadlines(
        &self,
        _: &OrganizationDeadlines,
        _: &AuditOf<'_, OrganizationDeadlines>,
    ) -> Result<(), RepoError> {
        Err(refused())
    }
}

/// Adoptions of the library refused: adoption is tested over both databases in tests/api.
pub struct NoLibrary;

#[async_trait]
impl compliance_ports::LibraryRepository for NoLibrary {
    async fn adopt(
        &self,
        _: &OrganizationId,
        _: &compliance_ports::Planner<'_>,
        _: &compliance_ports::AdoptionAudits<'_>,
    ) -> Result<compliance_domain::library::adoption::Adoption, RepoError> {
        Err(RepoError::Unavailable("no library adoptions in these tests".into()))
    }
}
