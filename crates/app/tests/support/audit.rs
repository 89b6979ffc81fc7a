//! The audit drafts the in-memory stores make: a store calls a write's [`AuditOf`] with the record
//! before and after the change, as the real store does inside the change's transaction, and keeps
//! what it answers here, in the order of the changes. Tests read the drafts (and the evidence
//! `Observation` each carries) from [`Drafts`], shared by every store that writes an evidence
//! source: tasks, policies, connections, automations and their runs.

use std::sync::{Arc, Mutex};

use compliance_domain::audit::AuditDraft;
use compliance_domain::evidence::Observation;
use compliance_ports::AuditOf;

/// The drafts of every change the stores wrote, oldest first; clones share one log.
#[derive(Clone, Default)]
pub struct Drafts(Arc<Mutex<Vec<AuditDraft>>>);

impl Drafts {
    /// Makes the change's draft from the record `before` (`None`: created) and `after` (`None`:
    /// deleted) with `audit`, as the store does when the write succeeds, and keeps it.
    pub fn record<T>(&self, audit: &AuditOf<'_, T>, before: Option<&T>, after: Option<&T>) {
        let draft = audit(before, after);
        self.0.lock().unwrap().push(draft);
    }

    /// Every draft, oldest first.
    pub fn all(&self) -> Vec<AuditDraft> {
        self.0.lock().unwrap().clone()
    }

    /// The drafts about the record `resource_id` (a run's are its automation's), oldest first.
    pub fn of(&self, resource_id: &str) -> Vec<AuditDraft> {
        self.all().into_iter().filter(|d| d.resource_id == resource_id).collect()
    }

    /// The last draft about `resource_id`; a test that expects one and finds none fails.
    pub fn last_of(&self, resource_id: &str) -> AuditDraft {
        self.of(resource_id).pop().unwrap_or_else(|| panic!("no draft about {resource_id}"))
    }

    /// The observations the drafts about `resource_id` carry, oldest first.
    pub fn observations(&self, resource_id: &str) -> Vec<Observation> {
        self.of(resource_id).into_iter().filter_map(|d| d.evidence).collect()
    }
}
