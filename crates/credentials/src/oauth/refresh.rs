//! When to refresh, and refreshing once per connection however many callers need a fresh token.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
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
}

impl AccessTokenError {
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Token(e) if e.is_retryable())
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
/// acquiring it. (Across processes, the later store layer must add its own guard.)
pub struct TokenRefresher {
    client: TokenClient,
    store: Arc<dyn TokenStore>,
    margin: Duration,
    locks: Mutex<HashMap<ConnectionKey, Arc<tokio::sync::Mutex<()>>>>,
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
        Self { client, store, margin, locks: Mutex::new(HashMap::new()) }
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
            self.refresh_if_still_due(connection).await
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
        let request = RefreshRequest {
            provider: &connection.provider,
            config: &connection.config,
            client: &connection.client,
            refresh_token,
        };
        let fresh = match self.client.refresh(&request).await {
            Ok(fresh) => fresh,
            Err(TokenError::InvalidGrant) => return Err(AccessTokenError::ReauthorizationRequired),
            Err(other) => return Err(other.into()),
        };
        self.store.save(&connection.key, &fresh).await?;
        Ok(fresh.access_token)
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
