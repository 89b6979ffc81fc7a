//! Devices, read from the device management system by the organization's or a member's label.

use std::sync::Arc;

use compliance_domain::MemberId;
use compliance_domain::access::{Action, Family};
use compliance_ports::{DeviceDirectory, DeviceError, DeviceRecord, MemberRepository, OrganizationRepository};

use crate::access::{Reach, only_own, require};
use crate::{AppError, Ports, Principal};

/// Devices from the device management system, as the caller may see them.
pub struct DeviceService {
    directory: Arc<dyn DeviceDirectory>,
    organizations: Arc<dyn OrganizationRepository>,
    members: Arc<dyn MemberRepository>,
}

impl DeviceService {
    pub(crate) fn new(ports: &Ports) -> Self {
        Self {
            directory: ports.devices.clone(),
            organizations: ports.organizations.clone(),
            members: ports.members.clone(),
        }
    }

    /// The hosts of the organization's label; none when it has no label.
    pub async fn list(&self, caller: &Principal) -> Result<Vec<DeviceRecord>, AppError> {
        if require(caller, Family::Devices, Action::Read)? == Reach::Own {
            return Err(only_own(caller, Action::Read, "their own devices (GET /v1/people/{id}/devices)"));
        }
        self.require_configured()?;
        let organization = self.organizations.get(&caller.organization_id).await?;
        self.hosts(organization.device_manager_label_id).await
    }

    /// The hosts of one member's label; none when the member has no label.
    pub async fn for_member(&self, caller: &Principal, member: &MemberId) -> Result<Vec<DeviceRecord>, AppError> {
        if require(caller, Family::Devices, Action::Read)? == Reach::Own && member != &caller.member_id {
            return Err(only_own(caller, Action::Read, "their own devices"));
        }
        self.require_configured()?;
        let person =
            self.members.get(&caller.organization_id, member).await.map_err(|e| AppError::from_repo(e, "person"))?;
        self.hosts(person.member.device_manager_label_id).await
    }

    fn require_configured(&self) -> Result<(), AppError> {
        match self.directory.is_configured() {
            true => Ok(()),
            false => Err(device_error(DeviceError::NotConfigured)),
        }
    }

    async fn hosts(&self, label: Option<i64>) -> Result<Vec<DeviceRecord>, AppError> {
        match label {
            None => Ok(Vec::new()),
            Some(label) => self.directory.hosts_with_label(label).await.map_err(device_error),
        }
    }
}

fn device_error(error: DeviceError) -> AppError {
    let detail = error.to_string();
    match error {
        DeviceError::NotConfigured => AppError::NotConfigured(detail),
        DeviceError::Timeout => AppError::Upstream { timeout: true, detail },
        DeviceError::Upstream { .. } | DeviceError::Unreachable | DeviceError::InvalidResponse(_) => {
            AppError::Upstream { timeout: false, detail }
        }
    }
}

/// A device label belongs to one organization: with one token for the whole device management
/// system, a label shared across organizations would show one organization another's devices.
/// First come, first served; an operator can free a label by clearing it where it is used.
pub(crate) async fn require_label_free(
    organizations: &dyn OrganizationRepository,
    org: &compliance_domain::OrganizationId,
    label: i64,
) -> Result<(), AppError> {
    let holders = organizations.device_label_holders(label).await?;
    match holders.iter().any(|holder| holder != org) {
        true => Err(AppError::Conflict("this device label is assigned to another organization".into())),
        false => Ok(()),
    }
}
