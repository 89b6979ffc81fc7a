//! `/v1/integrations`: providers, OAuth apps, the OAuth flow against a fake provider, connections
//! of every strategy, their checks and disconnection, tenant isolation, and secrets that never
//! reach a response or a log line (docs/integrations.md, shared/spec/credential-strategies.md).

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::Duration;

use reqwest::header::{COOKIE, LOCATION};
use serde_json::{Value, json};

use crate::checks::{assert_acting_user, assert_id, assert_lacks, assert_timestamp, data, missing_id, str_of, without};
use crate::client::{Client, Response};
use crate::fake_provider::{
    BASIC, CUSTOM, FOREIGN_ORIGIN, FakeProvider, HEADER_KEY, KEY_HEADER, KEY_PREFIX, KEY_QUERY, NO_VERIFY, OAUTH,
    OAUTH_EXTRA_PARAMS, OAUTH_HEADER, OAUTH_SCOPES, QUERY_KEY, basic_header,
};
use crate::harness::TestServer;
use crate::tenant::{Tenant, User};

provider_tests!(
    providers_are_listed_with_the_fields_of_their_strategy,
    oauth_apps_are_configured_by_administrators_and_never_show_the_secret,
    oauth_app_custom_settings_are_validated,
    oauth_start_needs_an_app_and_an_allowed_redirect,
    oauth_round_trip_connects_checks_and_revokes,
    an_expiring_token_is_refreshed_before_the_check,
    a_refused_refresh_token_needs_reauthorisation_and_reconnecting_keeps_the_id,
    oauth_state_is_single_use_and_bound_to_the_user,
    an_oauth_start_with_an_idempotency_key_never_keeps_its_state,
    oauth_errors_come_back_to_the_redirect_url,
    oauth_header_client_auth_and_authorize_url_placeholders,
    api_key_in_a_header_with_its_prefix,
    api_key_in_the_query,
    basic_credentials,
    custom_credentials_add_no_authentication,
    a_refused_credential_needs_reauthorisation_and_other_failures_are_errors,
    connection_credentials_are_validated_without_echoing_them,
    one_live_connection_per_provider,
    disconnecting_destroys_the_credentials,
    check_needs_a_verify_request,
    another_organization_sees_nothing,
    no_secret_reaches_a_response_or_the_log,
    a_check_after_the_app_was_removed_reports_it,
    a_failed_revocation_still_destroys_the_credentials,
    connections_and_oauth_apps_write_audit_entries_without_secrets,
);

// Start-up does not depend on the database backend; SQLite is enough.
mod startup {
    #[tokio::test]
    async fn an_invalid_manifest_stops_start_up_naming_file_and_field() {
        super::an_invalid_manifest_stops_start_up_naming_file_and_field().await;
    }
}

const PROVIDERS: &str = "/v1/integrations/providers";
pub const CONNECTIONS: &str = "/v1/integrations/connections";
const START: &str = "/v1/integrations/oauth/start";
const CALLBACK_PATH: &str = "/v1/integrations/oauth/callback";

fn app_path(slug: &str) -> String {
    format!("/v1/integrations/oauth-apps/{slug}")
}

fn connection_path(id: &str) -> String {
    format!("{CONNECTIONS}/{id}")
}

fn check_path(id: &str) -> String {
    format!("{CONNECTIONS}/{id}/check")
}

// ---------------------------------------------------------------------------------------------
// Requests that also check that no secret comes back.

async fn get(fake: &FakeProvider, client: &Client, path: &str) -> Response {
    fake.clean(client.get(path).await)
}

async fn post(fake: &FakeProvider, client: &Client, path: &str, body: Value) -> Response {
    fake.clean(client.post(path, body).await)
}

async fn put(fake: &FakeProvider, client: &Client, path: &str, body: Value) -> Response {
    fake.clean(client.put(path, body).await)
}

async fn delete(fake: &FakeProvider, client: &Client, path: &str) -> Response {
    fake.clean(client.delete(path).await)
}

/// Asserts a problem with `status` whose `type` is not pinned down by docs/api.md (412); returns it.
#[track_caller]
fn problem_any_type(response: Response, status: u16) -> Value {
    assert_eq!(response.status, status, "expected {status}, got {}: {}", response.status, response.body);
    assert!(
        response.content_type.starts_with("application/problem+json"),
        "Content-Type is {:?}, expected application/problem+json ({})",
        response.content_type,
        response.body
    );
    assert_eq!(response.body["status"], status, "{}", response.body);
    response.body
}

// ---------------------------------------------------------------------------------------------
// Setup helpers.

/// Configures the OAuth app of `slug` for `tenant` (as its owner) and tells the fake to accept it.
pub async fn configure_app(fake: &FakeProvider, tenant: &Tenant, slug: &str) -> (String, String) {
    let client_id = format!("client-{}", crate::harness::random_hex(6));
    let client_secret = fake.secret("clientsecret");
    let mut body = json!({"clientId": client_id, "clientSecret": client_secret});
    if slug == OAUTH_HEADER {
        body["customSettings"] = json!({"WORKSPACE": "acme team"});
    }
    let app = put(fake, &tenant.api, &app_path(slug), body).await.ok(200);
    assert_eq!(app["clientId"], client_id.as_str(), "{app}");
    fake.accept_client(&client_id, &client_secret);
    (client_id, client_secret)
}

/// The session token of a new session of `user`.
pub async fn session_token(server: &TestServer, user: &User) -> String {
    let session = server.admin().create_session(&user.id).await;
    str_of(&session, "token").to_owned()
}

/// A client that follows no redirect, as the tests must see every hop.
fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(30))
        .build()
        .expect("reqwest client")
}

/// One hop: status, `Location` and body text.
#[derive(Debug)]
struct Hop {
    status: u16,
    location: Option<String>,
    body: String,
}

async fn hop(url: &str, session_token: Option<&str>) -> Hop {
    let mut request = browser().get(url);
    if let Some(token) = session_token {
        request = request.header(COOKIE, format!("session_token={token}"));
    }
    let response = request.send().await.unwrap_or_else(|err| panic!("GET {url}: {err}"));
    let status = response.status().as_u16();
    let location = response.headers().get(LOCATION).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let body = response.text().await.unwrap_or_default();
    Hop { status, location, body }
}

fn query_of(url: &str) -> BTreeMap<String, String> {
    let url = url::Url::parse(url).unwrap_or_else(|err| panic!("{url:?} is not an absolute URL: {err}"));
    url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()
}

/// `POST /oauth/start` for `slug` as `client`; the authorization URL.
async fn start(fake: &FakeProvider, client: &Client, slug: &str, redirect_url: Option<&str>) -> String {
    let mut body = json!({"providerSlug": slug});
    if let Some(redirect_url) = redirect_url {
        body["redirectUrl"] = json!(redirect_url);
    }
    let started = post(fake, client, START, body).await.ok(200);
    str_of(&started, "authorizationUrl").to_owned()
}

/// Follows an authorization URL to the fake provider; the server's callback URL it redirects to.
async fn authorize(server: &TestServer, fake: &FakeProvider, authorization_url: &str) -> String {
    assert!(
        authorization_url.starts_with(&fake.uri()),
        "the authorization URL {authorization_url} does not point at the provider {}",
        fake.uri()
    );
    let at_provider = hop(authorization_url, None).await;
    assert_eq!(at_provider.status, 302, "the fake authorize endpoint: {at_provider:?}");
    let callback = at_provider.location.expect("the fake provider redirects");
    let expected = format!("{}{CALLBACK_PATH}?", server.base_url());
    assert!(callback.starts_with(&expected), "the provider was sent back to {callback}, expected {expected}…");
    callback
}

/// The server's `303` answer to a callback; asserts the status and returns the `Location`.
async fn callback(fake: &FakeProvider, url: &str, token: &str) -> String {
    let answer = hop(url, Some(token)).await;
    fake.assert_no_secret_in("the callback's answer", &answer.body);
    assert_eq!(answer.status, 303, "GET {url}: {answer:?}");
    let location = answer.location.expect("a 303 has a Location");
    fake.assert_no_secret_in("the callback's Location", &location);
    location
}

/// The whole OAuth flow for `slug` by `user` of `tenant`, back to [`FOREIGN_ORIGIN`]`/done`; the
/// connection id.
async fn connect_oauth(server: &TestServer, fake: &FakeProvider, tenant: &Tenant, user: &User, slug: &str) -> String {
    let token = session_token(server, user).await;
    let client = server.client(crate::client::Auth::Session(token.clone()), Some(&tenant.org_id));
    let url = start(fake, &client, slug, Some(&format!("{FOREIGN_ORIGIN}/done"))).await;
    let back = authorize(server, fake, &url).await;
    let location = callback(fake, &back, &token).await;
    let query = query_of(&location);
    assert_eq!(query.get("status").map(String::as_str), Some("connected"), "{location}");
    assert_eq!(query.get("provider").map(String::as_str), Some(slug), "{location}");
    let id = query.get("connectionId").unwrap_or_else(|| panic!("no connectionId in {location}")).clone();
    assert_id(&json!(id), "con_");
    id
}

/// `POST /connections` for a non-OAuth provider; the 201 Connection.
async fn connect(fake: &FakeProvider, client: &Client, slug: &str, credentials: Value) -> Value {
    let body = json!({"providerSlug": slug, "credentials": credentials});
    post(fake, client, CONNECTIONS, body).await.ok(201)
}

async fn check(fake: &FakeProvider, client: &Client, id: &str) -> Value {
    post(fake, client, &check_path(id), json!({})).await.ok(200)
}

/// Asserts the documented shape of a Connection.
#[track_caller]
fn assert_connection(connection: &Value, slug: &str, auth_type: &str, status: &str, created_by: &User) {
    assert_id(&connection["id"], "con_");
    assert_eq!(connection["providerSlug"], slug, "{connection}");
    assert!(connection["providerName"].is_string(), "{connection}");
    assert_eq!(connection["authType"], auth_type, "{connection}");
    assert_eq!(connection["status"], status, "{connection}");
    assert_eq!(connection["createdBy"], created_by.id.as_str(), "{connection}");
    assert_timestamp(&connection["createdAt"]);
    assert_timestamp(&connection["updatedAt"]);
    for key in ["connectedAt", "disconnectedAt", "tokenExpiresAt", "lastCheckedAt", "lastError"] {
        let value = &connection[key];
        assert!(value.is_null() || value.is_string(), "`{key}` must be present, a string or null: {connection}");
    }
    if status == "disconnected" {
        assert_timestamp(&connection["disconnectedAt"]);
    } else {
        assert!(connection["disconnectedAt"].is_null(), "{connection}");
    }
    assert_lacks(connection, &["credentials", "accessToken", "refreshToken", "tokens"]);
}

fn oauth_of<'a>(providers: &'a Value, slug: &str) -> &'a Value {
    let provider = data(providers).iter().find(|p| p["slug"] == slug).unwrap_or_else(|| panic!("no {slug}"));
    &provider["oauth"]
}

// ---------------------------------------------------------------------------------------------
// Providers

async fn providers_are_listed_with_the_fields_of_their_strategy(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let list = get(fake, &tenant.api, PROVIDERS).await.ok(200);
    assert_acting_user(&list, &tenant.owner);
    assert_eq!(list["authType"], "api-key", "{list}");
    let providers = data(&list);
    assert_eq!(list["count"], providers.len(), "{list}");
    let slugs: Vec<&str> = providers.iter().map(|p| str_of(p, "slug")).collect();
    let mut sorted = slugs.clone();
    sorted.sort_unstable();
    assert_eq!(slugs, sorted, "providers are sorted by slug");
    for slug in ["github", OAUTH, OAUTH_HEADER, HEADER_KEY, QUERY_KEY, BASIC, CUSTOM, NO_VERIFY] {
        assert!(slugs.contains(&slug), "{slug} is missing from {slugs:?}");
    }
    let by_slug = |slug: &str| providers.iter().find(|p| p["slug"] == slug).unwrap().clone();

    // The shipped GitHub provider.
    let github = by_slug("github");
    assert_eq!(github["authType"], "oauth2", "{github}");
    assert_eq!(github["credentialFields"], json!([]), "{github}");
    assert!(github["oauth"]["createAppUrl"].is_string(), "{github}");

    // oauth2 with everything.
    let oauth = by_slug(OAUTH);
    let base = fake.uri();
    assert_eq!(
        oauth,
        json!({
            "slug": OAUTH,
            "name": "Fake OAuth",
            "description": "A fake OAuth provider for the tests.",
            "authType": "oauth2",
            "setupInstructions": "Create an **OAuth app** at the fake provider.",
            "credentialFields": [],
            "oauth": {
                "configured": false,
                "scopes": OAUTH_SCOPES,
                "createAppUrl": format!("{base}/apps/new"),
                "callbackUrl": format!("{}{CALLBACK_PATH}", server.base_url()),
                "customSettings": [],
            },
            "supportsVerify": true,
            "supportsRevoke": true,
            "connectUrl": format!("/integrations/{OAUTH}/connect"),
        })
    );
    let oauth_header = by_slug(OAUTH_HEADER);
    assert_eq!(oauth_header["supportsRevoke"], false, "{oauth_header}");
    assert!(oauth_header["setupInstructions"].is_null(), "{oauth_header}");
    assert!(oauth_header["oauth"]["createAppUrl"].is_null(), "{oauth_header}");
    assert_eq!(
        oauth_header["oauth"]["customSettings"],
        json!([{"id": "WORKSPACE", "label": "Workspace", "type": "text", "required": true, "token": "{WORKSPACE}"}]),
        "{oauth_header}"
    );

    // api_key: one generated field.
    let header_key = by_slug(HEADER_KEY);
    assert_eq!(header_key["authType"], "api_key", "{header_key}");
    assert!(header_key["oauth"].is_null(), "{header_key}");
    assert_eq!(header_key["supportsVerify"], true, "{header_key}");
    assert_eq!(header_key["supportsRevoke"], false, "{header_key}");
    assert_eq!(header_key["connectUrl"], format!("/integrations/{HEADER_KEY}/connect"), "{header_key}");
    assert!(str_of(&header_key, "setupInstructions").starts_with("Copy the key"), "{header_key}");
    let fields = header_key["credentialFields"].as_array().unwrap();
    assert_eq!(fields.len(), 1, "{header_key}");
    let field = &fields[0];
    assert_eq!(field["id"], "api_key", "{field}");
    assert_eq!(field["label"], "API Key", "{field}");
    assert_eq!(field["type"], "password", "{field}");
    assert_eq!(field["required"], true, "{field}");
    assert!(field["placeholder"].is_string() && field["helpText"].is_string(), "{field}");
    assert_lacks(field, &["options"]);
    assert!(by_slug(QUERY_KEY)["setupInstructions"].is_null());

    // basic: the two configured field ids.
    let basic = by_slug(BASIC);
    assert_eq!(basic["authType"], "basic", "{basic}");
    let fields: Vec<(&str, &str, bool)> = basic["credentialFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| (str_of(f, "id"), str_of(f, "type"), f["required"] == true))
        .collect();
    assert_eq!(fields, [("login", "text", true), ("secret", "password", true)], "{basic}");
    let no_verify = by_slug(NO_VERIFY);
    assert_eq!(no_verify["supportsVerify"], false, "{no_verify}");
    let ids: Vec<&str> = no_verify["credentialFields"].as_array().unwrap().iter().map(|f| str_of(f, "id")).collect();
    assert_eq!(ids, ["username", "password"], "basic's default field ids: {no_verify}");

    // custom: the declared fields, absent members omitted.
    let custom = by_slug(CUSTOM);
    assert_eq!(custom["authType"], "custom", "{custom}");
    assert_eq!(custom["setupInstructions"], "Ask your administrator.", "{custom}");
    assert_eq!(
        custom["credentialFields"],
        json!([
            {"id": "endpoint", "label": "Endpoint", "type": "url", "required": true, "placeholder": "https://…"},
            {"id": "port", "label": "Port", "type": "number", "required": true},
            {"id": "region", "label": "Region", "type": "select", "required": true,
             "options": [{"value": "eu", "label": "Europe"}, {"value": "us", "label": "United States"}]},
            {"id": "token", "label": "Token", "type": "password", "required": true, "helpText": "From the console."},
            {"id": "notes", "label": "Notes", "type": "textarea", "required": false},
            {"id": "plan", "label": "Plan", "type": "combobox", "required": false,
             "options": [{"value": "free", "label": "Free"}, {"value": "team", "label": "Team"}]},
        ])
    );

    // One provider, bare; the same through a session.
    for slug in [OAUTH, HEADER_KEY, BASIC, CUSTOM, "github"] {
        let one = get(fake, &tenant.session, &format!("{PROVIDERS}/{slug}")).await.ok(200);
        assert_eq!(one, by_slug(slug), "GET {PROVIDERS}/{slug} is the list's item");
    }
    get(fake, &tenant.api, &format!("{PROVIDERS}/no-such-provider")).await.problem(404);
    server.anonymous().get(PROVIDERS).await.problem(401);

    // `configured` follows the organization's OAuth app.
    configure_app(fake, &tenant, OAUTH).await;
    let list = get(fake, &tenant.api, PROVIDERS).await.ok(200);
    assert_eq!(oauth_of(&list, OAUTH)["configured"], true, "{list}");
    assert_eq!(oauth_of(&list, OAUTH_HEADER)["configured"], false, "{list}");
    let one = get(fake, &tenant.api, &format!("{PROVIDERS}/{OAUTH}")).await.ok(200);
    assert_eq!(one["oauth"]["configured"], true, "{one}");
    let other = server.tenant().await;
    let theirs = get(fake, &other.api, &format!("{PROVIDERS}/{OAUTH}")).await.ok(200);
    assert_eq!(theirs["oauth"]["configured"], false, "another organization's app: {theirs}");
}

// ---------------------------------------------------------------------------------------------
// OAuth apps

async fn oauth_apps_are_configured_by_administrators_and_never_show_the_secret(
    server: &TestServer,
    fake: &FakeProvider,
) {
    let tenant = server.tenant().await;
    let path = app_path(OAUTH);
    get(fake, &tenant.api, &path).await.problem(404);

    let secret = fake.secret("clientsecret");
    let app = put(fake, &tenant.api, &path, json!({"clientId": "client-one", "clientSecret": secret})).await.ok(200);
    assert_eq!(app["providerSlug"], OAUTH, "{app}");
    assert_eq!(app["clientId"], "client-one", "{app}");
    assert_eq!(app["clientSecretSet"], true, "{app}");
    assert_eq!(app["customSettings"], json!({}), "{app}");
    assert_timestamp(&app["updatedAt"]);
    assert_lacks(&app, &["clientSecret"]);
    let read = get(fake, &tenant.api, &path).await.ok(200);
    assert_eq!(without(&read, &["updatedAt"]), without(&app, &["updatedAt"]));
    // Checked last, so that the rest of the test runs even when it fails.
    let (written_at, read_at) = (app["updatedAt"].clone(), read["updatedAt"].clone());

    // Administrators by role: owner, admin, any case, in a list.
    for role in ["admin", "Employee, ADMIN", "auditor owner"] {
        let (user, _) = server.member(&tenant, role).await;
        let client = server.session(&user.id, Some(&tenant.org_id)).await;
        let body = json!({"clientId": format!("client-{}", user.name), "clientSecret": fake.secret("clientsecret")});
        let app = put(fake, &client, &path, body).await.ok(200);
        assert_eq!(app["clientId"], format!("client-{}", user.name), "role {role}: {app}");
    }
    // Auditors may read it but not change or remove it (employees and unknown roles read nothing
    // of integrations: tests/api/access.rs).
    for role in ["auditor", "Auditor, viewer"] {
        let (user, _) = server.member(&tenant, role).await;
        let client = server.session(&user.id, Some(&tenant.org_id)).await;
        let body = json!({"clientId": "client-mallory", "clientSecret": fake.secret("clientsecret")});
        put(fake, &client, &path, body).await.problem(403);
        delete(fake, &client, &path).await.problem(403);
        let read = get(fake, &client, &path).await.ok(200);
        assert_ne!(read["clientId"], "client-mallory", "role {role}");
        // An API key acts as the member who created it.
        let key = server.api_key(&tenant, &user.id).await;
        put(fake, &key, &path, json!({"clientId": "client-mallory", "clientSecret": "x"})).await.problem(403);
    }

    // The secret may be left out once an app is configured.
    let app = put(fake, &tenant.api, &path, json!({"clientId": "client-two"})).await.ok(200);
    assert_eq!(app["clientId"], "client-two", "{app}");
    assert_eq!(app["clientSecretSet"], true, "{app}");

    // Another organization has none, and cannot configure one without a secret.
    let other = server.tenant().await;
    get(fake, &other.api, &path).await.problem(404);
    put(fake, &other.api, &path, json!({"clientId": "client-b"})).await.invalid("clientSecret");
    put(fake, &other.api, &path, json!({"clientSecret": fake.secret("clientsecret")})).await.invalid("clientId");
    let blank = json!({"clientId": " ", "clientSecret": fake.secret("clientsecret")});
    put(fake, &other.api, &path, blank).await.invalid("clientId");
    get(fake, &other.api, &path).await.problem(404);
    delete(fake, &other.api, &path).await.problem(404);
    assert_eq!(get(fake, &tenant.api, &path).await.ok(200)["clientId"], "client-two");

    // Only oauth2 providers have apps; unknown slugs are 404.
    let body = json!({"clientId": "c", "clientSecret": fake.secret("clientsecret")});
    put(fake, &tenant.api, &app_path(HEADER_KEY), body.clone()).await.problem(400);
    put(fake, &tenant.api, &app_path("no-such-provider"), body).await.problem(404);

    // Removal.
    let removed = delete(fake, &tenant.api, &path).await.ok(200);
    assert_eq!(removed["message"], "OAuth app removed", "{removed}");
    assert_eq!(removed["providerSlug"], OAUTH, "{removed}");
    get(fake, &tenant.api, &path).await.problem(404);
    delete(fake, &tenant.api, &path).await.problem(404);

    assert_eq!(read_at, written_at, "GET after PUT shows another updatedAt than the PUT answered");
}

async fn oauth_app_custom_settings_are_validated(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let path = app_path(OAUTH_HEADER);
    let secret = fake.secret("clientsecret");
    put(fake, &tenant.api, &path, json!({"clientId": "c", "clientSecret": secret})).await.invalid("customSettings");
    let body =
        json!({"clientId": "c", "clientSecret": secret, "customSettings": {"WORKSPACE": "acme", "COLOR": "red"}});
    put(fake, &tenant.api, &path, body).await.invalid("customSettings");
    get(fake, &tenant.api, &path).await.problem(404);
    let body = json!({"clientId": "c", "clientSecret": secret, "customSettings": {"WORKSPACE": "acme"}});
    let app = put(fake, &tenant.api, &path, body).await.ok(200);
    assert_eq!(app["customSettings"], json!({"WORKSPACE": "acme"}), "{app}");
    let read = get(fake, &tenant.api, &path).await.ok(200);
    assert_eq!(without(&read, &["updatedAt"]), without(&app, &["updatedAt"]));
    assert_eq!(read["updatedAt"], app["updatedAt"], "GET after PUT shows another updatedAt than the PUT answered");
}

// ---------------------------------------------------------------------------------------------
// The OAuth flow

async fn oauth_start_needs_an_app_and_an_allowed_redirect(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let client = &tenant.session;

    let missing = post(fake, client, START, json!({"providerSlug": OAUTH})).await;
    let problem = problem_any_type(missing, 412);
    assert_eq!(problem["setupInstructions"], "Create an **OAuth app** at the fake provider.", "{problem}");
    assert_eq!(problem["createAppUrl"], format!("{}/apps/new", fake.uri()), "{problem}");
    let missing = post(fake, client, START, json!({"providerSlug": OAUTH_HEADER})).await;
    let problem = problem_any_type(missing, 412);
    assert!(problem.get("setupInstructions").is_some_and(Value::is_null), "{problem}");
    assert!(problem.get("createAppUrl").is_some_and(Value::is_null), "{problem}");

    post(fake, client, START, json!({"providerSlug": "no-such-provider"})).await.problem(404);
    post(fake, client, START, json!({"providerSlug": HEADER_KEY})).await.invalid("providerSlug");

    let (client_id, _) = configure_app(fake, &tenant, OAUTH).await;
    for bad in [
        "https://evil.example.test/done",
        "http://app.example.test/done",
        "https://app.example.test.evil.test/done",
        "/relative/path",
        "javascript:alert(1)",
        "not a url",
    ] {
        let body = json!({"providerSlug": OAUTH, "redirectUrl": bad});
        post(fake, client, START, body).await.invalid("redirectUrl");
    }
    let mut states = Vec::new();
    for redirect in [Some(format!("{FOREIGN_ORIGIN}/done?x=1")), Some(format!("{}/somewhere", server.base_url())), None]
    {
        let url = start(fake, client, OAUTH, redirect.as_deref()).await;
        let authorize = format!("{}/oauth/authorize?", fake.uri());
        assert!(url.starts_with(&authorize), "{url} does not start with {authorize}");
        let query = query_of(&url);
        let param = |name: &str| query.get(name).map(String::as_str);
        assert_eq!(param("client_id"), Some(client_id.as_str()), "{url}");
        assert_eq!(param("response_type"), Some("code"), "{url}");
        let callback = format!("{}{CALLBACK_PATH}", server.base_url());
        assert_eq!(param("redirect_uri"), Some(callback.as_str()), "{url}");
        assert_eq!(param("scope"), Some(OAUTH_SCOPES.join(" ").as_str()), "{url}");
        assert_eq!(param("code_challenge_method"), Some("S256"), "{url}");
        let challenge = param("code_challenge").unwrap_or_else(|| panic!("no code_challenge in {url}"));
        assert!(is_base64url(challenge, 43), "code_challenge {challenge:?} is not 43 base64url characters");
        let state = param("state").unwrap_or_else(|| panic!("no state in {url}"));
        assert!(is_base64url(state, 43), "state {state:?} is not 32 bytes of base64url");
        for (name, value) in OAUTH_EXTRA_PARAMS {
            assert_eq!(param(name), Some(value), "authorizationParams {name} in {url}");
        }
        states.push(state.to_owned());
    }
    states.sort();
    states.dedup();
    assert_eq!(states.len(), 3, "every start has its own state");
}

fn is_base64url(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

async fn oauth_round_trip_connects_checks_and_revokes(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let (client_id, client_secret) = configure_app(fake, &tenant, OAUTH).await;
    let token = session_token(server, &tenant.owner).await;
    let client = server.client(crate::client::Auth::Session(token.clone()), Some(&tenant.org_id));

    // start → the provider's authorize endpoint.
    let url = start(fake, &client, OAUTH, Some(&format!("{FOREIGN_ORIGIN}/done?from=test"))).await;
    let back = authorize(server, fake, &url).await;
    let seen = fake.state().authorize.last().cloned().expect("the fake saw the authorize request");
    assert_eq!(seen.path, "/oauth/authorize");
    assert_eq!(seen.query.get("client_id"), Some(&client_id));
    assert_eq!(seen.query.get("code_challenge_method").map(String::as_str), Some("S256"));
    assert!(seen.query.contains_key("code_challenge"), "{seen:?}");
    assert_eq!(seen.query.get("scope").map(String::as_str), Some("read:things read:people"));
    for (name, value) in OAUTH_EXTRA_PARAMS {
        assert_eq!(seen.query.get(name).map(String::as_str), Some(value), "{seen:?}");
    }

    // The callback with the user's session → back to the redirect URL.
    let location = callback(fake, &back, &token).await;
    let parsed = url::Url::parse(&location).unwrap();
    assert_eq!(parsed.origin().ascii_serialization(), FOREIGN_ORIGIN, "{location}");
    assert_eq!(parsed.path(), "/done", "{location}");
    let query = query_of(&location);
    assert_eq!(query.get("from").map(String::as_str), Some("test"), "the redirect URL's own query is kept: {location}");
    assert_eq!(query.get("status").map(String::as_str), Some("connected"), "{location}");
    assert_eq!(query.get("provider").map(String::as_str), Some(OAUTH), "{location}");
    let id = query.get("connectionId").cloned().unwrap_or_else(|| panic!("no connectionId in {location}"));

    // The token exchange: client credentials in the body, the PKCE verifier, the same redirect URI.
    let exchange = fake.state().token.first().cloned().expect("the fake saw a token request");
    let form = |name: &str| exchange.form.get(name).map(String::as_str);
    assert_eq!(form("grant_type"), Some("authorization_code"), "{exchange:?}");
    assert_eq!(form("client_id"), Some(client_id.as_str()), "{exchange:?}");
    assert_eq!(form("client_secret"), Some(client_secret.as_str()), "{exchange:?}");
    assert!(exchange.form.contains_key("code_verifier"), "{exchange:?}");
    assert_eq!(form("redirect_uri"), Some(format!("{}{CALLBACK_PATH}", server.base_url()).as_str()));
    assert!(exchange.header("authorization").is_none(), "clientAuthMethod body sends no Basic header");
    let (access, refresh) = {
        let state = fake.state();
        (state.issued_access[0].clone(), state.issued_refresh[0].clone())
    };

    // The connection.
    let connection = get(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_eq!(connection["id"], id.as_str());
    assert_connection(&connection, OAUTH, "oauth2", "active", &tenant.owner);
    assert_eq!(connection["providerName"], "Fake OAuth", "{connection}");
    assert_timestamp(&connection["connectedAt"]);
    assert_timestamp(&connection["tokenExpiresAt"]);
    assert!(connection["lastCheckedAt"].is_null() && connection["lastError"].is_null(), "{connection}");
    let list = get(fake, &tenant.session, CONNECTIONS).await.ok(200);
    assert_eq!(list["count"], 1, "{list}");
    assert_eq!(data(&list)[0], connection, "{list}");
    assert_eq!(list["authType"], "session", "{list}");
    assert_acting_user(&list, &tenant.owner);

    // A check sends the access token; no refresh is due.
    let checked = check(fake, &tenant.api, &id).await;
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    assert_eq!(checked["check"]["httpStatus"], 200, "{checked}");
    assert!(checked["check"]["message"].is_string() || checked["check"]["message"].is_null(), "{checked}");
    assert_connection(&checked["connection"], OAUTH, "oauth2", "active", &tenant.owner);
    assert_timestamp(&checked["connection"]["lastCheckedAt"]);
    let verified = fake.verify_requests("oauth");
    assert_eq!(verified.len(), 1, "{verified:?}");
    assert_eq!(verified[0].header("authorization"), Some(format!("Bearer {access}").as_str()));
    assert_eq!(fake.state().token.len(), 1, "a token valid for an hour is not refreshed");

    // Disconnecting revokes the refresh token at the provider.
    let removed = delete(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_eq!(removed["message"], "Connection disconnected", "{removed}");
    assert_eq!(removed["revocation"], "revoked", "{removed}");
    assert_connection(&removed["connection"], OAUTH, "oauth2", "disconnected", &tenant.owner);
    assert!(removed["connection"]["tokenExpiresAt"].is_null() || removed["connection"]["tokenExpiresAt"].is_string());
    let revoked = fake.state().revoke.clone();
    assert_eq!(revoked.len(), 1, "{revoked:?}");
    assert_eq!(revoked[0].form.get("token"), Some(&refresh), "the refresh token is revoked: {revoked:?}");
    assert_eq!(revoked[0].form.get("token_type_hint").map(String::as_str), Some("refresh_token"));
    assert_eq!(revoked[0].form.get("client_id"), Some(&client_id), "client authentication in the body");
    assert_eq!(revoked[0].form.get("client_secret"), Some(&client_secret), "client authentication in the body");

    post(fake, &tenant.api, &check_path(&id), json!({})).await.problem(409);
    let again = delete(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_eq!(again["revocation"], "not_supported", "{again}");
    assert_eq!(again["connection"]["status"], "disconnected", "{again}");
    assert_eq!(fake.state().revoke.len(), 1, "nothing is left to revoke");
    let list = get(fake, &tenant.api, CONNECTIONS).await.ok(200);
    assert_eq!(data(&list)[0]["status"], "disconnected", "disconnected connections are listed: {list}");
    assert_eq!(fake.verify_requests("oauth").len(), 1);

    // Connecting again makes a new connection: the disconnected one is not live.
    crate::checks::tick().await;
    let renewed = connect_oauth(server, fake, &tenant, &tenant.owner, OAUTH).await;
    assert_ne!(renewed, id, "a disconnected connection is not reused");
    let list = get(fake, &tenant.api, CONNECTIONS).await.ok(200);
    assert_eq!(crate::checks::ids(&list), [renewed.clone(), id.clone()], "newest first: {list}");
    assert_eq!(data(&list)[0]["status"], "active", "{list}");
}

async fn an_expiring_token_is_refreshed_before_the_check(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let (client_id, client_secret) = configure_app(fake, &tenant, OAUTH).await;
    fake.state().code_expires_in = 60;
    let id = connect_oauth(server, fake, &tenant, &tenant.owner, OAUTH).await;
    let before = get(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_timestamp(&before["tokenExpiresAt"]);

    let checked = check(fake, &tenant.api, &id).await;
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    assert_eq!(checked["connection"]["status"], "active", "{checked}");
    let (tokens, issued_refresh, issued_access) = {
        let state = fake.state();
        (state.token.clone(), state.issued_refresh.clone(), state.issued_access.clone())
    };
    assert_eq!(tokens.len(), 2, "one exchange and one refresh: {tokens:?}");
    let refresh = &tokens[1];
    assert_eq!(refresh.form.get("grant_type").map(String::as_str), Some("refresh_token"), "{refresh:?}");
    assert_eq!(refresh.form.get("refresh_token"), Some(&issued_refresh[0]), "{refresh:?}");
    assert_eq!(refresh.form.get("client_id"), Some(&client_id), "{refresh:?}");
    assert_eq!(refresh.form.get("client_secret"), Some(&client_secret), "{refresh:?}");
    let verified = fake.verify_requests("oauth");
    assert_eq!(verified.len(), 1, "{verified:?}");
    assert_eq!(
        verified[0].header("authorization"),
        Some(format!("Bearer {}", issued_access[1]).as_str()),
        "the check uses the refreshed access token"
    );
    let after = &checked["connection"]["tokenExpiresAt"];
    assert_timestamp(after);
    crate::checks::assert_later(after, &before["tokenExpiresAt"]);

    // The refresh token the provider did not replace is kept: disconnecting revokes it.
    let removed = delete(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_eq!(removed["revocation"], "revoked", "{removed}");
    assert_eq!(fake.state().revoke[0].form.get("token"), Some(&issued_refresh[0]));
}

async fn a_refused_refresh_token_needs_reauthorisation_and_reconnecting_keeps_the_id(
    server: &TestServer,
    fake: &FakeProvider,
) {
    let tenant = server.tenant().await;
    configure_app(fake, &tenant, OAUTH).await;
    fake.state().code_expires_in = 60;
    let id = connect_oauth(server, fake, &tenant, &tenant.owner, OAUTH).await;
    fake.state().refresh_rejected = true;

    let checked = check(fake, &tenant.api, &id).await;
    assert_eq!(checked["check"]["ok"], false, "{checked}");
    assert_eq!(checked["connection"]["status"], "needs_reauth", "{checked}");
    assert_timestamp(&checked["connection"]["lastCheckedAt"]);
    assert!(checked["connection"]["lastError"].is_string(), "{checked}");
    assert!(fake.verify_requests("oauth").is_empty(), "no verify request without a valid token");
    let read = get(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_eq!(read["status"], "needs_reauth", "{read}");

    // Re-authorising makes the same connection active again.
    fake.state().refresh_rejected = false;
    fake.state().code_expires_in = 3600;
    let again = connect_oauth(server, fake, &tenant, &tenant.owner, OAUTH).await;
    assert_eq!(again, id, "re-authorisation keeps the connection's id");
    let read = get(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_eq!(read["status"], "active", "{read}");
    let list = get(fake, &tenant.api, CONNECTIONS).await.ok(200);
    assert_eq!(list["count"], 1, "{list}");
    let checked = check(fake, &tenant.api, &id).await;
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    let latest = fake.state().issued_access.last().cloned().unwrap();
    let verified = fake.verify_requests("oauth");
    assert_eq!(verified.last().unwrap().header("authorization"), Some(format!("Bearer {latest}").as_str()));
}

async fn oauth_state_is_single_use_and_bound_to_the_user(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    configure_app(fake, &tenant, OAUTH).await;
    let token = session_token(server, &tenant.owner).await;
    let client = server.client(crate::client::Auth::Session(token.clone()), Some(&tenant.org_id));

    // Without a session: 401.
    let back = authorize(server, fake, &start(fake, &client, OAUTH, None).await).await;
    let anonymous = hop(&back, None).await;
    assert_eq!(anonymous.status, 401, "{anonymous:?}");
    let anonymous = hop(&format!("{}{CALLBACK_PATH}?code=x&state={}", server.base_url(), "A".repeat(43)), None).await;
    assert_eq!(anonymous.status, 401, "{anonymous:?}");

    // Started with the owner's API key (which acts as the owner), finished in the owner's browser.
    let back = authorize(server, fake, &start(fake, &tenant.api, OAUTH, None).await).await;
    let location = callback(fake, &back, &token).await;
    assert_eq!(query_of(&location).get("status").map(String::as_str), Some("connected"), "{location}");
    // The default redirect is the provider's connect page for the organization.
    let parsed = url::Url::parse(&location).unwrap();
    assert_eq!(parsed.origin().ascii_serialization(), server.base_url(), "{location}");
    assert_eq!(parsed.path(), format!("/integrations/{OAUTH}/connect"), "{location}");
    assert_eq!(query_of(&location).get("organizationId"), Some(&tenant.org_id), "{location}");
    let connections_before = get(fake, &tenant.api, CONNECTIONS).await.ok(200);

    // Used once: refused.
    let reused = hop(&back, Some(&token)).await;
    fake.assert_no_secret_in("the reused callback's answer", &reused.body);
    assert_eq!(reused.status, 400, "a state is single use: {reused:?}");
    let reused: Value = serde_json::from_str(&reused.body).unwrap_or_else(|_| panic!("not a problem: {reused:?}"));
    assert_eq!(reused["status"], 400, "{reused}");

    // An unknown state.
    let mut forged = url::Url::parse(&back).unwrap();
    let code = query_of(&back).get("code").cloned().unwrap();
    forged.query_pairs_mut().clear().append_pair("code", &code).append_pair("state", &"A".repeat(43));
    let unknown = hop(forged.as_str(), Some(&token)).await;
    assert_eq!(unknown.status, 400, "an unknown state: {unknown:?}");
    let without = format!("{}{CALLBACK_PATH}?code={code}", server.base_url());
    assert_eq!(hop(&without, Some(&token)).await.status, 400, "no state at all");

    // Another user's session, or one that does not authenticate: refused before the state is
    // touched, so the user who started still finishes.
    let back = authorize(server, fake, &start(fake, &client, OAUTH, None).await).await;
    let (colleague, _) = server.member(&tenant, "owner").await;
    let colleague_token = session_token(server, &colleague).await;
    let stolen = hop(&back, Some(&colleague_token)).await;
    assert_eq!(stolen.status, 400, "the session of another user: {stolen:?}");
    let forged = hop(&back, Some("not-a-session")).await;
    assert_eq!(forged.status, 400, "a session that does not authenticate: {forged:?}");

    assert_eq!(get(fake, &tenant.api, CONNECTIONS).await.ok(200), connections_before);
    assert_eq!(fake.state().token.len(), 1, "no refused callback reaches the token endpoint");
    let finished = callback(fake, &back, &token).await;
    assert_eq!(query_of(&finished).get("status").map(String::as_str), Some("connected"), "{finished}");
    server.stderr_containing("Invalid state").await;
    assert!(reused.to_string().contains("Invalid OAuth state"), "the problem says `Invalid OAuth state`: {reused}");
    // docs/api.md gives every 400 the type `/problems/validation`; docs/integrations.md names no other.
    assert_eq!(reused["type"], "/problems/validation", "the problem type of a refused state: {reused}");
}

async fn an_oauth_start_with_an_idempotency_key_never_keeps_its_state(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    configure_app(fake, &tenant, OAUTH).await;
    let keyed = tenant.api.with_header("Idempotency-Key", "start-once");
    let started = keyed.post(START, json!({"providerSlug": OAUTH})).await.ok(200);
    let state = query_of(str_of(&started, "authorizationUrl")).remove("state").expect("a state");
    // The live state is shown once: a repeat is told the answer is not kept, and never gets it.
    let repeat = keyed.post(START, json!({"providerSlug": OAUTH})).await;
    let raw = String::from_utf8_lossy(&repeat.bytes).into_owned();
    assert!(!raw.contains(&state), "the state was kept and replayed: {raw}");
    assert_eq!(repeat.status, 409, "{raw}");
    assert_eq!(repeat.body["type"], "/problems/idempotency-response-not-kept", "{raw}");
}

async fn oauth_errors_come_back_to_the_redirect_url(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    configure_app(fake, &tenant, OAUTH).await;
    let token = session_token(server, &tenant.owner).await;
    let client = server.client(crate::client::Auth::Session(token.clone()), Some(&tenant.org_id));
    let redirect = format!("{FOREIGN_ORIGIN}/done");

    // The user denies access.
    fake.state().authorize_error = Some("access_denied".to_owned());
    let back = authorize(server, fake, &start(fake, &client, OAUTH, Some(&redirect)).await).await;
    let location = callback(fake, &back, &token).await;
    assert!(location.starts_with(&redirect), "{location}");
    let query = query_of(&location);
    assert_eq!(query.get("status").map(String::as_str), Some("error"), "{location}");
    assert_eq!(query.get("provider").map(String::as_str), Some(OAUTH), "{location}");
    assert_eq!(query.get("error").map(String::as_str), Some("access_denied"), "{location}");
    assert!(!query.contains_key("connectionId"), "{location}");

    // An error that is not lowercase words is not passed through as it is.
    fake.state().authorize_error = Some("<b>Denied</b> & more".to_owned());
    let back = authorize(server, fake, &start(fake, &client, OAUTH, Some(&redirect)).await).await;
    let location = callback(fake, &back, &token).await;
    let query = query_of(&location);
    assert_eq!(query.get("status").map(String::as_str), Some("error"), "{location}");
    let code = query.get("error").cloned().unwrap_or_else(|| panic!("no error in {location}"));
    assert!(
        !code.is_empty() && code.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
        "the error code {code:?} is not lowercase words"
    );

    // The provider refuses the client credentials at the token endpoint.
    fake.state().authorize_error = None;
    fake.accept_client("someone-else", "another-secret");
    let back = authorize(server, fake, &start(fake, &client, OAUTH, Some(&redirect)).await).await;
    let location = callback(fake, &back, &token).await;
    let query = query_of(&location);
    assert_eq!(query.get("status").map(String::as_str), Some("error"), "{location}");
    assert_eq!(query.get("error").map(String::as_str), Some("token_exchange_failed"), "{location}");

    // The app was removed between start and callback.
    let back = authorize(server, fake, &start(fake, &client, OAUTH, Some(&redirect)).await).await;
    delete(fake, &tenant.api, &app_path(OAUTH)).await.ok(200);
    let location = callback(fake, &back, &token).await;
    let query = query_of(&location);
    assert_eq!(query.get("status").map(String::as_str), Some("error"), "{location}");
    assert_eq!(query.get("error").map(String::as_str), Some("oauth_app_missing"), "{location}");

    let list = get(fake, &tenant.api, CONNECTIONS).await.ok(200);
    assert_eq!(list["count"], 0, "a failed flow creates no connection: {list}");
    server.stderr_containing("Token exchange failed").await;
}

async fn oauth_header_client_auth_and_authorize_url_placeholders(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let (client_id, client_secret) = configure_app(fake, &tenant, OAUTH_HEADER).await;
    let id = connect_oauth(server, fake, &tenant, &tenant.owner, OAUTH_HEADER).await;

    let seen = fake.state().authorize.last().cloned().unwrap();
    assert_eq!(seen.path, "/oauth/acme%20team/authorize", "the {{WORKSPACE}} placeholder, percent-encoded");
    assert!(!seen.query.contains_key("code_challenge"), "no PKCE without `pkce: true`: {seen:?}");
    assert!(!seen.query.contains_key("code_challenge_method"), "{seen:?}");
    let exchange = fake.state().token[0].clone();
    assert_eq!(exchange.header("authorization"), Some(basic_header(&client_id, &client_secret).as_str()));
    assert!(!exchange.form.contains_key("client_secret"), "clientAuthMethod header: {exchange:?}");
    assert!(!exchange.form.contains_key("code_verifier"), "{exchange:?}");

    let checked = check(fake, &tenant.api, &id).await;
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    let access = fake.state().issued_access[0].clone();
    assert_eq!(fake.verify_requests("oauth")[0].header("authorization"), Some(format!("Bearer {access}").as_str()));

    let removed = delete(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_eq!(removed["revocation"], "not_supported", "no `revoke` in the manifest: {removed}");
    assert!(fake.state().revoke.is_empty());
}

// ---------------------------------------------------------------------------------------------
// Connections of the other strategies

async fn api_key_in_a_header_with_its_prefix(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let key = fake.secret("apikey");
    fake.accept(&format!("{KEY_PREFIX}{key}"));
    let connection = connect(fake, &tenant.session, HEADER_KEY, json!({"api_key": key})).await;
    assert_connection(&connection, HEADER_KEY, "api_key", "active", &tenant.owner);
    assert_eq!(connection["providerName"], "Fake Header Key", "{connection}");
    assert_timestamp(&connection["connectedAt"]);
    assert!(connection["tokenExpiresAt"].is_null(), "{connection}");
    let id = str_of(&connection, "id");
    assert_eq!(get(fake, &tenant.api, &connection_path(id)).await.ok(200), connection);

    let checked = check(fake, &tenant.api, id).await;
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    assert_eq!(checked["check"]["httpStatus"], 200, "{checked}");
    assert_eq!(checked["connection"]["status"], "active", "{checked}");
    assert!(checked["connection"]["lastError"].is_null(), "{checked}");
    let seen = fake.verify_requests("header");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].header(KEY_HEADER), Some(format!("{KEY_PREFIX}{key}").as_str()));
    assert!(seen[0].header("authorization").is_none(), "{seen:?}");
    assert!(seen[0].query.is_empty(), "{seen:?}");
}

async fn api_key_in_the_query(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    // Characters that must be percent-encoded in a query.
    let key = format!("{}&format=xml+a b/c?d#e%", fake.secret("apikey"));
    fake.accept(&key);
    let connection = connect(fake, &tenant.api, QUERY_KEY, json!({"api_key": key})).await;
    assert_connection(&connection, QUERY_KEY, "api_key", "active", &tenant.owner);
    let checked = check(fake, &tenant.api, str_of(&connection, "id")).await;
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    let seen = fake.verify_requests("query");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].query.get(KEY_QUERY), Some(&key), "{seen:?}");
    assert_eq!(seen[0].query.get("format").map(String::as_str), Some("json"), "the URL's own query is kept");
    assert!(seen[0].header("authorization").is_none() && seen[0].header(KEY_HEADER).is_none(), "{seen:?}");

    // Another administrator may connect a provider; the connection is theirs.
    let (employee, _) = server.member(&tenant, "admin").await;
    let client = server.session(&employee.id, Some(&tenant.org_id)).await;
    let password = fake.secret("password");
    let connection = connect(fake, &client, BASIC, json!({"login": "erin", "secret": password})).await;
    assert_connection(&connection, BASIC, "basic", "active", &employee);
}

async fn basic_credentials(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let password = fake.secret("password");
    fake.accept(&basic_header("alice@example.test", &password));
    let credentials = json!({"login": "alice@example.test", "secret": password});
    let connection = connect(fake, &tenant.api, BASIC, credentials).await;
    assert_connection(&connection, BASIC, "basic", "active", &tenant.owner);
    let checked = check(fake, &tenant.api, str_of(&connection, "id")).await;
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    let seen = fake.verify_requests("basic");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].header("authorization"), Some(basic_header("alice@example.test", &password).as_str()));
}

async fn custom_credentials_add_no_authentication(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let token = fake.secret("customtoken");
    let credentials = json!({"endpoint": "https://api.example.test", "port": "8443", "region": "eu", "token": token});
    let connection = connect(fake, &tenant.api, CUSTOM, credentials).await;
    assert_connection(&connection, CUSTOM, "custom", "active", &tenant.owner);
    let checked = check(fake, &tenant.api, str_of(&connection, "id")).await;
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    let seen = fake.verify_requests("custom");
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(seen[0].header("authorization").is_none(), "custom adds no header: {seen:?}");
    assert!(seen[0].query.is_empty(), "{seen:?}");
    for (name, value) in &seen[0].headers {
        assert!(!value.contains(&token), "custom sent its token in {name}");
    }
}

async fn a_refused_credential_needs_reauthorisation_and_other_failures_are_errors(
    server: &TestServer,
    fake: &FakeProvider,
) {
    let tenant = server.tenant().await;
    let wrong = fake.secret("apikey");
    let connection = connect(fake, &tenant.api, HEADER_KEY, json!({"api_key": wrong})).await;
    let id = str_of(&connection, "id");
    let checked = check(fake, &tenant.api, id).await;
    assert_eq!(checked["check"]["ok"], false, "{checked}");
    assert_eq!(checked["check"]["httpStatus"], 401, "{checked}");
    assert_eq!(checked["connection"]["status"], "needs_reauth", "{checked}");
    assert!(checked["connection"]["lastError"].is_string(), "{checked}");
    assert_eq!(get(fake, &tenant.api, &connection_path(id)).await.ok(200)["status"], "needs_reauth");

    // 403 too.
    let password = fake.secret("password");
    let basic = connect(fake, &tenant.api, BASIC, json!({"login": "bob", "secret": password})).await;
    fake.state().verify_status = Some(403);
    let checked = check(fake, &tenant.api, str_of(&basic, "id")).await;
    assert_eq!(checked["check"]["httpStatus"], 403, "{checked}");
    assert_eq!(checked["connection"]["status"], "needs_reauth", "{checked}");

    // Any other answer is an error; a 2xx makes it active again.
    fake.state().verify_status = Some(500);
    let checked = check(fake, &tenant.api, id).await;
    assert_eq!(checked["check"]["ok"], false, "{checked}");
    assert_eq!(checked["check"]["httpStatus"], 500, "{checked}");
    assert_eq!(checked["connection"]["status"], "error", "{checked}");
    fake.state().verify_status = Some(204);
    let checked = check(fake, &tenant.api, id).await;
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    assert_eq!(checked["check"]["httpStatus"], 204, "{checked}");
    assert_eq!(checked["connection"]["status"], "active", "{checked}");
    assert!(checked["connection"]["lastError"].is_null(), "{checked}");
}

async fn connection_credentials_are_validated_without_echoing_them(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let client = &tenant.api;
    let key = fake.secret("apikey");

    let body = |slug: &str, credentials: Value| json!({"providerSlug": slug, "credentials": credentials});
    post(fake, client, CONNECTIONS, body(HEADER_KEY, json!({}))).await.invalid("credentials.api_key");
    post(fake, client, CONNECTIONS, body(HEADER_KEY, json!({"api_key": ""}))).await.invalid("credentials.api_key");
    let password = fake.secret("password");
    post(fake, client, CONNECTIONS, body(BASIC, json!({"secret": password}))).await.invalid("credentials.login");
    post(fake, client, CONNECTIONS, body(BASIC, json!({"login": "bob"}))).await.invalid("credentials.secret");

    // One error per invalid field, and the submitted secret is not echoed.
    let token = fake.secret("customtoken");
    let bad = json!({"endpoint": "ftp://files.example.test", "port": "eighty", "region": "mars", "token": token});
    let problem = post(fake, client, CONNECTIONS, body(CUSTOM, bad)).await.invalid("credentials.endpoint");
    let named: Vec<&str> = problem["errors"].as_array().unwrap().iter().filter_map(|e| e["field"].as_str()).collect();
    for field in ["credentials.endpoint", "credentials.port", "credentials.region"] {
        assert!(named.contains(&field), "{field} is not named in {problem}");
    }
    assert!(!named.contains(&"credentials.token"), "a valid field has no error: {problem}");
    let text = problem.to_string();
    for echoed in ["ftp://files.example.test", "eighty", "mars"] {
        assert!(!text.contains(echoed), "the value {echoed:?} is echoed: {problem}");
    }
    let missing = json!({"endpoint": "https://api.example.test", "port": "1", "region": "us"});
    post(fake, client, CONNECTIONS, body(CUSTOM, missing)).await.invalid("credentials.token");

    // oauth2 providers connect through the OAuth flow.
    let refused = post(fake, client, CONNECTIONS, body(OAUTH, json!({"api_key": key}))).await.problem(400);
    assert!(refused.to_string().contains("/v1/integrations/oauth/start"), "points at the OAuth start: {refused}");
    post(fake, client, CONNECTIONS, body("no-such-provider", json!({"api_key": key}))).await.problem(404);
    post(fake, client, CONNECTIONS, json!({"credentials": {"api_key": key}})).await.invalid("providerSlug");

    let list = get(fake, client, CONNECTIONS).await.ok(200);
    assert_eq!(list["count"], 0, "no refused request made a connection: {list}");
}

async fn one_live_connection_per_provider(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let first = connect(fake, &tenant.api, HEADER_KEY, json!({"api_key": fake.secret("apikey")})).await;
    let body = json!({"providerSlug": HEADER_KEY, "credentials": {"api_key": fake.secret("apikey")}});
    post(fake, &tenant.api, CONNECTIONS, body.clone()).await.problem(409);
    // A needs_reauth connection is still live.
    check(fake, &tenant.api, str_of(&first, "id")).await;
    post(fake, &tenant.session, CONNECTIONS, body.clone()).await.problem(409);
    // Another provider, or another organization, is fine.
    connect(fake, &tenant.api, QUERY_KEY, json!({"api_key": fake.secret("apikey")})).await;
    let other = server.tenant().await;
    connect(fake, &other.api, HEADER_KEY, json!({"api_key": fake.secret("apikey")})).await;
    // Once disconnected, a new one may be made.
    delete(fake, &tenant.api, &connection_path(str_of(&first, "id"))).await.ok(200);
    crate::checks::tick().await;
    let second = post(fake, &tenant.api, CONNECTIONS, body).await.ok(201);
    assert_ne!(second["id"], first["id"]);
    let list = get(fake, &tenant.api, CONNECTIONS).await.ok(200);
    assert_eq!(list["count"], 3, "{list}");
    let ids: Vec<&Value> = data(&list).iter().map(|c| &c["id"]).collect();
    assert_eq!(ids[0], &second["id"], "newest first: {list}");
    assert_eq!(ids[2], &first["id"], "newest first: {list}");
}

async fn disconnecting_destroys_the_credentials(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let key = fake.secret("apikey");
    fake.accept(&format!("{KEY_PREFIX}{key}"));
    let connection = connect(fake, &tenant.api, HEADER_KEY, json!({"api_key": key})).await;
    let id = str_of(&connection, "id");
    let removed = delete(fake, &tenant.session, &connection_path(id)).await.ok(200);
    assert_eq!(removed["message"], "Connection disconnected", "{removed}");
    assert_eq!(removed["revocation"], "not_supported", "{removed}");
    assert_connection(&removed["connection"], HEADER_KEY, "api_key", "disconnected", &tenant.owner);
    let read = get(fake, &tenant.api, &connection_path(id)).await.ok(200);
    assert_eq!(read["status"], "disconnected", "{read}");
    assert_eq!(read["id"], id);
    post(fake, &tenant.api, &check_path(id), json!({})).await.problem(409);
    assert!(fake.verify_requests("header").is_empty(), "a disconnected connection sends nothing");
    let again = delete(fake, &tenant.api, &connection_path(id)).await.ok(200);
    assert_eq!(again["revocation"], "not_supported", "{again}");
    delete(fake, &tenant.api, &connection_path(&missing_id("con_"))).await.problem(404);
    get(fake, &tenant.api, &connection_path(&missing_id("con_"))).await.problem(404);
    post(fake, &tenant.api, &check_path(&missing_id("con_")), json!({})).await.problem(404);
}

async fn check_needs_a_verify_request(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let password = fake.secret("password");
    let connection = connect(fake, &tenant.api, NO_VERIFY, json!({"username": "u", "password": password})).await;
    post(fake, &tenant.api, &check_path(str_of(&connection, "id")), json!({})).await.problem(400);
    let read = get(fake, &tenant.api, &connection_path(str_of(&connection, "id"))).await.ok(200);
    assert_eq!(read["status"], "active", "{read}");
    assert!(read["lastCheckedAt"].is_null(), "{read}");
}

// ---------------------------------------------------------------------------------------------
// Isolation and secrets

async fn another_organization_sees_nothing(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let other = server.tenant().await;
    configure_app(fake, &tenant, OAUTH).await;
    let oauth_id = connect_oauth(server, fake, &tenant, &tenant.owner, OAUTH).await;
    let key = fake.secret("apikey");
    fake.accept(&format!("{KEY_PREFIX}{key}"));
    let connection = connect(fake, &tenant.api, HEADER_KEY, json!({"api_key": key})).await;
    let key_id = str_of(&connection, "id").to_owned();

    for client in [&other.api, &other.session] {
        for id in [&oauth_id, &key_id] {
            get(fake, client, &connection_path(id)).await.problem(404);
            post(fake, client, &check_path(id), json!({})).await.problem(404);
            delete(fake, client, &connection_path(id)).await.problem(404);
        }
        let list = get(fake, client, CONNECTIONS).await.ok(200);
        assert_eq!(list["count"], 0, "{list}");
        assert_eq!(data(&list), &Vec::<Value>::new());
        get(fake, client, &app_path(OAUTH)).await.problem(404);
        problem_any_type(post(fake, client, START, json!({"providerSlug": OAUTH})).await, 412);
    }
    // A session with the other organization's id but no membership there.
    let token = session_token(server, &tenant.owner).await;
    let outsider = server.client(crate::client::Auth::Session(token), Some(&other.org_id));
    let refused = outsider.get(CONNECTIONS).await;
    assert!(matches!(refused.status, 401 | 403 | 404), "not a member of the organization: {}", refused.status);

    // Nothing of A changed, and B's attempts sent nothing to the provider.
    assert!(fake.verify_requests("header").is_empty() && fake.verify_requests("oauth").is_empty());
    assert!(fake.state().revoke.is_empty());
    for id in [&oauth_id, &key_id] {
        let read = get(fake, &tenant.api, &connection_path(id)).await.ok(200);
        assert_eq!(read["status"], "active", "{read}");
    }
    assert_eq!(get(fake, &tenant.api, CONNECTIONS).await.ok(200)["count"], 2);

    // B's own connection to the same provider is B's alone.
    let theirs = connect(fake, &other.api, HEADER_KEY, json!({"api_key": fake.secret("apikey")})).await;
    get(fake, &tenant.api, &connection_path(str_of(&theirs, "id"))).await.problem(404);
    let list = get(fake, &other.api, CONNECTIONS).await.ok(200);
    assert_eq!(crate::checks::ids(&list), [str_of(&theirs, "id")]);
}

/// Everything at once, then the server's whole stderr (at `RUST_LOG=info`) is searched for every
/// secret (the runner does this after every test of this file too).
async fn no_secret_reaches_a_response_or_the_log(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    configure_app(fake, &tenant, OAUTH).await;
    fake.state().code_expires_in = 60;
    let id = connect_oauth(server, fake, &tenant, &tenant.owner, OAUTH).await;
    check(fake, &tenant.api, &id).await;
    fake.state().refresh_rejected = true;
    fake.state().code_expires_in = 60;
    let again = connect_oauth(server, fake, &tenant, &tenant.owner, OAUTH).await;
    assert_eq!(again, id);
    check(fake, &tenant.api, &id).await;
    delete(fake, &tenant.api, &connection_path(&id)).await.ok(200);

    let key = fake.secret("apikey");
    let connection = connect(fake, &tenant.api, QUERY_KEY, json!({"api_key": key})).await;
    check(fake, &tenant.api, str_of(&connection, "id")).await;
    let password = fake.secret("password");
    let basic = connect(fake, &tenant.api, BASIC, json!({"login": "carol", "secret": password})).await;
    check(fake, &tenant.api, str_of(&basic, "id")).await;
    let token = fake.secret("customtoken");
    let bad =
        json!({"providerSlug": CUSTOM, "credentials": {"endpoint": "x", "port": "y", "region": "z", "token": token}});
    post(fake, &tenant.api, CONNECTIONS, bad).await.problem(400);
    let again = json!({"providerSlug": QUERY_KEY, "credentials": {"api_key": fake.secret("apikey")}});
    post(fake, &tenant.api, CONNECTIONS, again).await.problem(409);
    get(fake, &tenant.api, CONNECTIONS).await.ok(200);
    get(fake, &tenant.api, PROVIDERS).await.ok(200);
    get(fake, &tenant.api, &app_path(OAUTH)).await.ok(200);

    let stderr = server.stop().await;
    assert!(fake.secrets().len() >= 8, "the test made and saw secrets: {:?}", fake.secrets());
    fake.assert_no_secret_in("the server's stderr", &stderr);
}

async fn a_check_after_the_app_was_removed_reports_it(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    configure_app(fake, &tenant, OAUTH).await;
    fake.state().code_expires_in = 60;
    let id = connect_oauth(server, fake, &tenant, &tenant.owner, OAUTH).await;
    delete(fake, &tenant.api, &app_path(OAUTH)).await.ok(200);
    let read = get(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_eq!(read["status"], "active", "existing connections stay when the app is removed: {read}");

    // The token is due for a refresh, which needs the app.
    let checked = check(fake, &tenant.api, &id).await;
    assert_eq!(checked["check"]["ok"], false, "{checked}");
    assert_ne!(checked["connection"]["status"], "active", "{checked}");
    let error = checked["connection"]["lastError"].as_str().unwrap_or_else(|| panic!("no lastError: {checked}"));
    assert!(error.to_ascii_lowercase().contains("app"), "lastError says the OAuth app is missing: {checked}");
    assert_eq!(fake.state().token.len(), 1, "no refresh without an app");
    assert!(fake.verify_requests("oauth").is_empty());
}

async fn a_failed_revocation_still_destroys_the_credentials(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    configure_app(fake, &tenant, OAUTH).await;
    let id = connect_oauth(server, fake, &tenant, &tenant.owner, OAUTH).await;
    fake.state().revoke_status = Some(503);
    let removed = delete(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_eq!(removed["revocation"], "failed", "{removed}");
    assert_eq!(removed["connection"]["status"], "disconnected", "{removed}");
    assert_eq!(fake.state().revoke.len(), 1, "the revocation was attempted");
    post(fake, &tenant.api, &check_path(&id), json!({})).await.problem(409);
    let read = get(fake, &tenant.api, &connection_path(&id)).await.ok(200);
    assert_eq!(read["status"], "disconnected", "{read}");
    assert!(fake.verify_requests("oauth").is_empty());
}

/// Starts `compliance-server serve` with `PROVIDERS_DIR` holding `manifests` and expects it to
/// stop with an error; returns its stderr.
async fn start_up_fails(manifests: &[(&str, Value)]) -> String {
    let scratch = crate::fake_provider::ScratchDir::new("compliance-bad-providers");
    let providers = scratch.path().join("providers");
    std::fs::create_dir_all(&providers).unwrap();
    for (file, manifest) in manifests {
        std::fs::write(providers.join(file), serde_json::to_vec_pretty(manifest).unwrap()).unwrap();
    }
    let child = tokio::process::Command::new(crate::harness::BIN)
        .arg("serve")
        .env("DATABASE_URL", format!("sqlite://{}", scratch.path().join("test.db").display()))
        .env("LISTEN_ADDR", "127.0.0.1:0")
        .env("BLOB_DIR", scratch.path().join("blobs"))
        .env("DATA_DIR", scratch.path().join("data"))
        .env("PROVIDERS_DIR", &providers)
        .env("LOG_FORMAT", "json")
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start the server");
    let output = tokio::time::timeout(Duration::from_secs(15), child.wait_with_output()).await;
    let output = output.unwrap_or_else(|_| panic!("the server started (or hung) with invalid manifests {manifests:?}"));
    let output = output.expect("wait for the server");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "the server exited successfully with invalid manifests: {stderr}");
    stderr
}

async fn an_invalid_manifest_stops_start_up_naming_file_and_field() {
    let valid = |slug: &str| {
        json!({
            "slug": slug,
            "name": "Valid",
            "description": "A valid provider.",
            "auth": {"type": "api_key", "config": {"in": "header", "name": "X-Key"}},
        })
    };
    let mut relative = json!({
        "slug": "bad-token-url",
        "name": "Bad",
        "description": "A relative token URL.",
        "auth": {"type": "oauth2", "config": {
            "authorizeUrl": "https://provider.example.test/authorize",
            "tokenUrl": "/token",
            "scopes": ["read"],
        }},
    });
    let stderr = start_up_fails(&[("a-valid.json", valid("a-valid")), ("bad-token-url.json", relative.clone())]).await;
    assert!(stderr.contains("bad-token-url.json"), "the file is named: {stderr}");
    assert!(stderr.contains("auth.config.tokenUrl"), "the field is named: {stderr}");

    relative["auth"]["config"]["tokenUrl"] = json!("https://provider.example.test/token");
    relative["auth"]["config"]["scopse"] = json!(["typo"]);
    let stderr = start_up_fails(&[("typo.json", relative)]).await;
    assert!(stderr.contains("typo.json") && stderr.contains("scopse"), "an unknown field is refused: {stderr}");

    let mut verify = valid("bad-verify");
    verify["verify"] = json!({"method": "DELETE", "url": "https://provider.example.test/me"});
    let stderr = start_up_fails(&[("bad-verify.json", verify)]).await;
    assert!(stderr.contains("bad-verify.json") && stderr.contains("verify"), "verify.method: {stderr}");

    let stderr = start_up_fails(&[("Bad Slug.json", valid("Bad Slug"))]).await;
    assert!(stderr.contains("Bad Slug.json") && stderr.contains("slug"), "an invalid slug: {stderr}");

    let stderr = start_up_fails(&[("dup-1.json", valid("dup")), ("dup-2.json", valid("dup"))]).await;
    assert!(stderr.contains("dup-2.json") || stderr.contains("dup-1.json"), "a duplicate slug: {stderr}");
    assert!(stderr.contains("slug"), "a duplicate slug: {stderr}");
    let stderr = start_up_fails(&[("my-github.json", valid("github"))]).await;
    assert!(stderr.contains("my-github.json") && stderr.contains("slug"), "a shipped slug reused: {stderr}");
}

async fn connections_and_oauth_apps_write_audit_entries_without_secrets(server: &TestServer, fake: &FakeProvider) {
    let tenant = server.tenant().await;
    let (client_id, _) = configure_app(fake, &tenant, OAUTH).await;
    put(fake, &tenant.session, &app_path(OAUTH), json!({"clientId": client_id})).await.ok(200);
    delete(fake, &tenant.api, &app_path(OAUTH)).await;
    let password = fake.secret("password");
    fake.accept(&basic_header("alice@example.test", &password));
    let credentials = json!({"login": "alice@example.test", "secret": password});
    let connection = connect(fake, &tenant.api, BASIC, credentials).await;
    let id = str_of(&connection, "id");
    check(fake, &tenant.api, id).await;
    delete(fake, &tenant.session, &connection_path(id)).await.ok(200);

    let log = |query: String| {
        let api = tenant.api.clone();
        async move { data(&api.get(&format!("/v1/audit-log?{query}")).await.ok(200)).clone() }
    };
    let actions = |entries: &[Value]| entries.iter().map(|e| str_of(e, "action").to_owned()).collect::<Vec<_>>();
    let apps = log(format!("resourceType=oauthApp&resourceId={OAUTH}")).await;
    assert_eq!(actions(&apps), ["oauthApp.deleted", "oauthApp.updated", "oauthApp.created"]);
    assert_eq!(apps[0]["actor"]["type"], "apiKey");
    assert_eq!(apps[1]["actor"]["type"], "user");
    assert_eq!(apps[2]["changes"]["providerSlug"], json!({"from": null, "to": OAUTH}));
    let connections = log(format!("resourceType=connection&resourceId={id}")).await;
    assert_eq!(actions(&connections), ["connection.disconnected", "connection.checked", "connection.created"]);
    let (disconnected, checked, created) = (&connections[0], &connections[1], &connections[2]);
    assert_eq!(created["actor"]["type"], "apiKey");
    assert_eq!(created["actor"]["id"], tenant.owner.id.as_str());
    assert_eq!(created["changes"]["providerSlug"], json!({"from": null, "to": BASIC}));
    assert_eq!(created["changes"]["status"]["to"], "active");
    assert!(checked["changes"]["lastCheckedAt"]["to"].is_string(), "{checked}");
    assert_eq!(disconnected["actor"]["type"], "user");
    assert_eq!(disconnected["changes"]["status"], json!({"from": "active", "to": "disconnected"}));

    let all = tenant.api.get("/v1/audit-log?limit=100").await.ok(200).to_string();
    for secret in fake.secrets() {
        assert!(!all.contains(&secret), "a credential or client secret is in the log: {all}");
    }
    assert_eq!(tenant.api.get("/v1/audit-log/verify").await.ok(200)["valid"], true);
}
