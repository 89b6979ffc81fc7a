//! A per-organization bound on concurrent browser work in one instance, so that one tenant (one
//! employee, even) cannot hold every browser of the deployment: work over its organization's bound
//! waits a bounded time for one of the organization's own slots, then is refused as busy.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use compliance_domain::OrganizationId;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Each organization's slots; an organization's entry exists while it holds or waits for one.
pub(crate) struct OrganizationSlots {
    per_organization: usize,
    wait: Duration,
    organizations: Mutex<HashMap<OrganizationId, Arc<Semaphore>>>,
}

/// One of an organization's slots, given back when dropped.
pub(crate) struct OrganizationSlot {
    permit: Option<OwnedSemaphorePermit>,
    organization: OrganizationId,
    slots: Arc<OrganizationSlots>,
}

impl OrganizationSlots {
    /// `per_organization` slots for each organization (at least 1); a slot is waited for at most
    /// `wait`.
    pub(crate) fn new(per_organization: usize, wait: Duration) -> Arc<Self> {
        Arc::new(Self { per_organization: per_organization.max(1), wait, organizations: Mutex::default() })
    }

    /// One of the organization's slots, or `None` when none came free within the wait.
    pub(crate) async fn take(self: &Arc<Self>, organization: &OrganizationId) -> Option<OrganizationSlot> {
        let semaphore = self
            .lock()
            .entry(organization.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_organization)))
            .clone();
        let permit = tokio::time::timeout(self.wait, semaphore.acquire_owned()).await.ok().and_then(Result::ok);
        let slot = OrganizationSlot { permit, organization: organization.clone(), slots: self.clone() };
        match slot.permit.is_some() {
            true => Some(slot),
            // Dropping it forgets the organization's entry if nobody else uses it.
            false => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<OrganizationId, Arc<Semaphore>>> {
        self.organizations.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for OrganizationSlot {
    fn drop(&mut self) {
        drop(self.permit.take());
        let mut organizations = self.slots.lock();
        // Only the map holds it (no holder, no waiter): forget the organization.
        if organizations.get(&self.organization).is_some_and(|semaphore| Arc::strong_count(semaphore) == 1) {
            organizations.remove(&self.organization);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_organization_waits_for_its_own_slots_only_and_is_forgotten_when_idle() {
        let slots = OrganizationSlots::new(1, Duration::from_millis(50));
        let (a, b) = (OrganizationId::generate(), OrganizationId::generate());
        let held = slots.take(&a).await;
        assert!(held.is_some(), "a free slot");
        assert!(slots.take(&a).await.is_none(), "a's only slot is held: refused after the wait");
        assert!(slots.take(&b).await.is_some(), "b has slots of its own");
        drop(held);
        assert!(slots.take(&a).await.is_some(), "given back");
        assert!(slots.lock().is_empty(), "idle organizations are forgotten");
    }
}
