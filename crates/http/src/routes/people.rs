//! People: the organization's members.

use std::sync::Arc;

use actix_web::{HttpResponse, web};
use compliance_app::{App, Settings};
use compliance_domain::MemberId;
use compliance_domain::access::Role;
use compliance_domain::people::MemberChanges;
use compliance_ports::{ListName, PersonFilter, PersonQuery, PersonSort};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::bulk::{self, BULK_BODY_LIMIT, BulkQuery, BulkRequest, BulkResults};
use crate::conditional::{self, IfMatchHeader, IfNoneMatchHeader};
use crate::envelope::auth_type_schema;
use crate::export::{BATCH_ROWS, Export, ExportFormat, FormatQuery, stream_list};
use crate::list_cache::{ListKey, items};
use crate::list_query::{CreatedParams, IncludeInactive, ListParams, QueryShape, RoleFilter, SortField, SortParam};
use crate::paging::PageQuery;
use crate::router::Routes;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, MemberDto, auth_type};
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_people, __path_list_people);
    routes.add(export_people, __path_export_people);
    routes.add(bulk_people, __path_bulk_people).body_limit(BULK_BODY_LIMIT);
    routes.add(get_person, __path_get_person);
    routes.add(update_person, __path_update_person);
}

/// `{data, count, nextCursor, authType, authenticatedUser}` of people.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MemberList<'a> {
    #[schema(value_type = Vec<MemberDto>)]
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

impl SortField for PersonSort {
    const FIELDS: &'static [(&'static str, Self)] =
        &[("createdAt", Self::CreatedAt), ("name", Self::Name), ("email", Self::Email)];
}

/// The query of `GET /v1/people`: `includeInactive`, the filters, then what every list shares
/// (members have no update time).
pub(crate) fn person_query(
    mut params: ListParams,
    settings: &Settings,
) -> Result<(bool, PersonQuery, QueryShape), ApiError> {
    let shape = params.shape("people");
    let include_inactive = IncludeInactive::read(params.single("includeInactive")?.as_deref())?;
    let role = params.texts("role")?;
    let role = role
        .iter()
        .map(|text| {
            Role::ALL.into_iter().find(|role| role.as_str() == text).ok_or_else(|| {
                ApiError::invalid_field("role", "must be one of `owner`, `admin`, `auditor`, `employee`")
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let filter = PersonFilter { role, is_active: params.flag("isActive")?, department: params.enums("department")? };
    Ok((include_inactive, params.finish(filter, false, &shape, settings)?, shape))
}

fn member_id(id: &str) -> Result<MemberId, ApiError> {
    MemberId::parse(id).map_err(|_| ApiError::not_found("person"))
}

/// List people
///
/// The organization's active members, newest first; `includeInactive=true` adds deactivated ones.
/// Paginated with `limit` and `cursor` (see the API guide).
#[utoipa::path(
    get, path = "/v1/people", operation_id = "listPeople", tag = "people",
    params(
        ("includeInactive" = Option<IncludeInactive>, Query, description = "`true` adds deactivated members (default `false`)."),
        ("role" = Option<Vec<RoleFilter>>, Query, description = "Holding any of these roles: `owner`, `admin`, `auditor`, `employee` (repeat the parameter)."),
        ("isActive" = Option<bool>, Query, description = "`true` for active members only, `false` for deactivated ones only (wins over `includeInactive`)."),
        ("department" = Option<Vec<compliance_domain::Department>>, Query, description = "Any of these departments."),
        CreatedParams,
        SortParam<PersonSort>,
        PageQuery,
    ),
    responses((status = 200, description = "The members.", body = MemberList)),
)]
async fn list_people(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (include_inactive, query, shape) = person_query(params, state.settings())?;
    let principal = caller.0.clone();
    let key = ListKey::new(&principal, ListName::People, &shape, &query.page).including_inactive(include_inactive);
    let load = |app: Arc<App>| async move { app.people.list(&principal, include_inactive, &query).await };
    let people = state.list_page(&caller, key, load, |page| items(page, MemberDto::from)).await?;
    Ok(HttpResponse::Ok().json(MemberList {
        data: people.data(),
        count: people.count(),
        next_cursor: people.next_cursor(),
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::of(&caller),
    }))
}

/// The columns of a people export: every field of a member as the list shows it (`user` as its
/// JSON text).
const PERSON_COLUMNS: &[&str] =
    &["id", "organizationId", "userId", "role", "department", "isActive", "deviceManagerLabelId", "createdAt", "user"];

/// Export people
///
/// Every member the list would show with the same parameters, streamed as one CSV or JSON Lines file.
#[utoipa::path(
    get, path = "/v1/people/export", operation_id = "exportPeople", tag = "people",
    params(
        ("includeInactive" = Option<IncludeInactive>, Query, description = "`true` adds deactivated members (default `false`)."),
        ("role" = Option<Vec<RoleFilter>>, Query, description = "Holding any of these roles: `owner`, `admin`, `auditor`, `employee` (repeat the parameter)."),
        ("isActive" = Option<bool>, Query, description = "`true` for active members only, `false` for deactivated ones only (wins over `includeInactive`)."),
        ("department" = Option<Vec<compliance_domain::Department>>, Query, description = "Any of these departments."),
        CreatedParams,
        SortParam<PersonSort>,
        FormatQuery,
    ),
    responses((status = 200, description = "The members, as an attachment.", content(
        (String = "text/csv"),
        (String = "application/x-ndjson"),
    ))),
)]
async fn export_people(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (include_inactive, query, _) = person_query(params, state.settings())?;
    let principal = caller.0;
    let row = |person: &_| serde_json::to_value(MemberDto::from(person));
    let export = Export { format, name: "people", columns: PERSON_COLUMNS, row };
    stream_list(state, export, move |app, after| {
        let (principal, query) = (principal.clone(), query.batch(BATCH_ROWS, after));
        async move { app.people.list(&principal, include_inactive, &query).await }
    })
    .await
}

/// Get a person
///
/// One member, deactivated or not.
#[utoipa::path(
    get, path = "/v1/people/{id}", operation_id = "getPerson", tag = "people",
    params(("id" = MemberId, Path, description = "The member's id; an id of another shape is a 404."), IfNoneMatchHeader),
    responses((status = 200, description = "The member (no envelope).", body = MemberDto<'static>)),
)]
async fn get_person(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, member_id(&id)?);
    let person = state.run(|app| async move { app.people.get(&principal, &id).await }).await?;
    Ok(conditional::read(&if_none_match, &person.etag(), &MemberDto::from(&person)))
}

/// Change people in bulk
///
/// Up to 500 operations: `update` takes an id and the body `PATCH /v1/people/{id}` takes
/// (`isActive: false` deactivates). People join by accepting an invitation and are never deleted,
/// so a `create` or `delete` operation fails (400 naming `op`). By default all or nothing: every operation is
/// checked, then all are applied in one transaction, or none and a 400 lists each failing
/// operation by index. With `atomic=false` they are applied one by one, each with its own result.
#[utoipa::path(
    post, path = "/v1/people/bulk", operation_id = "bulkPeople", tag = "people",
    params(BulkQuery),
    request_body = BulkRequest,
    responses(
        (status = 200, description = "Each operation's result, in order: 201 created, 200 updated, or its problem (only with `atomic=false`).", body = BulkResults<'static, MemberDto<'static>>),
        (status = 400, description = "The request is invalid, or (atomic) operations failed and none was applied; `operations` lists the failing ones.", body = crate::error::BulkFailed, content_type = "application/problem+json"),
    ),
)]
async fn bulk_people(
    state: web::Data<AppState>,
    caller: Authenticated,
    query: web::Query<BulkQuery>,
    JsonBody(request): JsonBody<BulkRequest>,
) -> Result<HttpResponse, ApiError> {
    let atomic = query.atomic()?;
    let (ops, operations) = bulk::read(request, "person");
    let principal = caller.0;
    let results = state.run(|app| async move { app.people.bulk_people(&principal, operations, atomic).await }).await?;
    Ok(bulk::answer(&ops, &bulk::api_results(results), MemberDto::from))
}

/// Update a person
///
/// Changes the fields present; `isActive: false` deactivates the member. `userId` and
/// `deviceManagerLabelId` may be sent with their current values, never changed: another user
/// joins by accepting an invitation (a different `userId` is a 400), and the operator assigns
/// device labels (a different `deviceManagerLabelId` is a 403).
#[utoipa::path(
    patch, path = "/v1/people/{id}", operation_id = "updatePerson", tag = "people",
    params(("id" = MemberId, Path, description = "The member's id; an id of another shape is a 404."), IfMatchHeader),
    request_body = MemberChanges,
    responses(
        (status = 200, description = "The updated member (no envelope).", body = MemberDto<'static>),
        (status = 403, description = "The role may not change people, or the body changes `deviceManagerLabelId`, which the operator assigns.",
         body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn update_person(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(changes): JsonBody<MemberChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, member_id(&id)?);
    let person = state.run(|app| async move { app.people.update(&principal, &id, changes, &if_match.0).await }).await?;
    Ok(conditional::tagged(HttpResponse::Ok(), &person.etag(), &MemberDto::from(&person)))
}
