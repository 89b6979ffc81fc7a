//! Organizations (tenants).

use async_trait::async_trait;
use compliance_domain::OrganizationId;
use compliance_domain::etag::IfMatch;
use compliance_domain::organization::{Organization, OrganizationPatch};
use compliance_domain::people::Member;
use compliance_ports::{AuditOf, OrganizationRepository, RepoError};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{AnyConnection, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::locks::lock_organization;
use crate::rows::{MemberRow, OrganizationRow};
use crate::schema::{members, organizations};

#[async_trait]
impl OrganizationRepository for Store {
    /// The organization's chain starts with `audit`'s entry of it.
    async fn insert(&self, organization: &Organization, audit: &AuditOf<'_, Organization>) -> Result<(), RepoError> {
        let row = OrganizationRow::from(organization);
        let org = organization.id.as_str();
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            diesel::insert_into(organizations::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(organization))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn insert_with_owner(
        &self,
        organization: &Organization,
        owner: &Member,
        (audit_organization, audit_member): (&AuditOf<'_, Organization>, &AuditOf<'_, Member>),
    ) -> Result<(), RepoError> {
        let (row, owner_row) = (OrganizationRow::from(organization), MemberRow::from(owner));
        let org = organization.id.as_str();
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            diesel::insert_into(organizations::table).values(&row).execute(c).await?;
            diesel::insert_into(members::table).values(&owner_row).execute(c).await?;
            c.append(audit_organization(None, Some(organization))).await?;
            lock_organization(c.any(), org).await?;
            c.append(audit_member(None, Some(owner))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn get(&self, org: &OrganizationId) -> Result<Organization, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: OrganizationRow = db_run!(&mut conn, |c| {
            organizations::table.find(org.as_str()).select(OrganizationRow::as_select()).first(c).await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn find_by_slug(&self, slug: &str) -> Result<Option<Organization>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<OrganizationRow> = db_run!(&mut conn, |c| {
            organizations::table
                .filter(organizations::slug.eq(slug))
                .select(OrganizationRow::as_select())
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        row.map(Organization::try_from).transpose()
    }

    async fn list(&self, limit: usize) -> Result<Vec<Organization>, RepoError> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let mut conn = self.pools.read().await?;
        let rows: Vec<OrganizationRow> = db_run!(&mut conn, |c| {
            organizations::table
                .order((organizations::created_at.asc(), organizations::id.asc()))
                .limit(limit)
                .select(OrganizationRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(Organization::try_from).collect()
    }

    async fn device_label_holders(&self, label: i64) -> Result<Vec<OrganizationId>, RepoError> {
        let mut conn = self.pools.read().await?;
        let mut ids: Vec<String> = db_run!(&mut conn, |c| {
            organizations::table
                .filter(organizations::device_manager_label_id.eq(label))
                .select(organizations::id)
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        let by_member: Vec<String> = db_run!(&mut conn, |c| {
            members::table
                .filter(members::device_manager_label_id.eq(label))
                .select(members::organization_id)
                .distinct()
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        ids.extend(by_member);
        ids.sort();
        ids.dedup();
        ids.iter().map(|id| OrganizationId::parse(id).map_err(|e| crate::error::corrupt("organizations", e))).collect()
    }

    async fn update(
        &self,
        org: &OrganizationId,
        patch: &OrganizationPatch,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Organization>,
    ) -> Result<Organization, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<Organization, TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let row: OrganizationRow =
                organizations::table.find(org.as_str()).select(OrganizationRow::as_select()).first(c).await?;
            let before = Organization::try_from(row)?;
            if_match.check(&before.etag())?;
            let mut organization = before.clone();
            organization.apply(patch);
            diesel::update(organizations::table.find(org.as_str()))
                .set(&OrganizationRow::from(&organization))
                .execute(c)
                .await?;
            c.append(audit(Some(&before), Some(&organization))).await?;
            Ok(organization)
        });
        result.map_err(RepoError::from)
    }
}
