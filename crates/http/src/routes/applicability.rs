//! The Statement of Applicability of a framework (ISO/IEC 27001 6.1.3 d): stating whether each
//! requirement applies (`PUT …/requirements/{requirementId}/applicability`) and the statement as a
//! document (`GET /v1/frameworks/{id}/soa`, JSON, CSV or PDF).

use actix_web::http::header;
use actix_web::{HttpResponse, web};
use compliance_app::StatementOfApplicability;
use compliance_domain::applicability::{self, Applicability, NewApplicability, StatementLine};
use compliance_domain::framework_status::RequirementStatus;
use compliance_domain::{FrameworkId, RequirementId, Timestamp};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::as_of::parse_as_of;
use crate::body::JsonBody;
use crate::export::csv_table;
use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(state_requirement_applicability, __path_state_requirement_applicability);
    routes.add(get_statement_of_applicability, __path_get_statement_of_applicability);
}

/// A statement of whether a requirement applies, and why.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ApplicabilityDto<'a> {
    framework_id: &'a FrameworkId,
    requirement_id: &'a RequirementId,
    applicable: bool,
    justification: &'a str,
    /// When it was stated.
    created_at: Timestamp,
}

impl<'a> From<&'a Applicability> for ApplicabilityDto<'a> {
    fn from(a: &'a Applicability) -> Self {
        Self {
            framework_id: &a.framework_id,
            requirement_id: &a.requirement_id,
            applicable: a.applicable,
            justification: &a.justification,
            created_at: a.created_at,
        }
    }
}

/// State whether a requirement applies
///
/// Whether requirement `requirementId` of the framework applies to the organization, and why (the
/// justification is asked for both inclusion and exclusion). Replaces the statement in force; the
/// earlier ones stay for `asOf`. A requirement that does not apply leaves the framework's roll-up:
/// its status is `not_applicable`, counted apart, neither passing nor in the share. Needs
/// `frameworks` and `controls` write (owners and admins; a key both scopes).
#[utoipa::path(
    put, path = "/v1/frameworks/{id}/requirements/{requirementId}/applicability",
    operation_id = "stateRequirementApplicability", tag = "frameworks",
    params(
        ("id" = FrameworkId, Path, description = "The framework; an id of another organization or of none is a 404."),
        ("requirementId" = RequirementId, Path, description = "One of the framework's requirements; another is a 404."),
    ),
    request_body = NewApplicability,
    responses((status = 200, description = "The statement now in force.", body = ApplicabilityDto)),
)]
async fn state_requirement_applicability(
    state: web::Data<AppState>,
    caller: Authenticated,
    path: web::Path<(String, String)>,
    body: JsonBody<NewApplicability>,
) -> Result<HttpResponse, ApiError> {
    let (framework, requirement) = path.into_inner();
    let framework = FrameworkId::parse(&framework).map_err(|_| ApiError::not_found("framework"))?;
    let requirement = RequirementId::parse(&requirement).map_err(|_| ApiError::not_found("requirement"))?;
    let (principal, input) = (caller.0, body.0);
    let stated = state
        .run(|app| async move { app.frameworks.state_applicability(&principal, &framework, &requirement, input).await })
        .await?;
    Ok(HttpResponse::Ok().json(ApplicabilityDto::from(&stated)))
}

/// `asOf` and `format` of the statement, read as text so that a bad value is a 400 naming it.
#[derive(Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StatementQuery {
    /// An RFC 3339 date-time not in the future: the statement as it stood then, each requirement's
    /// implementation from the evidence and mappings of then. Absent: now.
    #[param(value_type = Option<String>, format = DateTime)]
    as_of: Option<String>,
    /// `json` (the default), `csv` (one row per requirement) or `pdf` (printed on A4).
    #[param(value_type = Option<String>, pattern = "^(json|csv|pdf)$")]
    format: Option<String>,
}

/// The Statement of Applicability: one line per requirement of the framework.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct StatementDto<'a> {
    framework_id: &'a FrameworkId,
    name: &'a str,
    version: &'a str,
    /// The moment it is for.
    as_of: Timestamp,
    /// Requirements that apply.
    applicable: usize,
    /// Requirements stated not to apply.
    not_applicable: usize,
    requirements: Vec<StatementLineDto<'a>>,
}

/// One requirement of the statement.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct StatementLineDto<'a> {
    identifier: &'a str,
    title: &'a str,
    /// Whether it applies: true unless stated otherwise.
    applicable: bool,
    /// Why, as stated; `null` where nothing was stated.
    #[schema(required = true)]
    justification: Option<&'a str>,
    /// Its status from the controls mapped to it, or `not_applicable`.
    implementation: RequirementStatus,
    /// The controls implementing it (empty for a caller who may not read controls).
    controls: Vec<StatementControlDto<'a>>,
}

/// A control implementing a requirement, with its status at the moment.
#[derive(Serialize, ToSchema)]
struct StatementControlDto<'a> {
    name: &'a str,
    status: &'a str,
}

impl<'a> From<&StatementLine<'a>> for StatementLineDto<'a> {
    fn from(line: &StatementLine<'a>) -> Self {
        Self {
            identifier: line.identifier,
            title: line.title,
            applicable: line.applicable,
            justification: line.justification,
            implementation: line.implementation,
            controls: line.controls.iter().map(|&(name, status)| StatementControlDto { name, status }).collect(),
        }
    }
}

/// Get a framework's Statement of Applicability
///
/// Every requirement of the framework with whether it applies and why (as stated at `asOf`), its
/// implementation (its status from the controls mapped to it then, or `not_applicable`) and those
/// controls with their status. `format=csv` is one row per requirement (`identifier, title,
/// applicable, justification, implementation, controls`, the controls as `name (status)` joined by
/// `; `); `format=pdf` the same table printed on A4 by the service's headless Chromium. Read as
/// the framework is; the controls are left out for a caller who may not read controls.
#[utoipa::path(
    get, path = "/v1/frameworks/{id}/soa", operation_id = "getStatementOfApplicability", tag = "frameworks",
    params(("id" = FrameworkId, Path, description = "The framework; an id of another organization or of none is a 404."), StatementQuery),
    responses(
        (status = 200, description = "The statement.", content(
            (StatementDto = "application/json"),
            (String = "text/csv"),
            (String = "application/pdf"),
        )),
        (status = 400, description = "`format` is not `json`, `csv` or `pdf`, or `asOf` is malformed or in the future.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 502, description = "PDF: the headless Chromium failed while printing.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 503, description = "PDF: `/problems/busy` when the caller's organization is printing as many documents as it may at once (retry after `Retry-After` seconds); `/problems/not-configured` when this deployment has no headless Chromium; or the database is unavailable.", body = crate::openapi::Problem, content_type = "application/problem+json", headers(("Retry-After" = u32, description = "Seconds to wait before retrying."))),
        (status = 504, description = "PDF: printing took longer than the browser's timeout.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn get_statement_of_applicability(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    query: web::Query<StatementQuery>,
) -> Result<HttpResponse, ApiError> {
    let id = FrameworkId::parse(&id).map_err(|_| ApiError::not_found("framework"))?;
    let query = query.into_inner();
    let moment = parse_as_of(query.as_of.as_deref())?;
    let format = match query.format.as_deref() {
        None | Some("json") => Format::Json,
        Some("csv") => Format::Csv,
        Some("pdf") => Format::Pdf,
        Some(_) => return Err(ApiError::invalid_field("format", "must be `json`, `csv` or `pdf`")),
    };
    let principal = caller.0;
    let (statement, pdf) = state
        .run(|app| async move {
            let statement = app.frameworks.statement_of_applicability(&principal, &id, moment).await?;
            let pdf = match format {
                Format::Pdf => Some(app.frameworks.statement_pdf(&principal, &statement).await?),
                _ => None,
            };
            Ok::<_, compliance_app::AppError>((statement, pdf))
        })
        .await?;
    let lines = applicability::lines(&statement.view.status, &statement.statements);
    let file = file_stem(&statement);
    match (format, pdf) {
        (Format::Pdf, Some(pdf)) => Ok(HttpResponse::Ok()
            .content_type("application/pdf")
            .insert_header((header::CONTENT_DISPOSITION, format!("inline; filename=\"{file}.pdf\"")))
            .body(pdf)),
        (Format::Csv, _) => {
            let rows: Vec<[String; 6]> = lines.iter().map(applicability::csv_fields).collect();
            Ok(HttpResponse::Ok()
                .content_type("text/csv; charset=utf-8")
                .insert_header((header::CONTENT_DISPOSITION, format!("attachment; filename=\"{file}.csv\"")))
                .body(csv_table(&applicability::CSV_COLUMNS, &rows)?))
        }
        _ => Ok(HttpResponse::Ok().json(statement_dto(&statement, &lines))),
    }
}

#[derive(Clone, Copy)]
enum Format {
    Json,
    Csv,
    Pdf,
}

fn statement_dto<'a>(statement: &'a StatementOfApplicability, lines: &'a [StatementLine<'a>]) -> StatementDto<'a> {
    let framework = &statement.view.framework;
    let counts = &statement.view.status.counts;
    StatementDto {
        framework_id: &framework.id,
        name: &framework.name,
        version: &framework.version,
        as_of: statement.view.status.as_of,
        applicable: counts.total(),
        not_applicable: counts.not_applicable,
        requirements: lines.iter().map(StatementLineDto::from).collect(),
    }
}

/// `soa-<framework name>-<version>`, as a file name: letters, digits and dashes.
fn file_stem(statement: &StatementOfApplicability) -> String {
    let framework = &statement.view.framework;
    let text = format!("soa-{}-{}", framework.name, framework.version).to_lowercase();
    let stem: String = text.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    stem.split('-').filter(|part| !part.is_empty()).collect::<Vec<_>>().join("-")
}
