//! The integration ports in memory: a provider that answers what the test scripts (and counts
//! what it was asked), pending OAuth states, refresh leases, and a catalog of test providers.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use async_trait::async_trait;
use compliance_credentials::{
    CodeExchange, ProviderCatalog, RefreshRequest, RequestAuth, RevokeRequest, TokenError, TokenSet, TokenTypeHint,
    VerifyRequest,
};
use compliance_domain::{OrganizationId, Timestamp, UserId};
use compliance_ports::{
    OAuthStateRecord, OAuthStateRepository, ProviderAnswer, ProviderClient, ProviderRequestError, RefreshLeases,
    RepoError,
};
use secrecy::ExposeSecret;

/// An `api_key` provider (`acme`) and an `oauth2` one with refresh and revocation (`tokens`).
pub fn catalog() -> ProviderCatalog {
    let acme = serde_json::json!({
        "slug": "acme", "name": "Acme", "description": "An API-key service.",
        "auth": {"type": "api_key", "config": {"in": "header", "name": "X-Api-Key"}},
        "setupInstructions": "Make a key.",
        "verify": {"method": "GET", "url": "https://api.acme.test/me"}
    });
    let tokens = serde_json::json!({
        "slug": "tokens", "name": "Tokens", "description": "An OAuth service.",
        "auth": {"type": "oauth2", "config": {
            "authorizeUrl": "https://id.tokens.test/authorize", "tokenUrl": "https://id.tokens.test/token",
            "scopes": ["read"], "setupInstructions": "Make an app."
        }},
        "verify": {"method": "GET", "url": "https://api.tokens.test/me"},
        "revoke": "https://id.tokens.test/revoke"
    });
    ProviderCatalog::from_sources([
        ("acme.json".to_owned(), acme.to_string()),
        ("tokens.json".to_owned(), tokens.to_string()),
    ])
    .unwrap()
}

/// What the fake provider was asked, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    Exchange,
    Refresh {
        refresh_token: String,
    },
    Revoke {
        token: String,
        hint: TokenTypeHint,
    },
    /// The credential it was sent with: the API key or the bearer token.
    Verify {
        credential: String,
    },
}

type Hook = Box<dyn FnOnce() + Send>;

/// A provider whose answers the test queues; with none queued, a success.
#[derive(Default)]
pub struct FakeProvider {
    asked: Mutex<Vec<Asked>>,
    exchanges: Mutex<VecDeque<Result<TokenSet, TokenError>>>,
    refreshes: Mutex<VecDeque<Result<TokenSet, TokenError>>>,
    revocations: Mutex<VecDeque<Result<(), TokenError>>>,
    verifications: Mutex<VecDeque<Result<u16, ProviderRequestError>>>,
    /// Runs once, inside the next refresh, before it answers: what happens meanwhile.
    during_refresh: Mutex<Option<Hook>>,
}

impl FakeProvider {
    pub fn asked(&self) -> Vec<Asked> {
        self.asked.lock().unwrap().clone()
    }
    pub fn refreshes(&self) -> usize {
        self.asked().iter().filter(|a| matches!(a, Asked::Refresh { .. })).count()
    }
    pub fn grant(&self, tokens: TokenSet) {
        self.exchanges.lock().unwrap().push_back(Ok(tokens));
    }
    pub fn refresh_with(&self, answer: Result<TokenSet, TokenError>) {
        self.refreshes.lock().unwrap().push_back(answer);
    }
    pub fn revoke_with(&self, answer: Result<(), TokenError>) {
        self.revocations.lock().unwrap().push_back(answer);
    }
    pub fn verify_with(&self, answer: Result<u16, ProviderRequestError>) {
        self.verifications.lock().unwrap().push_back(answer);
    }
    pub fn during_next_refresh(&self, hook: impl FnOnce() + Send + 'static) {
        *self.during_refresh.lock().unwrap() = Some(Box::new(hook));
    }
    fn ask(&self, what: Asked) {
        self.asked.lock().unwrap().push(what);
    }
}

/// Tokens as a provider grants them: `access`, refreshable with `refresh`, expiring at `expires_at`.
pub fn tokens(access: &str, refresh: Option<&str>, expires_at: Option<Timestamp>) -> TokenSet {
    TokenSet {
        access_token: access.into(),
        refresh_token: refresh.map(Into::into),
        expires_at: expires_at.map(Timestamp::to_offset),
        token_type: Some("bearer".into()),
        scope: Some("read".into()),
    }
}

#[async_trait]
impl ProviderClient for FakeProvider {
    async fn exchange(&self, _: &CodeExchange<'_>) -> Result<TokenSet, TokenError> {
        self.ask(Asked::Exchange);
        self.exchanges.lock().unwrap().pop_front().unwrap_or(Err(TokenError::InvalidGrant))
    }
    async fn refresh(&self, request: &RefreshRequest<'_>) -> Result<TokenSet, TokenError> {
        self.ask(Asked::Refresh { refresh_token: request.refresh_token.expose_secret().to_owned() });
        // Long enough for a hundred callers to queue behind this one.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let hook = self.during_refresh.lock().unwrap().take();
        if let Some(hook) = hook {
            hook();
        }
        self.refreshes.lock().unwrap().pop_front().unwrap_or(Err(TokenError::Transient { status: Some(503) }))
    }
    async fn revoke(&self, request: &RevokeRequest<'_>) -> Result<(), TokenError> {
        let token = request.token.expose_secret().to_owned();
        self.ask(Asked::Revoke { token, hint: request.token_type_hint });
        self.revocations.lock().unwrap().pop_front().unwrap_or(Ok(()))
    }
    async fn verify(&self, _: &VerifyRequest, auth: &RequestAuth) -> Result<u16, ProviderRequestError> {
        let credential = match auth {
            RequestAuth::Bearer(token) => token.expose_secret().to_owned(),
            RequestAuth::ApiKey { values, .. } => values.get("api_key").unwrap().expose_secret().to_owned(),
            RequestAuth::Basic { .. } | RequestAuth::Custom => String::new(),
        };
        self.ask(Asked::Verify { credential });
        self.verifications.lock().unwrap().pop_front().unwrap_or(Ok(200))
    }
    async fn signed_get(&self, _: &str, _: &RequestAuth) -> Result<ProviderAnswer, ProviderRequestError> {
        Ok(ProviderAnswer { status: 200, body: b"{}".to_vec() })
    }
}

/// Pending OAuth authorizations, with the store's single take.
#[derive(Default)]
pub struct MemoryOAuthStates {
    rows: Mutex<HashMap<String, OAuthStateRecord>>,
}

#[async_trait]
impl OAuthStateRepository for MemoryOAuthStates {
    async fn insert(&self, state: &OAuthStateRecord) -> Result<(), RepoError> {
        self.rows.lock().unwrap().insert(state.state_hash.clone(), state.clone());
        Ok(())
    }
    async fn find(&self, state_hash: &str) -> Result<Option<OAuthStateRecord>, RepoError> {
        Ok(self.rows.lock().unwrap().get(state_hash).cloned())
    }
    async fn take(
        &self,
        state_hash: &str,
        org: &OrganizationId,
        user: &UserId,
    ) -> Result<Option<OAuthStateRecord>, RepoError> {
        let mut rows = self.rows.lock().unwrap();
        let mine = rows.get(state_hash).is_some_and(|r| &r.organization_id == org && &r.user_id == user);
        Ok(if mine { rows.remove(state_hash) } else { None })
    }
    async fn purge_expired(&self, now: Timestamp) -> Result<u64, RepoError> {
        let mut rows = self.rows.lock().unwrap();
        let before = rows.len();
        rows.retain(|_, r| r.expires_at >= now);
        Ok((before - rows.len()) as u64)
    }
}

/// A lease table with the contract of `RefreshLeases` (the database adapters pass the same
/// contract in the store's suite).
#[derive(Default)]
pub struct MemoryLeases(pub Mutex<HashMap<String, (String, Timestamp)>>);

#[async_trait]
impl RefreshLeases for MemoryLeases {
    async fn acquire(&self, key: &str, holder: &str, now: Timestamp, until: Timestamp) -> Result<bool, RepoError> {
        let mut leases = self.0.lock().unwrap();
        let free = leases.get(key).is_none_or(|(owner, expires)| owner == holder || *expires < now);
        if free {
            leases.insert(key.to_owned(), (holder.to_owned(), until));
        }
        Ok(free)
    }
    async fn release(&self, key: &str, holder: &str) -> Result<(), RepoError> {
        let mut leases = self.0.lock().unwrap();
        if leases.get(key).is_some_and(|(owner, _)| owner == holder) {
            leases.remove(key);
        }
        Ok(())
    }
}
