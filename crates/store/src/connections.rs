//! Integration connections (their secrets are in the vault, see `vault.rs`).

use async_trait::async_trait;
use compliance_domain::integration::{Connection, ConnectionStatus};
use compliance_domain::{ConnectionId, OrganizationId, Timestamp};
use compliance_ports::{
    AuditOf, ConnectionFilter, ConnectionQuery, ConnectionRepository, ConnectionSort, Page, RepoError, SortValue,
    SuggestedChecks,
};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use time::PrimitiveDateTime;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{AnyConnection, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::library::link_suggested_checks;
use crate::locks::lock_organization;
use crate::paging::{ListBackend, SortColumn, SortColumns, read_page, sort_columns, text_in, time_range};
use crate::rows::{id, optional_instant, optional_naive, value};
use crate::schema::connections;
use crate::search;

pub(crate) const DISCONNECTED: &str = ConnectionStatus::Disconnected.as_str();

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = connections)]
pub(crate) struct ConnectionRow {
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

/// The organization's connections that match every filter of `query`.
fn connections_matching<DB: ListBackend>(
    matching: connections::BoxedQuery<'static, DB>,
    org: &str,
    query: &ConnectionQuery,
) -> connections::BoxedQuery<'static, DB> {
    let ConnectionFilter { status, provider } = &query.filter;
    let conditions = [
        text_in(connections::status, status),
        text_in(connections::provider, provider),
        time_range(&query.times, connections::created_at, Some(connections::updated_at)),
        search::filter(&search::CONNECTIONS, org, query.search.as_ref()),
    ];
    let mut matching = matching.filter(connections::organization_id.eq(DB::text(org.to_owned())));
    for condition in conditions.into_iter().flatten() {
        matching = matching.filter(condition);
    }
    matching
}

/// The columns `query` orders connections by, the id last.
fn connection_order<DB: ListBackend>(query: &ConnectionQuery) -> SortColumns<connections::table, DB> {
    let column = |field| match field {
        ConnectionSort::CreatedAt => SortColumn::time(connections::created_at),
        ConnectionSort::UpdatedAt => SortColumn::time(connections::updated_at),
        ConnectionSort::Provider => SortColumn::text(connections::provider),
        ConnectionSort::Status => SortColumn::text(connections::status),
    };
    sort_columns(&query.sort_keys(ConnectionSort::CreatedAt), column, connections::id)
}

/// A connection's value of a sort field, as its cursor holds it.
fn connection_sort_value(connection: &Connection, field: ConnectionSort) -> SortValue {
    match field {
        ConnectionSort::CreatedAt => SortValue::Time(connection.created_at),
        ConnectionSort::UpdatedAt => SortValue::Time(connection.updated_at),
        ConnectionSort::Provider => SortValue::Text(connection.provider.clone()),
        ConnectionSort::Status => SortValue::Text(connection.status.to_string()),
    }
}

#[async_trait]
impl ConnectionRepository for Store {
    async fn insert(
        &self,
        connection: &Connection,
        audit: &AuditOf<'_, Connection>,
        links: &SuggestedChecks<'_>,
    ) -> Result<(), RepoError> {
        let row = ConnectionRow::from(connection);
        let org = connection.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        // A second live connection to the same provider violates connections_one_live_per_provider,
        // which repo_error turns into a conflict.
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            diesel::insert_into(connections::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(connection))).await?;
            let (org, at) = (&connection.organization_id, connection.created_at);
            link_suggested_checks(c, org, &connection.id, links, at).await
        });
        result.map_err(RepoError::from)
    }

    async fn list(&self, org: &OrganizationId, query: &ConnectionQuery) -> Result<Page<Connection>, RepoError> {
        let (org, matching) = (org.to_string(), query.clone());
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<(ConnectionRow, i64)>, _) = read_page!(
            &mut conn,
            &query.page,
            connections_matching(connections::table.into_boxed(), &org, &matching),
            (ConnectionRow::as_select(), search::relevance(&search::CONNECTIONS, &org, &matching)),
            search::order(&search::CONNECTIONS, &org, &matching, connection_order(&matching)),
            None,
        )
        .map_err(repo_error)?;
        let items = rows
            .into_iter()
            .map(|(row, relevance)| Ok((Connection::try_from(row)?, relevance)))
            .collect::<Result<Vec<_>, RepoError>>()?;
        let keys = query.sort_keys(ConnectionSort::CreatedAt);
        let page = Page::from_rows(items, &query.page, total, |(item, relevance)| {
            let values = keys.iter().map(|key| connection_sort_value(item, key.field)).collect();
            search::cursor(query, *relevance, values, item.id.to_string())
        });
        Ok(page.map(|(item, _)| item))
    }

    async fn get_connection(&self, org: &OrganizationId, id: &ConnectionId) -> Result<Connection, RepoError> {
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

    async fn update_connection(
        &self,
        connection: &Connection,
        read_at: Timestamp,
        audit: &AuditOf<'_, Connection>,
    ) -> Result<(), RepoError> {
        let read_at = read_at.to_utc_naive();
        let changes = ConnectionChanges::from(connection);
        let (org, id) = (connection.organization_id.as_str(), connection.id.as_str());
        let mut conn = self.pools.write().await?;
        // A disconnected connection is final, and a row changed since it was read is not
        // overwritten: a slow check must not undo a disconnect or a re-authorisation. Finding
        // nothing rolls back: no entry.
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            let target = connections::table
                .filter(connections::organization_id.eq(org))
                .filter(connections::id.eq(id))
                .filter(connections::status.ne(DISCONNECTED))
                .filter(connections::updated_at.eq(read_at));
            let before: Option<ConnectionRow> = target.select(ConnectionRow::as_select()).first(c).await.optional()?;
            let Some(before) = before else { return Err(TxError::Repo(RepoError::NotFound)) };
            diesel::update(target).set(&changes).execute(c).await?;
            let before = Connection::try_from(before)?;
            c.append(audit(Some(&before), Some(connection))).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }
}
