//! API keys over HTTP: a member's keys, shown once when made, narrowed by scopes, revoked at once.

use std::sync::Arc;

use compliance_domain::access::{Action, Family, Scopes};
use compliance_domain::people::{ApiKey, ApiKeyRequest, NewApiKey};
use compliance_domain::{ApiKeyId, OrganizationId, Timestamp, UserId};
use compliance_ports::{Clock, CredentialRepository, Page, PageRequest, RepoError, RevokedApiKey};
use secrecy::ExposeSecret;

use crate::access::{Reach, require, require_grantable};
use crate::audit::{API_KEY, AuditTrail};
use crate::secret::{self, API_KEY_PREFIX};
use crate::{AppError, IssuedApiKey, Ports, Principal, PrincipalCache};

/// An organization's API keys: issue, list, revoke, as the permission matrix allows.
pub struct ApiKeyService {
    credentials: Arc<dyn CredentialRepository>,
    clock: Arc<dyn Clock>,
    /// Forgets a revoked key's callers in this process at once (other processes see the
    /// organization's access generation move).
    principals: Arc<PrincipalCache>,
    audit: AuditTrail,
}

impl ApiKeyService {
    pub(crate) fn new(ports: &Ports, principals: Arc<PrincipalCache>) -> Self {
        Self {
            credentials: ports.credentials.clone(),
            clock: ports.clock.clone(),
            principals,
            audit: AuditTrail::new(ports.renderer.clone(), ports.clock.clone()),
        }
    }

    /// Owners and admins (and auditors, reading) see every key of the organization; others their own.
    pub async fn list(&self, caller: &Principal, page: &PageRequest) -> Result<Page<ApiKey>, AppError> {
        let reach = require(caller, Family::ApiKeys, Action::Read)?;
        let creator = (reach == Reach::Own).then_some(&caller.user_id);
        Ok(self.credentials.list_api_keys(&caller.organization_id, creator, page).await?)
    }

    /// A key acting as the caller, with at most what the caller may do (403 otherwise). Made
    /// with an API key, it records that key as its parent, expires no later than it, and is
    /// revoked with it: a key cannot outlive the key that made it.
    pub async fn create(&self, caller: &Principal, input: NewApiKey) -> Result<IssuedApiKey, AppError> {
        require(caller, Family::ApiKeys, Action::Write)?;
        let now = self.clock.now();
        let request = ApiKeyRequest::new(input, now)?;
        require_grantable(caller, &request.scopes)?;
        let (expires_at, parent_id) = match &caller.api_key_id {
            Some(parent) => {
                let parent = self.credentials.get_api_key(&caller.organization_id, parent).await.map_err(not_found)?;
                (parent.capped_expiry(request.expires_at), Some(parent.id))
            }
            None => (request.expires_at, None),
        };
        let mut issued = issue(
            caller.organization_id.clone(),
            caller.user_id.clone(),
            request.name,
            expires_at,
            request.scopes,
            now,
        );
        issued.key.parent_id = parent_id;
        self.credentials.insert_api_key(&issued.key, &self.audit.change(caller, "apiKey.created", &API_KEY)).await?;
        Ok(issued)
    }

    /// Revokes the key, and every key made from it, at once on every instance; revoking a
    /// revoked key keeps its first time.
    pub async fn revoke(&self, caller: &Principal, id: &ApiKeyId) -> Result<ApiKey, AppError> {
        let reach = require(caller, Family::ApiKeys, Action::Write)?;
        let org = &caller.organization_id;
        let key = self.credentials.get_api_key(org, id).await.map_err(not_found)?;
        if reach == Reach::Own && key.created_by != caller.user_id {
            return Err(crate::access::only_own(caller, Action::Write, "the API keys they created"));
        }
        let audit = self.audit.change(caller, "apiKey.revoked", &API_KEY);
        let revoked = self.credentials.revoke_api_key(org, id, self.clock.now(), &audit).await;
        forget_revoked(&self.principals, id, revoked)
    }
}

/// Forgets the revoked keys' callers in this process (whatever the outcome: a revocation that
/// failed to answer may have committed); the key as revoked.
pub(crate) fn forget_revoked(
    principals: &PrincipalCache,
    id: &ApiKeyId,
    revoked: Result<RevokedApiKey, RepoError>,
) -> Result<ApiKey, AppError> {
    principals.forget_api_key(id);
    let revoked = revoked.map_err(not_found)?;
    for descendant in &revoked.descendants {
        principals.forget_api_key(&descendant.id);
    }
    Ok(revoked.key)
}

/// A new key and the only copy of its text.
pub(crate) fn issue(
    organization_id: OrganizationId,
    created_by: UserId,
    name: String,
    expires_at: Option<Timestamp>,
    scopes: Scopes,
    now: Timestamp,
) -> IssuedApiKey {
    let secret = secret::generate(API_KEY_PREFIX);
    let key = ApiKey {
        id: ApiKeyId::generate(),
        organization_id,
        name,
        key_hash: secret::digest(secret.expose_secret()),
        created_by,
        created_at: now,
        expires_at,
        revoked_at: None,
        last_used_at: None,
        scopes,
        parent_id: None,
    };
    IssuedApiKey { key, secret }
}

fn not_found(error: RepoError) -> AppError {
    AppError::from_repo(error, "API key")
}
