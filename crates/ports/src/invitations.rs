//! Invitations to join an organization.

use async_trait::async_trait;
use compliance_domain::etag::IfMatch;
use compliance_domain::invitation::Invitation;
use compliance_domain::people::Member;
use compliance_domain::{InvitationId, OrganizationId, Timestamp};

use crate::{AuditOf, Page, PageRequest, RepoError};

/// What became of an acceptance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acceptance {
    /// The invitation is now used and the membership exists.
    Accepted,
    /// Another acceptance used it first, or it expired or was deleted meanwhile: nothing written.
    NoLongerPending,
}

/// Invitations to an organization; every method is scoped to one.
#[async_trait]
pub trait InvitationRepository: Send + Sync {
    /// Inserts the invitation and `audit`'s entry of it, in one transaction.
    async fn insert(&self, invitation: &Invitation, audit: &AuditOf<'_, Invitation>) -> Result<(), RepoError>;
    /// A page of the organization's invitations, newest first.
    async fn list(&self, org: &OrganizationId, page: &PageRequest) -> Result<Page<Invitation>, RepoError>;
    /// One invitation; `RepoError::NotFound` when it is not the organization's.
    async fn get(&self, org: &OrganizationId, id: &InvitationId) -> Result<Invitation, RepoError>;
    /// Withdraws the invitation, with `audit`'s entry, in one transaction, while `if_match`
    /// holds for its tag at `now` ([`Invitation::etag_at`]; else `RepoError::PreconditionFailed`
    /// and nothing changes).
    async fn delete(
        &self,
        org: &OrganizationId,
        id: &InvitationId,
        if_match: &IfMatch,
        now: Timestamp,
        audit: &AuditOf<'_, Invitation>,
    ) -> Result<(), RepoError>;
    /// The invitation whose token's SHA-256 (hex) is `token_hash`, of any organization.
    async fn find_by_token(&self, token_hash: &str) -> Result<Option<Invitation>, RepoError>;
    /// In one transaction: marks the invitation used by `member`'s user if it is still pending at
    /// `now`, and inserts `member`. Conflict (nothing written) when the user is already a member.
    /// With `audit`'s entries of the invitation used and of the membership made.
    async fn accept(
        &self,
        invitation: &Invitation,
        member: &Member,
        now: Timestamp,
        audit: (&AuditOf<'_, Invitation>, &AuditOf<'_, Member>),
    ) -> Result<Acceptance, RepoError>;
}
