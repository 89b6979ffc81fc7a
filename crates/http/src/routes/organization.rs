//! The caller's organization.

use actix_web::{HttpResponse, web};
use compliance_domain::organization::{NewOrganization, OrganizationChanges};
use serde::Serialize;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::conditional::{self, IfMatchHeader, IfNoneMatchHeader};
use crate::router::Routes;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, OrganizationDto, auth_type};
use crate::{ApiError, AppState, Authenticated, SignedInCaller};

pub fn configure(routes: &mut Routes) {
    routes.add(get_organization, __path_get_organization);
    routes.add(update_organization, __path_update_organization);
    routes.add(create_organization, __path_create_organization);
}

/// The organization plus `authType`, and `authenticatedUser` with session auth.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct OrganizationWithAuth<'a> {
    #[serde(flatten)]
    organization: OrganizationDto<'a>,
    #[schema(schema_with = crate::envelope::auth_type_schema)]
    auth_type: &'static str,
    /// Present with session auth only.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AuthenticatedUser, required = false)]
    authenticated_user: Option<AuthenticatedUser<'a>>,
}

/// Get the organization
///
/// The caller's organization.
#[utoipa::path(
    get, path = "/v1/organization", operation_id = "getOrganization", tag = "organization",
    params(IfNoneMatchHeader),
    responses((status = 200, description = "The organization (no envelope).", body = OrganizationDto<'static>)),
)]
async fn get_organization(
    state: web::Data<AppState>,
    caller: Authenticated,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let organization = state.run(|app| async move { app.organization.get(&principal).await }).await?;
    Ok(conditional::read(&if_none_match, &organization.etag(), &OrganizationDto::from(&organization)))
}

/// Update the organization
///
/// Changes the fields present; `null` clears a nullable field. `metadata` must be JSON text: the
/// schema's pattern admits only JSON nested at most one level deep, the service any JSON text.
/// `deviceManagerLabelId` and `hasAccess` may be sent with their current values, never changed
/// (403): the operator assigns device labels.
#[utoipa::path(
    patch, path = "/v1/organization", operation_id = "updateOrganization", tag = "organization",
    params(IfMatchHeader),
    request_body = OrganizationChanges,
    responses(
        (status = 200, description = "The updated organization with `authType` (and `authenticatedUser` with session auth).",
         body = OrganizationWithAuth),
        (status = 403, description = "The role may not change the organization, or the body changes `deviceManagerLabelId` or `hasAccess`, which the operator sets.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The slug is taken.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn update_organization(
    state: web::Data<AppState>,
    caller: Authenticated,
    if_match: IfMatchHeader,
    JsonBody(changes): JsonBody<OrganizationChanges>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let organization =
        state.run(|app| async move { app.organization.update(&principal, changes, &if_match.0).await }).await?;
    Ok(conditional::tagged(
        HttpResponse::Ok(),
        &organization.etag(),
        &OrganizationWithAuth {
            organization: OrganizationDto::from(&organization),
            auth_type: auth_type(&caller, AuthTypeStyle::Standard),
            authenticated_user: AuthenticatedUser::for_session(&caller),
        },
    ))
}

/// Create an organization
///
/// A signed-in user (a session; no `X-Organization-Id`) creates an organization and becomes its
/// `owner`. Allowed when the deployment sets `SELF_SERVICE_ORGANIZATIONS` (default true), else 403.
#[utoipa::path(
    post, path = "/v1/organizations", operation_id = "createOrganization", tag = "organization",
    request_body = NewOrganization,
    responses(
        (status = 201, description = "The new organization (no envelope).", body = OrganizationDto<'static>,
         headers(("ETag" = String, description = "The entity tag of the new state."))),
        (status = 403, description = "Self-service organizations are off, or the caller used an API key.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The slug given is taken.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn create_organization(
    state: web::Data<AppState>,
    caller: SignedInCaller,
    JsonBody(input): JsonBody<NewOrganization>,
) -> Result<HttpResponse, ApiError> {
    let caller = caller.0;
    let organization =
        state.run(|app| async move { app.organization.create_organization(&caller, input).await }).await?;
    Ok(conditional::tagged(HttpResponse::Created(), &organization.etag(), &OrganizationDto::from(&organization)))
}
