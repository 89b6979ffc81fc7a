//! Invitations: `/v1/invitations` (owners and admins) and accepting one (the invited person).

use actix_web::{HttpResponse, web};
use compliance_app::IssuedInvitation;
use compliance_domain::invitation::{AcceptInvitation, Invitation, NewInvitation};
use compliance_domain::{Department, InvitationId, OrganizationId, Timestamp, UserId};
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use utoipa::ToSchema;

use crate::body::JsonBody;
use crate::conditional::{self, IfMatchHeader, IfNoneMatchHeader};
use crate::list_query::QueryShape;
use crate::paging::{PageQuery, encode};
use crate::router::Routes;
use crate::wire::MemberDto;
use crate::{ApiError, AppState, Authenticated, SignedInCaller};

pub fn configure(routes: &mut Routes) {
    routes.add(list_invitations, __path_list_invitations);
    routes.add(create_invitation, __path_create_invitation);
    routes.add(accept_invitation, __path_accept_invitation);
    routes.add(get_invitation, __path_get_invitation);
    routes.add(delete_invitation, __path_delete_invitation);
}

/// An invitation (its token is shown only when it is made).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct InvitationDto<'a> {
    id: &'a InvitationId,
    organization_id: &'a OrganizationId,
    email: &'a str,
    role: &'a str,
    department: Department,
    /// `pending`, `accepted` or `expired`.
    #[schema(schema_with = status_schema)]
    status: &'static str,
    invited_by: &'a UserId,
    created_at: Timestamp,
    expires_at: Timestamp,
    #[schema(required = true)]
    accepted_at: Option<Timestamp>,
    #[schema(required = true, value_type = Option<UserId>)]
    accepted_by: Option<&'a UserId>,
}

fn status_schema() -> utoipa::openapi::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(["pending", "accepted", "expired"]))
        .build()
}

impl<'a> InvitationDto<'a> {
    fn new(i: &'a Invitation, now: Timestamp) -> Self {
        Self {
            id: &i.id,
            organization_id: &i.organization_id,
            email: &i.email,
            role: &i.role,
            department: i.department,
            status: i.status_at(now).as_str(),
            invited_by: &i.invited_by,
            created_at: i.created_at,
            expires_at: i.expires_at,
            accepted_at: i.accepted_at,
            accepted_by: i.accepted_by.as_ref(),
        }
    }
}

/// A new invitation with the link that accepts it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct CreatedInvitation<'a> {
    #[serde(flatten)]
    invitation: InvitationDto<'a>,
    /// `{PUBLIC_URL}/invitations/accept?token=…`: the page of the front end that posts the token to
    /// `POST /v1/invitations/accept`. Shown only here; the token works once, for seven days by default.
    accept_url: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct InvitationList<'a> {
    data: Vec<InvitationDto<'a>>,
    /// The total number of invitations.
    count: u64,
    /// Where the next page starts; absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    next_cursor: Option<String>,
}

fn invitation_id(id: &str) -> Result<InvitationId, ApiError> {
    InvitationId::parse(id).map_err(|_| ApiError::not_found("invitation"))
}

/// Invite someone
///
/// Owners and admins invite a person by e-mail address with the role (and department) they get on
/// accepting. The answer's `acceptUrl` holds a single-use token (256 random bits, stored only as a
/// SHA-256) that expires after seven days by default (`INVITATION_TTL_SECONDS`).
#[utoipa::path(
    post, path = "/v1/invitations", operation_id = "createInvitation", tag = "invitations",
    request_body = NewInvitation,
    responses(
        (status = 201, description = "The invitation and its `acceptUrl`.", body = CreatedInvitation,
         headers(("ETag" = String, description = "The entity tag of the new invitation."))),
        (status = 403, description = "The caller is not an owner or admin.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn create_invitation(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewInvitation>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let IssuedInvitation { invitation, token } =
        state.run(|app| async move { app.invitations.create(&principal, input).await }).await?;
    let public_url = state.settings().public_url.trim_end_matches('/');
    let accept_url = format!("{public_url}/invitations/accept?token={}", token.expose_secret());
    let now = invitation.created_at;
    let body = CreatedInvitation { invitation: InvitationDto::new(&invitation, now), accept_url };
    Ok(conditional::tagged(HttpResponse::Created(), &invitation.etag_at(now), &body))
}

/// List invitations
///
/// The organization's invitations, newest first, with their status. Owners and admins only.
#[utoipa::path(
    get, path = "/v1/invitations", operation_id = "listInvitations", tag = "invitations",
    params(PageQuery),
    responses((status = 200, description = "The invitations.", body = InvitationList)),
)]
async fn list_invitations(
    state: web::Data<AppState>,
    caller: Authenticated,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, ApiError> {
    let (principal, page) = (caller.0, query.request(state.settings(), "invitations")?);
    let (invitations, now) = state
        .run(|app| async move { Ok((app.invitations.list(&principal, &page).await?, app.invitations.now())) })
        .await?;
    Ok(HttpResponse::Ok().json(InvitationList {
        data: invitations.items.iter().map(|i| InvitationDto::new(i, now)).collect(),
        count: invitations.total,
        next_cursor: invitations
            .next
            .as_ref()
            .map(|next| encode(next, &QueryShape::unfiltered("invitations").fingerprint())),
    }))
}

/// Get an invitation
#[utoipa::path(
    get, path = "/v1/invitations/{id}", operation_id = "getInvitation", tag = "invitations",
    params(("id" = InvitationId, Path, description = "The invitation's id; an id of another shape is a 404."), IfNoneMatchHeader),
    responses((status = 200, description = "The invitation.", body = InvitationDto)),
)]
async fn get_invitation(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, invitation_id(&id)?);
    let (invitation, now) = state
        .run(|app| async move { Ok((app.invitations.get(&principal, &id).await?, app.invitations.now())) })
        .await?;
    Ok(conditional::read(&if_none_match, &invitation.etag_at(now), &InvitationDto::new(&invitation, now)))
}

/// Withdraw an invitation
///
/// Its token stops working at once.
#[utoipa::path(
    delete, path = "/v1/invitations/{id}", operation_id = "deleteInvitation", tag = "invitations",
    params(("id" = InvitationId, Path, description = "The invitation's id; an id of another shape is a 404."), IfMatchHeader),
    responses((status = 204, description = "The invitation is gone.")),
)]
async fn delete_invitation(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id, if_match) = (caller.0, invitation_id(&id)?, if_match.0);
    state.run(|app| async move { app.invitations.delete(&principal, &id, &if_match).await }).await?;
    Ok(HttpResponse::NoContent().finish())
}

/// Accept an invitation
///
/// With a signed-in session (no `X-Organization-Id` needed) whose user's e-mail address is the
/// invitation's and verified by the identity provider: creates the membership.
#[utoipa::path(
    post, path = "/v1/invitations/accept", operation_id = "acceptInvitation", tag = "invitations",
    request_body = AcceptInvitation,
    responses(
        (status = 201, description = "The new membership.", body = MemberDto<'static>),
        (status = 403, description = "The invitation is for another (or an unverified) e-mail address, or the caller used an API key.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No invitation has this token.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The caller is already a member.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 410, description = "The invitation expired or was used.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn accept_invitation(
    state: web::Data<AppState>,
    caller: SignedInCaller,
    JsonBody(input): JsonBody<AcceptInvitation>,
) -> Result<HttpResponse, ApiError> {
    let (caller, token) = (caller.0, SecretString::from(input.token));
    let person = state.run(|app| async move { app.invitations.accept(&caller, &token).await }).await?;
    Ok(HttpResponse::Created().json(MemberDto::from(&person)))
}
