//! The use cases as a library, with no HTTP: [`open_sqlite`] (or [`open`]) migrates and opens the
//! store and builds the [`App`] over in-process adapters that start nothing. This crate depends on
//! no HTTP library (`cargo xtask ci` checks that actix-web is not in its graph); the audit entries
//! it writes render records with [`compliance_wire::WireRenderer`], as the API does. See
//! docs/embedding.md and `examples/embedded.rs`.

#![warn(missing_docs)]

use std::path::Path;
use std::sync::Arc;

use compliance_app::{Adapters, App, Ports, Settings, SystemClock};
use compliance_blobs::FsBlobStore;
use compliance_browser::{BrowserSettings, ChromiumRunner};
use compliance_chat::MemoryChatStore;
use compliance_ports::{NoCheckReader, NoDeviceDirectory, NoProviderClient};
pub use compliance_store::{DatabaseUrl, PoolOptions, Store};
use compliance_vault::{KeySource, load_keyring};
use compliance_webhooks::{HttpWebhookSender, SenderSettings};

/// The crates an embedder calls, under one name each.
pub use {compliance_app as app, compliance_domain as domain, compliance_ports as ports};

/// [`open`] on the SQLite database `dir/compliance.db`, with the vault key in `dir/vault.keys`
/// (generated on first use: back it up with the database) and attachments under
/// `dir/attachments`.
///
/// # Errors
///
/// As [`open`].
pub async fn open_sqlite(dir: &Path) -> anyhow::Result<(App, Arc<Store>)> {
    open(&DatabaseUrl::Sqlite(dir.join("compliance.db")), dir).await
}

/// [`open_with`] the server's defaults, [`Settings::default()`].
///
/// # Errors
///
/// As [`open_with`].
pub async fn open(database: &DatabaseUrl, dir: &Path) -> anyhow::Result<(App, Arc<Store>)> {
    open_with(database, dir, Settings::default()).await
}

/// Applies pending migrations to `database`, opens it and builds the application with `settings`;
/// `dir` holds the vault key (`dir/vault.keys`) and the attachments (`dir/attachments`). Close the
/// returned store ([`Store::close`]) when done.
///
/// # Errors
///
/// The database cannot be reached or migrated ([`compliance_store::StoreError`]), or the vault key
/// file cannot be read, created or parsed.
pub async fn open_with(database: &DatabaseUrl, dir: &Path, settings: Settings) -> anyhow::Result<(App, Arc<Store>)> {
    compliance_store::migrate(database).await?;
    let store = Arc::new(Store::connect(database, &PoolOptions::default()).await?);
    let (keyring, _) = load_keyring(&KeySource::File(dir.join("vault.keys")))?;
    let ports = Ports::from_store(&store, adapters(keyring, dir, &settings));
    Ok((App::new(ports, settings), store))
}

/// The ports besides the store: no browser is started (the automation worker runs only when
/// [`App::take_worker`]'s worker is run; a PDF policy document starts one to print), no webhook
/// is sent (likewise [`App::take_webhook_worker`]; no policy moves to `needs_review` unless
/// [`App::take_policy_review_worker`]'s worker runs; audit entries stay queued, without their
/// `seq`, until [`App::take_audit_sequencer`]'s sequencer runs), no Redis, no device manager, no sign-in
/// provider, no model, and no integration provider is reached (a connection's check answers that
/// the provider could not be reached).
fn adapters(keyring: compliance_vault::Keyring, dir: &Path, settings: &Settings) -> Adapters {
    let browser = Arc::new(ChromiumRunner::new(BrowserSettings::default()));
    Adapters {
        identity: None,
        blobs: Arc::new(FsBlobStore::new(dir.join("attachments"))),
        devices: Arc::new(NoDeviceDirectory),
        browser: browser.clone(),
        printer: browser,
        chat: Arc::new(MemoryChatStore::new()),
        clock: Arc::new(SystemClock),
        cipher: Arc::new(keyring),
        agent_model: None,
        // Audit entries hold records as the API shows them, whoever wrote them.
        renderer: Arc::new(compliance_wire::WireRenderer),
        webhook_sender: Arc::new(HttpWebhookSender::new(SenderSettings {
            allowed_hosts: settings.webhooks.allowed_hosts.clone(),
            ..SenderSettings::default()
        })),
        provider_client: Arc::new(NoProviderClient),
        check_reader: Arc::new(NoCheckReader),
    }
}
