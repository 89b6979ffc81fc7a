//! Merging the segments of SQLite's search indexes, which keeps a search's cost near its matches'
//! as the tables grow.
//!
//! FTS5 writes each transaction's changes to an index as a new segment (a b-tree of terms) and
//! merges segments as more arrive only four at a time (its `automerge`): an index written row by
//! row through the API keeps a dozen segments, and a search seeks each of its words in every one.
//! On a copy of the large bench's database (8 segments), the risks search statement took 2.1 ms
//! for the organization of 100,000 risks; merged into one segment, 0.43 ms (docs/performance.md).
//!
//! The migration `2026-11-29-000028_search_usermerge` lets FTS5's `merge` command merge as few as
//! two segments of a level; [`Store::merge_search_indexes`] runs it, [`STEP_PAGES`] pages at a
//! time, each step its own short write so that requests' writes go between them, until no level
//! holds two segments. So an index keeps about one segment per size class (a handful), and a
//! merge rewrites a large segment only once one of its own size has accumulated beside it.
//!
//! PostgreSQL's GIN indexes need nothing of the kind: autovacuum folds their pending entries in.

use std::time::Duration;

use compliance_ports::RepoError;
use diesel::sql_types::BigInt;
use diesel::{QueryableByName, RunQueryDsl, SqliteConnection};

use super::ALL;
use crate::Store;
use crate::db::Pools;
use crate::error::{pool_error, repo_error};

/// Pages (about 4 KB each) one merge step writes at most: about 20 ms of SQLite's single writer.
const STEP_PAGES: u32 = 100;

impl Store {
    /// Merges the segments of every SQLite search index until no level of one holds two; the
    /// steps that merged something. PostgreSQL: nothing to do, 0.
    pub async fn merge_search_indexes(&self) -> Result<u64, RepoError> {
        let Pools::Sqlite { writer, .. } = &self.pools else { return Ok(0) };
        let mut steps = 0;
        for table in ALL.map(|list| list.table) {
            loop {
                let mut writer = writer.get().await.map_err(pool_error)?;
                let merged = writer.spawn_blocking(move |c| merge_step(c, table)).await.map_err(repo_error)?;
                if !merged {
                    break;
                }
                steps += 1;
            }
        }
        Ok(steps)
    }

    /// Works until the task is dropped or aborted: a merge (see [`Store::merge_search_indexes`]),
    /// then `interval`. Every instance may run it: SQLite serialises the steps, and a step with
    /// nothing to merge writes nothing.
    pub async fn keep_search_indexes_merged(&self, interval: Duration) {
        if !matches!(self.pools, Pools::Sqlite { .. }) {
            return;
        }
        loop {
            match self.merge_search_indexes().await {
                Ok(0) => {}
                Ok(steps) => tracing::debug!(steps, "search indexes merged"),
                Err(error) => tracing::warn!(%error, "could not merge the search indexes"),
            }
            tokio::time::sleep(interval).await;
        }
    }
}

#[derive(QueryableByName)]
struct Changes {
    #[diesel(sql_type = BigInt)]
    changes: i64,
}

/// One `merge` command on `<table>_search`; whether it merged anything. FTS5's documented test:
/// a command that found nothing to merge changed fewer than two rows of the index.
fn merge_step(c: &mut SqliteConnection, table: &str) -> diesel::QueryResult<bool> {
    let total_changes = |c: &mut SqliteConnection| {
        diesel::sql_query("SELECT total_changes() AS changes").get_result::<Changes>(c).map(|row| row.changes)
    };
    let before = total_changes(c)?;
    diesel::sql_query(format!("INSERT INTO {table}_search ({table}_search, rank) VALUES ('merge', {STEP_PAGES})"))
        .execute(c)?;
    Ok(total_changes(c)? - before >= 2)
}
