//! What an organization does about its findings beyond the runs: the task made to fix one
//! (linked both ways in one transaction) and the deadlines that set their `dueAt`.

use compliance_domain::finding::{Finding, FindingDeadlines, OrganizationDeadlines};
use compliance_domain::task::Task;
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{AuditOf, RepoError};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::check_runs::FindingRow;
use crate::db::{db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::locks::Locked;
use crate::prepared::Prepared;
use crate::rows::{instant, naive};
use crate::schema::{finding_deadlines, findings, tasks};
use crate::tasks::TaskRow;

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = finding_deadlines)]
struct DeadlinesRow {
    organization_id: String,
    critical_days: i32,
    high_days: i32,
    medium_days: i32,
    low_days: i32,
    updated_at: PrimitiveDateTime,
}

/// Days as the database keeps them: the domain allows 1 to 365, and the table checks it again.
fn days(n: u32) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

fn undays(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

impl DeadlinesRow {
    fn of(kept: &OrganizationDeadlines, updated_at: Timestamp) -> Self {
        let d = &kept.deadlines;
        Self {
            organization_id: kept.organization_id.to_string(),
            critical_days: days(d.critical_days),
            high_days: days(d.high_days),
            medium_days: days(d.medium_days),
            low_days: days(d.low_days),
            updated_at: naive(updated_at),
        }
    }

    fn kept(self, org: &OrganizationId) -> OrganizationDeadlines {
        OrganizationDeadlines {
            organization_id: org.clone(),
            deadlines: FindingDeadlines {
                critical_days: undays(self.critical_days),
                high_days: undays(self.high_days),
                medium_days: undays(self.medium_days),
                low_days: undays(self.low_days),
            },
            updated_at: Some(instant(self.updated_at)),
        }
    }
}

/// The deadlines of an organization that set none.
fn defaults(org: &OrganizationId) -> OrganizationDeadlines {
    OrganizationDeadlines { organization_id: org.clone(), deadlines: FindingDeadlines::default(), updated_at: None }
}

impl Store {
    /// See `CheckRunRepository::create_finding_task`.
    pub(crate) async fn insert_finding_task(
        &self,
        finding: &Finding,
        read_at: Timestamp,
        task: &Task,
        task_audit: &AuditOf<'_, Task>,
        finding_audit: &AuditOf<'_, Finding>,
    ) -> Result<(), RepoError> {
        let (row, task_row, read_at) = (FindingRow::from(finding), TaskRow::from(task), naive(read_at));
        let (org, id) = (finding.organization_id.as_str(), finding.id.as_str());
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            let the_finding = || {
                findings::table
                    .filter(findings::organization_id.eq(org))
                    .filter(findings::id.eq(id))
                    .filter(findings::updated_at.eq(read_at))
            };
            let before: Option<FindingRow> =
                Locked(the_finding().select(FindingRow::as_select())).get_result(c).await.optional()?;
            let Some(before) = before else { return Err(TxError::Repo(RepoError::NotFound)) };
            Prepared(diesel::insert_into(tasks::table).values(&task_row)).execute(c).await?;
            diesel::update(the_finding()).set(&row).execute(c).await?;
            c.append_many(vec![
                task_audit(None, Some(task)),
                finding_audit(Some(&Finding::try_from(before)?), Some(finding)),
            ])
            .await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    /// See `CheckRunRepository::finding_deadlines`.
    pub(crate) async fn read_finding_deadlines(
        &self,
        org: &OrganizationId,
    ) -> Result<OrganizationDeadlines, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<DeadlinesRow> = db_run!(&mut conn, |c| {
            finding_deadlines::table
                .filter(finding_deadlines::organization_id.eq(org.as_str()))
                .select(DeadlinesRow::as_select())
                .get_result(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        Ok(row.map_or_else(|| defaults(org), |row| row.kept(org)))
    }

    /// See `CheckRunRepository::put_finding_deadlines`.
    pub(crate) async fn write_finding_deadlines(
        &self,
        kept: &OrganizationDeadlines,
        audit: &AuditOf<'_, OrganizationDeadlines>,
    ) -> Result<(), RepoError> {
        let Some(updated_at) = kept.updated_at else {
            return Err(RepoError::Internal("deadlines written without the time they were set".into()));
        };
        let (row, org) = (DeadlinesRow::of(kept, updated_at), &kept.organization_id);
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            let the_row = || finding_deadlines::table.filter(finding_deadlines::organization_id.eq(org.as_str()));
            let before: Option<DeadlinesRow> =
                Locked(the_row().select(DeadlinesRow::as_select())).get_result(c).await.optional()?;
            let before = before.map_or_else(|| defaults(org), |row| row.kept(org));
            diesel::insert_into(finding_deadlines::table)
                .values(&row)
                .on_conflict(finding_deadlines::organization_id)
                .do_update()
                .set(&row)
                .execute(c)
                .await?;
            c.append(audit(Some(&before), Some(kept))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }
}
