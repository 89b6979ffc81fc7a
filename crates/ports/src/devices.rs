//! The device management system (FleetDM): the hosts of a label, as it returns them.

use async_trait::async_trait;

/// One host, passed through as the device management system returns it (a JSON object).
pub type DeviceRecord = serde_json::Map<String, serde_json::Value>;

#[async_trait]
pub trait DeviceDirectory: Send + Sync {
    /// Whether a device management system is configured at all.
    fn is_configured(&self) -> bool {
        true
    }
    /// Every host carrying label `label_id`, with its policies, paged through as needed.
    async fn hosts_with_label(&self, label_id: i64) -> Result<Vec<DeviceRecord>, DeviceError>;
}

/// Why hosts could not be listed. Messages never carry the system's token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    #[error("no device management system is configured (set FLEET_URL and FLEET_TOKEN)")]
    NotConfigured,
    #[error("the device management system answered HTTP {status}")]
    Upstream { status: u16 },
    #[error("the device management system did not answer in time")]
    Timeout,
    #[error("the device management system could not be reached")]
    Unreachable,
    #[error("the device management system's answer was not understood: {0}")]
    InvalidResponse(String),
}

/// The directory of a deployment without a device management system.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDeviceDirectory;

#[async_trait]
impl DeviceDirectory for NoDeviceDirectory {
    fn is_configured(&self) -> bool {
        false
    }

    async fn hosts_with_label(&self, _: i64) -> Result<Vec<DeviceRecord>, DeviceError> {
        Err(DeviceError::NotConfigured)
    }
}
