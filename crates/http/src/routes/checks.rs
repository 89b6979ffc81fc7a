//! The catalog of checks: the tests the providers ship (docs/checks.md).

use actix_web::{HttpResponse, web};
use compliance_app::CheckFilter;
use compliance_domain::check::{Check, CheckSeverity};
use serde::Serialize;
use utoipa::ToSchema;

use crate::list_query::{ListParams, TextFilter};
use crate::router::Routes;
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_checks, __path_list_checks);
    routes.add(get_check, __path_get_check);
}

/// `{data, count}` of the checks.
#[derive(Serialize, ToSchema)]
struct CheckList {
    data: Vec<&'static Check>,
    /// How many checks matched (the list is never paged: the catalog is the service's own).
    count: usize,
}

/// List the checks the providers ship
///
/// Every check by id: what it tests, what it reads (the API actions to grant), how to fix a
/// failure, the requirements it suggests it proves and its counterparts in the CIS benchmarks
/// and Prowler. Readable by the roles that read integrations.
#[utoipa::path(
    get, path = "/v1/checks", operation_id = "listChecks", tag = "checks",
    params(
        ("provider" = Option<Vec<TextFilter>>, Query, description = "Any of these provider slugs (`aws`, `github`, `google-workspace`, `fleetdm`; repeat the parameter)."),
        ("severity" = Option<Vec<CheckSeverity>>, Query, description = "Any of these severities (repeat the parameter)."),
    ),
    responses((status = 200, description = "The matching checks, by id.", body = CheckList)),
)]
async fn list_checks(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let filter = CheckFilter { provider: params.texts("provider")?, severity: params.enums("severity")? };
    params.refuse_the_rest()?;
    let principal = caller.0;
    let checks = state.run(|app| async move { app.checks.list_checks(&principal, &filter) }).await?;
    Ok(HttpResponse::Ok().json(CheckList { count: checks.len(), data: checks }))
}

/// Get a check
#[utoipa::path(
    get, path = "/v1/checks/{id}", operation_id = "getCheck", tag = "checks",
    params(("id" = String, Path, example = "aws.iam.root-mfa", description = "The check's id; an unknown id is a 404.")),
    responses((status = 200, description = "The check.", body = Check)),
)]
async fn get_check(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, id.into_inner());
    let check = state.run(|app| async move { app.checks.get_check(&principal, &id) }).await?;
    Ok(HttpResponse::Ok().json(check))
}
