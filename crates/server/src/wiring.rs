//! Wiring: the store behind every port, as trait objects.

use std::sync::Arc;

use compliance_app::{App, Ports, SystemClock};
use compliance_store::{DatabaseUrl, PoolOptions, Store};

use crate::config::Config;

/// Applies pending migrations.
pub async fn migrate(config: &Config) -> anyhow::Result<()> {
    let applied = compliance_store::migrate(&config.database).await?;
    tracing::info!(applied, database = ?config.database, "migrations applied");
    Ok(())
}

/// Migrates, connects, and builds the application over the store.
pub async fn app(database: &DatabaseUrl) -> anyhow::Result<(App, Arc<Store>)> {
    compliance_store::migrate(database).await?;
    let store = Arc::new(Store::connect(database, &PoolOptions::default()).await?);
    let ports = Ports {
        organizations: store.clone(),
        users: store.clone(),
        members: store.clone(),
        credentials: store.clone(),
        context: store.clone(),
        policies: store.clone(),
        vendors: store.clone(),
        risks: store.clone(),
        health: store.clone(),
        clock: Arc::new(SystemClock),
    };
    Ok((App::new(ports), store))
}
