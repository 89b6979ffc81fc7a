//! Frameworks and their mappings to controls in memory: enough of the store for the use cases'
//! own decisions (who sees a framework's mapped controls, the mappings in force at a moment). The
//! store's own rules (names unique, a mapped requirement's framework kept) are tested over HTTP on
//! both databases.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use compliance_domain::control::Control;
use compliance_domain::framework::{Framework, FrameworkWithRequirements};
use compliance_domain::framework_status::RequirementMapping;
use compliance_domain::{ControlId, FrameworkId, OrganizationId, RequirementId, Timestamp};
use compliance_ports::{
    AuditOf, ControlRepository, ControlRequirementRepository, FrameworkQuery, FrameworkRepository, MappedRequirement,
    Page, RepoError,
};

use super::MemoryControls;

pub struct MemoryFrameworks {
    controls: Arc<MemoryControls>,
    frameworks: Mutex<Vec<FrameworkWithRequirements>>,
    /// Every mapping made, removed ones included (with their `removed_at`), as the store keeps them.
    mappings: Mutex<Vec<RequirementMapping>>,
}

impl MemoryFrameworks {
    pub fn new(controls: Arc<MemoryControls>) -> Self {
        Self { controls, frameworks: Mutex::default(), mappings: Mutex::default() }
    }

    fn find(&self, org: &OrganizationId, id: &FrameworkId) -> Result<FrameworkWithRequirements, RepoError> {
        let frameworks = self.frameworks.lock().unwrap();
        let found = frameworks.iter().find(|f| &f.framework.organization_id == org && &f.framework.id == id);
        found.cloned().ok_or(RepoError::NotFound)
    }
}

#[async_trait]
impl FrameworkRepository for MemoryFrameworks {
    async fn list_frameworks(&self, org: &OrganizationId, _: &FrameworkQuery) -> Result<Page<Framework>, RepoError> {
        let frameworks = self.frameworks.lock().unwrap();
        let items: Vec<Framework> =
            frameworks.iter().filter(|f| &f.framework.organization_id == org).map(|f| f.framework.clone()).collect();
        Ok(Page { total: items.len() as u64, items, next: None })
    }
    async fn get_framework(
        &self,
        org: &OrganizationId,
        id: &FrameworkId,
    ) -> Result<FrameworkWithRequirements, RepoError> {
        self.find(org, id)
    }
    async fn insert_framework(
        &self,
        framework: &FrameworkWithRequirements,
        _: &AuditOf<'_, Framework>,
    ) -> Result<(), RepoError> {
        self.frameworks.lock().unwrap().push(framework.clone());
        Ok(())
    }
    async fn state_applicability(
        &self,
        _: &compliance_domain::applicability::Applicability,
        _: &AuditOf<'_, compliance_domain::applicability::Applicability>,
    ) -> Result<Option<compliance_domain::applicability::Applicability>, RepoError> {
        Err(RepoError::Internal("not kept in memory: tested over HTTP on both databases".into()))
    }
    async fn applicability(
        &self,
        _: &OrganizationId,
        _: &FrameworkId,
        _: Timestamp,
    ) -> Result<Vec<compliance_domain::applicability::Applicability>, RepoError> {
        // Nothing is stated here: every requirement applies.
        Ok(Vec::new())
    }
    async fn delete_framework(
        &self,
        _: &OrganizationId,
        _: &FrameworkId,
        _: &compliance_domain::etag::IfMatch,
        _: &AuditOf<'_, Framework>,
    ) -> Result<Framework, RepoError> {
        Err(RepoError::Internal("not kept in memory".into()))
    }
}

#[async_trait]
impl ControlRequirementRepository for MemoryFrameworks {
    async fn map_requirement(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        requirement: &RequirementId,
        now: Timestamp,
        _: &AuditOf<'_, RequirementMapping>,
    ) -> Result<RequirementMapping, RepoError> {
        let framework_id = {
            let frameworks = self.frameworks.lock().unwrap();
            let owner = frameworks
                .iter()
                .find(|f| &f.framework.organization_id == org && f.requirements.iter().any(|r| &r.id == requirement));
            owner.map(|f| f.framework.id.clone()).ok_or(RepoError::NotFound)?
        };
        let mapping = RequirementMapping {
            organization_id: org.clone(),
            control_id: control.clone(),
            requirement_id: requirement.clone(),
            framework_id,
            created_at: now,
            removed_at: None,
        };
        let mut mappings = self.mappings.lock().unwrap();
        let in_force = |m: &RequirementMapping| {
            &m.control_id == control && &m.requirement_id == requirement && m.removed_at.is_none()
        };
        if mappings.iter().any(in_force) {
            return Err(RepoError::Conflict("the control is already mapped to this requirement".into()));
        }
        mappings.push(mapping.clone());
        Ok(mapping)
    }
    async fn unmap_requirement(
        &self,
        org: &OrganizationId,
        control: &ControlId,
        requirement: &RequirementId,
        now: Timestamp,
        _: &AuditOf<'_, RequirementMapping>,
    ) -> Result<RequirementMapping, RepoError> {
        let mut mappings = self.mappings.lock().unwrap();
        let mapping = mappings
            .iter_mut()
            .find(|m| {
                &m.organization_id == org
                    && &m.control_id == control
                    && &m.requirement_id == requirement
                    && m.removed_at.is_none()
            })
            .ok_or(RepoError::NotFound)?;
        mapping.removed_at = Some(now);
        Ok(mapping.clone())
    }
    async fn control_requirements(
        &self,
        org: &OrganizationId,
        control: &ControlId,
    ) -> Result<Vec<MappedRequirement>, RepoError> {
        let mappings: Vec<RequirementMapping> = self.mappings.lock().unwrap().clone();
        let frameworks = self.frameworks.lock().unwrap();
        let mapped = mappings
            .into_iter()
            .filter(|m| &m.organization_id == org && &m.control_id == control && m.removed_at.is_none())
            .filter_map(|mapping| {
                let framework = frameworks.iter().find(|f| f.framework.id == mapping.framework_id)?;
                let requirement = framework.requirements.iter().find(|r| r.id == mapping.requirement_id)?;
                let (identifier, title) = (requirement.identifier.clone(), requirement.title.clone());
                Some(MappedRequirement { mapping, identifier, title })
            })
            .collect();
        Ok(mapped)
    }
    async fn framework_controls(
        &self,
        org: &OrganizationId,
        framework: &FrameworkId,
        moment: Timestamp,
    ) -> Result<Vec<(RequirementId, Control)>, RepoError> {
        let mappings: Vec<RequirementMapping> = self.mappings.lock().unwrap().clone();
        let mut mapped = Vec::new();
        for mapping in mappings {
            if &mapping.organization_id == org && &mapping.framework_id == framework && mapping.in_force_at(moment) {
                let control = self.controls.get_control(org, &mapping.control_id).await?;
                mapped.push((mapping.requirement_id, control));
            }
        }
        Ok(mapped)
    }
}
