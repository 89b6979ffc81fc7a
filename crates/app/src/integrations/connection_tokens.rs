//! A connection's OAuth tokens: kept sealed in the vault, and refreshed when due, once per
//! connection however many callers need a fresh token. In one process, callers for one connection
//! queue on a per-connection async mutex and look again after acquiring it; across the instances
//! sharing a database, a lease in that database ([`RefreshLeases`]) lets one refresh while the
//! others wait for the tokens it stores. Transient failures back off per connection.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use compliance_credentials::{
    ClientCredentials, DEFAULT_REFRESH_MARGIN, OAuth2Config, RefreshRequest, TokenError, TokenSet, needs_refresh,
};
use compliance_domain::{ConnectionId, OrganizationId, Timestamp};
use compliance_ports::{Clock, ProviderClient, RefreshLeases};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::sealed::{OAUTH_TOKENS, Sealed};

/// The first and the longest wait after transient refresh failures.
const BACKOFF_FIRST: time::Duration = time::Duration::seconds(1);
const BACKOFF_MAX: time::Duration = time::Duration::seconds(60);
/// How long a refresh lease lasts: longer than a token request may take (its total timeout).
const LEASE_TTL: time::Duration = time::Duration::seconds(45);
/// How long a caller waits for another instance's refresh before giving up (retryably).
const LEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
const LEASE_POLL: std::time::Duration = std::time::Duration::from_millis(50);

/// One connection of one organization.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ConnectionKey {
    pub(crate) organization_id: OrganizationId,
    pub(crate) connection_id: ConnectionId,
}

/// Everything a refresh of one connection needs.
#[derive(Debug, Clone)]
pub(crate) struct OAuthConnection {
    pub(crate) key: ConnectionKey,
    pub(crate) provider: String,
    pub(crate) config: OAuth2Config,
    pub(crate) client: ClientCredentials,
}

/// Why no usable access token could be had. The messages are what a check reports.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AccessTokenError {
    #[error("the connection has no tokens")]
    NotConnected,
    #[error("the connection must be authorised again")]
    ReauthorizationRequired,
    #[error(transparent)]
    Token(#[from] TokenError),
    /// Our vault failed: that says nothing about the connection.
    #[error("the token store failed: {0}")]
    Store(String),
    /// Another server instance held the refresh lease for longer than a caller waits.
    #[error("another instance is refreshing this connection's tokens; retry shortly")]
    RefreshInProgress,
}

/// The sealed document, as it has always been stored (the field names are its format).
#[derive(Serialize, Deserialize)]
struct StoredTokens {
    #[serde(serialize_with = "expose")]
    access_token: SecretString,
    #[serde(serialize_with = "expose_optional")]
    refresh_token: Option<SecretString>,
    /// Unix seconds.
    expires_at: Option<i64>,
    token_type: Option<String>,
    scope: Option<String>,
}

fn expose<S: serde::Serializer>(secret: &SecretString, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(secret.expose_secret())
}

fn expose_optional<S: serde::Serializer>(secret: &Option<SecretString>, s: S) -> Result<S::Ok, S::Error> {
    match secret {
        Some(secret) => s.serialize_some(secret.expose_secret()),
        None => s.serialize_none(),
    }
}

pub(crate) struct ConnectionTokens {
    providers: Arc<dyn ProviderClient>,
    sealed: Sealed,
    leases: Arc<dyn RefreshLeases>,
    /// This process's name in the lease table.
    holder: String,
    clock: Arc<dyn Clock>,
    locks: Mutex<HashMap<ConnectionKey, Arc<tokio::sync::Mutex<()>>>>,
    /// After a transient refresh failure, when the provider may be asked again, and the wait
    /// before that (doubled on each failure in a row).
    backoff: Mutex<HashMap<ConnectionKey, (Timestamp, time::Duration)>>,
}

impl ConnectionTokens {
    pub(crate) fn new(
        providers: Arc<dyn ProviderClient>,
        sealed: Sealed,
        leases: Arc<dyn RefreshLeases>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            providers,
            sealed,
            leases,
            holder: hex::encode(rand::random::<[u8; 16]>()),
            clock,
            locks: Mutex::new(HashMap::new()),
            backoff: Mutex::new(HashMap::new()),
        }
    }

    /// The connection's tokens, if it has any.
    pub(crate) async fn load(&self, key: &ConnectionKey) -> Result<Option<TokenSet>, AccessTokenError> {
        let stored: Option<(StoredTokens, _)> = self
            .sealed
            .get(&key.organization_id, OAUTH_TOKENS, key.connection_id.as_str())
            .await
            .map_err(|e| AccessTokenError::Store(e.to_string()))?;
        Ok(stored.map(|(tokens, _)| TokenSet {
            access_token: tokens.access_token,
            refresh_token: tokens.refresh_token,
            expires_at: tokens.expires_at.and_then(|at| time::OffsetDateTime::from_unix_timestamp(at).ok()),
            token_type: tokens.token_type,
            scope: tokens.scope,
        }))
    }

    /// Stores (replaces) the connection's tokens.
    pub(crate) async fn save(&self, key: &ConnectionKey, tokens: &TokenSet) -> Result<(), AccessTokenError> {
        let stored = StoredTokens {
            access_token: tokens.access_token.clone(),
            refresh_token: tokens.refresh_token.clone(),
            expires_at: tokens.expires_at.map(time::OffsetDateTime::unix_timestamp),
            token_type: tokens.token_type.clone(),
            scope: tokens.scope.clone(),
        };
        self.sealed
            .put(&key.organization_id, OAUTH_TOKENS, key.connection_id.as_str(), &stored)
            .await
            .map(drop)
            .map_err(|e| AccessTokenError::Store(e.to_string()))
    }

    /// A usable access token for `connection`, refreshed first when due.
    pub(crate) async fn access_token(&self, connection: &OAuthConnection) -> Result<SecretString, AccessTokenError> {
        let tokens = self.load(&connection.key).await?.ok_or(AccessTokenError::NotConnected)?;
        if !self.due(connection, &tokens) {
            return Ok(tokens.access_token);
        }
        let lock = self.lock_for(&connection.key);
        let result = {
            let _guard = lock.lock().await;
            self.refresh_under_lease(connection).await
        };
        self.release(&connection.key, lock);
        result
    }

    fn due(&self, connection: &OAuthConnection, tokens: &TokenSet) -> bool {
        connection.config.supports_refresh_token
            && needs_refresh(tokens.expires_at, self.clock.now().to_offset(), DEFAULT_REFRESH_MARGIN)
    }

    /// Takes the shared lease and refreshes, or, while another instance holds it, waits for the
    /// tokens it stores.
    async fn refresh_under_lease(&self, connection: &OAuthConnection) -> Result<SecretString, AccessTokenError> {
        let key = format!("{}/{}", connection.key.organization_id, connection.key.connection_id);
        let store_error = |e: compliance_ports::RepoError| AccessTokenError::Store(e.to_string());
        let deadline = std::time::Instant::now() + LEASE_WAIT;
        loop {
            let now = self.clock.now();
            if self.leases.acquire(&key, &self.holder, now, now.plus(LEASE_TTL)).await.map_err(store_error)? {
                let result = self.refresh_if_still_due(connection).await;
                if let Err(error) = self.leases.release(&key, &self.holder).await {
                    tracing::warn!(%error, "could not release a refresh lease; it lapses by itself");
                }
                return result;
            }
            let tokens = self.load(&connection.key).await?.ok_or(AccessTokenError::NotConnected)?;
            if !self.due(connection, &tokens) {
                return Ok(tokens.access_token);
            }
            if std::time::Instant::now() >= deadline {
                return Err(AccessTokenError::RefreshInProgress);
            }
            tokio::time::sleep(LEASE_POLL).await;
        }
    }

    async fn refresh_if_still_due(&self, connection: &OAuthConnection) -> Result<SecretString, AccessTokenError> {
        // Another caller may have refreshed while this one waited for the lock or the lease.
        let tokens = self.load(&connection.key).await?.ok_or(AccessTokenError::NotConnected)?;
        if !self.due(connection, &tokens) {
            return Ok(tokens.access_token);
        }
        let Some(refresh_token) = &tokens.refresh_token else {
            return if tokens.expires_at.is_some_and(|at| at <= self.clock.now().to_offset()) {
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
        let fresh = match self.providers.refresh(&request).await {
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
        self.save(&connection.key, &fresh).await?;
        Ok(fresh.access_token)
    }

    /// Whether a recent transient failure says to leave the provider alone a while longer.
    fn backing_off(&self, key: &ConnectionKey) -> bool {
        let backoff = self.backoff.lock().unwrap_or_else(PoisonError::into_inner);
        backoff.get(key).is_some_and(|(until, _)| self.clock.now() < *until)
    }

    /// Doubles the wait after each transient failure in a row, up to [`BACKOFF_MAX`].
    fn back_off(&self, key: &ConnectionKey) {
        let mut backoff = self.backoff.lock().unwrap_or_else(PoisonError::into_inner);
        let wait = backoff.get(key).map_or(BACKOFF_FIRST, |(_, last)| last.saturating_mul(2).min(BACKOFF_MAX));
        backoff.insert(key.clone(), (self.clock.now().plus(wait), wait));
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
