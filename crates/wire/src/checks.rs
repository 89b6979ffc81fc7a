//! Check runs and findings as the API shows them.

use compliance_domain::check::CheckSeverity;
use compliance_domain::check_result::CheckedResource;
use compliance_domain::check_run::{CheckRun, CheckRunSource, CheckRunStatus, CheckRunTrigger, OutcomeCounts};
use compliance_domain::finding::{Finding, FindingStatus, OrganizationDeadlines};
use compliance_domain::{CheckRunId, ConnectionId, FindingId, TaskId, Timestamp, UserId};
use serde::Serialize;

/// A run of a connection's checks.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = CheckRun)]
#[serde(rename_all = "camelCase")]
pub struct CheckRunDto {
    /// The run's id.
    #[schema(value_type = CheckRunId)]
    pub id: CheckRunId,
    /// The connection whose account it read.
    #[schema(value_type = ConnectionId)]
    pub connection_id: ConnectionId,
    /// The connection's provider slug.
    pub provider: String,
    /// `manual` (asked for) or `scheduled` (the connection's period came).
    pub trigger: CheckRunTrigger,
    /// `checks` (this service's checks read the provider) or `prowler` (a Prowler findings file
    /// a member imported).
    pub source: CheckRunSource,
    /// `queued`, `running`, `finished` or `failed`.
    pub status: CheckRunStatus,
    /// The member who asked for a manual run; `null` for a scheduled one.
    #[schema(value_type = Option<UserId>, required = true)]
    pub requested_by: Option<UserId>,
    /// When it was queued.
    pub queued_at: Timestamp,
    /// When an instance last started it; `null` while queued.
    #[schema(value_type = Option<Timestamp>, required = true)]
    pub started_at: Option<Timestamp>,
    /// When it finished or failed; `null` until then.
    #[schema(value_type = Option<Timestamp>, required = true)]
    pub finished_at: Option<Timestamp>,
    /// How often an instance started it (more than once after an interruption).
    pub attempts: u32,
    /// Why it failed as a whole; `null` unless `failed`. A resource that could not be read is an
    /// `error` result, not this.
    #[schema(value_type = Option<String>, required = true)]
    pub error: Option<String>,
    /// Its results' outcomes, counted.
    pub counts: OutcomeCounts,
    /// The SHA-256 of its population (docs/checks.md); `null` until finished.
    #[schema(value_type = Option<String>, required = true)]
    pub population_digest: Option<String>,
}

impl From<&CheckRun> for CheckRunDto {
    fn from(run: &CheckRun) -> Self {
        Self {
            id: run.id.clone(),
            connection_id: run.connection_id.clone(),
            provider: run.provider.clone(),
            trigger: run.trigger,
            source: run.source,
            status: run.status,
            requested_by: run.requested_by.clone(),
            queued_at: run.queued_at,
            started_at: run.started_at,
            finished_at: run.finished_at,
            attempts: run.attempts,
            error: run.error.clone(),
            counts: run.counts,
            population_digest: run.population_digest.clone(),
        }
    }
}

/// An accepted risk.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = FindingException)]
#[serde(rename_all = "camelCase")]
pub struct FindingExceptionDto {
    /// Why the risk is accepted.
    pub reason: String,
    /// When the acceptance ends.
    pub expires_at: Timestamp,
    /// Who accepted it.
    #[schema(value_type = UserId)]
    pub granted_by: UserId,
    /// When.
    pub granted_at: Timestamp,
}

/// A resource a check failed, from its first failure until a run passes it.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = Finding)]
#[serde(rename_all = "camelCase")]
pub struct FindingDto {
    /// The finding's id.
    #[schema(value_type = FindingId)]
    pub id: FindingId,
    /// The check that failed.
    pub check_id: String,
    /// The connection whose run found it.
    #[schema(value_type = ConnectionId)]
    pub connection_id: ConnectionId,
    /// The resource.
    pub resource: CheckedResource,
    /// The check's severity.
    pub severity: CheckSeverity,
    /// `open`, `resolved` (a later run passed it) or `excepted` (its risk accepted until the
    /// exception's end; it counts as passing meanwhile).
    pub status: FindingStatus,
    /// The last failing result's detail.
    pub detail: String,
    /// Its first failure.
    pub first_seen_at: Timestamp,
    /// The last run that failed it.
    pub last_seen_at: Timestamp,
    /// When a run passed it; `null` unless resolved.
    #[schema(value_type = Option<Timestamp>, required = true)]
    pub resolved_at: Option<Timestamp>,
    /// When it should be fixed by (its opening plus the deadline of its severity).
    pub due_at: Timestamp,
    /// The run that last changed it.
    #[schema(value_type = CheckRunId)]
    pub last_run_id: CheckRunId,
    /// The accepted risk, while excepted; `null` otherwise.
    #[schema(value_type = Option<FindingExceptionDto>, required = true)]
    pub exception: Option<FindingExceptionDto>,
    /// The task made to fix it; `null` if none was.
    #[schema(value_type = Option<TaskId>, required = true)]
    pub task_id: Option<TaskId>,
    /// When it last changed.
    pub updated_at: Timestamp,
}

impl From<&Finding> for FindingDto {
    fn from(f: &Finding) -> Self {
        Self {
            id: f.id.clone(),
            check_id: f.check_id.clone(),
            connection_id: f.connection_id.clone(),
            resource: f.resource.clone(),
            severity: f.severity,
            status: f.status,
            detail: f.detail.clone(),
            first_seen_at: f.first_seen_at,
            last_seen_at: f.last_seen_at,
            resolved_at: f.resolved_at,
            due_at: f.due_at,
            last_run_id: f.last_run_id.clone(),
            exception: f.exception.as_ref().map(|e| FindingExceptionDto {
                reason: e.reason.clone(),
                expires_at: e.expires_at,
                granted_by: e.granted_by.clone(),
                granted_at: e.granted_at,
            }),
            task_id: f.task_id.clone(),
            updated_at: f.updated_at,
        }
    }
}

/// How long the organization's findings of each severity may stay open: a finding opened (or
/// opened again) is due that many days later.
#[derive(Debug, Serialize, utoipa::ToSchema)]
#[schema(as = FindingDeadlines)]
#[serde(rename_all = "camelCase")]
pub struct FindingDeadlinesDto {
    /// Days for a critical finding.
    pub critical_days: u32,
    /// Days for a high one.
    pub high_days: u32,
    /// Days for a medium one.
    pub medium_days: u32,
    /// Days for a low one.
    pub low_days: u32,
    /// When an owner or admin last set them; `null` while the defaults (7, 30, 90, 180) hold.
    pub updated_at: Option<Timestamp>,
}

impl From<&OrganizationDeadlines> for FindingDeadlinesDto {
    fn from(kept: &OrganizationDeadlines) -> Self {
        let d = &kept.deadlines;
        Self {
            critical_days: d.critical_days,
            high_days: d.high_days,
            medium_days: d.medium_days,
            low_days: d.low_days,
            updated_at: kept.updated_at,
        }
    }
}
