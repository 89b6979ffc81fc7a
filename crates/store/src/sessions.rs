//! A user's own sessions and memberships, across organizations.

use async_trait::async_trait;
use compliance_domain::people::{Member, Session};
use compliance_domain::{SessionId, Timestamp, UserId};
use compliance_ports::{Membership, RepoError, SessionRepository};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use crate::Store;
use crate::db::db_run;
use crate::error::repo_error;
use crate::rows::{MemberRow, SessionRow, naive};
use crate::schema::{members, organizations, sessions};

#[async_trait]
impl SessionRepository for Store {
    async fn list_sessions(&self, user: &UserId, now: Timestamp) -> Result<Vec<Session>, RepoError> {
        let now = naive(now);
        let mut conn = self.pools.read().await?;
        let rows: Vec<SessionRow> = db_run!(&mut conn, |c| {
            sessions::table
                .filter(sessions::user_id.eq(user.as_str()))
                .filter(sessions::expires_at.gt(now))
                .order((sessions::created_at.desc(), sessions::id.desc()))
                .select(SessionRow::as_select())
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter().map(Session::try_from).collect()
    }

    async fn delete_session(&self, user: &UserId, id: &SessionId) -> Result<Session, RepoError> {
        let mut conn = self.pools.write().await?;
        let row: SessionRow = db_run!(&mut conn, |c| {
            diesel::delete(sessions::table.find(id.as_str()).filter(sessions::user_id.eq(user.as_str())))
                .returning(SessionRow::as_returning())
                .get_result(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn memberships(&self, user: &UserId) -> Result<Vec<Membership>, RepoError> {
        let mut conn = self.pools.read().await?;
        let rows: Vec<(MemberRow, String)> = db_run!(&mut conn, |c| {
            members::table
                .inner_join(organizations::table)
                .filter(members::user_id.eq(user.as_str()))
                .filter(members::is_active.eq(true))
                .order((members::created_at.asc(), members::id.asc()))
                .select((MemberRow::as_select(), organizations::name))
                .load(c)
                .await
        })
        .map_err(repo_error)?;
        rows.into_iter()
            .map(|(member, organization_name)| Ok(Membership { member: Member::try_from(member)?, organization_name }))
            .collect()
    }
}
