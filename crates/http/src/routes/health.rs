//! Liveness and readiness, without credentials.

use actix_web::{HttpResponse, web};
use serde_json::json;

use super::resource;
use crate::{ApiError, AppState};

pub fn configure(config: &mut web::ServiceConfig) {
    config
        .service(resource("/health").route(web::get().to(health)))
        .service(resource("/ready").route(web::get().to(ready)));
}

/// The process answers.
async fn health() -> HttpResponse {
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// The database answers too.
async fn ready(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    state.run(|app| async move { app.ready().await }).await?;
    Ok(HttpResponse::Ok().json(json!({"status": "ready"})))
}
