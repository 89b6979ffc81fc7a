//! The HTTP server.

use actix_web::{App as ActixApp, HttpServer, web};
use compliance_http::AppState;
use tokio::runtime::Handle;

use crate::config::Config;
use crate::wiring;

pub async fn serve(config: Config, runtime: Handle) -> anyhow::Result<()> {
    // Checked (or created) at start-up, so that a bad key or manifest stops the server before it serves.
    let keyring = wiring::vault_keyring(&config)?;
    let catalog = wiring::provider_catalog(&config)?;
    // Connections are opened on the use-case runtime, where their I/O tasks must live.
    let config = std::sync::Arc::new(config);
    let setup = config.clone();
    let (mut app, store) = runtime.spawn(async move { wiring::app(&setup, wiring::Role::Server).await }).await??;
    // Browser automations run in the background of every instance; the store's claims share them.
    let worker = app.take_worker().map(|worker| runtime.spawn(worker.run()));
    let settings = app.settings.clone();
    let integrations = wiring::integrations(&config, &store, catalog, keyring)?;
    let app = web::Data::new(AppState::new(app, integrations, runtime));
    let server = HttpServer::new(move || {
        ActixApp::new()
            .app_data(app.clone())
            .configure(|c| compliance_http::configure(c, &settings))
            .default_service(web::to(compliance_http::not_found))
    })
    .bind(config.listen)
    .map_err(|error| anyhow::anyhow!("cannot listen on {}: {error}", config.listen))?;
    let addresses: Vec<String> = server.addrs().iter().map(|a| format!("http://{a}")).collect();
    tracing::info!(database = ?config.database, "listening on {}", addresses.join(", "));
    tracing::info!(
        "first steps: `compliance-server admin create-org --name NAME`, then create-user, add-member and \
         create-api-key (see README)"
    );
    server.run().await?;
    if let Some(worker) = worker {
        worker.abort();
    }
    store.close();
    Ok(())
}
