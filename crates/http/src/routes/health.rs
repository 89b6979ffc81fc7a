//! Liveness and readiness, without credentials.

use actix_web::{HttpResponse, web};
use serde::Serialize;
use utoipa::ToSchema;

use crate::router::Routes;
use crate::{ApiError, AppState};

pub fn configure(routes: &mut Routes) {
    routes.add(health, __path_health);
    routes.add(ready, __path_ready);
    routes.add(metrics, __path_metrics);
}

/// `{"status": …}`
#[derive(Serialize, ToSchema)]
struct Status {
    #[schema(examples("ok"))]
    status: &'static str,
}

/// The process answers.
#[utoipa::path(
    get, path = "/health", operation_id = "health", tag = "health", security(()),
    responses((status = 200, description = "The process is alive (the database is not asked).", body = Status)),
)]
async fn health() -> HttpResponse {
    HttpResponse::Ok().json(Status { status: "ok" })
}

/// The database answers too.
#[utoipa::path(
    get, path = "/ready", operation_id = "ready", tag = "health", security(()),
    responses(
        (status = 200, description = "The database answers: `{\"status\": \"ready\"}`.", body = Status),
        (
            status = 503, description = "The database does not answer.", body = crate::openapi::Problem,
            content_type = "application/problem+json", headers(("Retry-After" = u32, description = "Seconds to wait")),
        ),
    ),
)]
async fn ready(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    state.run(|app| async move { app.ready().await }).await?;
    Ok(HttpResponse::Ok().json(Status { status: "ready" }))
}

/// Prometheus metrics: requests by route, method and status, latencies, pools, database errors.
///
/// No authentication: keep it off the public internet (docs/operations.md).
#[utoipa::path(
    get, path = "/metrics", operation_id = "metrics", tag = "health", security(()),
    responses((status = 200, description = "The Prometheus text exposition format.", content_type = "text/plain", body = String)),
)]
async fn metrics(operations: Option<web::Data<crate::middleware::Operations>>) -> HttpResponse {
    crate::middleware::metrics(operations).await
}
