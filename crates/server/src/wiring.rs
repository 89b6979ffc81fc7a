//! Wiring: adapters behind every port, as trait objects.

use std::sync::Arc;

use compliance_app::{App, Ports, SystemClock};
use compliance_blobs::{FsBlobStore, S3BlobStore};
use compliance_chat::{MemoryChatStore, RedisChatStore};
use compliance_credentials::{KeySource, Keyring, load_keyring};
use compliance_ports::{BlobStore, ChatStore};
use compliance_store::{PoolOptions, Store};
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

/// Migrates, connects, and builds the application over the adapters.
pub async fn app(config: &Config, role: Role) -> anyhow::Result<(App, Arc<Store>)> {
    compliance_store::migrate(&config.database).await?;
    let store = Arc::new(Store::connect(&config.database, &PoolOptions::default()).await?);
    let blobs: Arc<dyn BlobStore> = match &config.blobs {
        BlobConfig::Filesystem(dir) => Arc::new(FsBlobStore::new(dir.clone())),
        BlobConfig::S3(s3) => Arc::new(S3BlobStore::new(s3.clone())?),
    };
    let chat: Arc<dyn ChatStore> = match (&config.redis_url, role) {
        (Some(url), Role::Server) => Arc::new(RedisChatStore::connect(url.expose_secret()).await?),
        _ => Arc::new(MemoryChatStore::new()),
    };
    let ports = Ports {
        organizations: store.clone(),
        users: store.clone(),
        members: store.clone(),
        credentials: store.clone(),
        context: store.clone(),
        policies: store.clone(),
        vendors: store.clone(),
        risks: store.clone(),
        tasks: store.clone(),
        comments: store.clone(),
        blobs,
        chat,
        health: store.clone(),
        clock: Arc::new(SystemClock),
    };
    Ok((App::new(ports, config.settings.clone()), store))
}
