//! Integration use cases: the provider catalog, OAuth apps, the OAuth connect flow and connections.
//!
//! Built on `compliance-credentials` (strategies, OAuth, vault) and the ports; called by the HTTP
//! layer. The contract and the choices made where the spec is silent are in `docs/integrations.md`.

mod audit;
pub mod catalog;
mod connections;
mod flow;
mod oauth_apps;
#[cfg(feature = "openapi")]
pub mod openapi;
mod providers;
mod sealed;
mod secret_input;
mod shipped;

use std::sync::Arc;

use compliance_app::{AppError, AuditTrail};
use compliance_credentials::{
    HttpSettings, Keyring, OAuth2Config, TokenClient, TokenRefresher, VaultTokenStore, build_http_client,
};
use compliance_ports::{
    Clock, ConnectionRepository, OAuthStateRepository, RefreshLeases, ResourceRenderer, SecretRepository,
};

pub use catalog::{ManifestError, Provider, ProviderCatalog, VerifyRequest};
/// The credential form's fields, which the connect page renders, and the encoding of the values it
/// puts in URLs: the delivery layer reaches the credentials crate only through these.
pub use compliance_credentials::{CredentialField, FieldOption, FieldType, percent_encode};
pub use connections::{CheckReport, ConnectionView, Disconnected, NewConnection, Revocation};
pub use flow::{CallbackRedirect, PendingAuthorization, StartOAuth, StateFor, invalid_state};
pub use oauth_apps::{OAuthAppInput, OAuthAppView};
pub use providers::{OAuthView, ProviderView};

use crate::sealed::Sealed;

/// What the integration use cases need from the outside world.
#[derive(Clone)]
pub struct IntegrationPorts {
    pub connections: Arc<dyn ConnectionRepository>,
    pub secrets: Arc<dyn SecretRepository>,
    pub oauth_states: Arc<dyn OAuthStateRepository>,
    pub refresh_leases: Arc<dyn RefreshLeases>,
    pub clock: Arc<dyn Clock>,
    /// For the audit entries of connections and OAuth apps.
    pub renderer: Arc<dyn ResourceRenderer>,
}

/// Configuration of the integration use cases.
#[derive(Debug, Clone)]
pub struct IntegrationSettings {
    /// Where this service is reached; the OAuth callback is `{public_url}/v1/integrations/oauth/callback`.
    pub public_url: String,
    /// Origins (`https://app.example.com`) a `redirectUrl` may point at, besides `public_url`'s.
    pub redirect_origins: Vec<String>,
    /// Timeouts of calls to providers (token endpoints, checks, revocation).
    pub http: HttpSettings,
}

/// The integration use cases.
pub struct Integrations {
    catalog: Arc<ProviderCatalog>,
    connections: Arc<dyn ConnectionRepository>,
    oauth_states: Arc<dyn OAuthStateRepository>,
    clock: Arc<dyn Clock>,
    sealed: Sealed,
    /// Connections' OAuth tokens, in the vault.
    token_store: Arc<VaultTokenStore>,
    tokens: TokenClient,
    refresher: Arc<TokenRefresher>,
    /// For checks: no redirects, timeouts.
    http: reqwest::Client,
    settings: IntegrationSettings,
    /// Every change to a connection or an OAuth app writes an entry with it.
    audit: AuditTrail,
}

impl Integrations {
    pub fn new(
        catalog: ProviderCatalog,
        ports: IntegrationPorts,
        keyring: Arc<Keyring>,
        settings: IntegrationSettings,
    ) -> Result<Self, AppError> {
        let http = build_http_client(settings.http)
            .map_err(|e| AppError::Internal(format!("cannot build the HTTP client: {e}")))?;
        let tokens = TokenClient::with_client(http.clone());
        let token_store = Arc::new(VaultTokenStore::new(ports.secrets.clone(), keyring.clone()));
        let refresher =
            TokenRefresher::new(tokens.clone(), token_store.clone()).with_shared_lease(ports.refresh_leases);
        Ok(Self {
            catalog: Arc::new(catalog),
            connections: ports.connections,
            oauth_states: ports.oauth_states,
            clock: ports.clock.clone(),
            sealed: Sealed::new(ports.secrets, keyring),
            token_store,
            tokens,
            refresher: Arc::new(refresher),
            http,
            settings,
            audit: AuditTrail::new(ports.renderer, ports.clock.clone()),
        })
    }

    /// The URL providers redirect back to.
    pub fn callback_url(&self) -> String {
        format!("{}/v1/integrations/oauth/callback", self.settings.public_url.trim_end_matches('/'))
    }

    fn provider(&self, slug: &str) -> Result<&Arc<Provider>, AppError> {
        self.catalog.get(slug).ok_or(AppError::NotFound("provider"))
    }

    /// The provider's OAuth configuration; 400 for a provider of another strategy.
    fn oauth_provider(&self, slug: &str) -> Result<&OAuth2Config, AppError> {
        match &self.provider(slug)?.auth {
            compliance_credentials::AuthStrategy::OAuth2(config) => Ok(config),
            _ => Err(AppError::invalid("providerSlug", "is not an OAuth provider")),
        }
    }
}
