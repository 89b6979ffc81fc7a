//! Records as the API returns them, for the audit trail's `data` and `changes` (and so for
//! webhooks): the same wire types the routes answer with, so an event shows what a `GET` would.

use compliance_domain::context::ContextEntry;
use compliance_domain::policy::Policy;
use compliance_domain::risk::Risk;
use compliance_domain::task::Task;
use compliance_domain::vendor::Vendor;
use compliance_ports::ResourceRenderer;
use serde::Serialize;
use serde_json::Value;

use crate::{ContextEntryDto, PolicyDto, RiskDto, TaskDto, VendorDto};

/// The [`ResourceRenderer`] over the wire types.
#[derive(Debug, Clone, Copy, Default)]
pub struct WireRenderer;

/// Serialising a wire type cannot fail (plain strings, numbers and JSON); `null` if it ever did.
fn json(dto: impl Serialize) -> Value {
    serde_json::to_value(dto).unwrap_or(Value::Null)
}

impl ResourceRenderer for WireRenderer {
    fn risk(&self, risk: &Risk) -> Value {
        json(RiskDto::new(risk, true))
    }

    fn vendor(&self, vendor: &Vendor) -> Value {
        json(VendorDto::new(vendor, true))
    }

    fn task(&self, task: &Task) -> Value {
        json(TaskDto::from(task))
    }

    fn policy(&self, policy: &Policy) -> Value {
        json(PolicyDto::from(policy))
    }

    fn context_entry(&self, entry: &ContextEntry) -> Value {
        json(ContextEntryDto::from(entry))
    }
}
