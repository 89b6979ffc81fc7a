//! The HTTP server.

use std::net::SocketAddr;
use std::sync::Arc;

use actix_web::http::KeepAlive;
use actix_web::{HttpServer, web};
use compliance_http::middleware::Operations;
use compliance_http::{AppState, ListCache};
use compliance_ports::{OrganizationRepository, RateLimiter};
use compliance_ratelimit::{MemoryRateLimiter, RedisRateLimiter};
use compliance_store::Store;
use secrecy::ExposeSecret;
use socket2::{Domain, Protocol, Socket, Type};
use tokio::runtime::Handle;

use crate::config::Config;
use crate::shutdown::StopSignals;
use crate::wiring;

/// Connections the kernel queues before they are accepted: actix's default for `bind`.
const LISTEN_BACKLOG: i32 = 1024;

/// How long a stop waits for the webhook deliveries in flight.
const WEBHOOK_DRAIN: std::time::Duration = std::time::Duration::from_secs(15);

pub async fn serve(mut config: Config, runtime: Handle) -> anyhow::Result<()> {
    // Checked (or created) at start-up, so that a bad key or manifest stops the server before it serves.
    let keyring = Arc::new(wiring::vault_keyring(&config)?);
    wiring::provider_catalog(&config)?;
    // Says at start-up when browsers run unsandboxed, or are refused, and why.
    compliance_browser::log_isolation(&config.browser.isolation);
    // Bound before the database is opened: a taken address stops the server before that work,
    // and with port 0 the port the system picked is known before `PUBLIC_URL`'s default (which
    // names it) is handed to the use cases.
    let listener = listen(config.listen)?;
    config.listening_on(listener.local_addr()?);
    // Start-up and background work run on the background runtime; requests on actix's threads.
    let config = std::sync::Arc::new(config);
    let setup = config.clone();
    let (mut app, store) =
        runtime.spawn(async move { wiring::app(&setup, wiring::Role::Server, keyring).await }).await??;
    // Browser automations run in the background of every instance; the store's claims share them.
    let worker = app.take_worker().map(|worker| runtime.spawn(worker.run()));
    // So do webhook deliveries; on stop, the ones in flight finish first (nothing is sent twice).
    let (stop_deliveries, deliveries_stopped) = tokio::sync::watch::channel(false);
    let webhook_worker = app.take_webhook_worker().map(|worker| runtime.spawn(worker.run(deliveries_stopped)));
    // And sealing queued audit entries into their organizations' trees; one instance at a time,
    // under a lease. On stop it seals what is queued and gives the lease up.
    let (stop_sequencer, sequencer_stopped) = tokio::sync::watch::channel(false);
    let sequencer = app.take_audit_sequencer().map(|sequencer| runtime.spawn(sequencer.run(sequencer_stopped)));
    // And running connections' checks; the store's claims and leases share them. On stop, the
    // runs in flight are queued again for another instance.
    let (stop_checks, checks_stopped) = tokio::sync::watch::channel(false);
    let check_worker = app.take_check_worker().map(|worker| runtime.spawn(worker.run(checks_stopped)));
    // And moving policies whose review date passed; the store's conditional update shares them.
    let policy_review_worker = app.take_policy_review_worker().map(|worker| runtime.spawn(worker.run()));
    // And forgetting expired idempotency keys; deleting them twice is harmless.
    let idempotency_pruner = app.take_idempotency_pruner().map(|pruner| runtime.spawn(pruner.run()));
    // And merging SQLite's search indexes (PostgreSQL: nothing); SQLite serialises the instances' steps.
    let search_merger = {
        let (store, interval) = (store.clone(), config.search_merge_interval);
        runtime.spawn(async move { store.keep_search_indexes_merged(interval).await })
    };
    let operations = web::Data::new(operations(&config, &store, &runtime)?);
    let app = web::Data::new(AppState::new(app, ListCache::new(config.http.list_cache_bytes)));
    let stop = StopSignals::install(config.shutdown_timeout)?;
    let server = HttpServer::new(move || compliance_http::application(app.clone(), operations.clone()))
        .client_request_timeout(config.http.request_timeout)
        .client_disconnect_timeout(config.http.disconnect_timeout)
        .keep_alive(match config.http.keep_alive {
            idle if idle.is_zero() => KeepAlive::Disabled,
            idle => KeepAlive::Timeout(idle),
        })
        .shutdown_signal(stop.received())
        .shutdown_timeout(config.shutdown_timeout.as_secs())
        // Use cases run on these threads, so their blocking work (attachment files, DNS) does too.
        .worker_max_blocking_threads(config.blocking_threads())
        .listen(listener)?;
    // Said before `listening on`, so a reader (or a test) that saw that line has seen this one.
    let organizations = store.clone();
    if runtime.spawn(async move { organizations.list(1).await }).await??.is_empty() {
        tracing::info!(
            "no organization yet: create the first one, its owner and an API key with `compliance-server admin \
             bootstrap --org NAME --email EMAIL --name NAME` (see README)"
        );
    }
    let addresses: Vec<String> = server.addrs().iter().map(|a| format!("http://{a}")).collect();
    tracing::info!(database = ?config.database, "listening on {}", addresses.join(", "));
    // Resolves once the requests in flight at the stop signal have been answered, or the shutdown
    // timeout dropped them. An answered request's use case has run to its end; a dropped one's
    // task is cancelled with its worker thread, and its open transaction rolled back.
    server.run().await?;
    tracing::debug!("HTTP server stopped; stopping the automation worker and closing the database pools");
    // The worker's loop ends here. A run it executes right now stays `running` and is failed as
    // stale later by any instance ("its server stopped; run it again").
    if let Some(worker) = worker {
        worker.abort();
        let _ = worker.await;
    }
    let _ = stop_checks.send(true);
    if let Some(worker) = check_worker {
        let _ = worker.await;
    }
    if let Some(worker) = policy_review_worker {
        worker.abort();
        let _ = worker.await;
    }
    if let Some(pruner) = idempotency_pruner {
        pruner.abort();
        let _ = pruner.await;
    }
    search_merger.abort();
    let _ = search_merger.await;
    let _ = stop_sequencer.send(true);
    if let Some(sequencer) = sequencer {
        let _ = sequencer.await;
    }
    let _ = stop_deliveries.send(true);
    if let Some(worker) = webhook_worker {
        // A delivery takes at most the 10 s send timeout and two statements.
        if tokio::time::timeout(WEBHOOK_DRAIN, worker).await.is_err() {
            tracing::warn!(
                "webhook deliveries in flight did not finish in time; they are sent again after their claim runs out"
            );
        }
    }
    store.close();
    Ok(())
}

/// A listening socket on `address` as actix's own `bind` makes it (address reuse, a backlog of
/// 1,024 connections), made here so that the server knows its address before it is built.
fn listen(address: SocketAddr) -> anyhow::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(address), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket
        .bind(&address.into())
        .and_then(|()| socket.listen(LISTEN_BACKLOG))
        .map_err(|error| anyhow::anyhow!("cannot listen on {address}: {error}"))?;
    Ok(socket.into())
}

/// Metrics over the store's pools, and the rate limiter: in Redis when `REDIS_URL` is set (shared
/// by every instance), else in this process.
fn operations(config: &Config, store: &Arc<Store>, runtime: &Handle) -> anyhow::Result<Operations> {
    let operations = Operations::new(config.http.head).with_pools(store.clone());
    let Some(limit) = config.http.rate_limit else {
        return Ok(operations);
    };
    let limiter: Arc<dyn RateLimiter> = match &config.redis_url {
        Some(url) => Arc::new(RedisRateLimiter::new(url.expose_secret(), limit, runtime.clone())?),
        None => Arc::new(MemoryRateLimiter::new(limit)),
    };
    Ok(operations.with_rate_limiter(limiter, config.http.trust_forwarded))
}
