//! Storage of integration connections (their secrets are in the [`crate::SecretRepository`]).

use async_trait::async_trait;
use compliance_domain::integration::Connection;
use compliance_domain::{ConnectionId, OrganizationId};

use crate::RepoError;

#[async_trait]
pub trait ConnectionRepository: Send + Sync {
    /// `RepoError::Conflict` when the organization already has a connection to that provider that
    /// is not disconnected.
    async fn insert(&self, connection: &Connection) -> Result<(), RepoError>;
    /// Newest first, disconnected ones included.
    async fn list(&self, org: &OrganizationId) -> Result<Vec<Connection>, RepoError>;
    async fn get(&self, org: &OrganizationId, id: &ConnectionId) -> Result<Connection, RepoError>;
    /// The organization's connection to `provider` that is not disconnected, if any.
    async fn find_live(&self, org: &OrganizationId, provider: &str) -> Result<Option<Connection>, RepoError>;
    /// Replaces every mutable field (status, timestamps, token expiry, last check) of the
    /// connection with this id in this organization. A disconnected connection is final: it is
    /// never updated again. `RepoError::NotFound` when there is no such connection that is live.
    async fn update(&self, connection: &Connection) -> Result<(), RepoError>;
}
