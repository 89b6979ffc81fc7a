//! Wiring: adapters behind every port, as trait objects.

use std::sync::Arc;

use anyhow::Context as _;
use compliance_app::{Adapters, App, IntegrationSettings, Ports, SystemClock};
use compliance_blobs::{FsBlobStore, S3BlobStore};
use compliance_browser::ChromiumRunner;
use compliance_chat::{MemoryChatStore, RedisChatStore};
use compliance_checks::{CheckHttpSettings, HttpCheckReader};
use compliance_credentials::ProviderCatalog;
use compliance_devices::FleetDeviceDirectory;
use compliance_llm::ChatCompletionsModel;
use compliance_oidc::OidcProvider;
use compliance_ports::{AgentModel, BlobStore, ChatStore, DeviceDirectory, IdentityProvider, NoDeviceDirectory};
use compliance_provider_client::{HttpProviderClient, HttpSettings};
use compliance_store::Store;
use compliance_vault::{KeySource, Keyring, load_keyring};
use compliance_webhooks::{HttpWebhookSender, SenderSettings};
use secrecy::ExposeSecret;

use crate::config::{BlobConfig, Config};

/// Applies pending migrations.
pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    let applied = compliance_store::migrate(&config.database).await?;
    tracing::info!(applied, database = ?config.database, "migrations applied");
    Ok(())
}

/// What the application is built for: the operator CLI needs no shared chat store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Server,
    Admin,
}

/// The vault's keys; a missing key file is generated, and that is worth saying: it must be backed
/// up with the database, or the secrets stored under it are lost.
pub fn vault_keyring(config: &Config) -> anyhow::Result<Keyring> {
    let (keyring, created) = load_keyring(&config.vault_keys)?;
    if created && let KeySource::File(path) = &config.vault_keys {
        tracing::warn!(path = %path.display(), "generated a vault key: back this file up with the database");
    }
    Ok(keyring)
}

/// Migrates, connects, and builds the application over the adapters; `keyring` seals every
/// secret of the vault (connections', OAuth apps', automations', webhooks').
pub async fn app(config: &Config, role: Role, keyring: Arc<Keyring>) -> anyhow::Result<(App, Arc<Store>)> {
    compliance_store::migrate(&config.database).await?;
    let store = Arc::new(Store::connect(&config.database, &config.pool).await?);
    let blobs: Arc<dyn BlobStore> = match &config.blobs {
        BlobConfig::Filesystem(dir) => Arc::new(FsBlobStore::new(dir.clone())),
        BlobConfig::S3(s3) => Arc::new(S3BlobStore::new(s3.clone())?),
    };
    let chat: Arc<dyn ChatStore> = match (&config.redis_url, role) {
        (Some(url), Role::Server) => Arc::new(RedisChatStore::connect(url.expose_secret()).await?),
        _ => Arc::new(MemoryChatStore::new()),
    };
    let devices: Arc<dyn DeviceDirectory> = match &config.fleet {
        Some(fleet) => Arc::new(FleetDeviceDirectory::new(fleet.clone()).context("FLEET_URL / FLEET_TOKEN")?),
        None => Arc::new(NoDeviceDirectory),
    };
    let agent_model = match &config.llm {
        Some(llm) => Some(Arc::new(
            ChatCompletionsModel::new(llm.clone())
                .context("AUTOMATION_LLM_URL / AUTOMATION_LLM_MODEL / AUTOMATION_LLM_API_KEY")?,
        ) as Arc<dyn AgentModel>),
        None => None,
    };
    // One runner for automations and printing: the same bound on browsers running at once.
    let browser = Arc::new(ChromiumRunner::new(config.browser.clone()));
    let adapters = Adapters {
        identity: identity_provider(config)?,
        blobs,
        devices: devices.clone(),
        browser: browser.clone(),
        printer: browser,
        chat,
        clock: Arc::new(SystemClock),
        cipher: keyring,
        agent_model,
        renderer: Arc::new(compliance_http::WireRenderer),
        webhook_sender: Arc::new(HttpWebhookSender::new(SenderSettings {
            allowed_hosts: config.settings.webhooks.allowed_hosts.clone(),
            ..SenderSettings::default()
        })),
        provider_client: Arc::new(HttpProviderClient::new(HttpSettings::default())?),
        check_reader: Arc::new(
            HttpCheckReader::new(config.check_endpoints.clone(), CheckHttpSettings::default())?
                .with_devices(devices.clone()),
        ),
    };
    let ports = Ports::from_store(&store, adapters);
    let mut settings = config.settings.clone();
    // The operator CLI connects nothing: `PROVIDERS_DIR` is read (and can stop) the server alone.
    if role == Role::Server {
        settings.integrations = IntegrationSettings {
            catalog: Arc::new(provider_catalog(config)?),
            redirect_origins: config.redirect_origins.clone(),
        };
    }
    Ok((App::new(ports, settings), store))
}

/// The OpenID provider users sign in with, when `OIDC_*` is set. Discovery happens at the first
/// sign-in, so that a provider down at start-up does not stop the service.
fn identity_provider(config: &Config) -> anyhow::Result<Option<Arc<dyn IdentityProvider>>> {
    let Some(settings) = &config.oidc else { return Ok(None) };
    let provider = OidcProvider::new(settings.clone())?;
    Ok(Some(Arc::new(provider)))
}

/// The provider catalog: the shipped manifests and `PROVIDERS_DIR`'s. An invalid manifest stops
/// start-up, naming the file and the field.
pub fn provider_catalog(config: &Config) -> anyhow::Result<ProviderCatalog> {
    let catalog = ProviderCatalog::load(config.providers_dir.as_deref())?;
    tracing::debug!(providers = catalog.iter().count(), "provider catalog loaded");
    Ok(catalog)
}
