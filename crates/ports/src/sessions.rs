//! A user's own sessions and memberships, across organizations.

use async_trait::async_trait;
use compliance_domain::people::{Member, Session};
use compliance_domain::{SessionId, Timestamp, UserId};

use crate::{AuditEach, RepoError};

/// A membership with the name of its organization.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    /// The membership.
    pub member: Member,
    /// Its organization's name.
    pub organization_name: String,
}

/// A user's own sessions and memberships, across organizations.
#[async_trait]
pub trait SessionRepository: Send + Sync {
    /// The user's sessions that have not expired at `now`, newest first.
    async fn list_sessions(&self, user: &UserId, now: Timestamp) -> Result<Vec<Session>, RepoError>;
    /// Deletes one of the user's sessions; NotFound when it is not theirs (or not at all).
    /// With `audit`'s entry in each organization the user is an active member of.
    async fn delete_session(
        &self,
        user: &UserId,
        id: &SessionId,
        audit: &AuditEach<'_, Session>,
    ) -> Result<Session, RepoError>;
    /// The user's active memberships, oldest first.
    async fn memberships(&self, user: &UserId) -> Result<Vec<Membership>, RepoError>;
}
