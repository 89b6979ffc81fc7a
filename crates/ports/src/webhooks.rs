//! Storage of webhook endpoints and their deliveries, the feed of events they are made from, and
//! the outbound client that sends them.

use std::time::Duration;

use async_trait::async_trait;
use compliance_domain::etag::IfMatch;
use compliance_domain::webhook::{AttemptOutcome, Webhook, WebhookDelivery};
use compliance_domain::{OrganizationId, Timestamp, WebhookDeliveryId, WebhookId};

use crate::{AuditOf, Page, PageRequest, RepoError};

/// A webhook's signing secrets as the vault sealed them (bound to the organization and the webhook).
#[derive(Clone, PartialEq, Eq)]
pub struct SealedSecrets {
    /// The current secret.
    pub current: Vec<u8>,
    /// The secret before the last rotation and until when it still signs.
    pub previous: Option<(Vec<u8>, Timestamp)>,
    /// Where deliveries go.
    pub url: SealedUrl,
}

/// A webhook's full URL as stored.
#[derive(Clone, PartialEq, Eq)]
pub enum SealedUrl {
    /// Sealed by the vault for [`WEBHOOK_URL_OWNER_KIND`] and the webhook.
    Sealed(Vec<u8>),
    /// In the clear: a webhook made before URLs were sealed, until its URL is next changed.
    Clear(String),
}

/// Never shows the ciphertexts.
impl std::fmt::Debug for SealedSecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SealedSecrets").field("previous_until", &self.previous.as_ref().map(|p| p.1)).finish()
    }
}

/// The owner kind a webhook's secret is sealed for (its owner id is the webhook's id).
pub const WEBHOOK_SECRET_OWNER_KIND: &str = "webhook";
/// The owner kind a webhook's full URL is sealed for (its owner id is the webhook's id), so that
/// a URL's ciphertext never opens as a secret, nor the other way round.
pub const WEBHOOK_URL_OWNER_KIND: &str = "webhook_url";

/// Webhooks, their delivery cursors and deliveries; every method is scoped to an organization
/// or claims work across them.
#[async_trait]
pub trait WebhookRepository: Send + Sync {
    /// Inserts the webhook with `audit`'s entry; its event cursor starts at that entry, so it
    /// receives the events that commit after it.
    /// `webhook.url` is the masked form; `sealed_url` the full URL.
    async fn insert(
        &self,
        webhook: &Webhook,
        sealed_secret: &[u8],
        sealed_url: &[u8],
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<(), RepoError>;
    /// One webhook; `RepoError::NotFound` when it is not the organization's.
    async fn get(&self, org: &OrganizationId, id: &WebhookId) -> Result<Webhook, RepoError>;
    /// Oldest first.
    async fn list(&self, org: &OrganizationId, page: &PageRequest) -> Result<Page<Webhook>, RepoError>;
    /// Replaces url, events, description, enabled state, reason and failure streak, if the row is
    /// still as `previous` (its `updated_at`); `NotFound` otherwise. `sealed_url`, when given,
    /// replaces the full URL.
    async fn update(
        &self,
        webhook: &Webhook,
        previous: &Webhook,
        sealed_url: Option<&[u8]>,
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<(), RepoError>;
    /// Deletes the webhook and its deliveries; the webhook as it was.
    async fn delete(
        &self,
        org: &OrganizationId,
        id: &WebhookId,
        if_match: &IfMatch,
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<Webhook, RepoError>;
    /// Makes `sealed` the current secret and keeps the current one as the previous until `until`.
    async fn rotate_secret(
        &self,
        org: &OrganizationId,
        id: &WebhookId,
        sealed: &[u8],
        until: Timestamp,
        now: Timestamp,
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<Webhook, RepoError>;
    /// The webhook's sealed signing secrets and full URL.
    async fn sealed_secrets(&self, org: &OrganizationId, id: &WebhookId) -> Result<SealedSecrets, RepoError>;

    /// Queues `delivery` at the end of its webhook's queue (the store gives its ordinal).
    async fn enqueue(&self, delivery: &WebhookDelivery) -> Result<WebhookDelivery, RepoError>;
    /// Newest first.
    async fn deliveries(
        &self,
        org: &OrganizationId,
        webhook: &WebhookId,
        page: &PageRequest,
    ) -> Result<Page<WebhookDelivery>, RepoError>;
    /// Makes a succeeded or failed delivery pending again, due `now`; `Conflict` while it is
    /// pending or sending.
    async fn retry_delivery(
        &self,
        org: &OrganizationId,
        webhook: &WebhookId,
        id: &WebhookDeliveryId,
        now: Timestamp,
    ) -> Result<WebhookDelivery, RepoError>;

    /// Enabled webhooks of every organization, by id after `after`, at most `limit`.
    async fn enabled(&self, after: Option<&WebhookId>, limit: usize) -> Result<Vec<Webhook>, RepoError>;
    /// Moves the webhook's event cursor from `webhook.event_cursor` to `to` and queues
    /// `deliveries` (in order), in one transaction, only if the cursor has not moved meanwhile:
    /// of several workers that read the same events, exactly one queues them. Whether it did.
    async fn advance(&self, webhook: &Webhook, to: i64, deliveries: &[WebhookDelivery]) -> Result<bool, RepoError>;
    /// Takes up to `limit` deliveries, each the first of an enabled webhook's queue and due
    /// (pending and due, or sending with an expired claim), marking them sending until
    /// `claimed_until`; each with its webhook, soonest due first. A delivery is never claimed
    /// while an earlier one of its webhook is unfinished, so no two are of one webhook.
    async fn claim_due(
        &self,
        now: Timestamp,
        claimed_until: Timestamp,
        limit: usize,
    ) -> Result<Vec<(WebhookDelivery, Webhook)>, RepoError>;
    /// Records an attempt's outcome if the delivery is still claimed as `claimed` (its
    /// `claimed_until`); whether it was.
    async fn finish_attempt(&self, claimed: &WebhookDelivery, outcome: &AttemptOutcome) -> Result<bool, RepoError>;
    /// Ends the webhook's failure streak (a success) or starts it at `at` if none runs; the
    /// streak's start afterwards.
    async fn note_result(
        &self,
        org: &OrganizationId,
        id: &WebhookId,
        succeeded: bool,
        at: Timestamp,
    ) -> Result<Option<Timestamp>, RepoError>;
    /// Disables an enabled webhook with `reason` and `audit`'s entry; whether it was enabled (no
    /// entry when it was not).
    async fn disable(
        &self,
        org: &OrganizationId,
        id: &WebhookId,
        reason: &str,
        at: Timestamp,
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<bool, RepoError>;
}

/// One committed change of an organization, as the audit trail records it once sealed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeedEvent {
    /// The organization's gap-free sequence number of the entry.
    pub seq: i64,
    /// The audit action, which is the event name (`risk.updated`).
    pub action: String,
    /// The changed record's id.
    pub resource_id: String,
    /// When the change committed.
    pub created_at: Timestamp,
    /// The resource as the API returns it after the change (before it, for a delete), as JSON.
    pub data: String,
}

/// The organization's changes in commit order, read after a `seq`.
#[async_trait]
pub trait EventFeed: Send + Sync {
    /// Up to `limit` entries with `seq` above `after`, in `seq` order.
    async fn after(&self, org: &OrganizationId, after: i64, limit: usize) -> Result<Vec<FeedEvent>, RepoError>;
    /// The organization's last `seq` (0 before its first entry): where a new webhook starts.
    async fn last_seq(&self, org: &OrganizationId) -> Result<i64, RepoError>;
}

/// A feed with no events, for a store without an audit trail.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEventFeed;

#[async_trait]
impl EventFeed for NoEventFeed {
    async fn after(&self, _: &OrganizationId, _: i64, _: usize) -> Result<Vec<FeedEvent>, RepoError> {
        Ok(Vec::new())
    }

    async fn last_seq(&self, _: &OrganizationId) -> Result<i64, RepoError> {
        Ok(0)
    }
}

/// One POST of a delivery.
#[derive(Clone)]
pub struct OutboundRequest {
    /// The endpoint: its full URL, a credential (see [`SealedUrl`]).
    pub url: String,
    /// The internal hosts granted to the webhook's organization: reachable for this request as
    /// the sender's own allowed hosts are for every request.
    pub granted_hosts: Vec<String>,
    /// Headers to send: the content type and the Standard Webhooks signature headers.
    pub headers: Vec<(&'static str, String)>,
    /// The JSON body.
    pub body: String,
}

/// Shows the URL masked, and neither the body nor the signatures.
impl std::fmt::Debug for OutboundRequest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboundRequest")
            .field("url", &compliance_domain::webhook::masked_url(&self.url))
            .field("granted_hosts", &self.granted_hosts)
            .finish_non_exhaustive()
    }
}

/// What the receiver answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundResponse {
    /// The HTTP status.
    pub status: u16,
    /// The start of the body (the sender reads a bounded amount).
    pub body: Vec<u8>,
    /// A `Retry-After` header in seconds or as an HTTP date, as a delay from now.
    pub retry_after: Option<Duration>,
}

/// Why no response came; the text names no secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The URL is not allowed (scheme, internal address): retrying will not help until it changes.
    #[error("refused: {0}")]
    Refused(String),
    /// No answer in time.
    #[error("timed out: {0}")]
    Timeout(String),
    /// DNS, connection, TLS or protocol failure.
    #[error("{0}")]
    Failed(String),
}

/// The outbound HTTP client of webhooks: checks the URL, resolves it once, connects to the
/// checked address, follows no redirect, bounds time and the body read.
#[async_trait]
pub trait WebhookSender: Send + Sync {
    /// POSTs `request` once; no retry (the worker schedules those).
    async fn send(&self, request: &OutboundRequest) -> Result<OutboundResponse, SendError>;
}
