//! `/v1/policies`: list, create, read, change and delete the organization's policies.

use actix_web::{HttpResponse, web};
use compliance_app::Settings;
use compliance_domain::Department;
use compliance_domain::PolicyId;
use compliance_domain::policy::{NewPolicy, PolicyChanges};
use compliance_domain::policy::{PolicyFrequency, PolicyStatus};
use compliance_ports::{ListName, PolicyFilter, PolicyQuery, PolicySort};
use serde::Serialize;
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::conditional::{self, IfMatchHeader, IfNoneMatchHeader};
use crate::envelope::{PolicyWithAuth, auth_type_schema};
use crate::export::{BATCH_ROWS, Export, ExportFormat, FormatQuery, stream_list};
use crate::list_cache::{ListKey, items};
use crate::list_query::{AssigneeFilter, ListParams, QueryShape, SortField, SortParam, TimeParams};
use crate::paging::PageQuery;
use crate::path_ids::policy_id;
use crate::router::Routes;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, PolicyDto, auth_type};
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_policies, __path_list_policies);
    routes.add(create_policy, __path_create_policy);
    routes.add(export_policies, __path_export_policies);
    routes.add(get_policy, __path_get_policy);
    routes.add(update_policy, __path_update_policy);
    routes.add(delete_policy, __path_delete_policy);
}

/// `{data, nextCursor, authType, authenticatedUser}` of policies: the specification gives policy lists no `count`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct PolicyList<'a> {
    #[schema(value_type = Vec<PolicyDto>)]
    data: &'a RawValue,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<&'a str>,
    #[schema(schema_with = auth_type_schema)]
    auth_type: &'static str,
    authenticated_user: AuthenticatedUser<'a>,
}

/// What a delete answers: the message and what the policy was.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct PolicyDeleted<'a> {
    /// `Policy deleted successfully`
    message: &'static str,
    deleted_policy: DeletedPolicy<'a>,
    #[schema(schema_with = auth_type_schema)]
    auth_type: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AuthenticatedUser, required = false)]
    authenticated_user: Option<AuthenticatedUser<'a>>,
}

#[derive(Serialize, ToSchema)]
struct DeletedPolicy<'a> {
    id: &'a PolicyId,
    name: &'a str,
}

#[utoipa::path(
    get,
    path = "/v1/policies",
    tag = "policies",
    operation_id = "listPolicies",
    summary = "List the organization's policies",
    params(
        ("status" = Option<Vec<PolicyStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("frequency" = Option<Vec<PolicyFrequency>>, Query, description = "Any of these review frequencies."),
        ("department" = Option<Vec<Department>>, Query, description = "Any of these departments."),
        ("isArchived" = Option<bool>, Query, description = "`true` for archived policies only, `false` for the others."),
        ("assigneeId" = Option<Vec<AssigneeFilter>>, Query, description = "Assigned to any of these members (`mem_…`); `none` for unassigned."),
        TimeParams,
        SortParam<PolicySort>,
        PageQuery,
    ),
    responses((status = 200, description = "The matching policies, in the order asked (newest first by default).", body = PolicyList)),
)]
async fn list_policies(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (query, shape) = policy_query(params, state.settings())?;
    let principal = caller.0.clone();
    let key = ListKey::new(&principal, ListName::Policies, &shape, &query.page);
    let load =
        |app: std::sync::Arc<compliance_app::App>| async move { app.policies.list_policies(&principal, &query).await };
    let page = state.list_page(&caller, key, load, |page| items(page, PolicyDto::from)).await?;
    Ok(HttpResponse::Ok().json(PolicyList {
        data: page.data(),
        next_cursor: page.next_cursor(),
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::of(&caller),
    }))
}

/// The columns of a policies export: every field of a record as the list shows it.
const POLICY_COLUMNS: &[&str] = &[
    "id",
    "name",
    "description",
    "status",
    "content",
    "frequency",
    "department",
    "isRequiredToSign",
    "signedBy",
    "reviewDate",
    "isArchived",
    "createdAt",
    "updatedAt",
    "lastArchivedAt",
    "lastPublishedAt",
    "organizationId",
    "assigneeId",
    "approverId",
    "policyTemplateId",
    "currentVersion",
    "submittedBy",
    "changeNote",
    "rejectionReason",
    "libraryId",
    "libraryVersion",
];

#[utoipa::path(
    get,
    path = "/v1/policies/export",
    tag = "policies",
    operation_id = "exportPolicies",
    summary = "Export the organization's policies as CSV or JSON Lines",
    description = "Every record the list would show with the same parameters, streamed as one file.",
    params(
        ("status" = Option<Vec<PolicyStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("frequency" = Option<Vec<PolicyFrequency>>, Query, description = "Any of these review frequencies."),
        ("department" = Option<Vec<Department>>, Query, description = "Any of these departments."),
        ("isArchived" = Option<bool>, Query, description = "`true` for archived policies only, `false` for the others."),
        ("assigneeId" = Option<Vec<AssigneeFilter>>, Query, description = "Assigned to any of these members (`mem_…`); `none` for unassigned."),
        TimeParams,
        SortParam<PolicySort>,
        FormatQuery,
    ),
    responses((status = 200, description = "The policies, as an attachment.", content(
        (String = "text/csv"),
        (String = "application/x-ndjson"),
    ))),
)]
async fn export_policies(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (query, _) = policy_query(params, state.settings())?;
    let principal = caller.0;
    let row = |policy: &_| serde_json::to_value(PolicyDto::from(policy));
    let export = Export { format, name: "policies", columns: POLICY_COLUMNS, row };
    stream_list(state, export, move |app, after| {
        let (principal, query) = (principal.clone(), query.batch(BATCH_ROWS, after));
        async move { app.policies.list_policies(&principal, &query).await }
    })
    .await
}

impl SortField for PolicySort {
    const FIELDS: &'static [(&'static str, Self)] = &[
        ("createdAt", Self::CreatedAt),
        ("updatedAt", Self::UpdatedAt),
        ("name", Self::Name),
        ("status", Self::Status),
    ];
}

/// The query of `GET /v1/policies` (and of its export): its filters, then what every list shares.
pub(crate) fn policy_query(mut params: ListParams, settings: &Settings) -> Result<(PolicyQuery, QueryShape), ApiError> {
    let shape = params.shape("policies");
    let filter = PolicyFilter {
        status: params.enums("status")?,
        frequency: params.enums("frequency")?,
        department: params.enums("department")?,
        is_archived: params.flag("isArchived")?,
        assignee: params.assignees("assigneeId")?,
    };
    Ok((params.finish(filter, true, &shape, settings)?, shape))
}

#[utoipa::path(
    post,
    path = "/v1/policies",
    tag = "policies",
    operation_id = "createPolicy",
    summary = "Create a policy",
    request_body = NewPolicy,
    responses(
        (status = 201, description = "The new policy.", body = PolicyWithAuth, headers(("ETag" = String, description = "The entity tag of the new state."))),
        (status = 409, description = "`status: published` for a policy with an approver: it must be submitted for approval.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn create_policy(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewPolicy>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let policy = state.run(|app| async move { app.policies.create_policy(&principal, input).await }).await?;
    Ok(conditional::tagged(
        HttpResponse::Created(),
        &policy.etag(),
        &PolicyWithAuth {
            policy: PolicyDto::from(&policy),
            auth_type: auth_type(&caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(&caller),
        },
    ))
}

#[utoipa::path(
    get,
    path = "/v1/policies/{id}",
    tag = "policies",
    operation_id = "getPolicy",
    summary = "Get one policy",
    params(("id" = PolicyId, Path), IfNoneMatchHeader),
    responses((status = 200, description = "The policy.", body = PolicyDto)),
)]
async fn get_policy(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, policy_id(&id)?);
    let policy = state.run(|app| async move { app.policies.get_policy(&principal, &id).await }).await?;
    Ok(conditional::read(&if_none_match, &policy.etag(), &PolicyDto::from(&policy)))
}

#[utoipa::path(
    patch,
    path = "/v1/policies/{id}",
    tag = "policies",
    operation_id = "updatePolicy",
    summary = "Change a policy: only the fields sent change",
    params(("id" = PolicyId, Path), IfMatchHeader),
    request_body = PolicyChanges,
    responses(
        (status = 200, description = "The changed policy.", body = PolicyWithAuth),
        (status = 409, description = "`status: published` for a policy with an approver, content changed while it is pending approval, or the policy kept changing meanwhile.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn update_policy(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
    JsonBody(changes): JsonBody<PolicyChanges>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), policy_id(&id)?);
    let policy =
        state.run(|app| async move { app.policies.update_policy(&principal, &id, changes, &if_match.0).await }).await?;
    Ok(conditional::tagged(
        HttpResponse::Ok(),
        &policy.etag(),
        &PolicyWithAuth {
            policy: PolicyDto::from(&policy),
            auth_type: auth_type(&caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(&caller),
        },
    ))
}

#[utoipa::path(
    delete,
    path = "/v1/policies/{id}",
    tag = "policies",
    operation_id = "deletePolicy",
    summary = "Delete a policy",
    params(("id" = PolicyId, Path), IfMatchHeader),
    responses((status = 200, description = "What was deleted.", body = PolicyDeleted)),
)]
async fn delete_policy(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0.clone(), policy_id(&id)?);
    let policy = state.run(|app| async move { app.policies.delete_policy(&principal, &id, &if_match.0).await }).await?;
    Ok(HttpResponse::Ok().json(PolicyDeleted {
        message: "Policy deleted successfully",
        deleted_policy: DeletedPolicy { id: &policy.id, name: &policy.name },
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::for_session(&caller),
    }))
}
