use std::time::Duration;

use async_trait::async_trait;
use compliance_domain::chat::ChatMessage;
use compliance_domain::{OrganizationId, UserId};

use crate::RepoError;

/// Ephemeral per-user chat histories, scoped by organization and user.
#[async_trait]
pub trait ChatStore: Send + Sync {
    /// Replaces the whole history and (re)starts its time to live.
    async fn replace(
        &self,
        org: &OrganizationId,
        user: &UserId,
        messages: &[ChatMessage],
        ttl: Duration,
    ) -> Result<(), RepoError>;
    /// The history, or an empty one when there is none or it expired.
    async fn get(&self, org: &OrganizationId, user: &UserId) -> Result<Vec<ChatMessage>, RepoError>;
    /// Forgets the user's history in the organization.
    async fn clear(&self, org: &OrganizationId, user: &UserId) -> Result<(), RepoError>;
}
