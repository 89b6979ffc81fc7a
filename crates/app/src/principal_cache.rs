//! A short-lived, in-process memory of whom a credential authenticates, so that a busy client
//! costs no database round trip per request.
//!
//! Entries live at most `ttl` (and never past the credential's own expiry), and each remembers the
//! organization's access generation it was looked up at (`ListName::Access`, moved by database
//! triggers whenever a member's role or activity, a key or a session changes, whoever writes it).
//! [`crate::AuthService`] answers an entry only while that generation is unchanged, so a
//! revocation on any instance, or by the admin CLI, takes effect at the next request everywhere;
//! the cache saves the credential's and member's lookups, not the generation's indexed read.
//! Changes made through this process also forget the affected entries at once. `ttl` zero turns
//! the cache off.

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
    /// The organization's access generation when the caller was looked up.
    pub generation: u64,
}

/// Authenticated callers remembered in process for a short time, forgotten at once when this
/// instance changes what they may do (see `AUTH_CACHE_SECONDS`).
pub struct PrincipalCache {
    ttl: Duration,
    entries: Mutex<HashMap<CacheKey, Cached>>,
}

impl PrincipalCache {
    /// Remembers each caller for `ttl` (zero: not at all).
    pub fn new(ttl: std::time::Duration) -> Self {
        let ttl = Duration::try_from(ttl).unwrap_or(Duration::ZERO);
        Self { ttl, entries: Mutex::new(HashMap::new()) }
    }

    /// Whether entries are kept at all (`ttl` above zero).
    pub(crate) fn is_on(&self) -> bool {
        !self.ttl.is_zero()
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
        generation: u64,
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
        entries
            .insert(key, Cached { principal: principal.clone(), api_key: api_key.cloned(), valid_until, generation });
    }

    /// After the entry was found stale.
    pub(crate) fn forget(&self, key: &CacheKey) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.remove(key);
        }
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
