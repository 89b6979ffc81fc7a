//! The `Authenticated` extractor: authenticates a request by API key or session cookie.

use std::ops::Deref;

use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpRequest, web};
use compliance_app::{AppError, Credentials, Principal, SignedInUser};
use futures_util::future::LocalBoxFuture;
use secrecy::SecretString;

use crate::middleware::RequestId;
use crate::{ApiError, AppState};

pub const API_KEY_HEADER: &str = "X-API-Key";
pub const ORGANIZATION_HEADER: &str = "X-Organization-Id";
pub const SESSION_COOKIE: &str = "session_token";

/// The authenticated caller of a request.
#[derive(Debug, Clone)]
pub struct Authenticated(pub Principal);

impl Deref for Authenticated {
    type Target = Principal;
    fn deref(&self) -> &Principal {
        &self.0
    }
}

/// Marks a request whose credentials were checked and accepted (the rate limiter learns from it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CredentialAccepted;

impl FromRequest for Authenticated {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        // Authenticated already by the idempotency middleware, with the request's claim on its key.
        if let Some(caller) = actix_web::HttpMessage::extensions(req).get::<Authenticated>().cloned() {
            return Box::pin(async move { Ok(caller) });
        }
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let credentials = credentials(req);
        let req = req.clone();
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::from(AppError::Internal("no AppState registered".into())))?;
            let credentials = credentials.ok_or_else(|| {
                ApiError::unauthenticated("send an X-API-Key header, or a session_token cookie with X-Organization-Id")
            })?;
            let principal = principal(&state, credentials).await?;
            actix_web::HttpMessage::extensions_mut(&req).insert(CredentialAccepted);
            let mut principal = principal;
            principal.request_id = actix_web::HttpMessage::extensions(&req).get::<RequestId>().map(|id| id.0.clone());
            Ok(Authenticated(principal))
        })
    }
}

/// The member the credentials stand for. A remembered caller is answered here; only one that
/// needs the store crosses threads.
pub(crate) async fn principal(state: &AppState, credentials: Credentials) -> Result<Principal, ApiError> {
    match state.remembered(&credentials).await {
        Some(principal) => Ok(principal),
        None => state.run(|app| async move { app.auth.authenticate(credentials).await }).await,
    }
}

/// An API key wins over a session cookie when both are sent.
pub(crate) fn credentials(req: &HttpRequest) -> Option<Credentials> {
    let header = |name: &str| req.headers().get(name).map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    let organization = header(ORGANIZATION_HEADER);
    if let Some(key) = header(API_KEY_HEADER) {
        return Some(Credentials::ApiKey { key: SecretString::from(key), organization });
    }
    let token = req.cookie(SESSION_COOKIE)?.value().to_owned();
    Some(Credentials::Session { token: SecretString::from(token), organization })
}

/// The caller of a route about the user rather than an organization (`/v1/me`, sessions,
/// accepting an invitation): a session cookie needs no `X-Organization-Id`; an API key
/// authenticates as usual, as the member who made it.
#[derive(Debug, Clone)]
pub struct SignedInCaller(pub SignedInUser);

impl FromRequest for SignedInCaller {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let state = req.app_data::<web::Data<AppState>>().cloned();
        let credentials = credentials(req);
        let req = req.clone();
        Box::pin(async move {
            let state = state.ok_or_else(|| ApiError::from(AppError::Internal("no AppState registered".into())))?;
            let caller = match credentials {
                Some(Credentials::Session { token, .. }) => {
                    state.run(|app| async move { app.sessions.authenticate(&token).await }).await?
                }
                Some(credentials @ Credentials::ApiKey { .. }) => {
                    SignedInUser::by_api_key(&principal(&state, credentials).await?)
                }
                None => {
                    return Err(ApiError::unauthenticated(
                        "sign in (a session_token cookie) or send an X-API-Key header",
                    ));
                }
            };
            actix_web::HttpMessage::extensions_mut(&req).insert(CredentialAccepted);
            Ok(SignedInCaller(caller))
        })
    }
}
