//! `Idempotency-Key` reservations in memory, with the same rules as the store's statements.

use std::sync::Mutex;

use async_trait::async_trait;
use compliance_domain::idempotency::IdempotencyClaim;
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{IdempotencyRepository, NewReservation, Outcome, RepoError, Reservation};

#[derive(Default)]
pub struct MemoryIdempotency {
    rows: Mutex<Vec<(NewReservation, Reservation)>>,
}

impl MemoryIdempotency {
    /// What the audited write does in its transaction: marks the claim's reservation applied.
    pub fn mark_applied(&self, claim: &IdempotencyClaim, at: Timestamp, resource: (&str, &str)) -> bool {
        let mut rows = self.rows.lock().unwrap();
        let Some((_, held)) = rows.iter_mut().find(|(_, r)| r.id == claim.id && r.attempt == claim.attempt) else {
            return false;
        };
        held.applied_at.get_or_insert(at);
        held.resource.get_or_insert((resource.0.to_owned(), resource.1.to_owned()));
        true
    }

    /// How many reservations are stored.
    pub fn count(&self) -> usize {
        self.rows.lock().unwrap().len()
    }
}

#[async_trait]
impl IdempotencyRepository for MemoryIdempotency {
    async fn reserve_idempotency_key(
        &self,
        new: &NewReservation,
        now: Timestamp,
    ) -> Result<Option<Reservation>, RepoError> {
        let mut rows = self.rows.lock().unwrap();
        let same_scope = |n: &NewReservation| {
            n.organization_id == new.organization_id
                && n.caller == new.caller
                && n.key == new.key
                && n.route == new.route
        };
        rows.retain(|(n, _)| !(same_scope(n) && n.expires_at <= now));
        if let Some((_, existing)) = rows.iter().find(|(n, _)| same_scope(n)) {
            return Ok(Some(existing.clone()));
        }
        let reservation = Reservation {
            id: new.id.clone(),
            fingerprint: new.fingerprint.clone(),
            attempt: 0,
            locked_until: new.locked_until,
            applied_at: None,
            resource: None,
            response: None,
            withheld: false,
        };
        rows.push((new.clone(), reservation));
        Ok(None)
    }

    async fn take_over_idempotency_key(
        &self,
        org: &OrganizationId,
        id: &str,
        attempt: i64,
        locked_until: Timestamp,
    ) -> Result<Option<IdempotencyClaim>, RepoError> {
        let mut rows = self.rows.lock().unwrap();
        let found = rows.iter_mut().find(|(n, r)| {
            &n.organization_id == org
                && r.id == id
                && r.attempt == attempt
                && r.applied_at.is_none()
                && r.response.is_none()
        });
        Ok(found.map(|(_, r)| {
            r.attempt += 1;
            r.locked_until = locked_until;
            IdempotencyClaim { id: r.id.clone(), attempt: r.attempt }
        }))
    }

    async fn finish_idempotency_key(
        &self,
        org: &OrganizationId,
        claim: &IdempotencyClaim,
        outcome: &Outcome,
    ) -> Result<(), RepoError> {
        let mut rows = self.rows.lock().unwrap();
        let held =
            rows.iter_mut().find(|(n, r)| &n.organization_id == org && r.id == claim.id && r.attempt == claim.attempt);
        if let Some((_, r)) = held {
            match outcome {
                Outcome::Keep(response) => r.response = Some(response.clone()),
                Outcome::Withheld { .. } => r.withheld = true,
            }
        }
        Ok(())
    }

    async fn release_idempotency_key(&self, org: &OrganizationId, claim: &IdempotencyClaim) -> Result<(), RepoError> {
        self.rows.lock().unwrap().retain(|(n, r)| {
            !(&n.organization_id == org && r.id == claim.id && r.attempt == claim.attempt && r.applied_at.is_none())
        });
        Ok(())
    }

    async fn prune_idempotency_keys(&self, now: Timestamp) -> Result<u64, RepoError> {
        let mut rows = self.rows.lock().unwrap();
        let before = rows.len();
        rows.retain(|(n, _)| n.expires_at > now);
        Ok(u64::try_from(before - rows.len()).unwrap())
    }
}
