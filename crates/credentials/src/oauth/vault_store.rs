//! A connection's OAuth tokens kept in the vault: one ciphertext per connection.

use std::borrow::Cow;
use std::sync::Arc;

use async_trait::async_trait;
use compliance_domain::{OrganizationId, Timestamp};
use compliance_ports::{SecretRepository, StoredSecret};
use secrecy::zeroize::Zeroizing;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::oauth::refresh::{ConnectionKey, TokenStore, TokenStoreError};
use crate::oauth::token::TokenSet;
use crate::vault::{Binding, Keyring};

/// The owner kind of token ciphertexts in the secret store.
pub const TOKENS_OWNER_KIND: &str = "oauth_tokens";

/// Stores a connection's tokens as one encrypted JSON document, replaced whole: a refresh stores
/// the access token, the refresh token and the expiry together or not at all.
pub struct VaultTokenStore {
    secrets: Arc<dyn SecretRepository>,
    keyring: Arc<Keyring>,
}

impl std::fmt::Debug for VaultTokenStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VaultTokenStore").finish_non_exhaustive()
    }
}

/// Borrowed where it can be: a JSON string with escapes in it cannot be borrowed.
#[derive(Serialize, Deserialize)]
struct Plain<'a> {
    #[serde(borrow)]
    access_token: Cow<'a, str>,
    #[serde(borrow)]
    refresh_token: Option<Cow<'a, str>>,
    expires_at: Option<i64>,
    #[serde(borrow)]
    token_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    scope: Option<Cow<'a, str>>,
}

impl VaultTokenStore {
    pub fn new(secrets: Arc<dyn SecretRepository>, keyring: Arc<Keyring>) -> Self {
        Self { secrets, keyring }
    }
}

fn failed(what: &str) -> TokenStoreError {
    TokenStoreError(what.to_owned())
}

fn organization(key: &ConnectionKey) -> Result<OrganizationId, TokenStoreError> {
    OrganizationId::parse(&key.organization_id).map_err(|_| failed("the connection's organization id is malformed"))
}

fn binding(key: &ConnectionKey) -> Binding<'_> {
    Binding { organization_id: &key.organization_id, owner_kind: TOKENS_OWNER_KIND, owner_id: &key.connection_id }
}

#[async_trait]
impl TokenStore for VaultTokenStore {
    async fn load(&self, key: &ConnectionKey) -> Result<Option<TokenSet>, TokenStoreError> {
        let org = organization(key)?;
        let stored = self
            .secrets
            .get(&org, TOKENS_OWNER_KIND, &key.connection_id)
            .await
            .map_err(|e| TokenStoreError(e.to_string()))?;
        let Some(stored) = stored else { return Ok(None) };
        let plaintext =
            self.keyring.decrypt(&stored.ciphertext, binding(key)).map_err(|e| TokenStoreError(e.to_string()))?;
        let plain: Plain<'_> =
            serde_json::from_slice(&plaintext).map_err(|_| failed("the stored tokens are not readable"))?;
        Ok(Some(TokenSet {
            access_token: SecretString::from(plain.access_token.into_owned()),
            refresh_token: plain.refresh_token.map(|t| SecretString::from(t.into_owned())),
            expires_at: plain.expires_at.and_then(|at| OffsetDateTime::from_unix_timestamp(at).ok()),
            token_type: plain.token_type.map(Cow::into_owned),
            scope: plain.scope.map(Cow::into_owned),
        }))
    }

    async fn save(&self, key: &ConnectionKey, tokens: &TokenSet) -> Result<(), TokenStoreError> {
        let org = organization(key)?;
        let plain = Plain {
            access_token: Cow::Borrowed(tokens.access_token.expose_secret()),
            refresh_token: tokens.refresh_token.as_ref().map(|t| Cow::Borrowed(t.expose_secret())),
            expires_at: tokens.expires_at.map(OffsetDateTime::unix_timestamp),
            token_type: tokens.token_type.as_deref().map(Cow::Borrowed),
            scope: tokens.scope.as_deref().map(Cow::Borrowed),
        };
        let json = Zeroizing::new(serde_json::to_vec(&plain).map_err(|_| failed("the tokens cannot be encoded"))?);
        let ciphertext = self.keyring.encrypt(&json, binding(key)).map_err(|e| TokenStoreError(e.to_string()))?;
        let secret = StoredSecret {
            organization_id: org,
            owner_kind: TOKENS_OWNER_KIND.to_owned(),
            owner_id: key.connection_id.clone(),
            key_id: self.keyring.current_key_id(),
            ciphertext,
            updated_at: Timestamp::now(),
        };
        self.secrets.put(&secret).await.map_err(|e| TokenStoreError(e.to_string()))
    }
}
