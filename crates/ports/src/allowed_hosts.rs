//! The internal hosts an operator granted to an organization ([`AllowedHost`]).

use async_trait::async_trait;
use compliance_domain::OrganizationId;
use compliance_domain::allowed_host::{AllowedHost, AllowedHostUse};

use crate::RepoError;

/// Grants of internal hosts, per organization and use; every method is scoped to one organization.
#[async_trait]
pub trait AllowedHostRepository: Send + Sync {
    /// The hosts granted to `org` for `used_for`, in no particular order.
    async fn hosts(&self, org: &OrganizationId, used_for: AllowedHostUse) -> Result<Vec<String>, RepoError>;
    /// Every grant of `org`, by use and host.
    async fn list(&self, org: &OrganizationId) -> Result<Vec<AllowedHost>, RepoError>;
    /// Adds the grant; one that exists already is kept as it is and answered.
    async fn grant(&self, grant: &AllowedHost) -> Result<AllowedHost, RepoError>;
    /// Removes the grant; whether there was one.
    async fn revoke(&self, org: &OrganizationId, used_for: AllowedHostUse, host: &str) -> Result<bool, RepoError>;
}
