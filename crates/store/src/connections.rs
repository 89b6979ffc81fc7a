//! Integration connections (their secrets are in the vault, see `vault.rs`).

use async_trait::async_trait;
use compliance_domain::integration::{Connection, ConnectionStatus};
use compliance_domain::{ConnectionId, OrganizationId, Timestamp};
use compliance_ports::{ConnectionRepository, RepoError};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::db::db_run;
use crate::error::repo_error;
use crate::rows::{id, optional_instant, optional_naive, value};
use crate::schema::connections;

const DISCONNECTED: &str = ConnectionStatus::Disconnected.as_str();

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = connections)]
struct ConnectionRow {
    id: String,
    organization_id: String,
    provider: String,
    status: String,
    created_by: String,
    created_at: PrimitiveDateTime,
    updated_at: PrimitiveDateTime,
    connected_at: Option<PrimitiveDateTime>,
    disconnected_at: Option<PrimitiveDateTime>,
    token_expires_at: Option<PrimitiveDateTime>,
    last_checked_at: Option<PrimitiveDateTime>,
    last_error: Option<String>,
}

/// What `update` replaces; `None` writes NULL (a cleared error or expiry must be stored as such).
#[derive(AsChangeset)]
#[diesel(table_name = connections, treat_none_as_null = true)]
struct ConnectionChanges<'a> {
    status: &'a str,
    updated_at: PrimitiveDateTime,
    connected_at: Option<PrimitiveDateTime>,
    disconnected_at: Option<PrimitiveDateTime>,
    token_expires_at: Option<PrimitiveDateTime>,
    last_checked_at: Option<PrimitiveDateTime>,
    last_error: Option<&'a str>,
}

impl From<&Connection> for ConnectionRow {
    fn from(c: &Connection) -> Self {
        Self {
            id: c.id.to_string(),
            organization_id: c.organization_id.to_string(),
            provider: c.provider.clone(),
            status: c.status.as_str().to_owned(),
            created_by: c.created_by.to_string(),
            created_at: c.created_at.to_utc_naive(),
            updated_at: c.updated_at.to_utc_naive(),
            connected_at: optional_naive(c.connected_at),
            disconnected_at: optional_naive(c.disconnected_at),
            token_expires_at: optional_naive(c.token_expires_at),
            last_checked_at: optional_naive(c.last_checked_at),
            last_error: c.last_error.clone(),
        }
    }
}

impl<'a> From<&'a Connection> for ConnectionChanges<'a> {
    fn from(c: &'a Connection) -> Self {
        Self {
            status: c.status.as_str(),
            updated_at: c.updated_at.to_utc_naive(),
            connected_at: optional_naive(c.connected_at),
            disconnected_at: optional_naive(c.disconnected_at),
            token_expires_at: optional_naive(c.token_expires_at),
            last_checked_at: optional_naive(c.last_checked_at),
            last_error: c.last_error.as_deref(),
        }
    }
}

impl TryFrom<ConnectionRow> for Connection {
    type Error = RepoError;
    fn try_from(r: ConnectionRow) -> Result<Self, RepoError> {
        Ok(Self {
            id: id("connections", r.id)?,
            organization_id: id("connections", r.organization_id)?,
            provider: r.provider,
            status: value("connections", &r.status)?,
            created_by: id("connections", r.created_by)?,
            created_at: Timestamp::from_utc_naive(r.created_at),
            updated_at: Timestamp::from_utc_naive(r.updated_at),
            connected_at: optional_instant(r.connected_at),
            disconnected_at: optional_instant(r.disconnected_at),
            token_expires_at: optional_instant(r.token_expires_at),
            last_checked_at: optional_instant(r.last_checked_at),
            last_error: r.last_error,
        })
    }
}

#[async_trait]
impl ConnectionRepository for Store {
    async fn insert(&self, connection: &Connection) -> Result<(), RepoError> {
        let row = ConnectionRow::from(connection);
        let mut conn = self.pools.write().await?;
        // A second live connection to the same provider violates connections_one_live_per_provider,
        // which repo_error turns into a conflict.
        db_run!(&mut conn, |c| diesel::insert_into(connections::table).values(&row).execute(c).await)
            .map_err(repo_error)?;
        Ok(())
    }

    async fn list(&self, org: &OrganizationId) -> Result<Vec<Connection>, RepoError> {
        let mut conn = self.pools.read().await?;
        let rows: Vec<ConnectionRow> = db_run!(&mut conn, |c| {
            connections::table
                .filter(connections::organization_id.eq(org.as_str()))
                .order((connections::created_at.desc(), connections::id.desc()))
                .select(ConnectionRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(Connection::try_from).collect()
    }

    async fn get(&self, org: &OrganizationId, id: &ConnectionId) -> Result<Connection, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: ConnectionRow = db_run!(&mut conn, |c| {
            connections::table
                .filter(connections::organization_id.eq(org.as_str()))
                .filter(connections::id.eq(id.as_str()))
                .select(ConnectionRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn find_live(&self, org: &OrganizationId, provider: &str) -> Result<Option<Connection>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<ConnectionRow> = db_run!(&mut conn, |c| {
            connections::table
                .filter(connections::organization_id.eq(org.as_str()))
                .filter(connections::provider.eq(provider))
                .filter(connections::status.ne(DISCONNECTED))
                .select(ConnectionRow::as_select())
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        row.map(Connection::try_from).transpose()
    }

    async fn update(&self, connection: &Connection, read_at: Timestamp) -> Result<(), RepoError> {
        let read_at = read_at.to_utc_naive();
        let changes = ConnectionChanges::from(connection);
        let (org, id) = (connection.organization_id.as_str(), connection.id.as_str());
        let mut conn = self.pools.write().await?;
        // A disconnected connection is final, and a row changed since it was read is not
        // overwritten: a slow check must not undo a disconnect or a re-authorisation.
        let updated = db_run!(&mut conn, |c| {
            diesel::update(
                connections::table
                    .filter(connections::organization_id.eq(org))
                    .filter(connections::id.eq(id))
                    .filter(connections::status.ne(DISCONNECTED))
                    .filter(connections::updated_at.eq(read_at)),
            )
            .set(&changes)
            .execute(c)
            .await
        })
        .map_err(repo_error)?;
        if updated == 0 {
            return Err(RepoError::NotFound);
        }
        Ok(())
    }
}
