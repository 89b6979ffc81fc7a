//! The connect page: server-rendered HTML for a browser with a session cookie. A navigation cannot
//! send `X-Organization-Id`, so the organization is the `organizationId` query parameter; forms
//! carry a CSRF token bound to the session, the organization and the provider.

use std::collections::BTreeMap;

use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use compliance_app::integrations::{FieldType, NewConnection, ProviderView, StartOAuth};
use compliance_app::{Credentials, Principal};
use compliance_domain::OrganizationId;
use secrecy::{ExposeSecret, SecretString};
use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use crate::AppState;
use crate::auth::SESSION_COOKIE;
use crate::pages::{ConnectBody, ConnectPage, Outcome, html_page, render_connect_page, render_message_page};
use crate::path_ids::SlugPath;
use crate::router::Routes;

/// Largest form body accepted, in bytes.
const FORM_LIMIT: usize = 64 * 1024;
/// Credential inputs are named `cred.<field id>`.
const FIELD_PREFIX: &str = "cred.";

pub fn configure(routes: &mut Routes) {
    routes.add(show_connect_page, __path_show_connect_page).page();
    routes.add(submit_connect_form, __path_submit_connect_form).page();
    routes.add(submit_connect_oauth, __path_submit_connect_oauth).page();
}

/// `organizationId`, plus what the OAuth callback appends when it sends the browser back.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
struct PageQuery {
    /// The organization to connect (`org_…`); the session's user must be a member. Without it the
    /// page answers 400.
    #[param(required = true, value_type = OrganizationId)]
    organization_id: Option<String>,
    /// Set by the OAuth callback: `connected` or `error`; other values are ignored.
    status: Option<String>,
    /// Set by the OAuth callback with `status=connected`; shown only when it is a connection of the organization.
    connection_id: Option<String>,
    /// Set by the OAuth callback with `status=error`; shown only when it is a short lowercase code.
    error: Option<String>,
}

/// The query of a form POST: only `organizationId` counts.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query, rename_all = "camelCase")]
#[serde(rename_all = "camelCase")]
struct FormQuery {
    /// The organization to connect (`org_…`), as in the page's form action; without it the page answers 400.
    #[param(required = true, value_type = OrganizationId)]
    organization_id: Option<String>,
}

/// A form the connect page rendered (`application/x-www-form-urlencoded`): `csrf_token`, the token
/// the page put into the form (bound to the session, the organization and the provider; a wrong
/// one is a 403 page), and `cred.<fieldId>` values.
struct ConnectForm;

impl utoipa::PartialSchema for ConnectForm {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let text = || ObjectBuilder::new().schema_type(Type::String);
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("csrf_token", text().description(Some("The form's CSRF token, as the page rendered it.")))
            .required("csrf_token")
            .additional_properties(Some(text()))
            .into()
    }
}

impl ToSchema for ConnectForm {}

/// Who is looking, for which organization, with which session token.
struct Visitor {
    principal: Principal,
    session: SecretString,
}

fn message(status: StatusCode, title: &str, detail: &str) -> HttpResponse {
    html_page(status, render_message_page(title, detail))
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
    state.run(|app| async move { app.integrations.get_provider(&principal, &slug).await }).await.map_err(api_error_page)
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

/// The connect page of a provider.
///
/// Server-rendered HTML for a browser with a `session_token` cookie: the provider's setup
/// instructions, and a Connect button (`oauth2`) or the credential form. Back from the OAuth
/// callback it shows the outcome. Its errors are HTML pages too.
#[utoipa::path(
    get, path = "/integrations/{slug}/connect", operation_id = "showConnectPage", tag = "connect-page",
    security(("session" = [])),
    params(SlugPath, PageQuery),
    responses(
        (status = 200, description = "The page.", content_type = "text/html", body = String),
        (status = 400, description = "`organizationId` is missing (an HTML page), or the query is malformed (a problem).", content((String = "text/html"), (crate::openapi::Problem = "application/problem+json"))),
        (status = 401, description = "No session, or not a valid one.", content_type = "text/html", body = String),
        (status = 403, description = "The session's user is not a member of the organization.", content_type = "text/html", body = String),
        (status = 404, description = "No provider has this slug.", content_type = "text/html", body = String),
        (status = 503, description = "The database is unavailable.", content_type = "text/html", body = String),
    ),
)]
async fn show_connect_page(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<SlugPath>,
    query: web::Query<PageQuery>,
) -> HttpResponse {
    let query = query.into_inner();
    let visitor = match visitor(&state, &req, query.organization_id.clone()).await {
        Ok(visitor) => visitor,
        Err(response) => return response,
    };
    let provider = match provider(&state, &visitor, slug.into_inner().slug).await {
        Ok(provider) => provider,
        Err(response) => return response,
    };
    let form = FormState { outcome: callback_outcome(&state, &visitor, query).await, ..FormState::default() };
    html_page(StatusCode::OK, render(&state, &visitor, &provider, &form))
}

/// Back from the OAuth callback: say how it went, from what is known rather than what the
/// query claims (anyone can craft a link to this page).
async fn callback_outcome(state: &AppState, visitor: &Visitor, query: PageQuery) -> Option<PageOutcome> {
    match query.status.as_deref()? {
        "connected" => {
            let (principal, id) = (visitor.principal.clone(), query.connection_id?);
            let found =
                state.run(|app| async move { app.integrations.get_connection(&principal, &id).await }).await.ok()?;
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

/// Submit the credential form of the connect page.
///
/// Creates the connection as `POST /v1/integrations/connections` does, and answers the page again
/// with the result, or with each field's error next to it (password values are never sent back).
/// The body is read as `application/x-www-form-urlencoded` whatever its declared type.
#[utoipa::path(
    post, path = "/integrations/{slug}/connect", operation_id = "submitConnectForm", tag = "connect-page",
    security(("session" = [])),
    params(SlugPath, FormQuery),
    request_body(
        content = ConnectForm, content_type = "application/x-www-form-urlencoded",
        description = "`csrf_token`, and `cred.<fieldId>` for each of the provider's credential fields (other names are ignored); at most 64 KiB.",
    ),
    responses(
        (status = 201, description = "The page, showing the new connection.", content_type = "text/html", body = String),
        (status = 400, description = "`organizationId` is missing, the form is malformed or its values are invalid (an HTML page), or the query is malformed (a problem).", content((String = "text/html"), (crate::openapi::Problem = "application/problem+json"))),
        (status = 401, description = "No session, or not a valid one.", content_type = "text/html", body = String),
        (status = 403, description = "The session's user is not a member of the organization, or the form's CSRF token is wrong.", content_type = "text/html", body = String),
        (status = 404, description = "No provider has this slug.", content_type = "text/html", body = String),
        (status = 409, description = "The organization is already connected to the provider.", content_type = "text/html", body = String),
        (status = 413, description = "The form is larger than 64 KiB.", content_type = "text/html", body = String),
        (status = 503, description = "The database is unavailable.", content_type = "text/html", body = String),
    ),
)]
async fn submit_connect_form(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<SlugPath>,
    query: web::Query<FormQuery>,
    payload: web::Payload,
) -> HttpResponse {
    let (visitor, provider, submitted) =
        match accept_form(&state, &req, &slug.slug, query.into_inner().organization_id, payload).await {
            Ok(accepted) => accepted,
            Err(response) => return response,
        };
    let values = refill(&provider, &submitted.credentials);
    let input = NewConnection { provider_slug: provider.slug.clone(), credentials: submitted.credentials };
    let principal = visitor.principal.clone();
    let created = state.run(|app| async move { app.integrations.create_connection(&principal, input).await }).await;
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
    html_page(status, render(&state, &visitor, &provider, &form))
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

/// Submit the Connect button of an `oauth2` provider's connect page.
///
/// Starts the OAuth flow as `POST /v1/integrations/oauth/start` does and sends the browser to the
/// provider; the callback brings it back to this page.
#[utoipa::path(
    post, path = "/integrations/{slug}/connect/oauth", operation_id = "submitConnectOAuth", tag = "connect-page",
    security(("session" = [])),
    params(SlugPath, FormQuery),
    request_body(
        content = ConnectForm, content_type = "application/x-www-form-urlencoded",
        description = "`csrf_token`; other names are ignored; at most 64 KiB.",
    ),
    responses(
        (status = 303, description = "To the provider's authorization URL.", headers(("Location" = String, description = "The provider's authorization URL."))),
        (status = 400, description = "`organizationId` is missing, the form is malformed, or the provider is not `oauth2` (an HTML page), or the query is malformed (a problem).", content((String = "text/html"), (crate::openapi::Problem = "application/problem+json"))),
        (status = 401, description = "No session, or not a valid one.", content_type = "text/html", body = String),
        (status = 403, description = "The session's user is not a member of the organization, or the form's CSRF token is wrong.", content_type = "text/html", body = String),
        (status = 404, description = "No provider has this slug.", content_type = "text/html", body = String),
        (status = 412, description = "The organization has no OAuth app for the provider: the page shows the setup instructions.", content_type = "text/html", body = String),
        (status = 413, description = "The form is larger than 64 KiB.", content_type = "text/html", body = String),
        (status = 503, description = "The database is unavailable.", content_type = "text/html", body = String),
    ),
)]
async fn submit_connect_oauth(
    state: web::Data<AppState>,
    req: HttpRequest,
    slug: web::Path<SlugPath>,
    query: web::Query<FormQuery>,
    payload: web::Payload,
) -> HttpResponse {
    let (visitor, provider, _) =
        match accept_form(&state, &req, &slug.slug, query.into_inner().organization_id, payload).await {
            Ok(accepted) => accepted,
            Err(response) => return response,
        };
    let principal = visitor.principal.clone();
    let input = StartOAuth { provider_slug: provider.slug.clone(), redirect_url: None };
    match state.run(|app| async move { app.integrations.start_oauth(&principal, input).await }).await {
        Ok(url) => HttpResponse::SeeOther().insert_header((header::LOCATION, url)).finish(),
        Err(error) => {
            html_page(error.status(), render(&state, &visitor, &provider, &FormState::failed(error.detail())))
        }
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
