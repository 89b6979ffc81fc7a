//! Embedding the service's use cases in a Rust program, with no HTTP: open the store on SQLite,
//! build the application over in-process adapters, then create and list risks for an
//! organization and read the validation errors of a bad input. See docs/embedding.md.
//!
//! `cargo run --example embedded -p compliance-server [-- DIR]` (DIR: where the SQLite database and
//! the vault key go; a new temporary directory by default). The test suite runs [`run`] too
//! (crates/server/tests/embedded.rs).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use compliance_app::{App, AppError, Credentials, Ports, Settings, SystemClock};
use compliance_blobs::FsBlobStore;
use compliance_browser::{BrowserSettings, ChromiumRunner};
use compliance_chat::MemoryChatStore;
use compliance_credentials::{KeySource, load_keyring};
use compliance_domain::risk::{NewRisk, RiskCategory};
use compliance_ports::{NoDeviceDirectory, PageRequest, RiskQuery};
use compliance_store::{DatabaseUrl, PoolOptions, Store};
use compliance_webhooks::{HttpWebhookSender, SenderSettings};

/// What one run did, for the caller (and the test) to check.
#[derive(Debug)]
pub struct Summary {
    pub organization_id: String,
    /// The titles `list_risks` answered, newest first.
    pub listed: Vec<String>,
    /// `field: message` of each validation error of the refused risk.
    pub refused: Vec<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let dir = match std::env::args().nth(1) {
        Some(dir) => std::path::PathBuf::from(dir),
        None => std::env::temp_dir().join(format!("compliance-embedded-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir)?;
    let summary = run(&dir).await?;
    println!("organization {}", summary.organization_id);
    for title in &summary.listed {
        println!("risk: {title}");
    }
    for error in &summary.refused {
        println!("refused: {error}");
    }
    Ok(())
}

/// Opens (and migrates) the SQLite database in `dir`, then uses the application as a library.
pub async fn run(dir: &Path) -> anyhow::Result<Summary> {
    let (app, store) = open(dir).await?;

    // An organization, its owner and an API key, as `compliance-server admin bootstrap` makes them
    // (found again on a second run); the use cases then act as that member.
    let made = app
        .admin
        .bootstrap(("Embedded Inc".into(), None), ("owner@embedded.test".into(), "Owner".into()), None)
        .await?;
    let credentials = Credentials::ApiKey { key: made.api_key.secret.clone(), organization: None };
    let caller = app.auth.authenticate(credentials).await?;

    let risk = NewRisk {
        title: Some("Laptop theft".into()),
        description: Some("Unencrypted disks".into()),
        category: Some(RiskCategory::Technology),
        ..NewRisk::default()
    };
    app.risks.create_risk(&caller, risk).await?;

    // A bad input is refused before it reaches the store, naming each wrong field.
    let refused =
        match app.risks.create_risk(&caller, NewRisk { title: Some(String::new()), ..NewRisk::default() }).await {
            Err(AppError::Validation(errors)) => {
                errors.0.iter().map(|error| format!("{}: {}", error.field, error.message)).collect()
            }
            other => anyhow::bail!("an empty risk was not refused: {other:?}"),
        };

    let page = app.risks.list_risks(&caller, &RiskQuery::unfiltered(PageRequest::first(100))).await?;
    let listed = page.items.iter().map(|risk| risk.title.clone()).collect();
    let summary = Summary { organization_id: caller.organization_id.to_string(), listed, refused };
    store.close();
    Ok(summary)
}

/// The application over the store and in-process adapters: no HTTP server, no Redis, no browser
/// started (automations are not run here), webhooks not delivered (no worker is started).
async fn open(dir: &Path) -> anyhow::Result<(App, Arc<Store>)> {
    let database = DatabaseUrl::Sqlite(dir.join("compliance.db"));
    compliance_store::migrate(&database).await?;
    let store = Arc::new(Store::connect(&database, &PoolOptions::default()).await?);
    let (keyring, _) = load_keyring(&KeySource::File(dir.join("vault.keys")))?;
    let ports = Ports {
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
        browser: Arc::new(ChromiumRunner::new(BrowserSettings::default())),
        chat: Arc::new(MemoryChatStore::new()),
        health: store.clone(),
        clock: Arc::new(SystemClock),
        connections: store.clone(),
        secrets: store.clone(),
        cipher: Arc::new(keyring),
        agent_model: None,
        audit: store.clone(),
        // Audit entries hold records as the API shows them, whoever wrote them.
        renderer: Arc::new(compliance_http::WireRenderer),
        webhooks: store.clone(),
        event_feed: store.clone(),
        webhook_sender: Arc::new(HttpWebhookSender::new(SenderSettings::default())),
    };
    Ok((App::new(ports, settings()), store))
}

/// The server's defaults (docs/operations.md), without reading the environment.
fn settings() -> Settings {
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
        audit_retention: None,
        audit_checkpoint_key: Vec::new(),
    }
}
