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

    /// The hosts of `label`. A built-in label (one stored before only the operator assigned
    /// labels) is refused here too: it would list every customer's hosts.
    async fn hosts(&self, label: Option<i64>) -> Result<Vec<DeviceRecord>, AppError> {
        let Some(label) = label else { return Ok(Vec::new()) };
        match self.directory.label(label).await.map_err(device_error)? {
            None => Ok(Vec::new()),
            Some(found) if found.builtin => Err(AppError::Conflict(BUILTIN_ASSIGNED.into())),
            Some(_) => self.directory.hosts_with_label(label).await.map_err(device_error),
        }
    }
}

const BUILTIN_ASSIGNED: &str = "the device label assigned here is one of the device management system's built-in labels, \
     which span every customer's hosts; the operator must assign this organization's own label (admin set-device-label)";

/// The 403 of a tenant's write to a field only the operator sets. It says nothing about the
/// values other organizations use.
pub(crate) fn operator_sets(field: &str, how: &str) -> AppError {
    AppError::Denied(format!("{field} is set by the operator of this deployment ({how}), not through the API"))
}

/// The operator's assignment of `label` in `org`: the device management system must know the
/// label (when one is configured) and it must not be built in; no other organization may hold it.
pub(crate) async fn require_assignable(
    directory: &dyn DeviceDirectory,
    organizations: &dyn OrganizationRepository,
    org: &compliance_domain::OrganizationId,
    label: i64,
) -> Result<(), AppError> {
    if directory.is_configured() {
        match directory.label(label).await.map_err(device_error)? {
            None => return Err(AppError::invalid("label", "the device management system has no label with this id")),
            Some(found) if found.builtin => {
                return Err(AppError::invalid(
                    "label",
                    format!(
                        "`{}` is a built-in label of the device management system: it spans every customer's hosts",
                        found.name
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    require_label_free(organizations, org, label).await
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
/// Only the operator assigns labels, so the conflict tells no tenant anything.
async fn require_label_free(
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
