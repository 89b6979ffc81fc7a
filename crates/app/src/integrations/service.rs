//! The integration use cases' service: what they share (the catalog, the ports, the vault, the
//! tokens) and their settings.

use std::sync::Arc;

use compliance_credentials::{AuthStrategy, OAuth2Config, Provider, ProviderCatalog};
use compliance_ports::{Clock, ConnectionRepository, OAuthStateRepository, ProviderClient};

use super::connection_tokens::ConnectionTokens;
use super::sealed::Sealed;
use crate::{AppError, AuditTrail, Ports, Settings};

/// Configuration of the integration use cases.
#[derive(Debug, Clone)]
pub struct IntegrationSettings {
    /// The providers that can be connected (the shipped manifests and `PROVIDERS_DIR`'s).
    pub catalog: Arc<ProviderCatalog>,
    /// Origins (`https://app.example.com`) a `redirectUrl` may point at, besides `public_url`'s
    /// (`OAUTH_REDIRECT_ORIGINS`).
    pub redirect_origins: Vec<String>,
}

/// The shipped manifests (a unit test holds them valid) and no other redirect origin.
impl Default for IntegrationSettings {
    fn default() -> Self {
        Self { catalog: Arc::new(ProviderCatalog::load(None).unwrap_or_default()), redirect_origins: Vec::new() }
    }
}

/// The integration use cases.
pub struct IntegrationService {
    pub(super) catalog: Arc<ProviderCatalog>,
    pub(super) connections: Arc<dyn ConnectionRepository>,
    pub(super) oauth_states: Arc<dyn OAuthStateRepository>,
    pub(super) providers: Arc<dyn ProviderClient>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) sealed: Sealed,
    /// Connections' OAuth tokens, in the vault, refreshed when due.
    pub(super) tokens: ConnectionTokens,
    /// Where this service is reached; the OAuth callback is `{public_url}/v1/integrations/oauth/callback`.
    pub(super) public_url: String,
    pub(super) redirect_origins: Vec<String>,
    /// Every change to a connection or an OAuth app writes an entry with it.
    pub(super) audit: Arc<AuditTrail>,
}

impl IntegrationService {
    pub(crate) fn new(ports: &Ports, settings: &Settings, audit: Arc<AuditTrail>) -> Self {
        let sealed = Sealed::new(ports.secrets.clone(), ports.cipher.clone());
        Self {
            catalog: settings.integrations.catalog.clone(),
            connections: ports.connections.clone(),
            oauth_states: ports.oauth_states.clone(),
            providers: ports.provider_client.clone(),
            clock: ports.clock.clone(),
            tokens: ConnectionTokens::new(
                ports.provider_client.clone(),
                sealed.clone(),
                ports.refresh_leases.clone(),
                ports.clock.clone(),
            ),
            sealed,
            public_url: settings.public_url.clone(),
            redirect_origins: settings.integrations.redirect_origins.clone(),
            audit,
        }
    }

    /// The URL providers redirect back to.
    pub fn callback_url(&self) -> String {
        format!("{}/v1/integrations/oauth/callback", self.public_url.trim_end_matches('/'))
    }

    pub(super) fn provider(&self, slug: &str) -> Result<&Arc<Provider>, AppError> {
        self.catalog.get(slug).ok_or(AppError::NotFound("provider"))
    }

    /// The provider's OAuth configuration; 400 for a provider of another strategy.
    pub(super) fn oauth_provider(&self, slug: &str) -> Result<&OAuth2Config, AppError> {
        match &self.provider(slug)?.auth {
            AuthStrategy::OAuth2(config) => Ok(config),
            _ => Err(AppError::invalid("providerSlug", "is not an OAuth provider")),
        }
    }
}
