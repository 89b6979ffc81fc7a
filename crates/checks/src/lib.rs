//! `HttpCheckReader`, the [`CheckReader`] port over HTTP: the catalog's checks (`checks/` in the
//! repository) read from each provider's API with a connection's credentials, and FleetDM's
//! through the deployment's device directory.
//!
//! One module per provider holds its requests, its paging and its judgements; `http.rs` holds
//! what they share: the client (no redirects, bounded time and body), retries of throttled
//! requests within a run's budget, and the cut of a provider's error to its code and message.

mod aws;
mod fleetdm;
mod github;
mod google_workspace;
mod http;

use std::sync::Arc;

use async_trait::async_trait;
use compliance_domain::check_result::CheckResult;
use compliance_ports::{CheckReader, CheckTarget, DeviceDirectory, NoDeviceDirectory};

pub use http::{CheckHttpSettings, HttpClientError};

/// Where each provider's API is: the providers' own addresses, or local servers in tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckEndpoints {
    /// GitHub's REST API, without a trailing slash (`https://api.github.com`).
    pub github: String,
    /// Google's Admin SDK, without a trailing slash (`https://admin.googleapis.com`).
    pub google: String,
    /// One URL every AWS service is called at instead of AWS's regional endpoints (moto in
    /// tests); `None` calls AWS itself.
    pub aws: Option<String>,
}

impl Default for CheckEndpoints {
    fn default() -> Self {
        Self { github: "https://api.github.com".into(), google: "https://admin.googleapis.com".into(), aws: None }
    }
}

/// Reads providers' accounts over HTTP.
#[derive(Clone)]
pub struct HttpCheckReader {
    http: http::CheckHttp,
    endpoints: CheckEndpoints,
    /// The deployment's FleetDM, for the `fleetdm` checks.
    devices: Arc<dyn DeviceDirectory>,
}

impl std::fmt::Debug for HttpCheckReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpCheckReader").field("endpoints", &self.endpoints).finish_non_exhaustive()
    }
}

impl HttpCheckReader {
    /// A reader calling `endpoints`, without a device directory (its FleetDM checks then say
    /// that none is configured).
    pub fn new(endpoints: CheckEndpoints, settings: CheckHttpSettings) -> Result<Self, HttpClientError> {
        Ok(Self { http: http::CheckHttp::new(settings)?, endpoints, devices: Arc::new(NoDeviceDirectory) })
    }

    /// This reader, reading the FleetDM checks from `devices`.
    #[must_use]
    pub fn with_devices(self, devices: Arc<dyn DeviceDirectory>) -> Self {
        Self { devices, ..self }
    }
}

#[async_trait]
impl CheckReader for HttpCheckReader {
    fn supports(&self, check_id: &str) -> bool {
        [github::CHECKS, google_workspace::CHECKS, aws::CHECKS, fleetdm::CHECKS]
            .iter()
            .any(|checks| checks.contains(&check_id))
    }

    async fn read(&self, target: &CheckTarget) -> Vec<CheckResult> {
        match target.provider.as_str() {
            "github" => github::read(&self.http, &self.endpoints.github, target).await,
            "google-workspace" => google_workspace::read(&self.http, &self.endpoints.google, target).await,
            "aws" => aws::read(&self.http, self.endpoints.aws.as_deref(), target).await,
            "fleetdm" => fleetdm::read(self.devices.as_ref(), target).await,
            _ => Vec::new(),
        }
    }
}
