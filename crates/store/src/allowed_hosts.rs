//! The internal hosts the operator granted to each organization, for its webhooks or automations.

use async_trait::async_trait;
use compliance_domain::OrganizationId;
use compliance_domain::allowed_host::{AllowedHost, AllowedHostUse};
use compliance_ports::{AllowedHostRepository, RepoError};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::db::db_run;
use crate::error::repo_error;
use crate::rows::{id, instant, value};
use crate::schema::organization_allowed_hosts as grants;

const TABLE: &str = "organization_allowed_hosts";

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = grants)]
struct GrantRow {
    organization_id: String,
    used_for: String,
    host: String,
    granted_at: PrimitiveDateTime,
}

impl TryFrom<GrantRow> for AllowedHost {
    type Error = RepoError;
    fn try_from(r: GrantRow) -> Result<Self, RepoError> {
        Ok(Self {
            organization_id: id(TABLE, r.organization_id)?,
            used_for: value(TABLE, &r.used_for)?,
            host: r.host,
            granted_at: instant(r.granted_at),
        })
    }
}

#[async_trait]
impl AllowedHostRepository for Store {
    async fn hosts(&self, org: &OrganizationId, used_for: AllowedHostUse) -> Result<Vec<String>, RepoError> {
        let mut conn = self.pools.read().await?;
        db_run!(&mut conn, |c| {
            grants::table
                .filter(grants::organization_id.eq(org.as_str()))
                .filter(grants::used_for.eq(used_for.as_str()))
                .select(grants::host)
                .load::<String>(c)
                .await
        })
        .map_err(repo_error)
    }

    async fn list(&self, org: &OrganizationId) -> Result<Vec<AllowedHost>, RepoError> {
        let mut conn = self.pools.read().await?;
        let rows: Vec<GrantRow> = db_run!(&mut conn, |c| {
            grants::table
                .filter(grants::organization_id.eq(org.as_str()))
                .order((grants::used_for, grants::host))
                .select(GrantRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(AllowedHost::try_from).collect()
    }

    async fn grant(&self, grant: &AllowedHost) -> Result<AllowedHost, RepoError> {
        let row = GrantRow {
            organization_id: grant.organization_id.to_string(),
            used_for: grant.used_for.as_str().to_owned(),
            host: grant.host.clone(),
            granted_at: grant.granted_at.to_utc_naive(),
        };
        let mut conn = self.pools.write().await?;
        // A grant made before is kept (with its time) and answered.
        db_run!(&mut conn, |c| {
            diesel::insert_into(grants::table).values(&row).on_conflict_do_nothing().execute(c).await
        })
        .map_err(repo_error)?;
        let stored: GrantRow = db_run!(&mut conn, |c| {
            grants::table
                .filter(grants::organization_id.eq(&row.organization_id))
                .filter(grants::used_for.eq(&row.used_for))
                .filter(grants::host.eq(&row.host))
                .select(GrantRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        stored.try_into()
    }

    async fn revoke(&self, org: &OrganizationId, used_for: AllowedHostUse, host: &str) -> Result<bool, RepoError> {
        let mut conn = self.pools.write().await?;
        let deleted = db_run!(&mut conn, |c| {
            diesel::delete(
                grants::table
                    .filter(grants::organization_id.eq(org.as_str()))
                    .filter(grants::used_for.eq(used_for.as_str()))
                    .filter(grants::host.eq(host)),
            )
            .execute(c)
            .await
        })
        .map_err(repo_error)?;
        Ok(deleted > 0)
    }
}
