//! The row locks an audited write takes before it reads what it changes: its record's, or its
//! organization's when it checks a rule across the organization's records. PostgreSQL only:
//! SQLite's write transactions take the file's write lock when they begin (`BEGIN IMMEDIATE`,
//! `write_transaction!`), so its writes already follow one another.

use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::sql_types::{Array, Text};
use diesel::sqlite::Sqlite;
use diesel_async::RunQueryDsl;

use crate::db::ConnRef;

/// A `SELECT` of the record a write changes, which locks it on PostgreSQL (`… FOR UPDATE`) and
/// reads it as it is on SQLite. Read with `get_result`, not `first`: `LIMIT 1` would go after
/// the lock clause. One statement, where a lock and then a read were two: a write of one hot
/// record holds its lock from this statement to its commit, so each round trip less is one less
/// that the record's next writer waits for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Locked<Q>(pub Q);

impl<Q> QueryId for Locked<Q> {
    type QueryId = ();
    // keyed by its SQL text, as `Prepared` is
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: Query> Query for Locked<Q> {
    type SqlType = Q::SqlType;
}

impl<Q: QueryFragment<Pg>> QueryFragment<Pg> for Locked<Q> {
    fn walk_ast<'b>(&'b self, mut pass: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        self.0.walk_ast(pass.reborrow())?;
        pass.push_sql(" FOR UPDATE");
        Ok(())
    }

    fn is_safe_to_cache_prepared(&self, backend: &Pg) -> QueryResult<bool> {
        self.0.is_safe_to_cache_prepared(backend)
    }
}

impl<Q: QueryFragment<Sqlite>> QueryFragment<Sqlite> for Locked<Q> {
    fn walk_ast<'b>(&'b self, pass: AstPass<'_, 'b, Sqlite>) -> QueryResult<()> {
        self.0.walk_ast(pass)
    }

    fn is_safe_to_cache_prepared(&self, backend: &Sqlite) -> QueryResult<bool> {
        self.0.is_safe_to_cache_prepared(backend)
    }
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
