//! A short-lived, in-process memory of whom a credential authenticates, so that a busy client
//! costs no database round trip per request.
//!
//! Entries live at most `ttl` (and never past the credential's own expiry). Changes made through
//! this process forget the affected entries at once: a member's update forgets the organization's
//! entries, a revoked key its own. Changes made elsewhere (another instance, the admin CLI) take
//! effect within `ttl`; `ttl` zero turns the cache off.

use std::collections::HashMap;
use std::sync::Mutex;

use compliance_domain::{ApiKeyId, OrganizationId, Timestamp};
use time::Duration;

use crate::Principal;

/// More entries than this and the expired ones are dropped (all of them, if none has expired):
/// a flood of distinct credentials cannot grow the map without bound.
const MAX_ENTRIES: usize = 10_000;

/// The credential's SHA-256 (hex) and the raw `X-Organization-Id` header it came with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CacheKey {
    pub digest: String,
    pub organization: Option<String>,
}

#[derive(Debug, Clone)]
pub(crate) struct Cached {
    pub principal: Principal,
    /// Set for API keys: revocation forgets by key, and use is still noted.
    pub api_key: Option<ApiKeyId>,
    pub valid_until: Timestamp,
}

pub struct PrincipalCache {
    ttl: Duration,
    entries: Mutex<HashMap<CacheKey, Cached>>,
}

impl PrincipalCache {
    pub fn new(ttl: std::time::Duration) -> Self {
        let ttl = Duration::try_from(ttl).unwrap_or(Duration::ZERO);
        Self { ttl, entries: Mutex::new(HashMap::new()) }
    }

    pub(crate) fn get(&self, key: &CacheKey, now: Timestamp) -> Option<Cached> {
        let entries = self.entries.lock().ok()?;
        entries.get(key).filter(|cached| now < cached.valid_until).cloned()
    }

    /// Remembers `principal` until `now + ttl` or `expires_at`, whichever comes first.
    pub(crate) fn put(
        &self,
        key: CacheKey,
        principal: &Principal,
        api_key: Option<&ApiKeyId>,
        expires_at: Option<Timestamp>,
        now: Timestamp,
    ) {
        if self.ttl.is_zero() {
            return;
        }
        let valid_until = expires_at.map_or(now.plus(self.ttl), |expiry| expiry.min(now.plus(self.ttl)));
        let Ok(mut entries) = self.entries.lock() else { return };
        if entries.len() >= MAX_ENTRIES {
            entries.retain(|_, cached| now < cached.valid_until);
            if entries.len() >= MAX_ENTRIES {
                entries.clear();
            }
        }
        entries.insert(key, Cached { principal: principal.clone(), api_key: api_key.cloned(), valid_until });
    }

    /// After a change to the organization's members: their roles, activity or users.
    pub fn forget_organization(&self, org: &OrganizationId) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|_, cached| &cached.principal.organization_id != org);
        }
    }

    /// After the session whose token's SHA-256 is `digest` ended.
    pub fn forget_credential(&self, digest: &str) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|key, _| key.digest != digest);
        }
    }

    /// After the key was revoked.
    pub fn forget_api_key(&self, key: &ApiKeyId) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.retain(|_, cached| cached.api_key.as_ref() != Some(key));
        }
    }
}
