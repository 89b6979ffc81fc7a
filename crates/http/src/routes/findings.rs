//! Findings: the resources checks failed, and the exceptions that accept their risk for a while
//! (docs/checks.md, "Findings").

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::check::CheckSeverity;
use compliance_domain::finding::{FindingStatus, NewFindingDeadlines, NewFindingTask};
use compliance_domain::{ConnectionId, FindingId, Timestamp};
use compliance_ports::{FindingFilter, FindingQuery, FindingSort};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::conditional;
use crate::export::{BATCH_ROWS, Export, ExportFormat, FormatQuery, stream_list};
use crate::list_query::{ListParams, QueryShape, SortField, SortParam, TextFilter, TimeParams};
use crate::paging::{PageQuery, encode};
use crate::router::Routes;
use crate::wire::{FindingDeadlinesDto, FindingDto, TaskDto};
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_findings, __path_list_findings);
    routes.add(export_findings, __path_export_findings);
    // Before `/v1/findings/{id}`, whose id it would otherwise be read as.
    routes.add(get_finding_deadlines, __path_get_finding_deadlines);
    routes.add(set_finding_deadlines, __path_set_finding_deadlines);
    routes.add(get_finding, __path_get_finding);
    routes.add(except_finding, __path_except_finding);
    routes.add(create_finding_task, __path_create_finding_task);
}

fn finding_id(id: &str) -> Result<FindingId, ApiError> {
    FindingId::parse(id).map_err(|_| ApiError::not_found("finding"))
}

/// `{data, count, nextCursor}` of findings.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct FindingList {
    data: Vec<FindingDto>,
    /// The total number of matching findings (across all pages).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<String>,
}

/// List findings, the last seen first
///
/// `createdAfter`/`createdBefore` bound the first failure, `updatedAfter`/`updatedBefore` the last
/// change; `q` keeps findings whose resource name or id, check id or detail hold every word.
#[utoipa::path(
    get, path = "/v1/findings", operation_id = "listFindings", tag = "findings",
    params(
        ("status" = Option<Vec<FindingStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("severity" = Option<Vec<CheckSeverity>>, Query, description = "Any of these severities."),
        ("checkId" = Option<Vec<TextFilter>>, Query, description = "Findings of any of these checks (repeat the parameter)."),
        ("connectionId" = Option<Vec<ConnectionId>>, Query, description = "Findings of any of these connections."),
        TimeParams,
        SortParam<FindingSort>,
        PageQuery,
    ),
    responses((status = 200, description = "The findings.", body = FindingList)),
)]
async fn list_findings(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (query, shape) = finding_query(params, state.settings())?;
    let principal = caller.0;
    let page = state.run(|app| async move { app.findings.list_findings(&principal, &query).await }).await?;
    Ok(HttpResponse::Ok().json(FindingList {
        data: page.items.iter().map(FindingDto::from).collect(),
        count: page.total,
        next_cursor: page.next.as_ref().map(|next| encode(next, &shape.fingerprint())),
    }))
}

/// The columns of a findings export: every field of a finding as the list shows it.
const FINDING_COLUMNS: &[&str] = &[
    "id",
    "checkId",
    "connectionId",
    "resource",
    "severity",
    "status",
    "detail",
    "firstSeenAt",
    "lastSeenAt",
    "resolvedAt",
    "dueAt",
    "lastRunId",
    "exception",
    "taskId",
    "updatedAt",
];

/// Export findings
///
/// Every finding the list would show with the same parameters, streamed as one CSV or JSON Lines file.
#[utoipa::path(
    get, path = "/v1/findings/export", operation_id = "exportFindings", tag = "findings",
    params(
        ("status" = Option<Vec<FindingStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("severity" = Option<Vec<CheckSeverity>>, Query, description = "Any of these severities."),
        ("checkId" = Option<Vec<TextFilter>>, Query, description = "Findings of any of these checks (repeat the parameter)."),
        ("connectionId" = Option<Vec<ConnectionId>>, Query, description = "Findings of any of these connections."),
        TimeParams,
        SortParam<FindingSort>,
        FormatQuery,
    ),
    responses((status = 200, description = "The findings, as an attachment.", content(
        (String = "text/csv"),
        (String = "application/x-ndjson"),
    ))),
)]
async fn export_findings(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (query, _) = finding_query(params, state.settings())?;
    let principal = caller.0;
    let row = |finding: &_| serde_json::to_value(FindingDto::from(finding));
    let export = Export { format, name: "findings", columns: FINDING_COLUMNS, row };
    stream_list(state, export, move |app, after| {
        let (principal, query) = (principal.clone(), query.batch(BATCH_ROWS, after));
        async move { app.findings.list_findings(&principal, &query).await }
    })
    .await
}

impl SortField for FindingSort {
    const FIELDS: &'static [(&'static str, Self)] =
        &[("lastSeenAt", Self::LastSeenAt), ("firstSeenAt", Self::FirstSeenAt), ("dueAt", Self::DueAt)];
}

fn finding_query(mut params: ListParams, settings: &Settings) -> Result<(FindingQuery, QueryShape), ApiError> {
    let shape = params.shape("findings");
    let filter = FindingFilter {
        status: params.enums("status")?,
        severity: params.enums("severity")?,
        check: params.texts("checkId")?,
        connection: params.ids("connectionId")?,
    };
    Ok((params.finish(filter, true, &shape, settings)?, shape))
}

/// Get a finding
#[utoipa::path(
    get, path = "/v1/findings/{id}", operation_id = "getFinding", tag = "findings",
    params(("id" = FindingId, Path, description = "The finding; an id of another organization or of none is a 404.")),
    responses((status = 200, description = "The finding.", body = FindingDto)),
)]
async fn get_finding(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, finding_id(&id)?);
    let finding = state.run(|app| async move { app.findings.get_finding(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(FindingDto::from(&finding)))
}

/// An exception: why a finding's risk is accepted, and until when.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExceptionInput {
    /// Why the risk is accepted (1 to 2,000 characters, not blank).
    #[schema(schema_with = reason_schema)]
    reason: String,
    /// When the acceptance ends: in the future, at most a year ahead.
    expires_at: Timestamp,
}

fn reason_schema() -> utoipa::openapi::Object {
    compliance_domain::openapi::text(1, compliance_app::EXCEPTION_REASON_MAX).build()
}

/// Accept a finding's risk until a date
///
/// The finding is `excepted` and its resource counts as passing until `expiresAt`, wherever a
/// status is shown, with the reason; then it is open again if its resource still fails. A new
/// exception replaces the current one. Owners and admins.
#[utoipa::path(
    post, path = "/v1/findings/{id}/exception", operation_id = "exceptFinding", tag = "findings",
    params(("id" = FindingId, Path, description = "The finding; an id of another organization or of none is a 404.")),
    request_body = ExceptionInput,
    responses(
        (status = 200, description = "The finding, excepted.", body = FindingDto),
        (status = 409, description = "The finding is resolved, or changed meanwhile.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn except_finding(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    JsonBody(input): JsonBody<ExceptionInput>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, finding_id(&id)?);
    let finding = state
        .run(|app| async move { app.findings.except_finding(&principal, &id, &input.reason, input.expires_at).await })
        .await?;
    Ok(HttpResponse::Ok().json(FindingDto::from(&finding)))
}

/// Make the task that fixes a finding
///
/// A task linked to the finding both ways (the finding's `taskId`, the task's `findingId`): its
/// title, description and due date are the finding's unless the body names them. One task at a
/// time: a finding whose task still exists is a 409 (deleting the task unlinks it), and so is a
/// resolved finding. Closing the task does not resolve the finding: only a run that passes its
/// resource does. Owners and admins (`findings` and `tasks` write).
#[utoipa::path(
    post, path = "/v1/findings/{id}/task", operation_id = "createFindingTask", tag = "findings",
    params(("id" = FindingId, Path, description = "The finding; an id of another organization or of none is a 404.")),
    request_body = NewFindingTask,
    responses(
        (status = 201, description = "The new task.", body = TaskDto, headers(("ETag" = String, description = "The entity tag of the new state."))),
        (status = 409, description = "The finding already has a task, is resolved, or changed meanwhile.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn create_finding_task(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    JsonBody(input): JsonBody<NewFindingTask>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, finding_id(&id)?);
    let task = state.run(|app| async move { app.findings.create_task(&principal, &id, input).await }).await?;
    Ok(conditional::tagged(HttpResponse::Created(), &task.etag(), &TaskDto::from(&task)))
}

/// Get how long findings may stay open
///
/// Days per severity; the defaults (7, 30, 90 and 180 days) until an owner or admin sets them.
/// Owners, admins and auditors.
#[utoipa::path(
    get, path = "/v1/findings/deadlines", operation_id = "getFindingDeadlines", tag = "findings",
    responses((status = 200, description = "The deadlines in force.", body = FindingDeadlinesDto)),
)]
async fn get_finding_deadlines(state: web::Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let kept = state.run(|app| async move { app.findings.deadlines(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(FindingDeadlinesDto::from(&kept)))
}

/// Set how long findings may stay open
///
/// All four severities, 1 to 365 days each. Findings opened (or opened again) from then on are due
/// by them; a finding already open keeps its `dueAt`. Owners and admins.
#[utoipa::path(
    put, path = "/v1/findings/deadlines", operation_id = "setFindingDeadlines", tag = "findings",
    request_body = NewFindingDeadlines,
    responses((status = 200, description = "The deadlines now in force.", body = FindingDeadlinesDto)),
)]
async fn set_finding_deadlines(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewFindingDeadlines>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let kept = state.run(|app| async move { app.findings.set_deadlines(&principal, &input).await }).await?;
    Ok(HttpResponse::Ok().json(FindingDeadlinesDto::from(&kept)))
}
