//! When to refresh, and refreshing once per connection however many callers need a fresh token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use compliance_ports::RefreshLeases;
use secrecy::SecretString;
use time::{Duration, OffsetDateTime};

use crate::oauth::token::{ClientCredentials, RefreshRequest, TokenClient, TokenError, TokenSet};
use crate::strategy::OAuth2Config;

/// The spec leaves the margin open: five minutes covers clock skew and a slow check run.
pub const DEFAULT_REFRESH_MARGIN: Duration = Duration::minutes(5);

/// True when a token expiring at `expires_at` should be refreshed at `now`. A token without an
/// expiry is long-lived and never refreshed proactively.
pub fn needs_refresh(expires_at: Option<OffsetDateTime>, now: OffsetDateTime, margin: Duration) -> bool {
    expires_at.is_some_and(|at| now + margin >= at)
}

/// One connection of one organization.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConnectionKey {
    pub organization_id: String,
    pub connection_id: String,
}

/// Where a connection's tokens live (the encrypted vault, later). Object-safe like the ports.
#[async_trait]
pub trait TokenStore: Send + Sync {
    async fn load(&self, key: &ConnectionKey) -> Result<Option<TokenSet>, TokenStoreError>;
    async fn save(&self, key: &ConnectionKey, tokens: &TokenSet) -> Result<(), TokenStoreError>;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the token store failed: {0}")]
pub struct TokenStoreError(pub String);

/// Why no usable access token could be had.
#[derive(Debug, thiserror::Error)]
pub enum AccessTokenError {
    #[error("the connection has no tokens")]
    NotConnected,
    #[error("the connection must be authorised again")]
    ReauthorizationRequired,
    #[error(transparent)]
    Token(#[from] TokenError),
    #[error(transparent)]
    Store(#[from] TokenStoreError),
    /// Another server instance held the refresh lease for longer than a caller waits.
    #[error("another instance is refreshing this connection's tokens; retry shortly")]
    RefreshInProgress,
}

impl AccessTokenError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Token(e) if e.is_retryable()) || matches!(self, Self::RefreshInProgress)
    }
}

/// Everything a refresh of one connection needs.
#[derive(Debug, Clone)]
pub struct OAuthConnection {
    pub key: ConnectionKey,
    pub provider: String,
    pub config: OAuth2Config,
    pub client: ClientCredentials,
}

/// Hands out access tokens, refreshing when due. In one process, concurrent callers for one
/// connection cause one refresh: they queue on a per-connection async mutex and re-check after
/// acquiring it. Across processes sharing a database, [`TokenRefresher::with_shared_lease`] adds
/// a lease in that database: the holder refreshes, the others wait for its tokens.
pub struct TokenRefresher {
    client: TokenClient,
    store: Arc<dyn TokenStore>,
    margin: Duration,
    locks: Mutex<HashMap<ConnectionKey, Arc<tokio::sync::Mutex<()>>>>,
    lease: Option<SharedLease>,
    /// After a transient refresh failure, when the provider may be asked again, and the wait
    /// before that (doubled on each failure in a row).
    backoff: Mutex<HashMap<ConnectionKey, (std::time::Instant, std::time::Duration)>>,
}

/// The first and the longest wait after transient refresh failures.
const BACKOFF_FIRST: std::time::Duration = std::time::Duration::from_secs(1);
const BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(60);

/// How long a refresh lease lasts: longer than a token request may take (its total timeout).
const LEASE_TTL: Duration = Duration::seconds(45);
/// How long a caller waits for another instance's refresh before giving up (retryably).
const LEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
const LEASE_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// This process's name in the lease table, and the table.
struct SharedLease {
    leases: Arc<dyn RefreshLeases>,
    holder: String,
}

impl std::fmt::Debug for TokenRefresher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenRefresher").field("margin", &self.margin).finish_non_exhaustive()
    }
}

impl TokenRefresher {
    pub fn new(client: TokenClient, store: Arc<dyn TokenStore>) -> Self {
        Self::with_margin(client, store, DEFAULT_REFRESH_MARGIN)
    }

    pub fn with_margin(client: TokenClient, store: Arc<dyn TokenStore>, margin: Duration) -> Self {
        Self {
            client,
            store,
            margin,
            locks: Mutex::new(HashMap::new()),
            lease: None,
            backoff: Mutex::new(HashMap::new()),
        }
    }

    /// Refreshes only while holding `leases`' lease for the connection, so that one instance of
    /// several sharing the database refreshes at a time.
    #[must_use]
    pub fn with_shared_lease(mut self, leases: Arc<dyn RefreshLeases>) -> Self {
        self.lease = Some(SharedLease { leases, holder: hex::encode(crate::random::random_bytes::<16>()) });
        self
    }

    /// A usable access token for `connection`, refreshed first when due.
    pub async fn access_token(&self, connection: &OAuthConnection) -> Result<SecretString, AccessTokenError> {
        let tokens = self.store.load(&connection.key).await?.ok_or(AccessTokenError::NotConnected)?;
        if !self.due(connection, &tokens) {
            return Ok(tokens.access_token);
        }
        let lock = self.lock_for(&connection.key);
        let result = {
            let _guard = lock.lock().await;
            match &self.lease {
                None => self.refresh_if_still_due(connection).await,
                Some(lease) => self.refresh_under_lease(connection, lease).await,
            }
        };
        self.release(&connection.key, lock);
        result
    }

    fn due(&self, connection: &OAuthConnection, tokens: &TokenSet) -> bool {
        connection.config.supports_refresh_token
            && needs_refresh(tokens.expires_at, OffsetDateTime::now_utc(), self.margin)
    }

    async fn refresh_if_still_due(&self, connection: &OAuthConnection) -> Result<SecretString, AccessTokenError> {
        // Another caller may have refreshed while this one waited for the lock.
        let tokens = self.store.load(&connection.key).await?.ok_or(AccessTokenError::NotConnected)?;
        if !self.due(connection, &tokens) {
            return Ok(tokens.access_token);
        }
        let Some(refresh_token) = &tokens.refresh_token else {
            return if tokens.expires_at.is_some_and(|at| at <= OffsetDateTime::now_utc()) {
                Err(AccessTokenError::ReauthorizationRequired)
            } else {
                Ok(tokens.access_token)
            };
        };
        if self.backing_off(&connection.key) {
            return Err(AccessTokenError::Token(TokenError::BackingOff));
        }
        let request = RefreshRequest {
            provider: &connection.provider,
            config: &connection.config,
            client: &connection.client,
            refresh_token,
        };
        let fresh = match self.client.refresh(&request).await {
            Ok(fresh) => fresh,
            Err(TokenError::InvalidGrant) => return Err(AccessTokenError::ReauthorizationRequired),
            Err(other) => {
                if other.is_retryable() {
                    self.back_off(&connection.key);
                }
                return Err(other.into());
            }
        };
        self.backoff.lock().unwrap_or_else(PoisonError::into_inner).remove(&connection.key);
        self.store.save(&connection.key, &fresh).await?;
        Ok(fresh.access_token)
    }

    /// Takes the shared lease and refreshes, or, while another instance holds it, waits for the
    /// tokens it stores.
    async fn refresh_under_lease(
        &self,
        connection: &OAuthConnection,
        lease: &SharedLease,
    ) -> Result<SecretString, AccessTokenError> {
        let key = format!("{}/{}", connection.key.organization_id, connection.key.connection_id);
        let store_error = |e: compliance_ports::RepoError| TokenStoreError(e.to_string());
        let deadline = std::time::Instant::now() + LEASE_WAIT;
        loop {
            let now = compliance_domain::Timestamp::now();
            if lease.leases.acquire(&key, &lease.holder, now, now.plus(LEASE_TTL)).await.map_err(store_error)? {
                let result = self.refresh_if_still_due(connection).await;
                if let Err(error) = lease.leases.release(&key, &lease.holder).await {
                    tracing::warn!(%error, "could not release a refresh lease; it lapses by itself");
                }
                return result;
            }
            let tokens = self.store.load(&connection.key).await?.ok_or(AccessTokenError::NotConnected)?;
            if !self.due(connection, &tokens) {
                return Ok(tokens.access_token);
            }
            if std::time::Instant::now() >= deadline {
                return Err(AccessTokenError::RefreshInProgress);
            }
            tokio::time::sleep(LEASE_POLL).await;
        }
    }

    /// Whether a recent transient failure says to leave the provider alone a while longer.
    fn backing_off(&self, key: &ConnectionKey) -> bool {
        let backoff = self.backoff.lock().unwrap_or_else(PoisonError::into_inner);
        backoff.get(key).is_some_and(|(until, _)| std::time::Instant::now() < *until)
    }

    /// Doubles the wait after each transient failure in a row, up to [`BACKOFF_MAX`].
    fn back_off(&self, key: &ConnectionKey) {
        let mut backoff = self.backoff.lock().unwrap_or_else(PoisonError::into_inner);
        let wait = backoff.get(key).map_or(BACKOFF_FIRST, |(_, last)| (*last * 2).min(BACKOFF_MAX));
        backoff.insert(key.clone(), (std::time::Instant::now() + wait, wait));
    }

    fn lock_for(&self, key: &ConnectionKey) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(locks.entry(key.clone()).or_default())
    }

    /// Drops the map entry once nobody else holds or waits for it, so the map does not grow forever.
    /// Clones are only taken under the map lock, so the count cannot rise while it is checked.
    fn release(&self, key: &ConnectionKey, lock: Arc<tokio::sync::Mutex<()>>) {
        let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
        if Arc::strong_count(&lock) == 2 {
            locks.remove(key);
        }
    }
}

/// A [`TokenStore`] in memory, for tests and single-process tools.
#[derive(Debug, Default)]
pub struct InMemoryTokenStore {
    tokens: Mutex<HashMap<ConnectionKey, TokenSet>>,
}

#[async_trait]
impl TokenStore for InMemoryTokenStore {
    async fn load(&self, key: &ConnectionKey) -> Result<Option<TokenSet>, TokenStoreError> {
        Ok(self.tokens.lock().unwrap_or_else(PoisonError::into_inner).get(key).cloned())
    }

    async fn save(&self, key: &ConnectionKey, tokens: &TokenSet) -> Result<(), TokenStoreError> {
        self.tokens.lock().unwrap_or_else(PoisonError::into_inner).insert(key.clone(), tokens.clone());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-11-22 08:00 UTC);

    #[test]
    fn refresh_is_due_within_the_margin() {
        let margin = DEFAULT_REFRESH_MARGIN;
        assert!(!needs_refresh(Some(NOW + Duration::minutes(6)), NOW, margin));
        assert!(needs_refresh(Some(NOW + Duration::minutes(5)), NOW, margin));
        assert!(needs_refresh(Some(NOW + Duration::minutes(1)), NOW, margin));
        assert!(needs_refresh(Some(NOW - Duration::minutes(1)), NOW, margin));
        assert!(!needs_refresh(None, NOW, margin));
        assert!(!needs_refresh(Some(NOW + Duration::seconds(30)), NOW, Duration::ZERO));
    }

    #[test]
    fn default_margin_is_five_minutes() {
        assert_eq!(DEFAULT_REFRESH_MARGIN, Duration::minutes(5));
    }
}
