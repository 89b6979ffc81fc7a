//! Storage of integration connections (their secrets are in the [`crate::SecretRepository`]).

use async_trait::async_trait;
use compliance_domain::integration::Connection;
use compliance_domain::{ConnectionId, OrganizationId, Timestamp};

use crate::{AuditOf, ConnectionQuery, Page, RepoError, SuggestedChecks};

/// The organizations' integration connections (their secrets are in the vault).
#[async_trait]
pub trait ConnectionRepository: Send + Sync {
    /// Inserts the connection and links the checks it runs to the organization's controls made
    /// from the library that suggest them (`links`), in one transaction.
    /// `RepoError::Conflict` when the organization already has a connection to that provider that
    /// is not disconnected.
    async fn insert(
        &self,
        connection: &Connection,
        audit: &AuditOf<'_, Connection>,
        links: &SuggestedChecks<'_>,
    ) -> Result<(), RepoError>;
    /// A page of the connections matching the query (disconnected ones included unless filtered
    /// out), in its order (newest first by default).
    async fn list(&self, org: &OrganizationId, query: &ConnectionQuery) -> Result<Page<Connection>, RepoError>;
    /// One connection; `RepoError::NotFound` when it is not the organization's.
    async fn get_connection(&self, org: &OrganizationId, id: &ConnectionId) -> Result<Connection, RepoError>;
    /// The organization's connection to `provider` that is not disconnected, if any.
    async fn find_live(&self, org: &OrganizationId, provider: &str) -> Result<Option<Connection>, RepoError>;
    /// Replaces every mutable field (status, timestamps, token expiry, last check) of the
    /// connection with this id in this organization, if its `updated_at` is still `read_at` (the
    /// value it was read with): a change made meanwhile is never overwritten by an older view.
    /// A disconnected connection is final: it is never updated again. `RepoError::NotFound` when
    /// there is no such live connection, or it changed since `read_at`.
    async fn update_connection(
        &self,
        connection: &Connection,
        read_at: Timestamp,
        audit: &AuditOf<'_, Connection>,
    ) -> Result<(), RepoError>;
}
