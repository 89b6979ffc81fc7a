//! The connect page: server-rendered HTML for a browser with a session cookie. A navigation cannot
//! send `X-Organization-Id`, so the organization is the `organizationId` query parameter; forms
//! carry a CSRF token bound to the session, the organization and the provider.

use std::collections::BTreeMap;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use compliance_app::{Credentials, Principal};
use compliance_credentials::FieldType;
use compliance_integrations::{NewConnection, ProviderView, StartOAuth};
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;

use crate::AppState;
use crate::auth::SESSION_COOKIE;
use crate::pages::{ConnectBody, ConnectPage, Outcome, render_connect_page, render_message_page};

/// Largest form body accepted, in bytes.
const FORM_LIMIT: usize = 64 * 1024;
/// Credential inputs are named `cred.<field id>`.
const FIELD_PREFIX: &str = "cred.";

pub fn configure(config: &mut web::ServiceConfig) {
    config
        .service(
            web::resource("/integrations/{slug}/connect")
                .route(web::get().to(show))
                .route(web::post().to(submit_form))
                .default_service(web::to(method_not_allowed)),
        )
        .service(
            web::resource("/integrations/{slug}/connect/oauth")
                .route(web::post().to(submit_oauth))
                .default_service(web::to(method_not_allowed)),
        );
}

/// `organizationId`, plus what the OAuth callback appends when it sends the browser back.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PageQuery {
    organization_id: Option<String>,
    status: Option<String>,
    connection_id: Option<String>,
    error: Option<String>,
}

/// Who is looking, for which organization, with which session token.
struct Visitor {
    principal: Principal,
    session: SecretString,
}

/// An HTML answer with the headers every page gets.
fn page(status: StatusCode, body: String) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
        ))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .body(body)
}

fn message(status: StatusCode, title: &str, detail: &str) -> HttpResponse {
    page(status, render_message_page(title, detail))
}

async fn method_not_allowed() -> HttpResponse {
    message(StatusCode::METHOD_NOT_ALLOWED, "Method not allowed", "This page takes GET, and POST from its forms.")
}

async fn visitor(state: &AppState, req: &HttpRequest, organization: Option<String>) -> Result<Visitor, HttpResponse> {
    let Some(organization) = organization else {
        return Err(message(
            StatusCode::BAD_REQUEST,
            "Organization missing",
            "Open this page with ?organizationId=org_… naming the organization to connect.",
        ));
    };
    let Some(cookie) = req.cookie(SESSION_COOKIE) else {
        return Err(message(StatusCode::UNAUTHORIZED, "Sign in first", "This page needs a signed-in session."));
    };
    let session = SecretString::from(cookie.value().to_owned());
    let credentials = Credentials::Session { token: session.clone(), organization: Some(organization) };
    let principal = state.run(|app| async move { app.auth.authenticate(credentials).await }).await;
    match principal {
        Ok(principal) => Ok(Visitor { principal, session }),
        Err(error) => Err(api_error_page(error)),
    }
}

fn api_error_page(error: crate::ApiError) -> HttpResponse {
    let status = error.status();
    message(status, status.canonical_reason().unwrap_or("Error"), &error.detail())
}

async fn provider(state: &AppState, visitor: &Visitor, slug: String) -> Result<ProviderView, HttpResponse> {
    let principal = visitor.principal.clone();
    state.integrations(|i| async move { i.get_provider(&principal, &slug).await }).await.map_err(api_error_page)
}

fn form_name(slug: &str) -> String {
    format!("connect/{slug}")
}

/// What the page shows around its form: the outcome, refilled values and field errors.
#[derive(Default)]
struct FormState {
    outcome: Option<PageOutcome>,
    values: BTreeMap<String, String>,
    errors: BTreeMap<String, String>,
}

enum PageOutcome {
    Connected { connection_id: String, status: String },
    Failed(String),
}

impl FormState {
    fn failed(message: String) -> Self {
        Self { outcome: Some(PageOutcome::Failed(message)), ..Self::default() }
    }
}

fn render(state: &AppState, visitor: &Visitor, provider: &ProviderView, form: &FormState) -> String {
    let org = visitor.principal.organization_id.as_str();
    let csrf = state.signer().form_token(visitor.session.expose_secret(), org, &form_name(&provider.slug));
    let body = match &provider.oauth {
        Some(oauth) => {
            ConnectBody::OAuth { configured: oauth.configured, create_app_url: oauth.create_app_url.as_deref() }
        }
        None => ConnectBody::Form { fields: &provider.credential_fields, values: &form.values, errors: &form.errors },
    };
    let outcome = form.outcome.as_ref().map(|outcome| match outcome {
        PageOutcome::Connected { connection_id, status } => Outcome::Connected { connection_id, status },
        PageOutcome::Failed(message) => Outcome::Failed { message },
    });
    render_connect_page(&ConnectPage {
        provider_name: &provider.name,
        provider_slug: &provider.slug,
        description: &provider.description,
        setup_instructions: provider.setup_instructions.as_deref(),
        organization_id: org,
        csrf_token: &csrf,
        body,
        outcome,
    })
}

async fn show(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
    query: web::Query<PageQuery>,
) -> HttpResponse {
    let query = query.into_inner();
    let visitor = match visitor(&state, &req, query.organization_id.clone()).await {
        Ok(visitor) => visitor,
        Err(response) => return response,
    };
    let provider = match provider(&state, &visitor, slug.into_inner()).await {
        Ok(provider) => provider,
        Err(response) => return response,
    };
    let form = FormState { outcome: callback_outcome(&state, &visitor, query).await, ..FormState::default() };
    page(StatusCode::OK, render(&state, &visitor, &provider, &form))
}

/// Back from the OAuth callback: say how it went, from what is known rather than what the
/// query claims (anyone can craft a link to this page).
async fn callback_outcome(state: &AppState, visitor: &Visitor, query: PageQuery) -> Option<PageOutcome> {
    match query.status.as_deref()? {
        "connected" => {
            let (principal, id) = (visitor.principal.clone(), query.connection_id?);
            let found = state.integrations(|i| async move { i.get_connection(&principal, &id).await }).await.ok()?;
            Some(PageOutcome::Connected { connection_id: found.id.to_string(), status: found.status.to_string() })
        }
        "error" => {
            let code = query.error.filter(|c| is_error_code(c)).unwrap_or_else(|| "unknown_error".into());
            Some(PageOutcome::Failed(format!("The connection failed ({code}).")))
        }
        _ => None,
    }
}

/// The callback's error codes are short lowercase words; anything else is not shown.
fn is_error_code(code: &str) -> bool {
    (1..=40).contains(&code.len()) && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

/// The submitted form: its CSRF token and the `cred.*` values.
struct Submitted {
    csrf_token: String,
    credentials: BTreeMap<String, SecretString>,
}

/// Reads `application/x-www-form-urlencoded` strictly: a malformed escape or bytes that are not
/// UTF-8 refuse the form rather than silently change a secret (as lossy decoding would).
fn parse_form(body: &[u8]) -> Result<Submitted, &'static str> {
    let mut submitted = Submitted { csrf_token: String::new(), credentials: BTreeMap::new() };
    for pair in body.split(|&b| b == b'&').filter(|pair| !pair.is_empty()) {
        let (name, value) = match pair.iter().position(|&b| b == b'=') {
            Some(at) => (&pair[..at], &pair[at + 1..]),
            None => (pair, &pair[pair.len()..]),
        };
        let (name, value) = (form_decode(name)?, form_decode(value)?);
        if name == "csrf_token" {
            submitted.csrf_token = value;
        } else if let Some(id) = name.strip_prefix(FIELD_PREFIX) {
            submitted.credentials.insert(id.to_owned(), SecretString::from(value));
        }
    }
    Ok(submitted)
}

/// `+` is a space and `%XX` a byte; anything else malformed is an error.
fn form_decode(raw: &[u8]) -> Result<String, &'static str> {
    const MALFORMED: &str = "The form is malformed: an escape is incomplete or the text is not UTF-8.";
    let mut bytes = Vec::with_capacity(raw.len());
    let mut rest = raw.iter();
    while let Some(&byte) = rest.next() {
        bytes.push(match byte {
            b'+' => b' ',
            b'%' => {
                let hex = [*rest.next().ok_or(MALFORMED)?, *rest.next().ok_or(MALFORMED)?];
                let text = std::str::from_utf8(&hex).map_err(|_| MALFORMED)?;
                u8::from_str_radix(text, 16).map_err(|_| MALFORMED)?
            }
            other => other,
        });
    }
    String::from_utf8(bytes).map_err(|_| MALFORMED)
}

/// The body, up to [`FORM_LIMIT`]: larger forms get the page's own 413, not a framework error.
async fn read_form(mut payload: web::Payload) -> Result<Vec<u8>, HttpResponse> {
    use futures_util::StreamExt as _;
    let too_large = || message(StatusCode::PAYLOAD_TOO_LARGE, "Form too large", "The form may be at most 64 KiB.");
    let mut body = Vec::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| message(StatusCode::BAD_REQUEST, "Form unreadable", "The form was cut off."))?;
        if body.len() + chunk.len() > FORM_LIMIT {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The visitor and the form, once the CSRF token is right.
async fn accept_form(
    state: &AppState,
    req: &HttpRequest,
    slug: &str,
    organization: Option<String>,
    payload: web::Payload,
) -> Result<(Visitor, ProviderView, Submitted), HttpResponse> {
    let body = read_form(payload).await?;
    let visitor = visitor(state, req, organization).await?;
    let submitted = parse_form(&body).map_err(|why| message(StatusCode::BAD_REQUEST, "Form malformed", why))?;
    let org = visitor.principal.organization_id.as_str();
    let token_ok =
        state.signer().verify_form_token(visitor.session.expose_secret(), org, &form_name(slug), &submitted.csrf_token);
    if !token_ok {
        return Err(message(
            StatusCode::FORBIDDEN,
            "Form expired",
            "This form's security token does not match your session. Reload the page and try again.",
        ));
    }
    let provider = provider(state, &visitor, slug.to_owned()).await?;
    Ok((visitor, provider, submitted))
}

async fn submit_form(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
    query: web::Query<PageQuery>,
    payload: web::Payload,
) -> HttpResponse {
    let (visitor, provider, submitted) =
        match accept_form(&state, &req, &slug, query.into_inner().organization_id, payload).await {
            Ok(accepted) => accepted,
            Err(response) => return response,
        };
    let values = refill(&provider, &submitted.credentials);
    let input = NewConnection { provider_slug: provider.slug.clone(), credentials: submitted.credentials };
    let principal = visitor.principal.clone();
    let created = state.integrations(|i| async move { i.create_connection(&principal, input).await }).await;
    let (status, form) = match created {
        Ok(connection) => {
            let outcome = PageOutcome::Connected {
                connection_id: connection.id.to_string(),
                status: connection.status.to_string(),
            };
            (StatusCode::CREATED, FormState { outcome: Some(outcome), ..FormState::default() })
        }
        Err(error) => (error.status(), failed_submit(&provider, &error, values)),
    };
    page(status, render(&state, &visitor, &provider, &form))
}

/// Field errors next to their fields; anything else (a conflict, an error about no field of the
/// form) as the page's outcome, so no refusal goes unexplained.
fn failed_submit(provider: &ProviderView, error: &crate::ApiError, values: BTreeMap<String, String>) -> FormState {
    let field_ids: Vec<&str> = provider.credential_fields.iter().map(|f| f.id.as_str()).collect();
    let mut errors = BTreeMap::new();
    let mut unplaced = error.field_errors().is_empty();
    for e in error.field_errors() {
        match e.field.strip_prefix("credentials.").filter(|id| field_ids.contains(id)) {
            Some(id) => {
                errors.insert(id.to_owned(), e.message.clone());
            }
            None => unplaced = true,
        }
    }
    let outcome = unplaced.then(|| PageOutcome::Failed(error.detail()));
    FormState { outcome, values, errors }
}

/// The values to put back into the form after a failed submit: never a password.
fn refill(provider: &ProviderView, submitted: &BTreeMap<String, SecretString>) -> BTreeMap<String, String> {
    provider
        .credential_fields
        .iter()
        .filter(|f| f.field_type != FieldType::Password)
        .filter_map(|f| Some((f.id.clone(), submitted.get(&f.id)?.expose_secret().to_owned())))
        .collect()
}

async fn submit_oauth(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<String>,
    query: web::Query<PageQuery>,
    payload: web::Payload,
) -> HttpResponse {
    let (visitor, provider, _) =
        match accept_form(&state, &req, &slug, query.into_inner().organization_id, payload).await {
            Ok(accepted) => accepted,
            Err(response) => return response,
        };
    let principal = visitor.principal.clone();
    let input = StartOAuth { provider_slug: provider.slug.clone(), redirect_url: None };
    match state.integrations(|i| async move { i.start_oauth(&principal, input).await }).await {
        Ok(url) => HttpResponse::SeeOther().insert_header((header::LOCATION, url)).finish(),
        Err(error) => page(error.status(), render(&state, &visitor, &provider, &FormState::failed(error.detail()))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use secrecy::ExposeSecret;

    use super::*;

    #[test]
    fn forms_are_decoded_strictly() {
        let form = parse_form(b"csrf_token=t%2Bx&cred.key=a+b%21&other=1&&cred.empty=").unwrap();
        assert_eq!(form.csrf_token, "t+x");
        assert_eq!(form.credentials["key"].expose_secret(), "a b!");
        assert_eq!(form.credentials["empty"].expose_secret(), "");
        for bad in [&b"cred.key=%ZZ"[..], b"cred.key=%4", b"cred.key=%FF%FE", b"cred.key=\xff"] {
            assert!(parse_form(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
        assert!(parse_form(&[b'a', b'=', 0xff]).is_err(), "raw bytes that are not UTF-8");
    }
}
