//! Internal hosts the operator grants to one organization (the `admin` CLI), and the hosts each
//! organization's outbound requests may reach: the deployment's (`WEBHOOK_ALLOWED_HOSTS`,
//! `AUTOMATION_ALLOWED_HOSTS`, for every organization) and its own grants, never another's.

use std::sync::Arc;

use compliance_domain::OrganizationId;
use compliance_domain::allowed_host::{AllowedHost, AllowedHostUse, allowed_host};
use compliance_ports::{AllowedHostRepository, Clock, OrganizationRepository, RepoError};

use crate::{AppError, Ports};

/// The operator's grants of internal hosts.
pub struct AllowedHostService {
    grants: Arc<dyn AllowedHostRepository>,
    organizations: Arc<dyn OrganizationRepository>,
    clock: Arc<dyn Clock>,
}

impl AllowedHostService {
    pub(crate) fn new(ports: &Ports) -> Self {
        Self {
            grants: ports.allowed_hosts.clone(),
            organizations: ports.organizations.clone(),
            clock: ports.clock.clone(),
        }
    }

    /// Lets `org` reach `host` from its webhooks or automations; granting it again changes nothing.
    pub async fn grant(
        &self,
        org: &OrganizationId,
        used_for: AllowedHostUse,
        host: &str,
    ) -> Result<AllowedHost, AppError> {
        let host = allowed_host("host", host)?;
        self.organizations.get(org).await.map_err(|error| AppError::from_repo(error, "organization"))?;
        let grant = AllowedHost { organization_id: org.clone(), used_for, host, granted_at: self.clock.now() };
        Ok(self.grants.grant(&grant).await?)
    }

    /// Withdraws a grant; whether there was one. Webhooks and automations already made keep
    /// their URL, and are refused when they next send to it.
    pub async fn revoke(&self, org: &OrganizationId, used_for: AllowedHostUse, host: &str) -> Result<bool, AppError> {
        let host = allowed_host("host", host)?;
        Ok(self.grants.revoke(org, used_for, &host).await?)
    }

    /// The organization's grants.
    pub async fn list(&self, org: &OrganizationId) -> Result<Vec<AllowedHost>, AppError> {
        self.organizations.get(org).await.map_err(|error| AppError::from_repo(error, "organization"))?;
        Ok(self.grants.list(org).await?)
    }
}

/// The hosts `org` may reach for `used_for`: the deployment's `global` ones and its own grants.
pub(crate) async fn reachable_hosts(
    grants: &dyn AllowedHostRepository,
    org: &OrganizationId,
    used_for: AllowedHostUse,
    global: &[String],
) -> Result<Vec<String>, RepoError> {
    let mut hosts = global.to_vec();
    hosts.extend(grants.hosts(org, used_for).await?);
    Ok(hosts)
}
