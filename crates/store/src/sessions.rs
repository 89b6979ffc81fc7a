//! A user's own sessions and memberships, across organizations.

use async_trait::async_trait;
use compliance_domain::people::{Member, Session};
use compliance_domain::{OrganizationId, SessionId, Timestamp, UserId};
use compliance_ports::{AuditEach, Membership, RepoError, SessionRepository};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{AnyConnection, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::locks::lock_organization;
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

    async fn delete_session(
        &self,
        user: &UserId,
        id: &SessionId,
        audit: &AuditEach<'_, Session>,
    ) -> Result<Session, RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<Session, TxError> = write_transaction!(&mut conn, async |c| {
            // The organizations' rows first, as a membership change locks them (the session's
            // delete then moves the organizations' access generations, which a membership
            // change locks after its organization too): each the user is an active member of,
            // by id.
            let orgs: Vec<String> = members::table
                .filter(members::user_id.eq(user.as_str()))
                .filter(members::is_active.eq(true))
                .select(members::organization_id)
                .order(members::organization_id.asc())
                .load(c)
                .await?;
            let mut locked = Vec::with_capacity(orgs.len());
            for org in orgs {
                lock_organization(c.any(), &org).await?;
                locked.push(OrganizationId::parse(&org).map_err(|e| crate::error::corrupt("members", e))?);
            }
            // None deleted: NotFound, and the locks end with the transaction.
            let session: Session =
                diesel::delete(sessions::table.find(id.as_str()).filter(sessions::user_id.eq(user.as_str())))
                    .returning(SessionRow::as_returning())
                    .get_result(c)
                    .await?
                    .try_into()?;
            for org in &locked {
                c.append(audit(org, Some(&session), None)).await?;
            }
            Ok(session)
        });
        result.map_err(RepoError::from)
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
