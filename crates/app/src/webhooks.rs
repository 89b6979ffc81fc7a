//! Webhook endpoints over HTTP: made with a signing secret shown once, changed, rotated, tested;
//! their deliveries listed and retried.

use std::sync::Arc;

use compliance_domain::access::{Action, Family};
use compliance_domain::allowed_host::AllowedHostUse;
use compliance_domain::etag::IfMatch;
use compliance_domain::webhook::{
    NewWebhook, ROTATION_OVERLAP, TEST_EVENT, Webhook, WebhookChanges, WebhookDelivery, WebhookPatch,
};
use compliance_domain::{OrganizationId, Timestamp, WebhookDeliveryId, WebhookId};
use compliance_ports::{
    AllowedHostRepository, Clock, EventFeed, Page, PageRequest, SecretCipher, SecretOwner, WEBHOOK_SECRET_OWNER_KIND,
    WEBHOOK_URL_OWNER_KIND, WebhookRepository,
};
use secrecy::SecretString;
use tokio::sync::Notify;

use crate::access::require;
use crate::allowed_hosts::reachable_hosts;
use crate::audit::{AuditTrail, WEBHOOK};
use crate::webhook_signing::generate_secret;
use crate::{AppError, Ports, Principal};

/// A webhook and the only copy of its (new) secret.
pub struct IssuedWebhook {
    /// The webhook as stored (its URL masked).
    pub webhook: Webhook,
    /// Its signing secret (`whsec_…`): shown once.
    pub secret: SecretString,
    /// Its full URL, shown once in the create answer; `None` after a rotation.
    pub url: Option<SecretString>,
}

/// Webhooks: their endpoints, secrets and deliveries.
pub struct WebhookService {
    webhooks: Arc<dyn WebhookRepository>,
    feed: Arc<dyn EventFeed>,
    cipher: Arc<dyn SecretCipher>,
    clock: Arc<dyn Clock>,
    /// `WEBHOOK_ALLOWED_HOSTS`, for every organization.
    allowed_hosts: Vec<String>,
    /// The internal hosts the operator granted to each organization.
    grants: Arc<dyn AllowedHostRepository>,
    /// Wakes this instance's delivery worker when a delivery is queued.
    work: Arc<Notify>,
    audit: AuditTrail,
}

impl WebhookService {
    pub(crate) fn new(ports: &Ports, allowed_hosts: Vec<String>, work: Arc<Notify>) -> Self {
        Self {
            webhooks: ports.webhooks.clone(),
            feed: ports.event_feed.clone(),
            cipher: ports.cipher.clone(),
            clock: ports.clock.clone(),
            allowed_hosts,
            grants: ports.allowed_hosts.clone(),
            work,
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    /// The organization's webhooks, a page at a time.
    pub async fn list(&self, caller: &Principal, page: &PageRequest) -> Result<Page<Webhook>, AppError> {
        require(caller, Family::Webhooks, Action::Read)?;
        Ok(self.webhooks.list(&caller.organization_id, page).await?)
    }

    /// One webhook of the caller's organization.
    pub async fn get(&self, caller: &Principal, id: &WebhookId) -> Result<Webhook, AppError> {
        require(caller, Family::Webhooks, Action::Read)?;
        self.webhooks.get(&caller.organization_id, id).await.map_err(not_found)
    }

    /// A new endpoint receives the events that commit after it is made.
    pub async fn create(&self, caller: &Principal, input: NewWebhook) -> Result<IssuedWebhook, AppError> {
        require(caller, Family::Webhooks, Action::Write)?;
        let org = &caller.organization_id;
        let cursor = self.feed.last_seq(org).await?;
        let allowed = self.reachable_hosts(org).await?;
        let (webhook, url) =
            Webhook::create(WebhookId::generate(), org.clone(), input, &allowed, cursor, self.clock.now())?;
        let secret = generate_secret();
        let sealed = self.seal(&webhook, WEBHOOK_SECRET_OWNER_KIND, &secret)?;
        let url = SecretString::from(url.expose());
        let sealed_url = self.seal(&webhook, WEBHOOK_URL_OWNER_KIND, &url)?;
        let audit = self.audit.change(caller, "webhook.created", &WEBHOOK);
        self.webhooks.insert(&webhook, &sealed, &sealed_url, &audit).await?;
        Ok(IssuedWebhook { webhook, secret, url: Some(url) })
    }

    /// Applies `changes` (only the fields given); a URL must be https to a public address unless
    /// its host is in `WEBHOOK_ALLOWED_HOSTS` or granted to the organization.
    pub async fn update(
        &self,
        caller: &Principal,
        id: &WebhookId,
        changes: WebhookChanges,
        if_match: &IfMatch,
    ) -> Result<Webhook, AppError> {
        require(caller, Family::Webhooks, Action::Write)?;
        let patch = WebhookPatch::new(changes, &self.reachable_hosts(&caller.organization_id).await?)?;
        let previous = self.webhooks.get(&caller.organization_id, id).await.map_err(not_found)?;
        // The store writes only while the row is still `previous` (compare-and-swap), so a
        // precondition that holds for `previous` holds at the commit.
        if_match.check(&previous.etag())?;
        let mut webhook = previous.clone();
        webhook.apply(&patch, self.clock.now());
        // A new URL on the same origin looks the same masked, and is a change all the same.
        let sealed_url = match patch.url() {
            Some(url) => Some(self.seal(&webhook, WEBHOOK_URL_OWNER_KIND, &SecretString::from(url.expose()))?),
            None => None,
        };
        if webhook != previous || sealed_url.is_some() {
            let audit = self.audit.change(caller, "webhook.updated", &WEBHOOK);
            let written = self.webhooks.update(&webhook, &previous, sealed_url.as_deref(), &audit).await;
            if let Err(compliance_ports::RepoError::NotFound) = written {
                // Another write got there first: with `If-Match`, that is the 412 of its new tag.
                let current = self.webhooks.get(&caller.organization_id, id).await.map_err(not_found)?;
                if_match.check(&current.etag())?;
                return Err(AppError::Conflict("the webhook changed meanwhile; read it again and retry".into()));
            }
            written?;
            self.work.notify_one();
        }
        Ok(webhook)
    }

    /// Deletes the webhook and its delivery records; queued deliveries are not sent.
    pub async fn delete(&self, caller: &Principal, id: &WebhookId, if_match: &IfMatch) -> Result<Webhook, AppError> {
        require(caller, Family::Webhooks, Action::Write)?;
        let audit = self.audit.change(caller, "webhook.deleted", &WEBHOOK);
        self.webhooks.delete(&caller.organization_id, id, if_match, &audit).await.map_err(not_found)
    }

    /// A new secret signs from now on; the one before keeps signing beside it for
    /// [`ROTATION_OVERLAP`], so receivers can switch without losing a delivery.
    pub async fn rotate_secret(&self, caller: &Principal, id: &WebhookId) -> Result<IssuedWebhook, AppError> {
        require(caller, Family::Webhooks, Action::Write)?;
        let org = &caller.organization_id;
        let existing = self.webhooks.get(org, id).await.map_err(not_found)?;
        let secret = generate_secret();
        let sealed = self.seal(&existing, WEBHOOK_SECRET_OWNER_KIND, &secret)?;
        let now = self.clock.now();
        let audit = self.audit.change(caller, "webhook.secret_rotated", &WEBHOOK);
        let until = now.plus(ROTATION_OVERLAP);
        let webhook = self.webhooks.rotate_secret(org, id, &sealed, until, now, &audit).await.map_err(not_found)?;
        Ok(IssuedWebhook { webhook, secret, url: None })
    }

    /// Queues a `webhook.test` event for the endpoint (whatever its `events`), after what is
    /// already queued. No audit entry: a test changes no resource (only the delivery log, which
    /// is not audited, like a retry).
    pub async fn test(&self, caller: &Principal, id: &WebhookId) -> Result<WebhookDelivery, AppError> {
        require(caller, Family::Webhooks, Action::Write)?;
        let webhook = self.webhooks.get(&caller.organization_id, id).await.map_err(not_found)?;
        let now = self.clock.now();
        let data = serde_json::json!({ "webhookId": webhook.id, "url": webhook.url });
        let delivery = WebhookDelivery::new(&webhook, TEST_EVENT.to_owned(), None, payload(TEST_EVENT, now, data), now);
        let queued = self.webhooks.enqueue(&delivery).await?;
        self.work.notify_one();
        Ok(queued)
    }

    /// The webhook's deliveries, newest first, a page at a time.
    pub async fn deliveries(
        &self,
        caller: &Principal,
        id: &WebhookId,
        page: &PageRequest,
    ) -> Result<Page<WebhookDelivery>, AppError> {
        require(caller, Family::Webhooks, Action::Read)?;
        let org = &caller.organization_id;
        self.webhooks.get(org, id).await.map_err(not_found)?;
        Ok(self.webhooks.deliveries(org, id, page).await?)
    }

    /// Sends a finished (succeeded or failed) delivery again, at once: one more attempt, then the
    /// usual retries within the retry window of its creation. 409 while it is pending or sending.
    pub async fn retry(
        &self,
        caller: &Principal,
        id: &WebhookId,
        delivery: &WebhookDeliveryId,
    ) -> Result<WebhookDelivery, AppError> {
        require(caller, Family::Webhooks, Action::Write)?;
        let org = &caller.organization_id;
        let retried = self
            .webhooks
            .retry_delivery(org, id, delivery, self.clock.now())
            .await
            .map_err(|error| AppError::from_repo(error, "delivery"))?;
        self.work.notify_one();
        Ok(retried)
    }

    /// `WEBHOOK_ALLOWED_HOSTS` and the hosts granted to `org` for webhooks.
    async fn reachable_hosts(&self, org: &OrganizationId) -> Result<Vec<String>, AppError> {
        Ok(reachable_hosts(self.grants.as_ref(), org, AllowedHostUse::Webhooks, &self.allowed_hosts).await?)
    }

    /// Seals the webhook's signing secret or full URL (`kind`), bound to the webhook.
    fn seal(&self, webhook: &Webhook, kind: &str, secret: &SecretString) -> Result<Vec<u8>, AppError> {
        let owner =
            SecretOwner { organization_id: &webhook.organization_id, owner_kind: kind, owner_id: webhook.id.as_str() };
        self.cipher.seal(secret, owner).map_err(|error| AppError::Internal(error.to_string()))
    }
}

/// The body of a delivery: `{type, timestamp, data}`.
pub(crate) fn payload(event: &str, at: Timestamp, data: serde_json::Value) -> String {
    serde_json::json!({ "type": event, "timestamp": at, "data": data }).to_string()
}

fn not_found(error: compliance_ports::RepoError) -> AppError {
    AppError::from_repo(error, "webhook")
}
