//! Storage of `Idempotency-Key` reservations and the outcomes they replay.

use async_trait::async_trait;
use compliance_domain::idempotency::IdempotencyClaim;
use compliance_domain::{OrganizationId, Timestamp};

use crate::RepoError;

/// A new reservation: the first request with its key in its organization, caller and route.
#[derive(Debug, Clone)]
pub struct NewReservation {
    /// The reservation's id.
    pub id: String,
    /// The caller's organization.
    pub organization_id: OrganizationId,
    /// Who reserves it: a key is the caller's own, so no other member can take (squat) it.
    /// The user and the credential (`usr_…/apk_…`, `usr_…/session`), see the app's `idempotency`.
    pub caller: String,
    /// The key as the client sent it.
    pub key: String,
    /// The method and matched route, e.g. `POST /v1/risks`.
    pub route: String,
    /// SHA-256 (hex) of what makes the request this request (see the app's `idempotency`).
    pub fingerprint: String,
    /// Until when the reservation blocks a repeat while no outcome is stored.
    pub locked_until: Timestamp,
    /// When the request arrived.
    pub created_at: Timestamp,
    /// When the key is forgotten (`IDEMPOTENCY_TTL_HOURS` after `created_at`).
    pub expires_at: Timestamp,
}

/// An answer as it was sent, to replay it byte for byte.
#[derive(Clone, PartialEq, Eq)]
pub struct StoredResponse {
    /// The HTTP status.
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The `Location` header, if any.
    pub location: Option<String>,
    /// The `ETag` header, if any (a create's or change's tag of the state it made).
    pub etag: Option<String>,
    /// The body's bytes.
    pub body: Vec<u8>,
}

/// Shows the status and headers, never the body (it is a response the caller already got).
impl std::fmt::Debug for StoredResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredResponse")
            .field("status", &self.status)
            .field("content_type", &self.content_type)
            .field("etag", &self.etag)
            .field("body_bytes", &self.body.len())
            .finish()
    }
}

/// A reservation as stored: what a repeat of its key is answered from.
#[derive(Debug, Clone)]
pub struct Reservation {
    /// The reservation's id.
    pub id: String,
    /// The fingerprint of the request that reserved the key.
    pub fingerprint: String,
    /// The attempt that holds it now.
    pub attempt: i64,
    /// Until when it blocks a repeat while no outcome is stored.
    pub locked_until: Timestamp,
    /// When the change committed (marked in the change's own transaction), if it did.
    pub applied_at: Option<Timestamp>,
    /// The record the change's audit entry names, as `(type, id)`.
    pub resource: Option<(String, String)>,
    /// The stored outcome, if the request answered.
    pub response: Option<StoredResponse>,
    /// The request answered with a secret shown once: no body was kept.
    pub withheld: bool,
}

/// What the request that held a claim answered, to keep for its repeats.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Replay this answer.
    Keep(StoredResponse),
    /// The answer showed a secret once: keep only that it answered `status`.
    Withheld {
        /// The HTTP status it answered.
        status: u16,
    },
}

/// `Idempotency-Key` reservations, scoped to an organization. A claim is marked applied by the
/// audited write itself (`AuditDraft::idempotency`), in the change's transaction.
#[async_trait]
pub trait IdempotencyRepository: Send + Sync {
    /// Inserts `new` unless its organization, caller, key and route are reserved already (an expired
    /// reservation of the same scope is deleted first); `None` when inserted, else the existing
    /// reservation.
    async fn reserve_idempotency_key(
        &self,
        new: &NewReservation,
        now: Timestamp,
    ) -> Result<Option<Reservation>, RepoError>;
    /// Takes over a reservation whose lease ran out and that was never applied: bumps its attempt
    /// and lease if it is still at `attempt` and unapplied. The new claim, or `None` if another
    /// request got there first or the change was applied meanwhile.
    async fn take_over_idempotency_key(
        &self,
        org: &OrganizationId,
        id: &str,
        attempt: i64,
        locked_until: Timestamp,
    ) -> Result<Option<IdempotencyClaim>, RepoError>;
    /// Stores what the request holding `claim` answered; nothing if another attempt holds it now.
    async fn finish_idempotency_key(
        &self,
        org: &OrganizationId,
        claim: &IdempotencyClaim,
        outcome: &Outcome,
    ) -> Result<(), RepoError>;
    /// Deletes the reservation of `claim` if its change was never applied, so a retry runs it
    /// again; an applied one stays (without an outcome).
    async fn release_idempotency_key(&self, org: &OrganizationId, claim: &IdempotencyClaim) -> Result<(), RepoError>;
    /// Deletes every reservation that expired at `now`, in every organization; how many.
    async fn prune_idempotency_keys(&self, now: Timestamp) -> Result<u64, RepoError>;
}
