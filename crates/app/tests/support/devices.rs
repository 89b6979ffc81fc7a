//! A device management system in memory: labels (regular or built in) and their hosts, and how
//! often hosts were asked for.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use async_trait::async_trait;
use compliance_ports::{DeviceDirectory, DeviceError, DeviceLabel, DeviceRecord};

#[derive(Default)]
pub struct FakeDevices {
    labels: Mutex<HashMap<i64, (DeviceLabel, Vec<DeviceRecord>)>>,
    host_lookups: AtomicUsize,
}

impl FakeDevices {
    /// A label with hosts whose ids are `hosts`; `builtin` as FleetDM's `All Hosts` is.
    pub fn add_label(&self, id: i64, name: &str, builtin: bool, hosts: &[i64]) {
        let hosts =
            hosts.iter().map(|host| serde_json::json!({"id": host}).as_object().cloned().unwrap_or_default()).collect();
        self.labels.lock().unwrap().insert(id, (DeviceLabel { name: name.into(), builtin }, hosts));
    }

    /// How many times hosts were listed.
    pub fn host_lookups(&self) -> usize {
        self.host_lookups.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl DeviceDirectory for FakeDevices {
    async fn hosts_with_label(&self, label_id: i64) -> Result<Vec<DeviceRecord>, DeviceError> {
        self.host_lookups.fetch_add(1, Ordering::SeqCst);
        Ok(self.labels.lock().unwrap().get(&label_id).map(|(_, hosts)| hosts.clone()).unwrap_or_default())
    }

    async fn label(&self, label_id: i64) -> Result<Option<DeviceLabel>, DeviceError> {
        Ok(self.labels.lock().unwrap().get(&label_id).map(|(label, _)| label.clone()))
    }
}
