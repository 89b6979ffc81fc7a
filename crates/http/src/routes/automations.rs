//! Browser automations and their runs.

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::automation::{AutomationChanges, NewAutomation, RunStatus, RunTrigger};
use compliance_domain::{AutomationId, AutomationRunId, TaskId};
use compliance_ports::{RunFilter, RunQuery, RunSort};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::conditional::{self, IfMatchHeader, IfNoneMatchHeader};
use crate::export::{BATCH_ROWS, Export, ExportFormat, FormatQuery, stream_list};
use crate::list_query::{CreatedParams, ListParams, QueryShape, SortField, SortParam};
use crate::paging::PageQuery;
use crate::path_ids::automation_id;
use crate::router::Routes;
use crate::wire::{AutomationDto, RunDto};
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(create_automation, __path_create_automation);
    routes.add(list_task_automations, __path_list_task_automations);
    routes.add(get_automation, __path_get_automation);
    routes.add(update_automation, __path_update_automation);
    routes.add(delete_automation, __path_delete_automation);
    routes.add(list_automation_runs, __path_list_automation_runs);
    routes.add(start_automation_run, __path_start_automation_run);
    routes.add(export_automation_runs, __path_export_automation_runs);
    routes.add(get_run_screenshot, __path_get_run_screenshot);
}

/// Create a browser automation.
///
/// The automation starts enabled; with a schedule, `nextRunAt` is its next firing.
#[utoipa::path(
    post, path = "/v1/browser/automations", operation_id = "createAutomation", tag = "browser-automations",
    request_body = NewAutomation,
    responses((status = 201, description = "The automation.", body = AutomationDto,
        headers(("ETag" = String, description = "The entity tag of the new state.")))),
)]
async fn create_automation(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewAutomation>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let automation = state.run(|app| async move { app.automations.create(&principal, input).await }).await?;
    Ok(conditional::tagged(HttpResponse::Created(), &automation.etag(), &AutomationDto::from(&automation)))
}

/// Get a browser automation.
#[utoipa::path(
    get, path = "/v1/browser/automations/{automationId}", operation_id = "getAutomation", tag = "browser-automations",
    params(("automationId" = AutomationId, Path, description = "The automation; an id of another organization or of none is a 404."), IfNoneMatchHeader),
    responses((status = 200, description = "The automation.", body = AutomationDto)),
)]
async fn get_automation(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let automation = state.run(|app| async move { app.automations.get(&principal, &id).await }).await?;
    Ok(conditional::read(&if_none_match, &automation.etag(), &AutomationDto::from(&automation)))
}

/// List a task's browser automations, oldest first.
#[utoipa::path(
    get, path = "/v1/browser/automations/task/{taskId}", operation_id = "listTaskAutomations", tag = "browser-automations",
    params(("taskId" = TaskId, Path, description = "The task; a task of another organization or none is a 404.")),
    responses((status = 200, description = "The task's automations (a bare array).", body = Vec<AutomationDto>)),
)]
async fn list_task_automations(
    state: web::Data<AppState>,
    caller: Authenticated,
    task: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let task = TaskId::parse(&task).map_err(|_| ApiError::not_found("task"))?;
    let principal = caller.0;
    let automations = state.run(|app| async move { app.automations.list_for_task(&principal, &task).await }).await?;
    Ok(HttpResponse::Ok().json(automations.iter().map(AutomationDto::from).collect::<Vec<_>>()))
}

/// Change a browser automation.
///
/// Absent fields stay; `description` and `schedule` may be `null` to clear them. An empty object
/// changes nothing. A PATCH that changes neither `schedule` nor `isEnabled` leaves `nextRunAt` alone.
#[utoipa::path(
    patch, path = "/v1/browser/automations/{automationId}", operation_id = "updateAutomation", tag = "browser-automations",
    params(("automationId" = AutomationId, Path, description = "The automation; an id of another organization or of none is a 404."), IfMatchHeader),
    request_body = AutomationChanges,
    responses(
        (status = 200, description = "The automation as changed.", body = AutomationDto),
        (status = 409, description = "The automation kept changing during the update; try again.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn update_automation(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(changes): JsonBody<AutomationChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let automation =
        state.run(|app| async move { app.automations.update(&principal, &id, changes, &if_match.0).await }).await?;
    Ok(conditional::tagged(HttpResponse::Ok(), &automation.etag(), &AutomationDto::from(&automation)))
}

/// The answer of a delete.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AutomationDeleted<'a> {
    /// `Automation deleted`.
    #[schema(examples("Automation deleted"))]
    message: &'static str,
    deleted_automation: AutomationDto<'a>,
}

/// Delete a browser automation, its runs and their screenshots.
#[utoipa::path(
    delete, path = "/v1/browser/automations/{automationId}", operation_id = "deleteAutomation", tag = "browser-automations",
    params(("automationId" = AutomationId, Path, description = "The automation; an id of another organization or of none is a 404."), IfMatchHeader),
    responses((status = 200, description = "The automation was deleted.", body = AutomationDeleted)),
)]
async fn delete_automation(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let automation = state.run(|app| async move { app.automations.delete(&principal, &id, &if_match.0).await }).await?;
    Ok(HttpResponse::Ok().json(AutomationDeleted {
        message: "Automation deleted",
        deleted_automation: AutomationDto::from(&automation),
    }))
}

/// The total number of an automation's runs, on every page: the list is a bare array.
const TOTAL_COUNT: &str = "X-Total-Count";
/// Where the next page of runs starts (pass it as `cursor`); absent on the last page.
const NEXT_CURSOR: &str = "X-Next-Cursor";

/// List an automation's runs, newest first.
///
/// Paginated with `limit` and `cursor`; the list being a bare array, the total and the next
/// page's cursor are headers.
#[utoipa::path(
    get, path = "/v1/browser/automations/{automationId}/runs", operation_id = "listAutomationRuns", tag = "browser-automations",
    params(
        ("automationId" = AutomationId, Path, description = "The automation; an id of another organization or of none is a 404."),
        ("status" = Option<Vec<RunStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("trigger" = Option<Vec<RunTrigger>>, Query, description = "Started by any of these triggers."),
        CreatedParams,
        SortParam<RunSort>,
        PageQuery,
    ),
    responses((status = 200, description = "The runs (a bare array).", body = Vec<RunDto>, headers(
        ("X-Total-Count" = u64, description = "The total number of the automation's runs (across all pages)."),
        ("X-Next-Cursor" = String, description = "Where the next page starts (pass it as `cursor`); absent on the last page."),
    ))),
)]
async fn list_automation_runs(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let (query, shape) = run_query(params, &id, state.settings())?;
    let runs = state.run(|app| async move { app.automations.runs(&principal, &id, &query).await }).await?;
    let mut response = HttpResponse::Ok();
    response.insert_header((TOTAL_COUNT, runs.total));
    if let Some(next) = &runs.next {
        response.insert_header((NEXT_CURSOR, crate::paging::encode(next, &shape.fingerprint())));
    }
    Ok(response.json(runs.items.iter().map(RunDto::from).collect::<Vec<_>>()))
}

/// The columns of a runs export: every field of a run as the list shows it (`verdict` and
/// `steps` as their JSON text).
const RUN_COLUMNS: &[&str] = &[
    "id",
    "automationId",
    "status",
    "trigger",
    "createdAt",
    "startedAt",
    "completedAt",
    "durationMs",
    "screenshotUrl",
    "error",
    "verdict",
    "steps",
];

/// Export an automation's runs
///
/// Every run the list would show with the same parameters, streamed as one CSV or JSON Lines file.
#[utoipa::path(
    get, path = "/v1/browser/automations/{automationId}/runs/export", operation_id = "exportAutomationRuns", tag = "browser-automations",
    params(
        ("automationId" = AutomationId, Path, description = "The automation; an id of another organization or of none is a 404."),
        ("status" = Option<Vec<RunStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("trigger" = Option<Vec<RunTrigger>>, Query, description = "Started by any of these triggers."),
        CreatedParams,
        SortParam<RunSort>,
        FormatQuery,
    ),
    responses((status = 200, description = "The runs, as an attachment.", content(
        (String = "text/csv"),
        (String = "application/x-ndjson"),
    ))),
)]
async fn export_automation_runs(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (principal, id) = (caller.0, automation_id(&id)?);
    let (query, _) = run_query(params, &id, state.settings())?;
    let row = |run: &_| serde_json::to_value(RunDto::from(run));
    let export = Export { format, name: "runs", columns: RUN_COLUMNS, row };
    stream_list(state, export, move |app, after| {
        let (principal, id, query) = (principal.clone(), id.clone(), query.batch(BATCH_ROWS, after));
        async move { app.automations.runs(&principal, &id, &query).await }
    })
    .await
}

impl SortField for RunSort {
    const FIELDS: &'static [(&'static str, Self)] = &[("createdAt", Self::CreatedAt), ("status", Self::Status)];
}

/// The query of an automation's runs: the filters, then what every list shares (runs have no
/// update time).
fn run_query(
    mut params: ListParams,
    automation: &AutomationId,
    settings: &Settings,
) -> Result<(RunQuery, QueryShape), ApiError> {
    // The automation is part of the list: a cursor of another automation's runs is refused.
    let shape = params.shape(&format!("runs/{automation}"));
    let filter = RunFilter { status: params.enums("status")?, trigger: params.enums("trigger")? };
    Ok((params.finish(filter, false, &shape, settings)?, shape))
}

/// Start a run of an automation now.
#[utoipa::path(
    post, path = "/v1/browser/automations/{automationId}/runs", operation_id = "startAutomationRun", tag = "browser-automations",
    params(("automationId" = AutomationId, Path, description = "The automation; an id of another organization or of none is a 404.")),
    responses(
        (status = 202, description = "The run, `pending`.", body = RunDto),
        (status = 409, description = "A run of this automation is already pending or running.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn start_automation_run(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, automation_id(&id)?);
    let run = state.run(|app| async move { app.automations.start_run(&principal, &id).await }).await?;
    Ok(HttpResponse::Accepted().json(RunDto::from(&run)))
}

/// The parts of a signed link; a link missing any of them is as invalid as a tampered one.
#[derive(Deserialize)]
struct Signed {
    /// The step whose screenshot the link is for; absent for the run's own.
    step: Option<String>,
    org: Option<String>,
    /// Text, not a number: a mangled expiry is a bad link (403), not a bad query (400).
    expires: Option<String>,
    signature: Option<String>,
}

/// A run's screenshot.
///
/// Serves a run's screenshot behind a link this service signed (a run's `screenshotUrl`, or a
/// step's); the signature is the credential, no API key or session is needed.
#[utoipa::path(
    get, path = "/v1/browser/runs/{runId}/screenshot", operation_id = "getRunScreenshot", tag = "browser-automations",
    security(()),
    params(
        ("runId" = AutomationRunId, Path, description = "The run."),
        ("step" = Option<u32>, Query, description = "The step whose screenshot this is (a step's `screenshotUrl`); absent for the run's final screenshot. Part of what is signed."),
        ("org" = String, Query, description = "The run's organization, as signed."),
        ("expires" = i64, Query, description = "When the link expires, in seconds since the Unix epoch, as signed."),
        ("signature" = String, Query, description = "The link's signature. A link that is tampered with, expired, or misses a part is a 403."),
    ),
    responses(
        (status = 200, description = "The PNG screenshot, with `Content-Security-Policy: sandbox`.", content_type = "image/png", body = String),
        (status = 403, description = "The link is invalid or has expired.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 404, description = "The run has no screenshot (anymore).", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (
            status = 503, description = "The database or blob store is unavailable.", body = crate::openapi::Problem,
            content_type = "application/problem+json", headers(("Retry-After" = u32, description = "Seconds to wait")),
        ),
    ),
)]
async fn get_run_screenshot(
    state: web::Data<AppState>,
    run: web::Path<String>,
    signed: web::Query<Signed>,
) -> Result<HttpResponse, ApiError> {
    let (run, signed) = (run.into_inner(), signed.into_inner());
    let expires = signed.expires.and_then(|e| e.parse::<i64>().ok());
    let (Some(org), Some(expires), Some(signature)) = (signed.org, expires, signed.signature) else {
        return Err(ApiError::forbidden("the screenshot link is invalid or has expired"));
    };
    // The step is signed: a mangled one is a bad link (403), not a bad query (400).
    let step = match signed.step.as_deref().map(str::parse::<u32>) {
        None => None,
        Some(Ok(step)) => Some(step),
        Some(Err(_)) => return Err(ApiError::forbidden("the screenshot link is invalid or has expired")),
    };
    let png =
        state.run(|app| async move { app.automations.screenshot(&org, &run, step, expires, &signature).await }).await?;
    Ok(crate::attachments::stored_file("image/png").body(png))
}
