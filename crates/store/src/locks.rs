//! The row locks an audited write takes before it reads what it changes: its record's, or its
//! organization's when it checks a rule across the organization's records. PostgreSQL only:
//! SQLite has one writer, so its writes already follow one another.

use diesel::sql_types::{Array, Text};
use diesel_async::RunQueryDsl;

use crate::db::ConnRef;

/// Locks one record of `table` until the transaction ends (see [`lock_records`]). A write that
/// reads a record before changing it (for its audit entry's "from" side and its `If-Match`) locks
/// it first, so that concurrent writes of the same record follow one another while writes of
/// other records go on.
pub(crate) async fn lock_record(
    conn: ConnRef<'_>,
    table: &'static str,
    org: &str,
    id: &str,
) -> diesel::QueryResult<()> {
    lock_records(conn, table, org, &[id]).await
}

/// Locks these records of `table` until the transaction ends, in id order, in one statement
/// (`SELECT 1 … ORDER BY id FOR UPDATE`): a write of many records takes them in one order, so two
/// such writes wait for each other rather than deadlock.
pub(crate) async fn lock_records(
    conn: ConnRef<'_>,
    table: &'static str,
    org: &str,
    ids: &[&str],
) -> diesel::QueryResult<()> {
    match conn {
        ConnRef::Pg(c) if !ids.is_empty() => diesel::sql_query(format!(
            "SELECT 1 FROM {table} WHERE organization_id = $1 AND id = ANY($2) ORDER BY id FOR UPDATE"
        ))
        .bind::<Text, _>(org)
        .bind::<Array<Text>, _>(ids)
        .execute(c)
        .await
        .map(drop),
        _ => Ok(()),
    }
}

/// Locks the organization's row until the transaction ends (`FOR NO KEY UPDATE`): the writes
/// that check a rule across the organization's records (the last owner, one pending run per
/// automation, a framework's mappings before its delete) take it first, so two of them cannot
/// each miss the other. Inserts of records, which take only a key share of that row for their
/// foreign key, do not wait for it.
pub(crate) async fn lock_organization(conn: ConnRef<'_>, org: &str) -> diesel::QueryResult<()> {
    match conn {
        ConnRef::Pg(c) => diesel::sql_query("SELECT 1 FROM organizations WHERE id = $1 FOR NO KEY UPDATE")
            .bind::<Text, _>(org)
            .execute(c)
            .await
            .map(drop),
        ConnRef::Sqlite(_) => Ok(()),
    }
}
