//! Integrations: providers, OAuth apps, the OAuth flow and connections (docs/integrations.md).

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use compliance_app::integrations::{CheckReport, ConnectionView, OAuthAppView, ProviderView};
use compliance_app::integrations::{NewConnection, OAuthAppInput, StartOAuth, invalid_state};
use compliance_app::{Credentials, Settings};
use compliance_domain::ConnectionId;
use compliance_domain::integration::ConnectionStatus;
use compliance_ports::{ConnectionFilter, ConnectionQuery, ConnectionSort};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::SESSION_COOKIE;
use crate::body::JsonBody;
use crate::conditional::{self, IfMatchHeader, IfNoneMatchHeader};
use crate::export::{BATCH_ROWS, Export, ExportFormat, FormatQuery};
use crate::list_query::{ListParams, QueryShape, SortField, SortParam, TextFilter, TimeParams};
use crate::paging::PageQuery;
use crate::path_ids::SlugPath;
use crate::router::Routes;
use crate::wire::{AuthTypeStyle, AuthenticatedUser, auth_type};
use crate::{ApiError, AppState, Authenticated};

pub fn configure(routes: &mut Routes) {
    routes.add(list_providers, __path_list_providers);
    routes.add(get_provider, __path_get_provider);
    routes.add(get_oauth_app, __path_get_oauth_app);
    routes.add(put_oauth_app, __path_put_oauth_app);
    routes.add(delete_oauth_app, __path_delete_oauth_app);
    routes.add(start_oauth, __path_start_oauth);
    routes.add(oauth_callback, __path_oauth_callback);
    routes.add(list_connections, __path_list_connections);
    routes.add(create_connection, __path_create_connection);
    routes.add(export_connections, __path_export_connections);
    routes.add(get_connection, __path_get_connection);
    routes.add(delete_connection, __path_delete_connection);
    routes.add(check_connection, __path_check_connection);
}

/// `{data, count, authType, authenticatedUser}` of the providers.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ProviderList<'a> {
    data: Vec<ProviderView>,
    count: usize,
    #[schema(schema_with = crate::envelope::auth_type_schema)]
    auth_type: &'static str,
    authenticated_user: AuthenticatedUser<'a>,
}

/// `{data, count, authType, authenticatedUser}` of the connections.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct ConnectionList<'a> {
    data: Vec<ConnectionView>,
    /// The total number of matching connections (across all pages).
    count: u64,
    /// Where the next page starts (pass it as `cursor`); absent on the last page.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    next_cursor: Option<String>,
    #[schema(schema_with = crate::envelope::auth_type_schema)]
    auth_type: &'static str,
    authenticated_user: AuthenticatedUser<'a>,
}

/// List the providers, sorted by slug.
#[utoipa::path(
    get, path = "/v1/integrations/providers", operation_id = "listProviders", tag = "integrations",
    responses((status = 200, description = "Every provider.", body = ProviderList)),
)]
async fn list_providers(state: web::Data<AppState>, caller: Authenticated) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let providers = state.run(|app| async move { app.integrations.list_providers(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(ProviderList {
        count: providers.len(),
        data: providers,
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::of(&caller),
    }))
}

/// Get a provider.
#[utoipa::path(
    get, path = "/v1/integrations/providers/{slug}", operation_id = "getProvider", tag = "integrations",
    params(SlugPath, IfNoneMatchHeader),
    responses((status = 200, description = "The provider.", body = ProviderView)),
)]
async fn get_provider(
    state: web::Data<AppState>,
    caller: Authenticated,
    slug: web::Path<SlugPath>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, slug) = (caller.0, slug.into_inner().slug);
    let provider = state.run(|app| async move { app.integrations.get_provider(&principal, &slug).await }).await?;
    Ok(conditional::read(&if_none_match, &provider.etag(), &provider))
}

/// Get the organization's OAuth app for an `oauth2` provider.
#[utoipa::path(
    get, path = "/v1/integrations/oauth-apps/{slug}", operation_id = "getOAuthApp", tag = "integrations",
    params(SlugPath, IfNoneMatchHeader),
    responses(
        (status = 200, description = "The OAuth app; the client secret is never returned.", body = OAuthAppView),
        (status = 400, description = "The provider is not an `oauth2` provider (`providerSlug`).", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such provider, or no OAuth app is configured for it.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn get_oauth_app(
    state: web::Data<AppState>,
    caller: Authenticated,
    slug: web::Path<SlugPath>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, slug) = (caller.0, slug.into_inner().slug);
    let app = state.run(|app| async move { app.integrations.get_oauth_app(&principal, &slug).await }).await?;
    Ok(conditional::read(&if_none_match, &app.etag(), &app))
}

/// Configure the organization's OAuth app for an `oauth2` provider (administrators).
///
/// Only an owner or admin of the organization may do this (403 otherwise). With `If-Match`, it
/// replaces only the app of that tag; a first app is configured only without it (412 otherwise).
#[utoipa::path(
    put, path = "/v1/integrations/oauth-apps/{slug}", operation_id = "putOAuthApp", tag = "integrations",
    params(SlugPath, IfMatchHeader),
    request_body = OAuthAppInput,
    responses((status = 200, description = "The OAuth app as stored; the client secret is never returned.", body = OAuthAppView)),
)]
async fn put_oauth_app(
    state: web::Data<AppState>,
    caller: Authenticated,
    slug: web::Path<SlugPath>,
    if_match: IfMatchHeader,
    JsonBody(input): JsonBody<OAuthAppInput>,
) -> Result<HttpResponse, ApiError> {
    let (principal, slug, if_match) = (caller.0, slug.into_inner().slug, if_match.0);
    let app = state
        .run(|app| async move { app.integrations.put_oauth_app(&principal, &slug, input, &if_match).await })
        .await?;
    Ok(conditional::tagged(HttpResponse::Ok(), &app.etag(), &app))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct OAuthAppRemoved {
    /// `OAuth app removed`.
    #[schema(value_type = String, examples("OAuth app removed"))]
    message: &'static str,
    #[schema(schema_with = compliance_app::integrations::openapi::slug)]
    provider_slug: String,
}

/// Remove the organization's OAuth app for an `oauth2` provider (administrators).
///
/// Existing connections stay; their next refresh or check reports that the app is missing.
#[utoipa::path(
    delete, path = "/v1/integrations/oauth-apps/{slug}", operation_id = "deleteOAuthApp", tag = "integrations",
    params(SlugPath, IfMatchHeader),
    responses(
        (status = 200, description = "The OAuth app was removed.", body = OAuthAppRemoved),
        (status = 400, description = "The provider is not an `oauth2` provider (`providerSlug`).", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 404, description = "No such provider, or no OAuth app was configured for it.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn delete_oauth_app(
    state: web::Data<AppState>,
    caller: Authenticated,
    slug: web::Path<SlugPath>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, provider_slug, if_match) = (caller.0, slug.into_inner().slug, if_match.0);
    let slug = provider_slug.clone();
    state.run(|app| async move { app.integrations.delete_oauth_app(&principal, &slug, &if_match).await }).await?;
    Ok(HttpResponse::Ok().json(OAuthAppRemoved { message: "OAuth app removed", provider_slug }))
}

/// Where to send the browser.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
struct AuthorizationUrl {
    authorization_url: String,
}

/// Start connecting an `oauth2` provider.
///
/// Answers the provider's authorization URL to send the browser to; the provider sends it back to
/// `GET /v1/integrations/oauth/callback`, which needs the same user's `session_token` cookie.
#[utoipa::path(
    post, path = "/v1/integrations/oauth/start", operation_id = "startOAuth", tag = "integrations",
    request_body = StartOAuth,
    responses(
        (status = 200, description = "The authorization URL.", body = AuthorizationUrl),
        (status = 404, description = "No provider has this `providerSlug`.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (
            status = 412,
            description = "The organization has no OAuth app for the provider: the problem adds `setupInstructions` and `createAppUrl` (each `null` when the manifest has none).",
            body = crate::openapi::SetupRequired, content_type = "application/problem+json",
        ),
    ),
)]
async fn start_oauth(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<StartOAuth>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let authorization_url =
        state.run(|app| async move { app.integrations.start_oauth(&principal, input).await }).await?;
    Ok(HttpResponse::Ok().json(AuthorizationUrl { authorization_url }))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct CallbackQuery {
    /// The provider's authorization code.
    code: Option<String>,
    /// The state `startOAuth` put into the authorization URL; missing, unknown, expired, used or
    /// another user's is a 400 on field `state`.
    state: Option<String>,
    /// The provider's error code, e.g. `access_denied`.
    error: Option<String>,
}

/// Finish connecting an `oauth2` provider (the provider sends the browser here).
///
/// The provider sends the browser here. The session cookie says who (the user who started); the
/// state says which organization and provider, so no `X-Organization-Id` is needed. See
/// docs/integrations.md for every outcome.
#[utoipa::path(
    get, path = "/v1/integrations/oauth/callback", operation_id = "oauthCallback", tag = "integrations",
    security(("session" = [])),
    params(CallbackQuery),
    responses(
        (
            status = 303,
            description = "To the `redirectUrl` given at start (default: the provider's connect page) with `provider` and `status=connected&connectionId=…`, or `status=error&error=<code>` (`access_denied`, …, `token_exchange_failed`, `oauth_app_missing`, `missing_code`, `connection_changed`).",
            headers(("Location" = String, description = "Where the browser goes next.")),
        ),
        (status = 400, description = "The state is missing, unknown, expired, already used, or was started by another user or organization (title `Invalid OAuth state`, field `state`); or the query is malformed. The session is authenticated before the state is taken: a refused attempt leaves the state to the user who started.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 401, description = "No `session_token` cookie.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 404, description = "The state's provider is no longer offered.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn oauth_callback(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<CallbackQuery>,
) -> Result<HttpResponse, ApiError> {
    let CallbackQuery { code, state: presented, error } = query.into_inner();
    let token = req
        .cookie(SESSION_COOKIE)
        .map(|c| SecretString::from(c.value().to_owned()))
        .ok_or_else(|| ApiError::unauthenticated("the OAuth callback needs the session_token cookie of who started"))?;
    // Authenticate before the state is taken: a caller who cannot (or another user) leaves it for
    // the user who started.
    let read = presented.clone();
    let target = state.run(|app| async move { app.integrations.state_for(read.as_deref()).await }).await?;
    let organization = Some(target.organization_id.to_string());
    let principal = state
        .run(|app| async move { app.auth.authenticate(Credentials::Session { token, organization }).await })
        .await
        .map_err(|error| match error.status() {
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                invalid_state(&target.provider, "the session may not act for the state's organization").into()
            }
            _ => error,
        })?;
    let taker = principal.clone();
    let pending =
        state.run(|app| async move { app.integrations.take_state(&taker, presented.as_deref()).await }).await?;
    let code = code.map(SecretString::from);
    let redirect =
        state.run(|app| async move { app.integrations.complete_oauth(&principal, pending, code, error).await }).await?;
    Ok(HttpResponse::SeeOther().insert_header((header::LOCATION, redirect.0)).finish())
}

/// List the organization's connections, newest first by default (disconnected ones included).
#[utoipa::path(
    get, path = "/v1/integrations/connections", operation_id = "listConnections", tag = "integrations",
    params(
        ("status" = Option<Vec<ConnectionStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("provider" = Option<Vec<TextFilter>>, Query, description = "Any of these provider slugs."),
        TimeParams,
        SortParam<ConnectionSort>,
        PageQuery,
    ),
    responses((status = 200, description = "The matching connections of the organization.", body = ConnectionList)),
)]
async fn list_connections(
    state: web::Data<AppState>,
    caller: Authenticated,
    params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let (query, shape) = connection_query(params, state.settings())?;
    let principal = caller.0.clone();
    let page = state.run(|app| async move { app.integrations.list_connections(&principal, &query).await }).await?;
    Ok(HttpResponse::Ok().json(ConnectionList {
        count: page.total,
        next_cursor: page.next.as_ref().map(|next| crate::paging::encode(next, &shape.fingerprint())),
        data: page.items,
        auth_type: auth_type(&caller, AuthTypeStyle::Standard),
        authenticated_user: AuthenticatedUser::of(&caller),
    }))
}

/// The columns of a connections export: every field of a connection as the list shows it.
const CONNECTION_COLUMNS: &[&str] = &[
    "id",
    "providerSlug",
    "providerName",
    "authType",
    "status",
    "createdBy",
    "createdAt",
    "updatedAt",
    "connectedAt",
    "disconnectedAt",
    "tokenExpiresAt",
    "lastCheckedAt",
    "lastError",
];

/// Export the organization's connections as CSV or JSON Lines (every connection the list would
/// show with the same parameters).
#[utoipa::path(
    get, path = "/v1/integrations/connections/export", operation_id = "exportConnections", tag = "integrations",
    params(
        ("status" = Option<Vec<ConnectionStatus>>, Query, description = "Any of these statuses (repeat the parameter)."),
        ("provider" = Option<Vec<TextFilter>>, Query, description = "Any of these provider slugs."),
        TimeParams,
        SortParam<ConnectionSort>,
        FormatQuery,
    ),
    responses((status = 200, description = "The connections, as an attachment.", content(
        (String = "text/csv"),
        (String = "application/x-ndjson"),
    ))),
)]
async fn export_connections(
    state: web::Data<AppState>,
    caller: Authenticated,
    mut params: ListParams,
) -> Result<HttpResponse, ApiError> {
    let format = ExportFormat::take(&mut params)?;
    let (query, _) = connection_query(params, state.settings())?;
    let principal = caller.0;
    let load = move |state: web::Data<AppState>, after| {
        let (principal, query) = (principal.clone(), query.batch(BATCH_ROWS, after));
        async move { state.run(|app| async move { app.integrations.list_connections(&principal, &query).await }).await }
    };
    let first = load(state.clone(), None).await?;
    let export = Export {
        format,
        name: "connections",
        columns: CONNECTION_COLUMNS,
        row: |connection: &ConnectionView| serde_json::to_value(connection),
    };
    Ok(crate::export::respond(export, first, move |after| load(state.clone(), Some(after))))
}

impl SortField for ConnectionSort {
    const FIELDS: &'static [(&'static str, Self)] = &[
        ("createdAt", Self::CreatedAt),
        ("updatedAt", Self::UpdatedAt),
        ("provider", Self::Provider),
        ("status", Self::Status),
    ];
}

/// The query of `GET /v1/integrations/connections`: the filters, then what every list shares.
pub(crate) fn connection_query(
    mut params: ListParams,
    settings: &Settings,
) -> Result<(ConnectionQuery, QueryShape), ApiError> {
    let shape = params.shape("connections");
    let filter = ConnectionFilter { status: params.enums("status")?, provider: params.texts("provider")? };
    Ok((params.finish(filter, true, &shape, settings)?, shape))
}

/// Connect an `api_key`, `basic` or `custom` provider with its credential values.
#[utoipa::path(
    post, path = "/v1/integrations/connections", operation_id = "createConnection", tag = "integrations",
    request_body = NewConnection,
    responses(
        (status = 201, description = "The connection, `active`.", body = ConnectionView,
         headers(("ETag" = String, description = "The entity tag of the new state."))),
        (status = 404, description = "No provider has this `providerSlug`.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The organization already has a live (not disconnected) connection to the provider.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn create_connection(
    state: web::Data<AppState>,
    caller: Authenticated,
    JsonBody(input): JsonBody<NewConnection>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let connection =
        state.run(|app| async move { app.integrations.create_connection(&principal, input).await }).await?;
    Ok(conditional::tagged(HttpResponse::Created(), &connection.etag(), &connection))
}

/// Get a connection.
#[utoipa::path(
    get, path = "/v1/integrations/connections/{id}", operation_id = "getConnection", tag = "integrations",
    params(("id" = ConnectionId, Path, description = "The connection; an id of another organization or of none is a 404."), IfNoneMatchHeader),
    responses((status = 200, description = "The connection.", body = ConnectionView)),
)]
async fn get_connection(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_none_match: IfNoneMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, id.into_inner());
    let connection = state.run(|app| async move { app.integrations.get_connection(&principal, &id).await }).await?;
    Ok(conditional::read(&if_none_match, &connection.etag(), &connection))
}

#[derive(Serialize, ToSchema)]
#[schema(as = ConnectionDisconnected)]
struct DisconnectedBody {
    /// `Connection disconnected`.
    #[schema(value_type = String, examples("Connection disconnected"))]
    message: &'static str,
    #[serde(flatten)]
    outcome: compliance_app::integrations::Disconnected,
}

/// Disconnect: destroy the credentials and tokens, and revoke the tokens where the provider allows.
///
/// Disconnecting a disconnected connection answers the same, with `revocation: "not_supported"`.
#[utoipa::path(
    delete, path = "/v1/integrations/connections/{id}", operation_id = "deleteConnection", tag = "integrations",
    params(("id" = ConnectionId, Path, description = "The connection; an id of another organization or of none is a 404."), IfMatchHeader),
    responses(
        (status = 200, description = "The connection, `disconnected`, and what became of its tokens.", body = DisconnectedBody),
        (status = 409, description = "The connection kept changing during the disconnect; try again.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn delete_connection(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
    if_match: IfMatchHeader,
) -> Result<HttpResponse, ApiError> {
    let (principal, id, if_match) = (caller.0, id.into_inner(), if_match.0);
    let outcome = state
        .run(|app| async move { app.integrations.disconnect_connection(&principal, &id, &if_match).await })
        .await?;
    // The connection stays, disconnected: its new tag comes along, as a change's would.
    let tag = outcome.connection.etag();
    Ok(conditional::tagged(HttpResponse::Ok(), &tag, &DisconnectedBody { message: "Connection disconnected", outcome }))
}

/// Check a connection with the provider's `verify` request.
///
/// A 2xx makes it `active`; 401/403 (or a refresh token the provider refuses) `needs_reauth`;
/// anything else `error`.
#[utoipa::path(
    post, path = "/v1/integrations/connections/{id}/check", operation_id = "checkConnection", tag = "integrations",
    params(("id" = ConnectionId, Path, description = "The connection; an id of another organization or of none is a 404.")),
    responses(
        (status = 200, description = "The connection as updated, and what the check found.", body = CheckReport),
        (status = 400, description = "The provider declares no `verify` request (`id`).", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 409, description = "The connection is disconnected, its provider is no longer offered, or it changed during the check.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn check_connection(
    state: web::Data<AppState>,
    caller: Authenticated,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, id.into_inner());
    let report = state.run(|app| async move { app.integrations.check_connection(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(report))
}
