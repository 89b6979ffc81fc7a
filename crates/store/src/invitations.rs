//! Invitations to join an organization.

use async_trait::async_trait;
use compliance_domain::etag::IfMatch;
use compliance_domain::invitation::Invitation;
use compliance_domain::people::Member;
use compliance_domain::{InvitationId, OrganizationId, Timestamp};
use compliance_ports::{Acceptance, AuditOf, Cursor, InvitationRepository, Page, PageRequest, RepoError};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;

use crate::Store;
use crate::audit::AuditQueue;
use crate::db::{AnyConnection, db_run, write_transaction};
use crate::error::{TxError, repo_error};
use crate::locks::lock_organization;
use crate::paging::{newest_first, read_page};
use crate::rows::{MemberRow, id, instant, naive, optional_id, optional_instant, optional_naive, value};
use crate::schema::{invitations, members};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = invitations)]
pub struct InvitationRow {
    id: String,
    organization_id: String,
    email: String,
    role: String,
    department: String,
    token_hash: String,
    invited_by: String,
    created_at: time::PrimitiveDateTime,
    expires_at: time::PrimitiveDateTime,
    accepted_at: Option<time::PrimitiveDateTime>,
    accepted_by: Option<String>,
}

impl From<&Invitation> for InvitationRow {
    fn from(i: &Invitation) -> Self {
        Self {
            id: i.id.to_string(),
            organization_id: i.organization_id.to_string(),
            email: i.email.clone(),
            role: i.role.clone(),
            department: i.department.to_string(),
            token_hash: i.token_hash.clone(),
            invited_by: i.invited_by.to_string(),
            created_at: naive(i.created_at),
            expires_at: naive(i.expires_at),
            accepted_at: optional_naive(i.accepted_at),
            accepted_by: i.accepted_by.as_ref().map(ToString::to_string),
        }
    }
}

impl TryFrom<InvitationRow> for Invitation {
    type Error = RepoError;
    fn try_from(r: InvitationRow) -> Result<Self, RepoError> {
        const TABLE: &str = "invitations";
        Ok(Self {
            id: id(TABLE, r.id)?,
            organization_id: id(TABLE, r.organization_id)?,
            email: r.email,
            role: r.role,
            department: value(TABLE, &r.department)?,
            token_hash: r.token_hash,
            invited_by: id(TABLE, r.invited_by)?,
            created_at: instant(r.created_at),
            expires_at: instant(r.expires_at),
            accepted_at: optional_instant(r.accepted_at),
            accepted_by: optional_id(TABLE, r.accepted_by)?,
        })
    }
}

#[async_trait]
impl InvitationRepository for Store {
    async fn insert(&self, invitation: &Invitation, audit: &AuditOf<'_, Invitation>) -> Result<(), RepoError> {
        let row = InvitationRow::from(invitation);
        let org = invitation.organization_id.as_str();
        let mut conn = self.pools.write().await?;
        write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org).await?;
            diesel::insert_into(invitations::table).values(&row).execute(c).await?;
            c.append(audit(None, Some(invitation))).await
        })
        .map_err(repo_error)?;
        Ok(())
    }

    async fn list(&self, org: &OrganizationId, page: &PageRequest) -> Result<Page<Invitation>, RepoError> {
        let org = org.to_string();
        let mut conn = self.pools.read().await?;
        let (rows, total): (Vec<InvitationRow>, _) = read_page!(
            &mut conn,
            page,
            invitations::table.into_boxed().filter(invitations::organization_id.eq(org.clone())),
            InvitationRow::as_select(),
            newest_first(invitations::created_at, invitations::id),
            None,
        )
        .map_err(repo_error)?;
        let items = rows.into_iter().map(Invitation::try_from).collect::<Result<Vec<_>, _>>()?;
        Ok(Page::from_rows(items, page, total, |i| Cursor::newest_first(i.created_at, i.id.to_string())))
    }

    async fn get(&self, org: &OrganizationId, id: &InvitationId) -> Result<Invitation, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: InvitationRow = db_run!(&mut conn, |c| {
            invitations::table
                .filter(invitations::organization_id.eq(org.as_str()))
                .filter(invitations::id.eq(id.as_str()))
                .select(InvitationRow::as_select())
                .first(c)
                .await
        })
        .map_err(repo_error)?;
        row.try_into()
    }

    async fn delete(
        &self,
        org: &OrganizationId,
        id: &InvitationId,
        if_match: &IfMatch,
        now: Timestamp,
        audit: &AuditOf<'_, Invitation>,
    ) -> Result<(), RepoError> {
        let mut conn = self.pools.write().await?;
        let result: Result<(), TxError> = write_transaction!(&mut conn, async |c| {
            lock_organization(c.any(), org.as_str()).await?;
            let deleted: Invitation = diesel::delete(
                invitations::table
                    .filter(invitations::organization_id.eq(org.as_str()))
                    .filter(invitations::id.eq(id.as_str())),
            )
            .returning(InvitationRow::as_returning())
            .get_result(c)
            .await?
            .try_into()?;
            // The deleted row is the invitation as it was: a stale `If-Match` rolls it back.
            if_match.check(&deleted.etag_at(now))?;
            c.append(audit(Some(&deleted), None)).await?;
            Ok(())
        });
        result.map_err(RepoError::from)
    }

    async fn find_by_token(&self, token_hash: &str) -> Result<Option<Invitation>, RepoError> {
        let mut conn = self.pools.read().await?;
        let row: Option<InvitationRow> = db_run!(&mut conn, |c| {
            invitations::table
                .filter(invitations::token_hash.eq(token_hash))
                .select(InvitationRow::as_select())
                .first(c)
                .await
                .optional()
        })
        .map_err(repo_error)?;
        row.map(Invitation::try_from).transpose()
    }

    /// The update claims the invitation only while it is pending, so of two racing acceptances
    /// one writes and the other finds nothing to claim; the membership commits with the claim.
    async fn accept(
        &self,
        invitation: &Invitation,
        member: &Member,
        now: Timestamp,
        audit: (&AuditOf<'_, Invitation>, &AuditOf<'_, Member>),
    ) -> Result<Acceptance, RepoError> {
        let (audit_invitation, audit_member) = audit;
        let org = invitation.organization_id.as_str();
        let member_row = MemberRow::from(member);
        let (at, user) = (naive(now), member.user_id.as_str());
        let mut conn = self.pools.write().await?;
        let result: Result<Acceptance, TxError> = write_transaction!(&mut conn, async |c| {
            // The organization's lock first, as every membership change; a claim that finds
            // nothing rolls back (NotFound below), with no entry.
            lock_organization(c.any(), org).await?;
            let claimed: Option<InvitationRow> = diesel::update(
                invitations::table
                    .find(invitation.id.as_str())
                    .filter(invitations::accepted_at.is_null())
                    .filter(invitations::expires_at.gt(at)),
            )
            .set((invitations::accepted_at.eq(at), invitations::accepted_by.eq(user)))
            .returning(InvitationRow::as_returning())
            .get_result(c)
            .await
            .optional()?;
            let Some(claimed) = claimed else { return Err(TxError::Repo(RepoError::NotFound)) };
            let accepted = Invitation::try_from(claimed)?;
            diesel::insert_into(members::table).values(&member_row).execute(c).await?;
            c.append(audit_invitation(Some(invitation), Some(&accepted))).await?;
            lock_organization(c.any(), org).await?;
            c.append(audit_member(None, Some(member))).await?;
            Ok(Acceptance::Accepted)
        });
        match result.map_err(RepoError::from) {
            Err(RepoError::NotFound) => Ok(Acceptance::NoLongerPending),
            other => other,
        }
    }
}
