//! Sign-in with OpenID Connect: `/auth/login`, `/auth/callback`, `/auth/logout`.
//!
//! Browsers come here, so the callback answers its failures with a readable page. Two cookies:
//! `sign_in_attempt` (the PKCE verifier binding a sign-in to the browser that started it; path
//! `/auth`, ten minutes) and `session_token` (the session). Both are HttpOnly and `SameSite=Lax`,
//! and `Secure` when `PUBLIC_URL` is https.

use actix_web::cookie::{Cookie, SameSite, time::Duration as CookieDuration};
use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use compliance_app::{Callback, SIGN_IN_TTL};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::auth::SESSION_COOKIE;
use crate::pages::render_message_page;
use crate::router::Routes;
use crate::{ApiError, AppState};

/// The cookie that binds a sign-in to the browser that started it.
const ATTEMPT_COOKIE: &str = "sign_in_attempt";

pub fn configure(routes: &mut Routes) {
    routes.add(start_sign_in, __path_start_sign_in);
    routes.add(finish_sign_in, __path_finish_sign_in).page();
    routes.add(sign_out, __path_sign_out);
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct LoginQuery {
    /// Where to return after signing in: a path on this service such as `/settings` (default `/`).
    /// Anything else (another host, `//host`, `/\host`) is a 400.
    redirect: Option<String>,
}

/// Start signing in
///
/// Redirects the browser to the OpenID provider (authorization code flow with PKCE S256, `state`
/// and `nonce`), and sets the `sign_in_attempt` cookie that binds the sign-in to this browser for
/// ten minutes. 404 when sign-in is not configured.
#[utoipa::path(
    get, path = "/auth/login", operation_id = "startSignIn", tag = "sign-in",
    params(LoginQuery),
    responses(
        (status = 302, description = "To the provider's authorization endpoint; sets `sign_in_attempt`.",
         headers(("Location" = String, description = "The provider's authorization URL."))),
        (status = 400, description = "`redirect` is not a path on this service.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 404, description = "Sign-in is not configured.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn start_sign_in(state: web::Data<AppState>, query: web::Query<LoginQuery>) -> Result<HttpResponse, ApiError> {
    let redirect = query.into_inner().redirect;
    let start = state.run(|app| async move { app.sign_in.start(redirect).await }).await?;
    let secure = secure_cookies(&state);
    let binding = Cookie::build(ATTEMPT_COOKIE, start.browser_binding.expose_secret().to_owned())
        .path("/auth")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .max_age(CookieDuration::seconds(SIGN_IN_TTL.whole_seconds()))
        .finish();
    Ok(HttpResponse::Found()
        .insert_header((header::LOCATION, start.authorization_url))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .cookie(binding)
        .finish())
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct CallbackQuery {
    /// The authorization code.
    code: Option<String>,
    /// The `state` of the sign-in.
    state: Option<String>,
    /// The provider's error code, when it did not sign the user in.
    error: Option<String>,
}

/// Finish signing in
///
/// Where the provider sends the browser back. Redeems the code, validates the ID token
/// (signature, issuer, audience, expiry, nonce), finds or creates the user, sets the
/// `session_token` cookie and sends the browser on to the `redirect` of the sign-in. A failure is
/// an HTML page that says what went wrong.
#[utoipa::path(
    get, path = "/auth/callback", operation_id = "finishSignIn", tag = "sign-in",
    params(CallbackQuery),
    responses(
        (status = 303, description = "Signed in: `session_token` is set.",
         headers(("Location" = String, description = "The sign-in's `redirect`."))),
        (status = 400, description = "The provider refused, or the state, code or ID token is not valid (an HTML page).", content_type = "text/html", body = String),
        (status = 404, description = "Sign-in is not configured.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 502, description = "The provider could not be reached (an HTML page).", content_type = "text/html", body = String),
    ),
)]
async fn finish_sign_in(
    state: web::Data<AppState>,
    req: HttpRequest,
    query: web::Query<CallbackQuery>,
) -> Result<HttpResponse, ApiError> {
    state.run(|app| async move { app.sign_in.require_configured() }).await?;
    let query = query.into_inner();
    let callback = Callback {
        code: query.code.map(SecretString::from),
        state: query.state.map(SecretString::from),
        error: query.error,
        browser_binding: req.cookie(ATTEMPT_COOKIE).map(|c| SecretString::from(c.value().to_owned())),
    };
    let secure = secure_cookies(&state);
    let signed_in = match state.run(|app| async move { app.sign_in.finish(callback).await }).await {
        Ok(signed_in) => signed_in,
        Err(error) => {
            let page = render_message_page("Sign-in failed", &page_detail(&error));
            return Ok(HttpResponse::build(error.status())
                .content_type("text/html; charset=utf-8")
                .insert_header((header::CACHE_CONTROL, "no-store"))
                .cookie(expired(ATTEMPT_COOKIE, "/auth", secure))
                .body(page));
        }
    };
    let ttl = state.settings().session_ttl;
    let session = Cookie::build(SESSION_COOKIE, signed_in.session.token.expose_secret().to_owned())
        .path("/")
        .http_only(true)
        .secure(secure)
        .same_site(SameSite::Lax)
        .max_age(CookieDuration::seconds(ttl.whole_seconds()))
        .finish();
    Ok(HttpResponse::SeeOther()
        .insert_header((header::LOCATION, signed_in.redirect))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .cookie(session)
        .cookie(expired(ATTEMPT_COOKIE, "/auth", secure))
        .finish())
}

/// Sign out
///
/// Ends the session of the `session_token` cookie on the server and clears the cookie; without a
/// session it only clears the cookie. A browser's cross-origin request is refused (403): the
/// `Origin` header, when sent, must be this service's (`PUBLIC_URL`), and `Sec-Fetch-Site`, when
/// sent, `same-origin` or `none`.
#[utoipa::path(
    post, path = "/auth/logout", operation_id = "signOut", tag = "sign-in",
    responses(
        (status = 204, description = "Signed out; `session_token` is cleared."),
        (status = 403, description = "A cross-origin request.", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 404, description = "Sign-in is not configured.", body = crate::openapi::Problem, content_type = "application/problem+json"),
    ),
)]
async fn sign_out(state: web::Data<AppState>, req: HttpRequest) -> Result<HttpResponse, ApiError> {
    state.run(|app| async move { app.sign_in.require_configured() }).await?;
    require_same_origin(&req, &state.settings().public_url)?;
    if let Some(cookie) = req.cookie(SESSION_COOKIE) {
        let token = SecretString::from(cookie.value().to_owned());
        state.run(|app| async move { app.sessions.end(&token).await }).await?;
    }
    Ok(HttpResponse::NoContent().cookie(expired(SESSION_COOKIE, "/", secure_cookies(&state))).finish())
}

/// The CSRF defence of sign-out, beside `SameSite=Lax` (which keeps the cookie off cross-site
/// posts, but not off posts from a sibling origin of the same site): browsers say where a request
/// comes from, and one from elsewhere is refused. Clients that are not browsers send neither header.
fn require_same_origin(req: &HttpRequest, public_url: &str) -> Result<(), ApiError> {
    const REFUSED: &str = "sign-out must come from this service's own pages";
    let header = |name| req.headers().get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = header("sec-fetch-site")
        && !matches!(site, "same-origin" | "none")
    {
        return Err(ApiError::forbidden(REFUSED));
    }
    if let Some(origin) = header("origin")
        && origin != public_origin(public_url)
    {
        return Err(ApiError::forbidden(REFUSED));
    }
    Ok(())
}

/// `scheme://host[:port]` of `PUBLIC_URL`.
fn public_origin(public_url: &str) -> String {
    url::Url::parse(public_url).map(|url| url.origin().ascii_serialization()).unwrap_or_default()
}

fn secure_cookies(state: &AppState) -> bool {
    state.settings().public_url.starts_with("https://")
}

fn expired(name: &'static str, path: &'static str, secure: bool) -> Cookie<'static> {
    let mut cookie =
        Cookie::build(name, "").path(path).http_only(true).secure(secure).same_site(SameSite::Lax).finish();
    cookie.make_removal();
    cookie
}

/// What the page says: the problem's detail, and for a field error the field's message.
fn page_detail(error: &ApiError) -> String {
    match error.field_errors() {
        [only] => only.message.clone(),
        _ => error.detail(),
    }
}

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;

    use super::*;

    #[test]
    fn sign_out_refuses_browsers_on_other_origins() {
        let public = "https://app.example.test";
        let allowed = [
            vec![],
            vec![("origin", "https://app.example.test")],
            vec![("sec-fetch-site", "same-origin"), ("origin", "https://app.example.test")],
            vec![("sec-fetch-site", "none")],
        ];
        for headers in allowed {
            let req = headers.iter().fold(TestRequest::post(), |r, h| r.insert_header(*h)).to_http_request();
            assert!(require_same_origin(&req, public).is_ok(), "{headers:?}");
        }
        let refused = [
            vec![("origin", "https://evil.example")],
            vec![("origin", "https://sub.app.example.test")],
            vec![("origin", "null")],
            vec![("sec-fetch-site", "cross-site")],
            vec![("sec-fetch-site", "same-site")],
        ];
        for headers in refused {
            let req = headers.iter().fold(TestRequest::post(), |r, h| r.insert_header(*h)).to_http_request();
            assert!(require_same_origin(&req, public).is_err(), "{headers:?}");
        }
    }
}
