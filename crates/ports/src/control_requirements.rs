//! Which framework requirements each control is mapped to.

use async_trait::async_trait;
use compliance_domain::control::Control;
use compliance_domain::framework_status::RequirementMapping;
use compliance_domain::{ControlId, FrameworkId, OrganizationId, RequirementId, Timestamp};

use crate::{AuditOf, RepoError};

/// A control's mapping with what the requirement is called.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedRequirement {
    /// The mapping.
    pub mapping: RequirementMapping,
    /// The requirement's identifier (`CC6.1`).
    pub identifier: String,
    /// The requirement's title.
    pub title: String,
}

/// Mappings of controls to requirements; every method is scoped to an organization.
#[async_trait]
pub trait ControlRequirementRepository: Send + Sync {
    /// Maps the organization's control to its requirement at `now`, with `audit`'s entry, in one
    /// transaction. `NotFound` when the requirement is not the organization's; `Conflict` when the
    /// control already maps it, or when the control went away meanwhile.
    async fn map_requirement(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        requirement: &RequirementId,
        now: Timestamp,
        audit: &AuditOf<'_, RequirementMapping>,
    ) -> Result<RequirementMapping, RepoError>;
    /// Removes the mapping at `now` with `audit`'s entry and answers it, removed: it stays in the
    /// history, in force before `now` ([`RequirementMapping::removed_at`]). `NotFound` when
    /// there is none in force.
    async fn unmap_requirement(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        requirement: &RequirementId,
        now: Timestamp,
        audit: &AuditOf<'_, RequirementMapping>,
    ) -> Result<RequirementMapping, RepoError>;
    /// The requirements the control is mapped to now (removed mappings are left out), oldest
    /// mapping first.
    async fn control_requirements(
        &self,
        org: &OrganizationId,
        control: &ControlId,
    ) -> Result<Vec<MappedRequirement>, RepoError>;
    /// The controls mapped to the framework's requirements at `moment` (the mappings in force
    /// then: made at or before it, not removed at or before it), each with the requirement it is
    /// mapped to (a control mapped to three requirements comes three times). One statement.
    async fn framework_controls(
        &self,
        org: &OrganizationId,
        framework: &FrameworkId,
        moment: Timestamp,
    ) -> Result<Vec<(RequirementId, Control)>, RepoError>;
}
