//! The signed-in user: `/v1/me` and their own sessions (`/v1/sessions`).

use actix_web::{HttpResponse, web};
use compliance_app::{Me, SessionView};
use compliance_domain::people::Session;
use compliance_domain::{OrganizationId, SessionId, Timestamp};
use serde::Serialize;
use utoipa::ToSchema;

use crate::router::Routes;
use crate::wire::UserDto;
use crate::{ApiError, AppState, SignedInCaller};

pub fn configure(routes: &mut Routes) {
    routes.add(get_me, __path_get_me);
    routes.add(list_sessions, __path_list_sessions);
    routes.add(delete_session, __path_delete_session);
}

/// One of the user's memberships.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MembershipDto<'a> {
    organization_id: &'a OrganizationId,
    /// The organization's name.
    name: &'a str,
    role: &'a str,
}

/// The user and where they are a member.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct MeDto<'a> {
    user: UserDto<'a>,
    /// Active memberships, oldest first; with an API key only its own organization's.
    memberships: Vec<MembershipDto<'a>>,
}

impl<'a> From<&'a Me> for MeDto<'a> {
    fn from(me: &'a Me) -> Self {
        Self {
            user: UserDto::from(&me.user),
            memberships: me
                .memberships
                .iter()
                .map(|m| MembershipDto {
                    organization_id: &m.member.organization_id,
                    name: &m.organization_name,
                    role: &m.member.role,
                })
                .collect(),
        }
    }
}

/// A session of the user (its token is never shown again).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct SessionDto<'a> {
    id: &'a SessionId,
    created_at: Timestamp,
    expires_at: Timestamp,
    /// The session this request came with.
    current: bool,
}

impl<'a> SessionDto<'a> {
    fn new(session: &'a Session, current: bool) -> Self {
        Self { id: &session.id, created_at: session.created_at, expires_at: session.expires_at, current }
    }
}

#[derive(Serialize, ToSchema)]
struct SessionList<'a> {
    /// Unexpired sessions, newest first.
    data: Vec<SessionDto<'a>>,
}

/// Who am I
///
/// The signed-in user and their memberships. A session needs no `X-Organization-Id` here; an API
/// key answers its maker, with its own organization's membership only.
#[utoipa::path(
    get, path = "/v1/me", operation_id = "getMe", tag = "sign-in",
    responses((status = 200, description = "The user and their memberships.", body = MeDto)),
)]
async fn get_me(state: web::Data<AppState>, caller: SignedInCaller) -> Result<HttpResponse, ApiError> {
    let caller = caller.0;
    let me = state.run(|app| async move { app.sessions.me(&caller).await }).await?;
    Ok(HttpResponse::Ok().json(MeDto::from(&me)))
}

/// List my sessions
///
/// The caller's own unexpired sessions, the current one marked.
#[utoipa::path(
    get, path = "/v1/sessions", operation_id = "listSessions", tag = "sign-in",
    responses((status = 200, description = "The sessions.", body = SessionList)),
)]
async fn list_sessions(state: web::Data<AppState>, caller: SignedInCaller) -> Result<HttpResponse, ApiError> {
    let caller = caller.0;
    let sessions: Vec<SessionView> = state.run(|app| async move { app.sessions.list(&caller).await }).await?;
    let data = sessions.iter().map(|view| SessionDto::new(&view.session, view.current)).collect();
    Ok(HttpResponse::Ok().json(SessionList { data }))
}

/// End a session
///
/// Ends one of the caller's sessions at once (signing out elsewhere). Another user's session is a
/// 404, as a missing one.
#[utoipa::path(
    delete, path = "/v1/sessions/{id}", operation_id = "deleteSession", tag = "sign-in",
    params(("id" = SessionId, Path, description = "The session's id; an id of another shape is a 404.")),
    responses(
        (status = 204, description = "The session ended."),
        (status = 404, description = "No such session of the caller.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn delete_session(
    state: web::Data<AppState>,
    caller: SignedInCaller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = SessionId::parse(&id).map_err(|_| ApiError::not_found("session"))?;
    let caller = caller.0;
    state.run(|app| async move { app.sessions.delete(&caller, &id).await }).await?;
    Ok(HttpResponse::NoContent().finish())
}
