//! Reading a connected account for the checks of the catalog (`checks/`): the adapter calls the
//! provider's API with the connection's credentials, reads every page of every list, and judges
//! each resource it saw. It decides what the provider's answers mean, so no use case reads one.

use async_trait::async_trait;
use compliance_credentials::{CredentialValues, RequestAuth};
use compliance_domain::check_result::CheckResult;
use compliance_domain::{MemberId, Timestamp};

/// What a run reads: one connection's account, for some of its provider's checks.
#[derive(Debug, Clone)]
pub struct CheckTarget {
    /// The provider manifest's slug (`github`, `aws`, `google-workspace`).
    pub provider: String,
    /// How a request authenticates (a bearer token for OAuth connections).
    pub auth: RequestAuth,
    /// The connection's stored credential fields (empty for OAuth connections): AWS's access key,
    /// region and role to assume are read from here.
    pub values: CredentialValues,
    /// The ids of the checks to run, each one [`CheckReader::supports`] says it runs.
    pub checks: Vec<String>,
    /// Where a check over a period (pull requests merged in it) starts reading.
    pub period_start: Timestamp,
    /// The run's clock: ages (keys older than 90 days, accounts unused for 45) are measured from it.
    pub now: Timestamp,
    /// For the FleetDM checks, the organization's devices and people; empty for other providers.
    pub devices: DeviceScope,
}

/// What the FleetDM checks read besides FleetDM: the organization's label in the deployment's
/// FleetDM (the wall between organizations, set by the operator, never by the connection) and
/// its people, matched to hosts by e-mail.
#[derive(Debug, Clone, Default)]
pub struct DeviceScope {
    /// The organization's label; `None` when the operator assigned none.
    pub label_id: Option<i64>,
    /// Every member, active or not: a host of a former member is not theirs to fix.
    pub people: Vec<DevicePerson>,
}

/// A member as the FleetDM checks know them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DevicePerson {
    /// The membership's id, the resource id of `fleetdm.members.enrolled`.
    pub member_id: MemberId,
    /// Their name.
    pub name: String,
    /// Their e-mail address, as FleetDM's end users name them.
    pub email: String,
    /// Whether the membership is active.
    pub active: bool,
}

/// Reads providers' accounts for checks.
#[async_trait]
pub trait CheckReader: Send + Sync {
    /// Whether this reader runs the catalog's check `check_id`. A check it does not run is not
    /// part of a run at all: never a silent pass.
    fn supports(&self, check_id: &str) -> bool;
    /// Runs `target.checks`: for each, one result per resource seen, or one `error` result (the
    /// account as its resource) naming the action that could not be read. Never fails as a whole:
    /// an unreachable provider is an `error` result for every check.
    async fn read(&self, target: &CheckTarget) -> Vec<CheckResult>;
}

/// Where no provider can be read (an embedding without outbound HTTP): it runs no check.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoCheckReader;

#[async_trait]
impl CheckReader for NoCheckReader {
    fn supports(&self, _: &str) -> bool {
        false
    }
    async fn read(&self, _: &CheckTarget) -> Vec<CheckResult> {
        Vec::new()
    }
}
