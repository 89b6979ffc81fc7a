//! Frameworks that no test here uses: a store that holds none.

use async_trait::async_trait;
use compliance_domain::framework::{Framework, FrameworkWithRequirements};
use compliance_domain::{FrameworkId, OrganizationId};
use compliance_ports::{AuditOf, FrameworkQuery, FrameworkRepository, Page, RepoError};

/// No framework is ever stored: writes answer `NotFound`, reads nothing.
pub struct NoFrameworks;

#[async_trait]
impl FrameworkRepository for NoFrameworks {
    async fn list_frameworks(&self, _: &OrganizationId, _: &FrameworkQuery) -> Result<Page<Framework>, RepoError> {
        Ok(Page { items: Vec::new(), total: 0, next: None })
    }
    async fn get_framework(&self, _: &OrganizationId, _: &FrameworkId) -> Result<FrameworkWithRequirements, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn insert_framework(
        &self,
        _: &FrameworkWithRequirements,
        _: &AuditOf<'_, Framework>,
    ) -> Result<(), RepoError> {
        Err(RepoError::NotFound)
    }
    async fn delete_framework(
        &self,
        _: &OrganizationId,
        _: &FrameworkId,
        _: &AuditOf<'_, Framework>,
    ) -> Result<Framework, RepoError> {
        Err(RepoError::NotFound)
    }
}
