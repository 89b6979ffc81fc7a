//! Browser automations and their runs.

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use compliance_domain::automation::{AutomationChanges, NewAutomation};
use compliance_domain::{AutomationId, TaskId};
use serde::Deserialize;

use super::resource;
use crate::body::JsonBody;
use crate::wire::{AutomationDto, RunDto};
use crate::{ApiError, AppState, Caller};

pub fn configure(config: &mut web::ServiceConfig) {
    config
        .service(resource("/browser/automations").route(web::post().to(create)))
        .service(resource("/browser/automations/task/{taskId}").route(web::get().to(list_for_task)))
        .service(
            resource("/browser/automations/{automationId}")
                .route(web::get().to(get))
                .route(web::patch().to(update))
                .route(web::delete().to(delete)),
        )
        .service(
            resource("/browser/automations/{automationId}/runs")
                .route(web::get().to(runs))
                .route(web::post().to(start_run)),
        )
        .service(resource("/browser/runs/{runId}/screenshot").route(web::get().to(screenshot)));
}

fn automation_id(id: &str) -> Result<AutomationId, ApiError> {
    AutomationId::parse(id).map_err(|_| ApiError::not_found("automation"))
}

async fn create(
    state: web::Data<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<NewAutomation>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let automation = state.run(|app| async move { app.automations.create(&principal, input).await }).await?;
    Ok(HttpResponse::Created().json(AutomationDto::from(&automation)))
}

async fn get(state: web::Data<AppState>, caller: Caller, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let automation = state.run(|app| async move { app.automations.get(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(AutomationDto::from(&automation)))
}

async fn list_for_task(
    state: web::Data<AppState>,
    caller: Caller,
    task: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let task = TaskId::parse(&task).map_err(|_| ApiError::not_found("task"))?;
    let principal = caller.0;
    let automations = state.run(|app| async move { app.automations.list_for_task(&principal, &task).await }).await?;
    Ok(HttpResponse::Ok().json(automations.iter().map(AutomationDto::from).collect::<Vec<_>>()))
}

async fn update(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
    JsonBody(changes): JsonBody<AutomationChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let automation = state.run(|app| async move { app.automations.update(&principal, &id, changes).await }).await?;
    Ok(HttpResponse::Ok().json(AutomationDto::from(&automation)))
}

async fn delete(state: web::Data<AppState>, caller: Caller, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let automation = state.run(|app| async move { app.automations.delete(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(serde_json::json!({
        "message": "Automation deleted",
        "deletedAutomation": AutomationDto::from(&automation),
    })))
}

async fn runs(state: web::Data<AppState>, caller: Caller, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let runs = state.run(|app| async move { app.automations.runs(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(runs.iter().map(RunDto::from).collect::<Vec<_>>()))
}

async fn start_run(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let run = state.run(|app| async move { app.automations.start_run(&principal, &id).await }).await?;
    Ok(HttpResponse::Accepted().json(RunDto::from(&run)))
}

/// The parts of a signed link; a link missing any of them is as invalid as a tampered one.
#[derive(Deserialize)]
struct Signed {
    org: Option<String>,
    /// Text, not a number: a mangled expiry is a bad link (403), not a bad query (400).
    expires: Option<String>,
    signature: Option<String>,
}

/// Serves a run's screenshot behind a link this service signed; the signature is the credential.
async fn screenshot(
    state: web::Data<AppState>,
    run: web::Path<String>,
    signed: web::Query<Signed>,
) -> Result<HttpResponse, ApiError> {
    let (run, signed) = (run.into_inner(), signed.into_inner());
    let expires = signed.expires.and_then(|e| e.parse::<i64>().ok());
    let (Some(org), Some(expires), Some(signature)) = (signed.org, expires, signed.signature) else {
        return Err(ApiError::forbidden("the screenshot link is invalid or has expired"));
    };
    let png = state.run(|app| async move { app.automations.screenshot(&org, &run, expires, &signature).await }).await?;
    Ok(HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "image/png"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CACHE_CONTROL, "private, no-store"))
        .body(png))
}
