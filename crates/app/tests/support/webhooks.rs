//! Webhooks: a store that holds endpoints (and the audit entries of their changes) but never
//! delivers, and a sender that refuses.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use compliance_domain::allowed_host::{AllowedHost, AllowedHostUse};
use compliance_domain::audit::AuditDraft;
use compliance_domain::webhook::{AttemptOutcome, Webhook, WebhookDelivery};
use compliance_domain::{OrganizationId, Timestamp, WebhookDeliveryId, WebhookId};
use compliance_ports::{
    AllowedHostRepository, AuditOf, OutboundRequest, OutboundResponse, Page, PageRequest, RepoError, SealedSecrets,
    SealedUrl, SendError, WebhookRepository, WebhookSender,
};

/// A stored endpoint: the record and its ciphertexts.
#[derive(Clone)]
pub struct StoredWebhook {
    pub webhook: Webhook,
    pub sealed_secret: Vec<u8>,
    pub sealed_url: Vec<u8>,
}

/// Webhooks held in memory, with every audit entry their changes made; nothing is ever queued or
/// delivered (the worker finds no enabled endpoint).
#[derive(Default)]
pub struct MemoryWebhooks {
    rows: Mutex<HashMap<WebhookId, StoredWebhook>>,
    pub entries: Mutex<Vec<AuditDraft>>,
}

impl MemoryWebhooks {
    pub fn stored(&self, id: &WebhookId) -> StoredWebhook {
        self.rows.lock().unwrap()[id].clone()
    }

    pub fn entries(&self) -> Vec<AuditDraft> {
        self.entries.lock().unwrap().clone()
    }

    fn mine(&self, org: &OrganizationId, id: &WebhookId) -> Result<StoredWebhook, RepoError> {
        let rows = self.rows.lock().unwrap();
        rows.get(id).filter(|row| &row.webhook.organization_id == org).cloned().ok_or(RepoError::NotFound)
    }
}

#[async_trait]
impl WebhookRepository for MemoryWebhooks {
    async fn insert(
        &self,
        webhook: &Webhook,
        sealed_secret: &[u8],
        sealed_url: &[u8],
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<(), RepoError> {
        let row = StoredWebhook {
            webhook: webhook.clone(),
            sealed_secret: sealed_secret.to_vec(),
            sealed_url: sealed_url.to_vec(),
        };
        self.rows.lock().unwrap().insert(webhook.id.clone(), row);
        self.entries.lock().unwrap().push(audit(None, Some(webhook)));
        Ok(())
    }
    async fn get(&self, org: &OrganizationId, id: &WebhookId) -> Result<Webhook, RepoError> {
        self.mine(org, id).map(|row| row.webhook)
    }
    async fn list(&self, org: &OrganizationId, _: &PageRequest) -> Result<Page<Webhook>, RepoError> {
        let rows = self.rows.lock().unwrap();
        let items: Vec<Webhook> =
            rows.values().filter(|row| &row.webhook.organization_id == org).map(|row| row.webhook.clone()).collect();
        Ok(Page { total: items.len() as u64, items, next: None })
    }
    async fn update(
        &self,
        webhook: &Webhook,
        previous: &Webhook,
        sealed_url: Option<&[u8]>,
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<(), RepoError> {
        let mut rows = self.rows.lock().unwrap();
        let row = rows.get_mut(&webhook.id).filter(|row| &row.webhook == previous).ok_or(RepoError::NotFound)?;
        row.webhook = webhook.clone();
        if let Some(sealed) = sealed_url {
            row.sealed_url = sealed.to_vec();
        }
        self.entries.lock().unwrap().push(audit(Some(previous), Some(webhook)));
        Ok(())
    }
    async fn delete(
        &self,
        org: &OrganizationId,
        id: &WebhookId,
        _: &compliance_domain::etag::IfMatch,
        audit: &AuditOf<'_, Webhook>,
    ) -> Result<Webhook, RepoError> {
        let row = self.mine(org, id)?;
        self.rows.lock().unwrap().remove(id);
        self.entries.lock().unwrap().push(audit(Some(&row.webhook), None));
        Ok(row.webhook)
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
        Err(RepoError::Internal("rotation is not kept in memory".into()))
    }
    async fn sealed_secrets(&self, org: &OrganizationId, id: &WebhookId) -> Result<SealedSecrets, RepoError> {
        let row = self.mine(org, id)?;
        Ok(SealedSecrets { current: row.sealed_secret, previous: None, url: SealedUrl::Sealed(row.sealed_url) })
    }
    async fn enqueue(&self, delivery: &WebhookDelivery) -> Result<WebhookDelivery, RepoError> {
        Ok(delivery.clone())
    }
    async fn deliveries(
        &self,
        _: &OrganizationId,
        _: &WebhookId,
        _: &PageRequest,
    ) -> Result<Page<WebhookDelivery>, RepoError> {
        Ok(Page { items: Vec::new(), total: 0, next: None })
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
    async fn claim_due(
        &self,
        _: Timestamp,
        _: Timestamp,
        _: usize,
    ) -> Result<Vec<(WebhookDelivery, Webhook)>, RepoError> {
        Ok(Vec::new())
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

/// The operator's grants of internal hosts, in memory.
#[derive(Default)]
pub struct MemoryAllowedHosts {
    grants: Mutex<Vec<AllowedHost>>,
}

#[async_trait]
impl AllowedHostRepository for MemoryAllowedHosts {
    async fn hosts(&self, org: &OrganizationId, used_for: AllowedHostUse) -> Result<Vec<String>, RepoError> {
        let grants = self.grants.lock().unwrap();
        Ok(grants
            .iter()
            .filter(|g| &g.organization_id == org && g.used_for == used_for)
            .map(|g| g.host.clone())
            .collect())
    }
    async fn list(&self, org: &OrganizationId) -> Result<Vec<AllowedHost>, RepoError> {
        Ok(self.grants.lock().unwrap().iter().filter(|g| &g.organization_id == org).cloned().collect())
    }
    async fn grant(&self, grant: &AllowedHost) -> Result<AllowedHost, RepoError> {
        let mut grants = self.grants.lock().unwrap();
        let same = |g: &&AllowedHost| {
            g.organization_id == grant.organization_id && g.used_for == grant.used_for && g.host == grant.host
        };
        if let Some(existing) = grants.iter().find(same) {
            return Ok(existing.clone());
        }
        grants.push(grant.clone());
        Ok(grant.clone())
    }
    async fn revoke(&self, org: &OrganizationId, used_for: AllowedHostUse, host: &str) -> Result<bool, RepoError> {
        let mut grants = self.grants.lock().unwrap();
        let before = grants.len();
        grants.retain(|g| !(&g.organization_id == org && g.used_for == used_for && g.host == host));
        Ok(grants.len() < before)
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
