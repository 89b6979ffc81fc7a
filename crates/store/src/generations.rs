//! How many changes of an organization's list have committed: the sum of its shards in
//! `list_generations`, which the database's triggers bump in every writing transaction (see the
//! migration `list_generations`).

use async_trait::async_trait;
use compliance_domain::OrganizationId;
use compliance_ports::{ListGenerations, ListName, RepoError};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use crate::Store;
use crate::db::{Here, db_run};
use crate::error::{pg_error, repo_error};
use crate::schema::list_generations;

/// The PostgreSQL side of the query below, on a thread's own connection.
const SHARDS: &str = "SELECT generation FROM list_generations WHERE organization_id = $1 AND list = $2";

#[async_trait]
impl ListGenerations for Store {
    async fn generation(&self, org: &OrganizationId, list: ListName) -> Result<u64, RepoError> {
        // Read on the calling thread: a kept page is then answered without leaving it.
        let shards: Vec<i64> = match self.pools.here().await? {
            Here::Pg(connection) => {
                let rows = connection.query(SHARDS, &[&org.as_str(), &list.as_str()]).await.map_err(pg_error)?;
                rows.iter().map(|row| row.try_get(0)).collect::<Result<_, _>>().map_err(pg_error)?
            }
            Here::Sqlite(mut conn) => db_run!(&mut conn, |c| {
                list_generations::table
                    .filter(list_generations::organization_id.eq(org.as_str()))
                    .filter(list_generations::list.eq(list.as_str()))
                    .select(list_generations::generation)
                    .load(c)
                    .await
            })
            .map_err(repo_error)?,
        };
        // Summed here: PostgreSQL's SUM(bigint) is a numeric, which needs a decoder.
        Ok(shards.into_iter().map(|shard| shard.unsigned_abs()).fold(0, u64::wrapping_add))
    }
}
