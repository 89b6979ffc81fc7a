//! Policies whose review date has passed: which organizations have any, and moving them to
//! `needs_review` with their audit entries (the review worker's claim, see
//! `PolicyRepository::flag_policies_for_review`).

use compliance_domain::policy::{Policy, PolicyStatus};
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{AuditOf, RepoError};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use crate::audit::AuditQueue;
use crate::db::{AnyConnection, Pools, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::locks::lock_organization;
use crate::policies::PolicyRow;
use crate::rows::{id, naive};
use crate::schema::policies;

const PUBLISHED: &str = "published";
const NEEDS_REVIEW: &str = "needs_review";

pub(crate) async fn organizations_due(
    pools: &Pools,
    now: Timestamp,
    limit: usize,
) -> Result<Vec<OrganizationId>, RepoError> {
    let (now, limit) = (naive(now), i64::try_from(limit).unwrap_or(i64::MAX));
    let mut conn = pools.read().await?;
    let orgs: Vec<String> = db_run!(&mut conn, |c| {
        policies::table
            .filter(policies::status.eq(PUBLISHED))
            .filter(policies::is_archived.eq(false))
            .filter(policies::review_date.le(now))
            .select(policies::organization_id)
            .distinct()
            .order(policies::organization_id.asc())
            .limit(limit)
            .load(c)
            .await
    })
    .map_err(repo_error)?;
    orgs.into_iter().map(|org| id("policies", org)).collect()
}

/// The UPDATE claims the batch: it repeats the look-up's conditions, so a policy another instance
/// moved between this one's look-up and its update no longer matches and is left out. The
/// organization's row is locked first (as the writes that check rules across its records do),
/// then the policies; a single policy's write locks only its row, so no two wait for each other
/// in opposite orders. `updated_at < now` keeps `updatedAt` moving forward; a
/// policy changed "later" by a clock ahead of this one's is taken at a later tick.
pub(crate) async fn flag_due(
    pools: &Pools,
    org: &OrganizationId,
    now: Timestamp,
    limit: usize,
    audit: &AuditOf<'_, Policy>,
) -> Result<Vec<Policy>, RepoError> {
    let (org, at, limit) = (org.as_str(), naive(now), i64::try_from(limit).unwrap_or(i64::MAX));
    let mut conn = pools.write().await?;
    let result: Result<Vec<Policy>, TxError> = write_transaction!(&mut conn, async |c| {
        lock_organization(c.any(), org).await?;
        let batch: Vec<String> = policies::table
            .filter(policies::organization_id.eq(org))
            .filter(policies::status.eq(PUBLISHED))
            .filter(policies::is_archived.eq(false))
            .filter(policies::review_date.le(at))
            .filter(policies::updated_at.lt(at))
            .order(policies::id.asc())
            .limit(limit)
            .select(policies::id)
            .load(c)
            .await?;
        if batch.is_empty() {
            // another instance took them: nothing to write
            return Err(TxError::Repo(RepoError::NotFound));
        }
        let due = policies::table
            .filter(policies::organization_id.eq(org))
            .filter(policies::id.eq_any(&batch))
            .filter(policies::status.eq(PUBLISHED))
            .filter(policies::is_archived.eq(false))
            .filter(policies::review_date.le(at))
            .filter(policies::updated_at.lt(at));
        let mut rows: Vec<PolicyRow> = diesel::update(due)
            .set((policies::status.eq(NEEDS_REVIEW), policies::updated_at.eq(at)))
            .returning(PolicyRow::as_returning())
            .get_results(c)
            .await?;
        if rows.is_empty() {
            return Err(TxError::Repo(RepoError::NotFound));
        }
        rows.sort_by(|a, b| a.id().cmp(b.id()));
        let mut flagged = Vec::with_capacity(rows.len());
        for row in rows {
            let after = Policy::try_from(row)?;
            let mut before = after.clone();
            before.status = PolicyStatus::Published;
            c.append(audit(Some(&before), Some(&after))).await?;
            flagged.push(after);
        }
        Ok(flagged)
    });
    match result.map_err(RepoError::from) {
        Err(RepoError::NotFound) => Ok(Vec::new()),
        other => other,
    }
}
