//! The caller's own organization.

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::organization::{Organization, OrganizationChanges, OrganizationPatch};
use compliance_ports::{OrganizationRepository, RepoError};

use crate::access::require;
use crate::{AppError, Ports, Principal};

pub struct OrganizationService {
    organizations: Arc<dyn OrganizationRepository>,
}

impl OrganizationService {
    pub(crate) fn new(ports: &Ports) -> Self {
        Self { organizations: ports.organizations.clone() }
    }

    pub async fn get(&self, caller: &Principal) -> Result<Organization, AppError> {
        require(caller, Family::Organization, Action::Read)?;
        self.organizations.get(&caller.organization_id).await.map_err(|e| AppError::from_repo(e, "organization"))
    }

    /// Conflict when the new slug belongs to another organization.
    pub async fn update(&self, caller: &Principal, changes: OrganizationChanges) -> Result<Organization, AppError> {
        require(caller, Family::Organization, Action::Write)?;
        let patch = OrganizationPatch::new(changes)?;
        if let Some(label) = patch.device_label() {
            crate::devices::require_label_free(self.organizations.as_ref(), &caller.organization_id, label).await?;
        }
        self.organizations.update(&caller.organization_id, &patch).await.map_err(|error| match error {
            RepoError::Conflict(_) => AppError::Conflict("the slug is taken by another organization".into()),
            other => AppError::from_repo(other, "organization"),
        })
    }
}
