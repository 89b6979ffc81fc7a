//! Mapping controls to framework requirements: a control is one way the organization satisfies a
//! requirement, and one control often serves requirements of several frameworks. The mappings are
//! what a framework's status rolls up ([`crate::FrameworkService::framework_status`]).

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::audit::Redaction;
use compliance_domain::framework_status::{NewRequirementMapping, RequirementMapping};
use compliance_domain::{ControlId, OrganizationId, RequirementId};
use compliance_ports::{Clock, ControlRepository, ControlRequirementRepository, MappedRequirement};

use crate::access::require;
use crate::audit::{AuditTrail, Subject};
use crate::{AppError, Ports, Principal};

/// A control's mappings in the audit trail: in the control's history.
pub(crate) const REQUIREMENT_MAPPING: Subject<RequirementMapping> = Subject {
    resource_type: "control",
    id: |mapping| mapping.control_id.to_string(),
    render: |_, m| {
        serde_json::json!({
            "controlId": m.control_id, "requirementId": m.requirement_id, "frameworkId": m.framework_id,
            "createdAt": m.created_at,
        })
    },
    redaction: Redaction { secret: &[], rich_text: &[] },
    evidence: None,
};

/// Which requirements each control is mapped to.
pub struct ControlRequirementService {
    mappings: Arc<dyn ControlRequirementRepository>,
    controls: Arc<dyn ControlRepository>,
    clock: Arc<dyn Clock>,
    audit: Arc<AuditTrail>,
}

impl ControlRequirementService {
    pub(crate) fn new(ports: &Ports, audit: Arc<AuditTrail>) -> Self {
        Self {
            mappings: ports.control_requirements.clone(),
            controls: ports.controls.clone(),
            clock: ports.clock.clone(),
            audit,
        }
    }

    /// The requirements the control is mapped to, oldest mapping first.
    pub async fn list_control_requirements(
        &self,
        caller: &Principal,
        id: &ControlId,
    ) -> Result<Vec<MappedRequirement>, AppError> {
        require(caller, Family::Controls, Action::Read)?;
        let org = &caller.organization_id;
        self.require_control(org, id).await?;
        Ok(self.mappings.control_requirements(org, id).await?)
    }

    /// Maps the control to a requirement of one of the organization's frameworks. **Choice:** it
    /// is a write of the control (`controls:write`): the mapping belongs to the control, and the
    /// framework is not changed by it.
    pub async fn map_requirement(
        &self,
        caller: &Principal,
        id: &ControlId,
        input: NewRequirementMapping,
    ) -> Result<RequirementMapping, AppError> {
        require(caller, Family::Controls, Action::Write)?;
        let requirement = input.requirement()?;
        let org = &caller.organization_id;
        self.require_control(org, id).await?;
        let audit = self.audit.change(caller, "control.requirement_mapped", &REQUIREMENT_MAPPING);
        self.mappings
            .map_requirement(org, id, &requirement, self.clock.now(), &audit)
            .await
            .map_err(|e| AppError::from_repo(e, "requirement"))
    }

    /// Removes the control's mapping to the requirement now; a status asked for a moment before
    /// now still counts it (mappings, like evidence-source links, keep their history).
    pub async fn unmap_requirement(
        &self,
        caller: &Principal,
        id: &ControlId,
        requirement: &RequirementId,
    ) -> Result<RequirementMapping, AppError> {
        require(caller, Family::Controls, Action::Write)?;
        let org = &caller.organization_id;
        self.require_control(org, id).await?;
        let audit = self.audit.change(caller, "control.requirement_unmapped", &REQUIREMENT_MAPPING);
        self.mappings
            .unmap_requirement(org, id, requirement, self.clock.now(), &audit)
            .await
            .map_err(|e| AppError::from_repo(e, "requirement mapping"))
    }

    /// The control must be the organization's: another's or a missing one is a 404 naming it.
    async fn require_control(&self, org: &OrganizationId, id: &ControlId) -> Result<(), AppError> {
        self.controls.get_control(org, id).await.map(drop).map_err(|e| AppError::from_repo(e, "control"))
    }
}
