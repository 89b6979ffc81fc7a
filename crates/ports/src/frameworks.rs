//! Frameworks and their requirements: the repository and what its list is asked for.

use async_trait::async_trait;
use compliance_domain::applicability::Applicability;
use compliance_domain::etag::IfMatch;
use compliance_domain::framework::{Framework, FrameworkSource, FrameworkWithRequirements};
use compliance_domain::{FrameworkId, OrganizationId, Timestamp};

use crate::{AuditOf, ListQuery, Page, RepoError};

/// Frameworks: `source`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct FrameworkFilter {
    /// `source=`: rows with any of these (empty: all).
    pub source: Vec<FrameworkSource>,
}

/// The fields this list sorts by: none but its default (newest first); frameworks are few.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FrameworkSort {
    /// `createdAt`, the default's key (newest first).
    CreatedAt,
}

/// What a list of frameworks is asked for.
pub type FrameworkQuery = ListQuery<FrameworkFilter, FrameworkSort>;

/// Frameworks with their requirements; every method is scoped to an organization.
#[async_trait]
pub trait FrameworkRepository: Send + Sync {
    /// A page of the organization's frameworks (without their requirements), newest first.
    async fn list_frameworks(&self, org: &OrganizationId, query: &FrameworkQuery)
    -> Result<Page<Framework>, RepoError>;
    /// One framework with its requirements in catalog order; `RepoError::NotFound` when it is
    /// not the organization's.
    async fn get_framework(
        &self,
        org: &OrganizationId,
        id: &FrameworkId,
    ) -> Result<FrameworkWithRequirements, RepoError>;
    /// Inserts the framework, its requirements and `audit`'s entry of it, in one transaction;
    /// `RepoError::Conflict` when the organization has a framework of the same name and version.
    async fn insert_framework(
        &self,
        framework: &FrameworkWithRequirements,
        audit: &AuditOf<'_, Framework>,
    ) -> Result<(), RepoError>;
    /// States whether one of the framework's requirements applies (`statement`), in one
    /// transaction with `audit`'s entry: the statement in force, if any, is closed at
    /// `statement.created_at` and answered (the entry's "before"). `RepoError::NotFound` when the
    /// requirement is not one of the organization's framework's.
    async fn state_applicability(
        &self,
        statement: &Applicability,
        audit: &AuditOf<'_, Applicability>,
    ) -> Result<Option<Applicability>, RepoError>;
    /// The statements about the framework's requirements in force at `moment` (made at or before
    /// it, not replaced at or before it). One statement.
    async fn applicability(
        &self,
        org: &OrganizationId,
        framework: &FrameworkId,
        moment: Timestamp,
    ) -> Result<Vec<Applicability>, RepoError>;
    /// Deletes the framework with its requirements, atomically with `audit`'s entry, and returns
    /// what it was; `RepoError::PreconditionFailed` when `if_match` does not hold for it, then
    /// `RepoError::Conflict` while a control is mapped to one of its requirements.
    async fn delete_framework(
        &self,
        org: &OrganizationId,
        id: &FrameworkId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Framework>,
    ) -> Result<Framework, RepoError>;
}
