//! `/v1/risks`: list, create, read, change and delete the organization's risks.

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::risk::{NewRisk, RiskChanges};
use compliance_domain::risk::{RiskCategory, RiskStatus, TreatmentStrategy};
use compliance_domain::{Department, Impact, Likelihood};
use compliance_domain::{Id, RiskId};
use compliance_ports::{ListName, RiskFilter, RiskQuery, RiskSort};
use serde::Serialize;
use serde_json::to_value;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::bulk::{self, BULK_BODY_LIMIT, BulkQuery, BulkRequest, BulkResults};
use crate::conditional::{self, IfMatchHeader, IfNoneMatchHeader};
use crate::envelope::auth_type_schema;
use crate::export::{BATCH_ROWS, Export, ExportFormat, FormatQuery, stream_list};
use crate::list_cache::{ListKey, items};
use crate::list_query::{AssigneeFilter, ListParams, QueryShape, SortField, SortParam, TimeParams};
use crate::paging::PageQuery;
use crate::router::Routes;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, RiskDto, auth_type};
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_risks, __path_list_risks);
    routes.add(create_risk, __path_create_risk);
    routes.add(export_risks, __path_export_risks);
    routes.add(bulk_risks, __path_bulk_risks).body_limit(BULK_BODY_LIMIT);
    routes.add(get_risk, __path_get_risk);
    routes.add(update_risk, __path_update_risk);
    routes.add(delete_risk, __path_delete_risk);
}

/// `{data, count, nextCursor, authType, authenticatedUser}` of risks.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RiskList<'a> {
    #[schema(value_type = Vec<RiskDto>)]
    data: &'a RawValue,
    /// The total number of matching rows (across all pages).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<&'a str>,
    #[schema(schema_with = auth_type_schema)]
    auth_type: &'static str,
    authenticated_user: AuthenticatedUser<'a>,
}

/// A risk with how the request authenticated; `authenticatedUser` for sessions only.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RiskWithAuth<'a> {
    #[serde(flatten)]
    risk: RiskDto<'a>,
    #[schema(schema_with = auth_type_schema)]
    auth_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AuthenticatedUser, required = false)]
    authenticated_user: Option<AuthenticatedUser<'a>>,
}

/// What a delete answers: the message and what the risk was.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct RiskDeleted<'a> {
    /// `Risk deleted successfully`
    message: &'static str,
    deleted_risk: DeletedRisk<'a>,
    #[schema(schema_with = auth_type_schema)]
    auth_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AuthenticatedUser, required = false)]
    authenticated_user: Option<AuthenticatedUser<'a>>,
}

#[derive(Serialize, ToSchema)]
struct DeletedRisk<'a> {
    id: &'a RiskId,
    title: &'a str,
}

#[utoipa::path(
    get,
    path = "/v1/risks",
    tag = "risks",
    operation_id = "listRisks",
    summary = "List the organization's risks",
    params(
        ("status" = Option<Vec<RiskStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("category" = Option<Vec<RiskCategory>>, Query, description = "Any of these categories."),
        ("department" = Option<Vec<Department>>, Query, description = "Any of these departments."),
        ("assigneeId" = Option<Vec<AssigneeFilter>>, Query, description = "Assigned to any of these members (`mem_…`); `none` for unassigned."),
        ("likelihood" = Option<Vec<Likelihood>>, Query, description = "Any of these likelihoods."),
        ("impact" = Option<Vec<Impact>>, Query, description = "Any of these impacts."),
        ("treatmentStrategy" = Option<Vec<TreatmentStrategy>>, Query, description = "Any of these treatment strategies."),
        TimeParams,
        SortParam<RiskSort>,
        PageQuery,
    ),
    responses((status = 200, description = "The matching risks, in the order asked (newest first by default).", body = RiskList)),
)]
async fn list_risks(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (query, shape) = risk_query(params, state.settings())?;
    let principal = caller.0.clone();
    let key = ListKey::new(&principal, ListName::Risks, &shape, &query.page);
    let load = |app: std::sync::Arc<compliance_app::App>| async move { app.risks.list_risks(&principal, &query).await };
    let page = state.list_page(&caller, key, load, |page| items(page, |risk| RiskDto::new(risk, false))).await?;
    Ok(HttpResponse::Ok().json(RiskList {
        data: page.data(),
        count: page.count(),
        next_cursor: page.next_cursor(),
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::of(&caller),
    }))
}

/// The columns of a risks export: every field of a risk as `GET /v1/risks/{id}` shows it.
const RISK_COLUMNS: &[&str] = &[
    "id",
    "title",
    "description",
    "category",
    "department",
    "status",
    "likelihood",
    "impact",
    "residualLikelihood",
    "residualImpact",
    "treatmentStrategy",
    "treatmentStrategyDescription",
    "assigneeId",
    "organizationId",
    "createdAt",
    "updatedAt",
];

#[utoipa::path(
    get,
    path = "/v1/risks/export",
    tag = "risks",
    operation_id = "exportRisks",
    summary = "Export the organization's risks as CSV or JSON Lines",
    description = "Every risk the list would show with the same parameters, streamed as one file.",
    params(
        ("status" = Option<Vec<RiskStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("category" = Option<Vec<RiskCategory>>, Query, description = "Any of these categories."),
        ("department" = Option<Vec<Department>>, Query, description = "Any of these departments."),
        ("assigneeId" = Option<Vec<AssigneeFilter>>, Query, description = "Assigned to any of these members (`mem_…`); `none` for unassigned."),
        ("likelihood" = Option<Vec<Likelihood>>, Query, description = "Any of these likelihoods."),
        ("impact" = Option<Vec<Impact>>, Query, description = "Any of these impacts."),
        ("treatmentStrategy" = Option<Vec<TreatmentStrategy>>, Query, description = "Any of these treatment strategies."),
        TimeParams,
        SortParam<RiskSort>,
        FormatQuery,
    ),
    responses((status = 200, description = "The risks, as an attachment.", content(
        (String = "text/csv"),
        (String = "application/x-ndjson"),
    ))),
)]
async fn export_risks(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (query, _) = risk_query(params, state.settings())?;
    let principal = caller.0;
    let export =
        Export { format, name: "risks", columns: RISK_COLUMNS, row: |risk| to_value(RiskDto::new(risk, true)) };
    stream_list(state, export, move |app, after| {
        let (principal, query) = (principal.clone(), query.batch(BATCH_ROWS, after));
        async move { app.risks.list_risks(&principal, &query).await }
    })
    .await
}

impl SortField for RiskSort {
    const FIELDS: &'static [(&'static str, Self)] = &[
        ("createdAt", Self::CreatedAt),
        ("updatedAt", Self::UpdatedAt),
        ("title", Self::Title),
        ("status", Self::Status),
    ];
}

/// The query of `GET /v1/risks` (and of its export): its filters, then what every list shares.
pub(crate) fn risk_query(mut params: ListParams, settings: &Settings) -> Result<(RiskQuery, QueryShape), ApiError> {
    let shape = params.shape("risks");
    let filter = RiskFilter {
        status: params.enums("status")?,
        category: params.enums("category")?,
        department: params.enums("department")?,
        assignee: params.assignees("assigneeId")?,
        likelihood: params.enums("likelihood")?,
        impact: params.enums("impact")?,
        treatment_strategy: params.enums("treatmentStrategy")?,
    };
    Ok((params.finish(filter, true, &shape, settings)?, shape))
}

#[utoipa::path(
    post,
    path = "/v1/risks",
    tag = "risks",
    operation_id = "createRisk",
    summary = "Create a risk",
    request_body = NewRisk,
    responses((status = 201, description = "The new risk.", body = RiskWithAuth, headers(("ETag" = String, description = "The entity tag of the new state.")))),
)]
async fn create_risk(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewRisk>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let risk = state.run(|app| async move { app.risks.create_risk(&principal, input).await }).await?;
    Ok(conditional::tagged(
        HttpResponse::Created(),
        &risk.etag(),
        &RiskWithAuth {
            risk: RiskDto::new(&risk, true),
            auth_type: auth_type(&caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(&caller),
        },
    ))
}

#[utoipa::path(
    get,
    path = "/v1/risks/{id}",
    tag = "risks",
    operation_id = "getRisk",
    summary = "Get one risk",
    params(("id" = RiskId, Path), IfNoneMatchHeader),
    responses((status = 200, description = "The risk.", body = RiskDto)),
)]
async fn get_risk(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, risk_id(&id)?);
    let risk = state.run(|app| async move { app.risks.get_risk(&principal, &id).await }).await?;
    Ok(conditional::read(&if_none_match, &risk.etag(), &RiskDto::new(&risk, true)))
}

#[utoipa::path(
    patch,
    path = "/v1/risks/{id}",
    tag = "risks",
    operation_id = "updateRisk",
    summary = "Change a risk: only the fields sent change",
    params(("id" = RiskId, Path), IfMatchHeader),
    request_body = RiskChanges,
    responses((status = 200, description = "The changed risk.", body = RiskWithAuth)),
)]
async fn update_risk(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(changes): JsonBody<RiskChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), risk_id(&id)?);
    let risk =
        state.run(|app| async move { app.risks.update_risk(&principal, &id, changes, &if_match.0).await }).await?;
    Ok(conditional::tagged(
        HttpResponse::Ok(),
        &risk.etag(),
        &RiskWithAuth {
            risk: RiskDto::new(&risk, true),
            auth_type: auth_type(&caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(&caller),
        },
    ))
}

#[utoipa::path(
    delete,
    path = "/v1/risks/{id}",
    tag = "risks",
    operation_id = "deleteRisk",
    summary = "Delete a risk",
    params(("id" = RiskId, Path), IfMatchHeader),
    responses((status = 200, description = "What was deleted.", body = RiskDeleted)),
)]
async fn delete_risk(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), risk_id(&id)?);
    let risk = state.run(|app| async move { app.risks.delete_risk(&principal, &id, &if_match.0).await }).await?;
    Ok(HttpResponse::Ok().json(RiskDeleted {
        message: "Risk deleted successfully",
        deleted_risk: DeletedRisk { id: &risk.id, title: &risk.title },
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::for_session(&caller),
    }))
}

#[utoipa::path(
    post,
    path = "/v1/risks/bulk",
    tag = "risks",
    operation_id = "bulkRisks",
    summary = "Create, change and delete up to 500 risks in one request",
    description = "Each operation's body is the body `POST /v1/risks` (create) or `PATCH /v1/risks/{id}` (update) \
                   takes. By default all or nothing: every operation is checked, then all are applied in one \
                   transaction, or none and a 400 lists each failing operation by index. With `atomic=false` they \
                   are applied one by one and each answers its own result.",
    params(BulkQuery),
    request_body = BulkRequest,
    responses(
        (status = 200, description = "Each operation's result, in order: 201 created, 200 updated or deleted (the risk as it was), or its problem (only with `atomic=false`).", body = BulkResults<'static, RiskDto<'static>>),
        (status = 400, description = "The request is invalid, or (atomic) operations failed and none was applied; `operations` lists the failing ones.", body = crate::error::BulkFailed, content_type = "application/problem+json"),
    ),
)]
async fn bulk_risks(
    state: web::Data<AppState>,
    caller: Authenticated,
    query: web::Query<BulkQuery>,
    JsonBody(request): JsonBody<BulkRequest>,
) -> Result<HttpResponse, ApiError> {
    let atomic = query.atomic()?;
    let (ops, operations) = bulk::read(request, "risk");
    let principal = caller.0;
    let results = state.run(|app| async move { app.risks.bulk_risks(&principal, operations, atomic).await }).await?;
    Ok(bulk::answer(&ops, &bulk::api_results(results), |risk| RiskDto::new(risk, true)))
}

/// A malformed id names no risk: 404, as a missing one.
fn risk_id(id: &str) -> Result<RiskId, ApiError> {
    Id::parse(id).map_err(|_| ApiError::not_found("risk"))
}
