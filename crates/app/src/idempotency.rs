//! `Idempotency-Key`: what a request with a key may do (run, replay, wait, refuse), keeping its
//! outcome for repeats, and the job that forgets expired keys.
//!
//! The delivery layer reserves the key before the route runs ([`IdempotencyService::reserve`]),
//! hands the claim to the use case through [`Principal::idempotency`], and stores the answer
//! afterwards ([`IdempotencyService::finish`]). Between the two, the audited write that makes the
//! change marks the reservation applied in its own transaction (the store's `AuditChain::append`),
//! so a change is never applied twice under one key, even when the process dies after the commit
//! and before the answer was stored: see [`Decision::AppliedWithoutResponse`].

use std::sync::Arc;
use std::time::Duration;

use compliance_domain::OrganizationId;
use compliance_domain::idempotency::{IdempotencyClaim, IdempotencyKey};
use compliance_ports::{Clock, IdempotencyRepository, NewReservation, Outcome, StoredResponse};
use sha2::{Digest, Sha256};

use crate::{AppError, Ports, Principal};

/// How many times a reservation is tried when other requests keep changing it meanwhile.
const RESERVE_TRIES: usize = 3;

/// Tunables of idempotency keys (`IDEMPOTENCY_*`, see docs/operations.md).
#[derive(Debug, Clone)]
pub struct IdempotencySettings {
    /// How long a stored outcome is replayed (`IDEMPOTENCY_TTL_HOURS`, default 24).
    pub ttl: time::Duration,
    /// How long a reservation without an outcome blocks a repeat with 409
    /// (`IDEMPOTENCY_LEASE_SECONDS`); after it, a retry may run the request again if its change
    /// was never applied. Longer than any request takes.
    pub lease: Duration,
    /// How often every instance deletes expired keys (`IDEMPOTENCY_PRUNE_MILLIS`).
    pub prune_interval: Duration,
}

impl Default for IdempotencySettings {
    fn default() -> Self {
        Self {
            ttl: time::Duration::hours(24),
            // Far above what a write takes, so a request still running is (practically) never taken over;
            // if one is, its commit fails rather than apply twice.
            lease: Duration::from_secs(120),
            prune_interval: Duration::from_secs(10 * 60),
        }
    }
}

/// What a request that sent an `Idempotency-Key` does.
#[derive(Debug, Clone)]
pub enum Decision {
    /// The first request with this key (or a retry of one that died before its change committed):
    /// run it, holding this claim.
    Run(IdempotencyClaim),
    /// A repeat of a request that answered: send its answer again.
    Replay(StoredResponse),
    /// The request with this key is still running (409 with `Retry-After`).
    InFlight {
        /// When its reservation runs out.
        retry_after: Duration,
    },
    /// The key was used for another request: another body, path, or caller (422).
    Reused,
    /// The request with this key changed `resource` and answered with a secret shown once,
    /// whose body is not kept (409 naming the resource).
    Withheld {
        /// The record the change's audit entry names, as `(type, id)`.
        resource: Option<(String, String)>,
    },
    /// The request with this key committed its change, but its answer was never stored: the
    /// process died in between. It is never run again (409 naming the resource).
    AppliedWithoutResponse {
        /// The record the change's audit entry names, as `(type, id)`.
        resource: Option<(String, String)>,
    },
}

/// What makes a request the same request: its method, path and query, its caller (user and
/// key) and its body. SHA-256, hex.
pub fn fingerprint(method: &str, path_and_query: &str, caller: &Principal, body: &[u8]) -> String {
    let mut hasher = Sha256::new();
    for part in [method, path_and_query, caller.user_id.as_str()] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher.update(credential(caller).as_bytes());
    hasher.update([0]);
    hasher.update(body);
    hex::encode(hasher.finalize())
}

/// Whose keys a reservation is among: the user and the credential (`usr_…/apk_…`,
/// `usr_…/session`). **Choice:** keys are per caller, not per organization, so no member can
/// reserve (squat) a key another member sends; a user's sessions share their keys, each API key
/// has its own.
fn caller_scope(caller: &Principal) -> String {
    format!("{}/{}", caller.user_id, credential(caller))
}

fn credential(caller: &Principal) -> &str {
    caller.api_key_id.as_ref().map_or("session", |key| key.as_str())
}

/// Reserving keys, keeping outcomes, forgetting expired keys.
pub struct IdempotencyService {
    keys: Arc<dyn IdempotencyRepository>,
    clock: Arc<dyn Clock>,
    settings: IdempotencySettings,
}

impl IdempotencyService {
    pub(crate) fn new(ports: &Ports, settings: IdempotencySettings) -> Self {
        Self { keys: ports.idempotency.clone(), clock: ports.clock.clone(), settings }
    }

    /// Reserves `key` for the caller's request on `route` (`POST /v1/risks`) whose
    /// [`fingerprint`] is `fingerprint`, in its own short transaction, or says why not.
    pub async fn reserve(
        &self,
        caller: &Principal,
        key: &IdempotencyKey,
        route: &str,
        fingerprint: String,
    ) -> Result<Decision, AppError> {
        let now = self.clock.now();
        let lease = time::Duration::try_from(self.settings.lease).unwrap_or(time::Duration::MINUTE);
        let new = NewReservation {
            id: hex::encode(rand::random::<[u8; 16]>()),
            organization_id: caller.organization_id.clone(),
            caller: caller_scope(caller),
            key: key.as_str().to_owned(),
            route: route.to_owned(),
            fingerprint,
            locked_until: now.plus(lease),
            created_at: now,
            expires_at: now.plus(self.settings.ttl),
        };
        for _ in 0..RESERVE_TRIES {
            let Some(existing) = self.keys.reserve_idempotency_key(&new, now).await? else {
                return Ok(Decision::Run(IdempotencyClaim { id: new.id, attempt: 0 }));
            };
            if existing.fingerprint != new.fingerprint {
                return Ok(Decision::Reused);
            }
            if let Some(response) = existing.response {
                return Ok(Decision::Replay(response));
            }
            if existing.withheld {
                return Ok(Decision::Withheld { resource: existing.resource });
            }
            if existing.locked_until > now {
                let left = existing.locked_until.to_offset() - now.to_offset();
                return Ok(Decision::InFlight { retry_after: left.try_into().unwrap_or(self.settings.lease) });
            }
            if existing.applied_at.is_some() {
                return Ok(Decision::AppliedWithoutResponse { resource: existing.resource });
            }
            // The lease ran out and nothing was applied: the first attempt died before its change
            // committed (or answered without a change and without storing). Run it again.
            let taken = self.keys.take_over_idempotency_key(
                &new.organization_id,
                &existing.id,
                existing.attempt,
                new.locked_until,
            );
            if let Some(claim) = taken.await? {
                return Ok(Decision::Run(claim));
            }
        }
        Ok(Decision::InFlight { retry_after: self.settings.lease })
    }

    /// Keeps the answer of the request that holds `claim`: 2xx and other 4xx answers are
    /// replayed to repeats (a route that shows a secret once, `reveals_secret`, keeps only its
    /// status); after a 5xx or 429, and after a refusal (401, 403: nothing was done, and the
    /// caller's access may change), the reservation is released so that a retry runs again,
    /// unless its change was applied.
    pub async fn finish(
        &self,
        org: &OrganizationId,
        claim: &IdempotencyClaim,
        response: StoredResponse,
        reveals_secret: bool,
    ) -> Result<(), AppError> {
        if matches!(response.status, 401 | 403 | 429) || response.status >= 500 {
            return Ok(self.keys.release_idempotency_key(org, claim).await?);
        }
        let outcome = match reveals_secret {
            true => Outcome::Withheld { status: response.status },
            false => Outcome::Keep(response),
        };
        Ok(self.keys.finish_idempotency_key(org, claim, &outcome).await?)
    }

    /// Releases `claim`'s reservation unless its change was applied: the request failed before
    /// its answer could be kept, and a retry may run it again.
    pub async fn release(&self, org: &OrganizationId, claim: &IdempotencyClaim) -> Result<(), AppError> {
        Ok(self.keys.release_idempotency_key(org, claim).await?)
    }

    /// Deletes the keys whose `IDEMPOTENCY_TTL_HOURS` ran out, in every organization; how many.
    pub async fn prune_expired(&self) -> Result<u64, AppError> {
        Ok(self.keys.prune_idempotency_keys(self.clock.now()).await?)
    }
}

/// The job every instance runs: deletes expired keys every `IDEMPOTENCY_PRUNE_MILLIS`. Deleting
/// is idempotent, so instances need not coordinate.
pub struct IdempotencyPruner {
    service: Arc<IdempotencyService>,
    interval: Duration,
}

impl IdempotencyPruner {
    pub(crate) fn new(service: Arc<IdempotencyService>, interval: Duration) -> Self {
        Self { service, interval }
    }

    /// Works until the task is dropped or aborted: a pass, then the interval.
    pub async fn run(self) {
        loop {
            match self.service.prune_expired().await {
                Ok(0) => {}
                Ok(pruned) => tracing::info!(pruned, "expired idempotency keys deleted"),
                Err(error) => tracing::warn!(%error, "could not delete expired idempotency keys"),
            }
            tokio::time::sleep(self.interval).await;
        }
    }
}
