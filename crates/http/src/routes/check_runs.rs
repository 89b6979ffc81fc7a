//! Runs of a connection's checks and their results (docs/checks.md, "Runs").

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::check_result::CheckResult;
use compliance_domain::check_run::{CheckRunStatus, CheckRunTrigger};
use compliance_domain::{CheckRunId, ConnectionId, Timestamp};
use compliance_ports::{CheckRunFilter, CheckRunQuery, CheckRunSort};
use serde::Serialize;
use utoipa::ToSchema;

use crate::body::{BodyLimit, JsonBytes};
use crate::export::{BATCH_ROWS, Export, ExportFormat, FormatQuery, stream_list};
use crate::list_query::{ListParams, QueryShape, SortField, SortParam};
use crate::paging::{PageQuery, encode};
use crate::router::Routes;
use crate::wire::CheckRunDto;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(run_connection_checks, __path_run_connection_checks);
    routes
        .add(import_connection_check_results, __path_import_connection_check_results)
        .body_limit(BodyLimit(PROWLER_FILE_LIMIT));
    routes.add(list_check_runs, __path_list_check_runs);
    routes.add(export_check_runs, __path_export_check_runs);
    routes.add(get_check_run, __path_get_check_run);
    routes.add(list_check_results, __path_list_check_results);
}

fn connection_id(id: &str) -> Result<ConnectionId, ApiError> {
    ConnectionId::parse(id).map_err(|_| ApiError::not_found("connection"))
}

fn check_run_id(id: &str) -> Result<CheckRunId, ApiError> {
    CheckRunId::parse(id).map_err(|_| ApiError::not_found("check run"))
}

/// Run a connection's checks now
///
/// Queues a run of every check of the connection's provider; an instance's worker runs it soon
/// (poll `GET /v1/check-runs/{id}`). Owners and admins.
#[utoipa::path(
    post, path = "/v1/integrations/connections/{id}/checks/run", operation_id = "runConnectionChecks", tag = "checks",
    params(("id" = ConnectionId, Path, description = "The connection; an id of another organization or of none is a 404.")),
    responses(
        (status = 202, description = "The run, `queued`.", body = CheckRunDto),
        (status = 409, description = "The connection is disconnected, no check reads its provider, or a run asked for is still queued.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn run_connection_checks(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, connection_id(&id)?);
    let run = state.run(|app| async move { app.check_runs.run_checks(&principal, &id).await }).await?;
    Ok(HttpResponse::Accepted().json(CheckRunDto::from(&run)))
}

/// The largest Prowler findings file taken: 32 MiB, some 2,500 of Prowler's findings (about 12 KiB
/// each in OCSF JSON). A larger scan is imported in parts (by region or by service).
pub const PROWLER_FILE_LIMIT: usize = 32 * 1024 * 1024;

/// Import Prowler's findings for a connection
///
/// The body is the file `prowler aws --output-formats json-ocsf` writes (a JSON array of OCSF
/// Detection Findings), as it is. Each finding becomes a result: of our check whose references
/// name Prowler's check, else of `prowler.<Prowler's check name>`. The results are stored as a
/// finished run (`source` `prowler`) and open, resolve and prove exactly as a run of our own
/// checks does (docs/checks.md). All or nothing: a file that is not Prowler's OCSF JSON, or holds
/// several accounts, is a 400 naming the problem, and nothing is stored. Owners and admins.
#[utoipa::path(
    post, path = "/v1/integrations/connections/{id}/check-results", operation_id = "importConnectionCheckResults", tag = "checks",
    params(("id" = ConnectionId, Path, description = "The connection (AWS); an id of another organization or of none is a 404.")),
    request_body(content = Vec<serde_json::Value>, content_type = "application/json", description = "Prowler's OCSF JSON findings file, at most 32 MiB."),
    responses(
        (status = 201, description = "The run, `finished`, with the file's results.", body = CheckRunDto),
        (status = 409, description = "The connection is disconnected or not AWS, or the file is of another account than its findings.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 413, description = "The file is larger than 32 MiB.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn import_connection_check_results(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    JsonBytes(file): JsonBytes,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, connection_id(&id)?);
    let run = state.run(|app| async move { app.check_runs.import_prowler(&principal, &id, &file).await }).await?;
    Ok(HttpResponse::Created().json(CheckRunDto::from(&run)))
}

/// `{data, count, nextCursor}` of check runs.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CheckRunList {
    data: Vec<CheckRunDto>,
    /// The total number of matching runs (across all pages).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<String>,
}

/// List check runs, newest first
#[utoipa::path(
    get, path = "/v1/check-runs", operation_id = "listCheckRuns", tag = "checks",
    params(
        ("connectionId" = Option<Vec<ConnectionId>>, Query, description = "Runs of any of these connections (repeat the parameter)."),
        ("status" = Option<Vec<CheckRunStatus>>, Query, description = "Any of these statuses."),
        ("trigger" = Option<Vec<CheckRunTrigger>>, Query, description = "Any of these triggers."),
        ("createdAfter" = Option<Timestamp>, Query, description = "Queued at or after this time (RFC 3339)."),
        ("createdBefore" = Option<Timestamp>, Query, description = "Queued before this time (RFC 3339)."),
        SortParam<CheckRunSort>,
        PageQuery,
    ),
    responses((status = 200, description = "The runs.", body = CheckRunList)),
)]
async fn list_check_runs(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (query, shape) = check_run_query(params, state.settings())?;
    let principal = caller.0;
    let page = state.run(|app| async move { app.check_runs.list_runs(&principal, &query).await }).await?;
    Ok(HttpResponse::Ok().json(CheckRunList {
        data: page.items.iter().map(CheckRunDto::from).collect(),
        count: page.total,
        next_cursor: page.next.as_ref().map(|next| encode(next, &shape.fingerprint())),
    }))
}

/// The columns of a check runs export: every field of a run as the list shows it.
const CHECK_RUN_COLUMNS: &[&str] = &[
    "id",
    "connectionId",
    "provider",
    "trigger",
    "status",
    "requestedBy",
    "queuedAt",
    "startedAt",
    "finishedAt",
    "attempts",
    "error",
    "counts",
    "populationDigest",
];

/// Export check runs
///
/// Every run the list would show with the same parameters, streamed as one CSV or JSON Lines file.
#[utoipa::path(
    get, path = "/v1/check-runs/export", operation_id = "exportCheckRuns", tag = "checks",
    params(
        ("connectionId" = Option<Vec<ConnectionId>>, Query, description = "Runs of any of these connections (repeat the parameter)."),
        ("status" = Option<Vec<CheckRunStatus>>, Query, description = "Any of these statuses."),
        ("trigger" = Option<Vec<CheckRunTrigger>>, Query, description = "Any of these triggers."),
        ("createdAfter" = Option<Timestamp>, Query, description = "Queued at or after this time (RFC 3339)."),
        ("createdBefore" = Option<Timestamp>, Query, description = "Queued before this time (RFC 3339)."),
        SortParam<CheckRunSort>,
        FormatQuery,
    ),
    responses((status = 200, description = "The runs, as an attachment.", content(
        (String = "text/csv"),
        (String = "application/x-ndjson"),
    ))),
)]
async fn export_check_runs(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (query, _) = check_run_query(params, state.settings())?;
    let principal = caller.0;
    let row = |run: &_| serde_json::to_value(CheckRunDto::from(run));
    let export = Export { format, name: "check-runs", columns: CHECK_RUN_COLUMNS, row };
    stream_list(state, export, move |app, after| {
        let (principal, query) = (principal.clone(), query.batch(BATCH_ROWS, after));
        async move { app.check_runs.list_runs(&principal, &query).await }
    })
    .await
}

impl SortField for CheckRunSort {
    const FIELDS: &'static [(&'static str, Self)] = &[("queuedAt", Self::QueuedAt)];
}

/// The filters, then what every list shares. Runs have no search (`q` is a 400): they are found
/// by connection, status and trigger.
fn check_run_query(mut params: ListParams, settings: &Settings) -> Result<(CheckRunQuery, QueryShape), ApiError> {
    let shape = params.shape("check-runs");
    if params.single("q")?.is_some() {
        return Err(ApiError::invalid_field(
            "q",
            "check runs have no search: filter by connectionId, status or trigger",
        ));
    }
    let filter = CheckRunFilter {
        connection: params.ids("connectionId")?,
        status: params.enums("status")?,
        trigger: params.enums("trigger")?,
    };
    Ok((params.finish(filter, false, &shape, settings)?, shape))
}

/// Get a check run
#[utoipa::path(
    get, path = "/v1/check-runs/{id}", operation_id = "getCheckRun", tag = "checks",
    params(("id" = CheckRunId, Path, description = "The run; an id of another organization or of none is a 404.")),
    responses((status = 200, description = "The run.", body = CheckRunDto)),
)]
async fn get_check_run(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, check_run_id(&id)?);
    let run = state.run(|app| async move { app.check_runs.get_run(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(CheckRunDto::from(&run)))
}

/// `{data, count, nextCursor}` of a run's results.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CheckResultList {
    data: Vec<CheckResult>,
    /// How many results the run kept (its whole population).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<String>,
}

/// List a check run's results
///
/// One result for every resource the run saw, pass or fail, in the order it saw them: the
/// population whose digest the run shows.
#[utoipa::path(
    get, path = "/v1/check-runs/{id}/results", operation_id = "listCheckResults", tag = "checks",
    params(
        ("id" = CheckRunId, Path, description = "The run; an id of another organization or of none is a 404."),
        PageQuery,
    ),
    responses((status = 200, description = "The run's results.", body = CheckResultList)),
)]
async fn list_check_results(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let id = check_run_id(&id)?;
    let shape = params.shape(&format!("check-results/{id}"));
    let query: compliance_ports::ListQuery<(), CheckRunSort> = params.finish((), false, &shape, state.settings())?;
    if query.search.is_some() || !query.sort.is_empty() || query.times != Default::default() {
        return Err(ApiError::invalid_field("q", "a run's results take only limit and cursor"));
    }
    let (principal, page) = (caller.0, query.page);
    let results = state.run(|app| async move { app.check_runs.run_results(&principal, &id, &page).await }).await?;
    Ok(HttpResponse::Ok().json(CheckResultList {
        count: results.total,
        next_cursor: results.next.as_ref().map(|next| encode(next, &shape.fingerprint())),
        data: results.items,
    }))
}
