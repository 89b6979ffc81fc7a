//! Whether the database answers, for `GET /ready`.

use async_trait::async_trait;
use compliance_ports::{HealthCheck, RepoError};
use diesel_async::RunQueryDsl;

use crate::Store;
use crate::db::db_run;
use crate::error::repo_error;

#[async_trait]
impl HealthCheck for Store {
    async fn ping(&self) -> Result<(), RepoError> {
        let mut conn = self.pools.read().await?;
        db_run!(&mut conn, |c| diesel::sql_query("SELECT 1").execute(c).await).map_err(repo_error)?;
        Ok(())
    }
}
