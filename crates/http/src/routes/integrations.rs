//! Integrations: providers, OAuth apps, the OAuth flow and connections (docs/integrations.md).

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use compliance_app::Credentials;
use compliance_integrations::{NewConnection, OAuthAppInput, StartOAuth, invalid_state};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::resource;
use crate::auth::SESSION_COOKIE;
use crate::body::JsonBody;
use crate::wire::ListEnvelope;
use crate::{ApiError, AppState, Caller};

pub fn configure(config: &mut web::ServiceConfig) {
    config
        .service(resource("/integrations/providers").route(web::get().to(list_providers)))
        .service(resource("/integrations/providers/{slug}").route(web::get().to(get_provider)))
        .service(
            resource("/integrations/oauth-apps/{slug}")
                .route(web::get().to(get_oauth_app))
                .route(web::put().to(put_oauth_app))
                .route(web::delete().to(delete_oauth_app)),
        )
        .service(resource("/integrations/oauth/start").route(web::post().to(start_oauth)))
        .service(resource("/integrations/oauth/callback").route(web::get().to(oauth_callback)))
        .service(
            resource("/integrations/connections")
                .route(web::get().to(list_connections))
                .route(web::post().to(create_connection)),
        )
        .service(
            resource("/integrations/connections/{id}")
                .route(web::get().to(get_connection))
                .route(web::delete().to(disconnect)),
        )
        .service(resource("/integrations/connections/{id}/check").route(web::post().to(check)));
}

async fn list_providers(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let providers = state.integrations(|i| async move { i.list_providers(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(ListEnvelope::standard(&caller, providers)))
}

async fn get_provider(
    state: web::Data<AppState>,
    caller: Caller,
    slug: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, slug) = (caller.0, slug.into_inner());
    let provider = state.integrations(|i| async move { i.get_provider(&principal, &slug).await }).await?;
    Ok(HttpResponse::Ok().json(provider))
}

async fn get_oauth_app(
    state: web::Data<AppState>,
    caller: Caller,
    slug: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, slug) = (caller.0, slug.into_inner());
    let app = state.integrations(|i| async move { i.get_oauth_app(&principal, &slug).await }).await?;
    Ok(HttpResponse::Ok().json(app))
}

async fn put_oauth_app(
    state: web::Data<AppState>,
    caller: Caller,
    slug: web::Path<String>,
    JsonBody(input): JsonBody<OAuthAppInput>,
) -> Result<HttpResponse, ApiError> {
    let (principal, slug) = (caller.0, slug.into_inner());
    let app = state.integrations(|i| async move { i.put_oauth_app(&principal, &slug, input).await }).await?;
    Ok(HttpResponse::Ok().json(app))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct OAuthAppRemoved {
    message: &'static str,
    provider_slug: String,
}

async fn delete_oauth_app(
    state: web::Data<AppState>,
    caller: Caller,
    slug: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, provider_slug) = (caller.0, slug.into_inner());
    let slug = provider_slug.clone();
    state.integrations(|i| async move { i.delete_oauth_app(&principal, &slug).await }).await?;
    Ok(HttpResponse::Ok().json(OAuthAppRemoved { message: "OAuth app removed", provider_slug }))
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AuthorizationUrl {
    authorization_url: String,
}

async fn start_oauth(
    state: web::Data<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<StartOAuth>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let authorization_url = state.integrations(|i| async move { i.start_oauth(&principal, input).await }).await?;
    Ok(HttpResponse::Ok().json(AuthorizationUrl { authorization_url }))
}

#[derive(Deserialize)]
struct CallbackQuery {
    code: Option<String>,
    state: Option<String>,
    error: Option<String>,
}

/// The provider sends the browser here. The session cookie says who; the state says which
/// organization and provider. See docs/integrations.md for every outcome.
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
    let pending = state.integrations(|i| async move { i.take_state(presented.as_deref()).await }).await?;
    let provider = pending.provider().to_owned();
    let organization = Some(pending.organization_id().to_string());
    let principal = state
        .run(|app| async move { app.auth.authenticate(Credentials::Session { token, organization }).await })
        .await
        .map_err(|error| match error.status() {
            // The state is consumed: whoever this is, the flow must start again.
            StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN => {
                invalid_state(&provider, "the session may not act for the state's organization").into()
            }
            _ => error,
        })?;
    let code = code.map(SecretString::from);
    let redirect =
        state.integrations(|i| async move { i.complete_oauth(&principal, pending, code, error).await }).await?;
    Ok(HttpResponse::SeeOther().insert_header((header::LOCATION, redirect.0)).finish())
}

async fn list_connections(state: web::Data<AppState>, caller: Caller) -> Result<HttpResponse, ApiError> {
    let principal = caller.0.clone();
    let connections = state.integrations(|i| async move { i.list_connections(&principal).await }).await?;
    Ok(HttpResponse::Ok().json(ListEnvelope::standard(&caller, connections)))
}

async fn create_connection(
    state: web::Data<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<NewConnection>,
) -> Result<HttpResponse, ApiError> {
    let principal = caller.0;
    let connection = state.integrations(|i| async move { i.create_connection(&principal, input).await }).await?;
    Ok(HttpResponse::Created().json(connection))
}

async fn get_connection(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, id.into_inner());
    let connection = state.integrations(|i| async move { i.get_connection(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(connection))
}

#[derive(Serialize)]
struct DisconnectedBody {
    message: &'static str,
    #[serde(flatten)]
    outcome: compliance_integrations::Disconnected,
}

async fn disconnect(
    state: web::Data<AppState>,
    caller: Caller,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, id.into_inner());
    let outcome = state.integrations(|i| async move { i.disconnect(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(DisconnectedBody { message: "Connection disconnected", outcome }))
}

async fn check(state: web::Data<AppState>, caller: Caller, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (principal, id) = (caller.0, id.into_inner());
    let report = state.integrations(|i| async move { i.check(&principal, &id).await }).await?;
    Ok(HttpResponse::Ok().json(report))
}
