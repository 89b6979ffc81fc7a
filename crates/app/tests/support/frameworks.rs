//! Frameworks that no test here uses: a store that holds none, and so no mapping to one.

use async_trait::async_trait;
use compliance_domain::control::Control;
use compliance_domain::framework::{Framework, FrameworkWithRequirements};
use compliance_domain::framework_status::RequirementMapping;
use compliance_domain::{ControlId, FrameworkId, OrganizationId, RequirementId, Timestamp};
use compliance_ports::{
    AuditOf, ControlRequirementRepository, FrameworkQuery, FrameworkRepository, MappedRequirement, Page, RepoError,
};

/// No framework is ever stored: writes answer `NotFound`, reads nothing; no control maps to one.
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
        _: &compliance_domain::etag::IfMatch,
        _: &AuditOf<'_, Framework>,
    ) -> Result<Framework, RepoError> {
        Err(RepoError::NotFound)
    }
}

#[async_trait]
impl ControlRequirementRepository for NoFrameworks {
    async fn map_requirement(
        &self,
        _: &OrganizationId,
        _: &ControlId,
        _: &RequirementId,
        _: Timestamp,
        _: &AuditOf<'_, RequirementMapping>,
    ) -> Result<RequirementMapping, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn unmap_requirement(
        &self,
        _: &OrganizationId,
        _: &ControlId,
        _: &RequirementId,
        _: &AuditOf<'_, RequirementMapping>,
    ) -> Result<RequirementMapping, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn control_requirements(
        &self,
        _: &OrganizationId,
        _: &ControlId,
    ) -> Result<Vec<MappedRequirement>, RepoError> {
        Ok(Vec::new())
    }
    async fn framework_controls(
        &self,
        _: &OrganizationId,
        _: &FrameworkId,
        _: Timestamp,
    ) -> Result<Vec<(RequirementId, Control)>, RepoError> {
        Ok(Vec::new())
    }
}
