//! The use cases as a library, with no HTTP: [`open_sqlite`] (or [`open`]) migrates and opens the
//! store and builds the [`App`] over in-process adapters that start nothing. This crate depends on
//! no HTTP library (`cargo xtask ci` checks that actix-web is not in its graph); the audit entries
//! it writes render records with [`compliance_wire::WireRenderer`], as the API does. See
//! docs/embedding.md and `examples/embedded.rs`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use compliance_app::{App, Ports, Settings, SystemClock};
use compliance_blobs::FsBlobStore;
use compliance_browser::{BrowserSettings, ChromiumRunner};
use compliance_chat::MemoryChatStore;
use compliance_credentials::{KeySource, load_keyring};
use compliance_ports::NoDeviceDirectory;
pub use compliance_store::{DatabaseUrl, PoolOptions, Store};
use compliance_webhooks::{HttpWebhookSender, SenderSettings};

/// The crates an embedder calls, under one name each.
pub use {compliance_app as app, compliance_domain as domain, compliance_ports as ports};

/// [`open`] on the SQLite database `dir/compliance.db`, with the vault key in `dir/vault.keys`
/// (generated on first use: back it up with the database) and attachments under
/// `dir/attachments`.
pub async fn open_sqlite(dir: &Path) -> anyhow::Result<(App, Arc<Store>)> {
    open(&DatabaseUrl::Sqlite(dir.join("compliance.db")), dir).await
}

/// Applies pending migrations to `database`, opens it and builds the application with
/// [`default_settings`]; `dir` holds the vault key and the attachments. Close the returned store
/// ([`Store::close`]) when done.
pub async fn open(database: &DatabaseUrl, dir: &Path) -> anyhow::Result<(App, Arc<Store>)> {
    compliance_store::migrate(database).await?;
    let store = Arc::new(Store::connect(database, &PoolOptions::default()).await?);
    let (keyring, _) = load_keyring(&KeySource::File(dir.join("vault.keys")))?;
    Ok((App::new(ports(&store, keyring, dir), default_settings()), store))
}

/// Every port: the store for the repositories; no browser is started (the automation worker
/// runs only when [`App::take_worker`]'s worker is run; a PDF policy document starts one to
/// print), no webhook is sent (likewise [`App::take_webhook_worker`]; no policy moves to
/// `needs_review` unless [`App::take_policy_review_worker`]'s worker runs), no Redis, no device
/// manager, no sign-in provider, no model.
fn ports(store: &Arc<Store>, keyring: compliance_credentials::Keyring, dir: &Path) -> Ports {
    let browser = Arc::new(ChromiumRunner::new(BrowserSettings::default()));
    Ports {
        organizations: store.clone(),
        users: store.clone(),
        members: store.clone(),
        credentials: store.clone(),
        sessions: store.clone(),
        sign_in: store.clone(),
        invitations: store.clone(),
        identity: None,
        context: store.clone(),
        policies: store.clone(),
        vendors: store.clone(),
        risks: store.clone(),
        tasks: store.clone(),
        list_generations: store.clone(),
        comments: store.clone(),
        automations: store.clone(),
        blobs: Arc::new(FsBlobStore::new(dir.join("attachments"))),
        devices: Arc::new(NoDeviceDirectory),
        browser: browser.clone(),
        printer: browser,
        chat: Arc::new(MemoryChatStore::new()),
        health: store.clone(),
        clock: Arc::new(SystemClock),
        connections: store.clone(),
        secrets: store.clone(),
        cipher: Arc::new(keyring),
        agent_model: None,
        audit: store.clone(),
        // Audit entries hold records as the API shows them, whoever wrote them.
        renderer: Arc::new(compliance_wire::WireRenderer),
        webhooks: store.clone(),
        event_feed: store.clone(),
        webhook_sender: Arc::new(HttpWebhookSender::new(SenderSettings::default())),
    }
}

/// The server's defaults (docs/operations.md), without reading the environment; change fields
/// as needed before building an [`App`] yourself.
pub fn default_settings() -> Settings {
    Settings {
        attachments: compliance_domain::comment::AttachmentLimits {
            max_file_bytes: 10 * 1024 * 1024,
            max_request_bytes: 25 * 1024 * 1024,
        },
        list_max_rows: 10_000,
        download_ttl: Duration::from_secs(15 * 60),
        public_url: "http://localhost".into(),
        url_signing_key: rand::random::<[u8; 32]>().to_vec(),
        chat_limits: compliance_domain::chat::ChatLimits { max_messages: 500, max_message_chars: 32_000 },
        chat_ttl: Duration::from_secs(7 * 24 * 60 * 60),
        automations: compliance_app::AutomationSettings::default(),
        auth_cache_ttl: Duration::from_secs(5),
        session_ttl: time::Duration::days(7),
        self_service_organizations: false,
        invitation_ttl: time::Duration::days(7),
        webhooks: compliance_app::WebhookSettings::default(),
        policy_reviews: compliance_app::PolicyReviewSettings::default(),
        audit_retention: None,
        audit_checkpoint_key: Vec::new(),
    }
}
