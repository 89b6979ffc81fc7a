//! Embedding the service's use cases in a Rust program, with no HTTP: open the store on SQLite,
//! build the application over in-process adapters, then create and list risks for an
//! organization and read the validation errors of a bad input. See docs/embedding.md.
//!
//! `cargo run --example embedded -p compliance-embedded [-- DIR]` (DIR: where the SQLite database and
//! the vault key go; a new temporary directory by default). The test suite runs [`run`] too
//! (crates/embedded/tests/embedded.rs).

use std::path::Path;

use compliance_embedded::app::{AppError, Credentials};
use compliance_embedded::domain::risk::{NewRisk, RiskCategory};
use compliance_embedded::ports::{PageRequest, RiskQuery};

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
    let (app, store) = compliance_embedded::open_sqlite(dir).await?;

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
