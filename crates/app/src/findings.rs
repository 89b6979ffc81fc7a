//! Findings: the resources checks failed, until a run passes them; and the exceptions that
//! accept a finding's risk for a while. Runs open and resolve them (`check_run_worker.rs`).

use std::sync::Arc;

use compliance_domain::FindingId;
use compliance_domain::Timestamp;
use compliance_domain::access::{Action, Family};
use compliance_domain::check::reading;
use compliance_domain::finding::{
    Finding, FindingDeadlines, FindingException, FindingStatus, NewFindingDeadlines, NewFindingTask,
    OrganizationDeadlines,
};
use compliance_domain::task::Task;
use compliance_ports::{CheckRunRepository, Clock, FindingQuery, MemberRepository, Page, RepoError};

use crate::access::require;
use crate::assignees::require_active_members;
use crate::audit::{AuditTrail, FINDING, FINDING_DEADLINES};
use crate::check_runs::not_found;
use crate::tasks::TASK;
use crate::{AppError, Ports, Principal};

/// The longest reason of an exception, in characters.
pub const EXCEPTION_REASON_MAX: usize = 2_000;
/// The furthest an exception may reach: a year, after which the risk is accepted again or not.
const EXCEPTION_LONGEST: time::Duration = time::Duration::days(366);

/// Findings and their exceptions.
pub struct FindingService {
    runs: Arc<dyn CheckRunRepository>,
    members: Arc<dyn MemberRepository>,
    clock: Arc<dyn Clock>,
    audit: Arc<AuditTrail>,
}

impl FindingService {
    pub(crate) fn new(ports: &Ports, audit: Arc<AuditTrail>) -> Self {
        Self { runs: ports.check_runs.clone(), members: ports.members.clone(), clock: ports.clock.clone(), audit }
    }

    /// A page of the organization's findings.
    pub async fn list_findings(&self, caller: &Principal, query: &FindingQuery) -> Result<Page<Finding>, AppError> {
        require(caller, Family::Findings, Action::Read)?;
        Ok(self.runs.list_findings(&caller.organization_id, query).await?)
    }

    /// One finding.
    pub async fn get_finding(&self, caller: &Principal, id: &FindingId) -> Result<Finding, AppError> {
        require(caller, Family::Findings, Action::Read)?;
        self.runs.get_finding(&caller.organization_id, id).await.map_err(not_found("finding"))
    }

    /// Accepts an open finding's risk until `expires_at`: its resource counts as passing until
    /// then, wherever a status is shown, with the reason. A resolved finding has nothing to accept.
    pub async fn except_finding(
        &self,
        caller: &Principal,
        id: &FindingId,
        reason: &str,
        expires_at: Timestamp,
    ) -> Result<Finding, AppError> {
        require(caller, Family::Findings, Action::Write)?;
        // The finding first: an id that names none is a 404 whatever the body says.
        let finding = self.runs.get_finding(&caller.organization_id, id).await.map_err(not_found("finding"))?;
        let reason = reason.trim();
        if reason.is_empty() {
            return Err(AppError::invalid("reason", "must say why the risk is accepted"));
        }
        if reason.chars().count() > EXCEPTION_REASON_MAX {
            return Err(AppError::invalid("reason", format!("must be at most {EXCEPTION_REASON_MAX} characters")));
        }
        let now = self.clock.now();
        if expires_at <= now {
            return Err(AppError::invalid("expiresAt", "must be in the future"));
        }
        if expires_at > now.plus(EXCEPTION_LONGEST) {
            return Err(AppError::invalid("expiresAt", "must be at most a year ahead: accept the risk again then"));
        }
        if finding.status == FindingStatus::Resolved {
            return Err(AppError::Conflict("the finding is resolved: there is no risk to accept".into()));
        }
        let excepted = Finding {
            status: FindingStatus::Excepted,
            exception: Some(FindingException {
                reason: reason.to_owned(),
                expires_at,
                granted_by: caller.user_id.clone(),
                granted_at: now,
            }),
            updated_at: now,
            ..finding.clone()
        };
        let audit = self.audit.change(caller, "finding.excepted", &FINDING);
        self.runs.update_finding(&excepted, finding.updated_at, &audit).await.map_err(|error| match error {
            RepoError::NotFound => AppError::Conflict("the finding changed meanwhile; read it and try again".into()),
            other => other.into(),
        })?;
        Ok(excepted)
    }

    /// Makes the task that fixes a finding, linked both ways. The caller writes findings and
    /// tasks. One task at a time: a finding whose task still exists is a conflict (deleting the
    /// task unlinks it). A resolved finding has nothing left to fix. Closing the task does not
    /// resolve the finding: only a run that passes its resource does.
    pub async fn create_task(
        &self,
        caller: &Principal,
        id: &FindingId,
        input: NewFindingTask,
    ) -> Result<Task, AppError> {
        require(caller, Family::Findings, Action::Write)?;
        require(caller, Family::Tasks, Action::Write)?;
        let finding = self.runs.get_finding(&caller.organization_id, id).await.map_err(not_found("finding"))?;
        let (title, remediation) = reading(&finding.check_id)
            .map_or((finding.check_id.as_str(), ""), |c| (c.title.as_str(), c.remediation.as_str()));
        let now = self.clock.now();
        let task = finding.task(title, remediation, input, now)?;
        require_active_members(self.members.as_ref(), &caller.organization_id, task.named_members()).await?;
        if let Some(existing) = &finding.task_id {
            return Err(AppError::Conflict(format!(
                "the finding already has a task ({existing}); delete it to make another"
            )));
        }
        if finding.status == FindingStatus::Resolved {
            return Err(AppError::Conflict("the finding is resolved: there is nothing left to fix".into()));
        }
        let linked = Finding { task_id: Some(task.id.clone()), updated_at: now, ..finding.clone() };
        let task_audit = self.audit.change(caller, "task.created", &TASK);
        let finding_audit = self.audit.change(caller, "finding.task_created", &FINDING);
        self.runs.create_finding_task(&linked, finding.updated_at, &task, &task_audit, &finding_audit).await.map_err(
            |error| match error {
                RepoError::NotFound => {
                    AppError::Conflict("the finding changed meanwhile; read it and try again".into())
                }
                other => other.into(),
            },
        )?;
        Ok(task)
    }

    /// The organization's deadlines per severity (the defaults until an owner or admin sets them).
    pub async fn deadlines(&self, caller: &Principal) -> Result<OrganizationDeadlines, AppError> {
        require(caller, Family::Findings, Action::Read)?;
        Ok(self.runs.finding_deadlines(&caller.organization_id).await?)
    }

    /// Replaces the organization's deadlines. Findings opened (or opened again) from now on are
    /// due by them; a finding already open keeps the `dueAt` it was given.
    pub async fn set_deadlines(
        &self,
        caller: &Principal,
        input: &NewFindingDeadlines,
    ) -> Result<OrganizationDeadlines, AppError> {
        require(caller, Family::Findings, Action::Write)?;
        let kept = OrganizationDeadlines {
            organization_id: caller.organization_id.clone(),
            deadlines: FindingDeadlines::new(input)?,
            updated_at: Some(self.clock.now()),
        };
        let audit = self.audit.change(caller, "finding_deadlines.updated", &FINDING_DEADLINES);
        self.runs.put_finding_deadlines(&kept, &audit).await?;
        Ok(kept)
    }
}
