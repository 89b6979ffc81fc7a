//! The device management system (FleetDM): the hosts of a label, as it returns them.

use async_trait::async_trait;

/// One host, passed through as the device management system returns it (a JSON object).
pub type DeviceRecord = serde_json::Map<String, serde_json::Value>;

/// The device management system: the hosts of a label.
#[async_trait]
pub trait DeviceDirectory: Send + Sync {
    /// Whether a device management system is configured at all.
    fn is_configured(&self) -> bool {
        true
    }
    /// Every host carrying label `label_id`, with its policies, paged through as needed.
    async fn hosts_with_label(&self, label_id: i64) -> Result<Vec<DeviceRecord>, DeviceError>;
    /// The label `label_id`, or `None` when the system has no such label.
    async fn label(&self, label_id: i64) -> Result<Option<DeviceLabel>, DeviceError>;
}

/// A label of the device management system, as far as the service needs to know it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceLabel {
    /// Its name, such as `All Hosts`.
    pub name: String,
    /// Whether the system made it itself (FleetDM's `label_type: builtin`: `All Hosts`, `macOS`,
    /// …): such a label spans every customer's hosts, so no organization may have it.
    pub builtin: bool,
}

/// Why hosts could not be listed. Messages never carry the system's token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// No system is configured: a 503 naming the variables.
    #[error("no device management system is configured (set FLEET_URL and FLEET_TOKEN)")]
    NotConfigured,
    /// It answered with this error status.
    #[error("the device management system answered HTTP {status}")]
    Upstream {
        /// The HTTP status.
        status: u16,
    },
    /// It did not answer in time.
    #[error("the device management system did not answer in time")]
    Timeout,
    /// It could not be reached (DNS, connection, TLS).
    #[error("the device management system could not be reached")]
    Unreachable,
    /// Its answer was not the JSON expected; the text says what was wrong.
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

    async fn label(&self, _: i64) -> Result<Option<DeviceLabel>, DeviceError> {
        Err(DeviceError::NotConfigured)
    }
}
