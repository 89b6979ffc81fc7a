//! `/v1/vendors`: list, create, read, change and delete the organization's vendors.

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::vendor::{NewVendor, VendorChanges};
use compliance_domain::vendor::{VendorCategory, VendorStatus};
use compliance_domain::{Id, VendorId};
use compliance_ports::{ListName, VendorFilter, VendorQuery, VendorSort};
use serde::Serialize;
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
use crate::wire::{AuthTypeStyle, AuthenticatedUser, VendorDto, auth_type};
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_vendors, __path_list_vendors);
    routes.add(create_vendor, __path_create_vendor);
    routes.add(export_vendors, __path_export_vendors);
    routes.add(bulk_vendors, __path_bulk_vendors).body_limit(BULK_BODY_LIMIT);
    routes.add(get_vendor, __path_get_vendor);
    routes.add(update_vendor, __path_update_vendor);
    routes.add(delete_vendor, __path_delete_vendor);
}

/// `{data, count, nextCursor, authType, authenticatedUser}` of vendors.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct VendorList<'a> {
    #[schema(value_type = Vec<VendorDto>)]
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

/// A vendor with how the request authenticated; `authenticatedUser` for sessions only.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct VendorWithAuth<'a> {
    #[serde(flatten)]
    vendor: VendorDto<'a>,
    #[schema(schema_with = auth_type_schema)]
    auth_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AuthenticatedUser, required = false)]
    authenticated_user: Option<AuthenticatedUser<'a>>,
}

/// What a delete answers: the message and what the vendor was.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct VendorDeleted<'a> {
    /// `Vendor deleted successfully`
    message: &'static str,
    deleted_vendor: DeletedVendor<'a>,
    #[schema(schema_with = auth_type_schema)]
    auth_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AuthenticatedUser, required = false)]
    authenticated_user: Option<AuthenticatedUser<'a>>,
}

#[derive(Serialize, ToSchema)]
struct DeletedVendor<'a> {
    id: &'a VendorId,
    name: &'a str,
}

#[utoipa::path(
    get,
    path = "/v1/vendors",
    tag = "vendors",
    operation_id = "listVendors",
    summary = "List the organization's vendors",
    params(
        ("status" = Option<Vec<VendorStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("category" = Option<Vec<VendorCategory>>, Query, description = "Any of these categories."),
        ("assigneeId" = Option<Vec<AssigneeFilter>>, Query, description = "Assigned to any of these members (`mem_…`); `none` for unassigned."),
        TimeParams,
        SortParam<VendorSort>,
        PageQuery,
    ),
    responses((status = 200, description = "The matching vendors, in the order asked (newest first by default).", body = VendorList)),
)]
async fn list_vendors(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (query, shape) = vendor_query(params, state.settings())?;
    let principal = caller.0.clone();
    let key = ListKey::new(&principal, ListName::Vendors, &shape, &query.page);
    let load =
        |app: std::sync::Arc<compliance_app::App>| async move { app.vendors.list_vendors(&principal, &query).await };
    let page = state.list_page(&caller, key, load, |page| items(page, |vendor| VendorDto::new(vendor, false))).await?;
    Ok(HttpResponse::Ok().json(VendorList {
        data: page.data(),
        count: page.count(),
        next_cursor: page.next_cursor(),
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::of(&caller),
    }))
}

/// The columns of a vendors export: every field of a record as `GET /v1/vendors/{id}` shows it.
const VENDOR_COLUMNS: &[&str] = &[
    "id",
    "name",
    "description",
    "category",
    "status",
    "inherentProbability",
    "inherentImpact",
    "residualProbability",
    "residualImpact",
    "website",
    "assigneeId",
    "organizationId",
    "createdAt",
    "updatedAt",
];

#[utoipa::path(
    get,
    path = "/v1/vendors/export",
    tag = "vendors",
    operation_id = "exportVendors",
    summary = "Export the organization's vendors as CSV or JSON Lines",
    description = "Every record the list would show with the same parameters, streamed as one file.",
    params(
        ("status" = Option<Vec<VendorStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("category" = Option<Vec<VendorCategory>>, Query, description = "Any of these categories."),
        ("assigneeId" = Option<Vec<AssigneeFilter>>, Query, description = "Assigned to any of these members (`mem_…`); `none` for unassigned."),
        TimeParams,
        SortParam<VendorSort>,
        FormatQuery,
    ),
    responses((status = 200, description = "The vendors, as an attachment.", content(
        (String = "text/csv"),
        (String = "application/x-ndjson"),
    ))),
)]
async fn export_vendors(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (query, _) = vendor_query(params, state.settings())?;
    let principal = caller.0;
    let row = |vendor: &_| serde_json::to_value(VendorDto::new(vendor, true));
    let export = Export { format, name: "vendors", columns: VENDOR_COLUMNS, row };
    stream_list(state, export, move |app, after| {
        let (principal, query) = (principal.clone(), query.batch(BATCH_ROWS, after));
        async move { app.vendors.list_vendors(&principal, &query).await }
    })
    .await
}

impl SortField for VendorSort {
    const FIELDS: &'static [(&'static str, Self)] = &[
        ("createdAt", Self::CreatedAt),
        ("updatedAt", Self::UpdatedAt),
        ("name", Self::Name),
        ("status", Self::Status),
    ];
}

/// The query of `GET /v1/vendors` (and of its export): its filters, then what every list shares.
pub(crate) fn vendor_query(mut params: ListParams, settings: &Settings) -> Result<(VendorQuery, QueryShape), ApiError> {
    let shape = params.shape("vendors");
    let filter = VendorFilter {
        status: params.enums("status")?,
        category: params.enums("category")?,
        assignee: params.assignees("assigneeId")?,
    };
    Ok((params.finish(filter, true, &shape, settings)?, shape))
}

#[utoipa::path(
    post,
    path = "/v1/vendors",
    tag = "vendors",
    operation_id = "createVendor",
    summary = "Create a vendor",
    request_body = NewVendor,
    responses((status = 201, description = "The new vendor.", body = VendorWithAuth, headers(("ETag" = String, description = "The entity tag of the new state.")))),
)]
async fn create_vendor(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewVendor>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let vendor = state.run(|app| async move { app.vendors.create_vendor(&principal, input).await }).await?;
    Ok(conditional::tagged(
        HttpResponse::Created(),
        &vendor.etag(),
        &VendorWithAuth {
            vendor: VendorDto::new(&vendor, true),
            auth_type: auth_type(&caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(&caller),
        },
    ))
}

#[utoipa::path(
    get,
    path = "/v1/vendors/{id}",
    tag = "vendors",
    operation_id = "getVendor",
    summary = "Get one vendor",
    params(("id" = VendorId, Path), IfNoneMatchHeader),
    responses((status = 200, description = "The vendor.", body = VendorDto)),
)]
async fn get_vendor(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, vendor_id(&id)?);
    let vendor = state.run(|app| async move { app.vendors.get_vendor(&principal, &id).await }).await?;
    Ok(conditional::read(&if_none_match, &vendor.etag(), &VendorDto::new(&vendor, true)))
}

#[utoipa::path(
    patch,
    path = "/v1/vendors/{id}",
    tag = "vendors",
    operation_id = "updateVendor",
    summary = "Change a vendor: only the fields sent change",
    params(("id" = VendorId, Path), IfMatchHeader),
    request_body = VendorChanges,
    responses((status = 200, description = "The changed vendor.", body = VendorWithAuth)),
)]
async fn update_vendor(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(changes): JsonBody<VendorChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), vendor_id(&id)?);
    let vendor =
        state.run(|app| async move { app.vendors.update_vendor(&principal, &id, changes, &if_match.0).await }).await?;
    Ok(conditional::tagged(
        HttpResponse::Ok(),
        &vendor.etag(),
        &VendorWithAuth {
            vendor: VendorDto::new(&vendor, true),
            auth_type: auth_type(&caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(&caller),
        },
    ))
}

#[utoipa::path(
    delete,
    path = "/v1/vendors/{id}",
    tag = "vendors",
    operation_id = "deleteVendor",
    summary = "Delete a vendor",
    params(("id" = VendorId, Path), IfMatchHeader),
    responses((status = 200, description = "What was deleted.", body = VendorDeleted)),
)]
async fn delete_vendor(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), vendor_id(&id)?);
    let vendor = state.run(|app| async move { app.vendors.delete_vendor(&principal, &id, &if_match.0).await }).await?;
    Ok(HttpResponse::Ok().json(VendorDeleted {
        message: "Vendor deleted successfully",
        deleted_vendor: DeletedVendor { id: &vendor.id, name: &vendor.name },
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::for_session(&caller),
    }))
}

#[utoipa::path(
    post,
    path = "/v1/vendors/bulk",
    tag = "vendors",
    operation_id = "bulkVendors",
    summary = "Create, change and delete up to 500 vendors in one request",
    description = "Each operation's body is the body `POST /v1/vendors` (create) or `PATCH /v1/vendors/{id}` (update) \
                   takes. By default all or nothing: every operation is checked, then all are applied in one \
                   transaction, or none and a 400 lists each failing operation by index. With `atomic=false` they \
                   are applied one by one and each answers its own result.",
    params(BulkQuery),
    request_body = BulkRequest,
    responses(
        (status = 200, description = "Each operation's result, in order: 201 created, 200 updated or deleted (the vendor as it was), or its problem (only with `atomic=false`).", body = BulkResults<'static, VendorDto<'static>>),
        (status = 400, description = "The request is invalid, or (atomic) operations failed and none was applied; `operations` lists the failing ones.", body = crate::error::BulkFailed, content_type = "application/problem+json"),
    ),
)]
async fn bulk_vendors(
    state: web::Data<AppState>,
    caller: Authenticated,
    query: web::Query<BulkQuery>,
    JsonBody(request): JsonBody<BulkRequest>,
) -> Result<HttpResponse, ApiError> {
    let atomic = query.atomic()?;
    let (ops, operations) = bulk::read(request, "vendor");
    let principal = caller.0;
    let results =
        state.run(|app| async move { app.vendors.bulk_vendors(&principal, operations, atomic).await }).await?;
    Ok(bulk::answer(&ops, &bulk::api_results(results), |vendor| VendorDto::new(vendor, true)))
}

/// A malformed id names no vendor: 404, as a missing one.
fn vendor_id(id: &str) -> Result<VendorId, ApiError> {
    Id::parse(id).map_err(|_| ApiError::not_found("vendor"))
}
