//! Webhooks that no test here uses: a store that holds none and a sender that refuses.

use async_trait::async_trait;
use compliance_domain::webhook::{AttemptOutcome, Webhook, WebhookDelivery};
use compliance_domain::{OrganizationId, Timestamp, WebhookDeliveryId, WebhookId};
use compliance_ports::{
    AuditOf, OutboundRequest, OutboundResponse, Page, PageRequest, RepoError, SealedSecrets, SendError,
    WebhookRepository, WebhookSender,
};

/// No webhook is ever stored: writes answer `NotFound`, reads nothing.
pub struct NoWebhooks;

#[async_trait]
impl WebhookRepository for NoWebhooks {
    async fn insert(&self, _: &Webhook, _: &[u8], _: &AuditOf<'_, Webhook>) -> Result<(), RepoError> {
        Err(RepoError::NotFound)
    }
    async fn get(&self, _: &OrganizationId, _: &WebhookId) -> Result<Webhook, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn list(&self, _: &OrganizationId, _: &PageRequest) -> Result<Page<Webhook>, RepoError> {
        Ok(Page { items: Vec::new(), total: 0, next: None })
    }
    async fn update(&self, _: &Webhook, _: &Webhook, _: &AuditOf<'_, Webhook>) -> Result<(), RepoError> {
        Err(RepoError::NotFound)
    }
    async fn delete(
        &self,
        _: &OrganizationId,
        _: &WebhookId,
        _: &compliance_domain::etag::IfMatch,
        _: &AuditOf<'_, Webhook>,
    ) -> Result<Webhook, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn rotate_secret(
        &self,
        _: &OrganizationId,
        _: &WebhookId,
        _: &[u8],
        _: Timestamp,
        _: Timestamp,
        _: &AuditOf<'_, Webhook>,
    ) -> Result<Webhook, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn sealed_secrets(&self, _: &OrganizationId, _: &WebhookId) -> Result<SealedSecrets, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn enqueue(&self, _: &WebhookDelivery) -> Result<WebhookDelivery, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn deliveries(
        &self,
        _: &OrganizationId,
        _: &WebhookId,
        _: &PageRequest,
    ) -> Result<Page<WebhookDelivery>, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn retry_delivery(
        &self,
        _: &OrganizationId,
        _: &WebhookId,
        _: &WebhookDeliveryId,
        _: Timestamp,
    ) -> Result<WebhookDelivery, RepoError> {
        Err(RepoError::NotFound)
    }
    async fn enabled(&self, _: Option<&WebhookId>, _: usize) -> Result<Vec<Webhook>, RepoError> {
        Ok(Vec::new())
    }
    async fn advance(&self, _: &Webhook, _: i64, _: &[WebhookDelivery]) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn claim_next(&self, _: Timestamp, _: Timestamp) -> Result<Option<(WebhookDelivery, Webhook)>, RepoError> {
        Ok(None)
    }
    async fn finish_attempt(&self, _: &WebhookDelivery, _: &AttemptOutcome) -> Result<bool, RepoError> {
        Ok(false)
    }
    async fn note_result(
        &self,
        _: &OrganizationId,
        _: &WebhookId,
        _: bool,
        _: Timestamp,
    ) -> Result<Option<Timestamp>, RepoError> {
        Ok(None)
    }
    async fn disable(
        &self,
        _: &OrganizationId,
        _: &WebhookId,
        _: &str,
        _: Timestamp,
        _: &AuditOf<'_, Webhook>,
    ) -> Result<bool, RepoError> {
        Ok(false)
    }
}

/// Sends nothing.
pub struct RefusingSender;

#[async_trait]
impl WebhookSender for RefusingSender {
    async fn send(&self, _: &OutboundRequest) -> Result<OutboundResponse, SendError> {
        Err(SendError::Refused("no outbound requests in these tests".into()))
    }
}
