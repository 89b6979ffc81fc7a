//! The connect page (`GET /integrations/{slug}/connect?organizationId=…`) in headless Chromium:
//! the form built from the credential fields, a successful connection, field errors, the CSRF
//! token, and the OAuth button that goes through the fake provider and back.
//!
//! Markup contract: form `#connect-form`, inputs `#field-{id}` named `cred.{id}`, errors
//! `#error-{id}`, submit `#connect-submit`, result `section#result[data-status]`, OAuth button
//! `#connect-oauth`, `#oauth-not-configured`.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::checks::{data, str_of};
use crate::fake_provider::{self, CUSTOM, FakeProvider, HEADER_KEY, KEY_HEADER, KEY_PREFIX, OAUTH};
use crate::harness::{Backend, TestServer, poll_every};
use crate::integrations::{CONNECTIONS, configure_app, session_token};
use crate::tenant::Tenant;
use crate::webdriver::Browser;

// The browser tests run on SQLite only: the page is served by the same handlers and store code
// the API tests of `integrations.rs` run on both backends, and a second browser run per test would
// double the slowest tests of the suite without covering anything new.
mod sqlite {
    #[tokio::test]
    async fn an_api_key_provider_connects_from_the_page() {
        super::browse(super::an_api_key_provider_connects_from_the_page).await;
    }

    #[tokio::test]
    async fn field_errors_are_shown_next_to_the_fields() {
        super::browse(super::field_errors_are_shown_next_to_the_fields).await;
    }

    #[tokio::test]
    async fn a_post_without_the_csrf_token_is_refused() {
        super::browse(super::a_post_without_the_csrf_token_is_refused).await;
    }

    #[tokio::test]
    async fn the_oauth_button_goes_through_the_provider_and_back() {
        super::browse(super::the_oauth_button_goes_through_the_provider_and_back).await;
    }
}

/// Runs `test` with a server pointed at a fake provider (SQLite) and a headless Chromium; the
/// browser is closed whether the test passes or not.
async fn browse<F, Fut>(test: F)
where
    F: FnOnce(Arc<TestServer>, Arc<FakeProvider>, Arc<Browser>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    fake_provider::run(Backend::Sqlite, move |server, fake| async move {
        let browser = Arc::new(Browser::start().await);
        let outcome = tokio::spawn(test(server, fake, Arc::clone(&browser))).await;
        if let Ok(browser) = Arc::try_unwrap(browser) {
            browser.quit().await;
        }
        if let Err(err) = outcome {
            match err.try_into_panic() {
                Ok(payload) => std::panic::resume_unwind(payload),
                Err(err) => panic!("browser test task failed: {err}"),
            }
        }
    })
    .await;
}

/// Logs the browser in as the tenant's owner: the `session_token` cookie on the server's origin.
async fn log_in(server: &TestServer, browser: &Browser, tenant: &Tenant) {
    browser.goto(&format!("{}/health", server.base_url())).await;
    let token = session_token(server, &tenant.owner).await;
    browser.add_cookie("session_token", &token).await;
}

fn page_url(server: &TestServer, slug: &str, tenant: &Tenant) -> String {
    format!("{}/integrations/{slug}/connect?organizationId={}", server.base_url(), tenant.org_id)
}

/// The organization's connections, over the API.
async fn connections(tenant: &Tenant) -> Vec<Value> {
    data(&tenant.api.get(CONNECTIONS).await.ok(200)).clone()
}

/// No script, stylesheet, font or image is loaded from another origin than the server's.
async fn assert_self_contained(server: &TestServer, browser: &Browser) {
    let script = "return Array.from(document.querySelectorAll('script[src], link[href], img[src], iframe[src]'))\
                  .map(e => e.src || e.href);";
    let urls = browser.execute(script, vec![]).await;
    for url in urls.as_array().cloned().unwrap_or_default() {
        let url = url.as_str().unwrap_or_default();
        assert!(url.starts_with(server.base_url()), "the page loads {url} from elsewhere");
    }
}

async fn an_api_key_provider_connects_from_the_page(
    server: Arc<TestServer>,
    fake: Arc<FakeProvider>,
    browser: Arc<Browser>,
) {
    let tenant = server.tenant().await;
    log_in(&server, &browser, &tenant).await;
    browser.goto(&page_url(&server, HEADER_KEY, &tenant)).await;

    let body = browser.text(&browser.find("body").await).await;
    assert!(body.contains("Fake Header Key"), "the provider's name is shown: {body}");
    // The setup instructions: Markdown rendered, raw HTML escaped, javascript: links dropped.
    assert!(body.contains("Settings → API"), "the setup instructions are shown: {body}");
    let emphasis = browser.try_find("em").await;
    let emphasis =
        emphasis.unwrap_or_else(|| panic!("the Markdown `*Settings → API*` is not rendered as <em>: {body}"));
    assert_eq!(browser.text(&emphasis).await, "Settings → API");
    let scripts = browser.execute("return document.querySelectorAll('script').length;", vec![]).await;
    assert!(body.contains("<script>alert(1)</script>") || scripts == 0, "raw HTML is escaped, not run: {body}");
    assert!(browser.try_find("a[href^='javascript:']").await.is_none(), "a javascript: link survived");
    assert_self_contained(&server, &browser).await;

    // The form: one password field with its label, required marker and help text.
    let form = browser.find("form#connect-form").await;
    assert_eq!(browser.attribute(&form, "method").await.as_str().map(str::to_ascii_lowercase).as_deref(), Some("post"));
    let field = browser.find("#field-api_key").await;
    assert_eq!(browser.tag_name(&field).await, "input");
    assert_eq!(browser.attribute(&field, "name").await, "cred.api_key");
    assert_eq!(browser.attribute(&field, "type").await, "password");
    assert!(!browser.attribute(&field, "required").await.is_null(), "the key is required");
    let label = browser.find("label[for='field-api_key']").await;
    assert!(browser.text(&label).await.contains("API Key"), "label: {}", browser.text(&label).await);
    let described = browser.attribute(&field, "aria-describedby").await;
    let described = described.as_str().unwrap_or_else(|| panic!("the help text is not linked by aria-describedby"));
    for id in described.split_whitespace() {
        assert!(browser.try_find(&format!("[id='{id}']")).await.is_some(), "aria-describedby names a missing #{id}");
    }
    assert!(!browser.attribute(&field, "placeholder").await.is_null(), "the generated field has a placeholder");
    assert!(browser.try_find("#connect-oauth").await.is_none());

    // Submit a key.
    let key = fake.secret("apikey");
    fake.accept(&format!("{KEY_PREFIX}{key}"));
    browser.send_keys(&field, &key).await;
    browser.click(&browser.find("#connect-submit").await).await;
    let result = browser.wait_for("section#result").await;
    assert_eq!(browser.attribute(&result, "data-status").await, "active", "{}", browser.source().await);
    assert!(browser.text(&result).await.contains("Connected"), "{}", browser.text(&result).await);
    let source = browser.source().await;
    assert!(!source.contains(&key), "the submitted key is sent back into the page");

    let list = connections(&tenant).await;
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["providerSlug"], HEADER_KEY);
    assert_eq!(list[0]["status"], "active");
    assert_eq!(list[0]["createdBy"], tenant.owner.id.as_str());
    // The key the page stored is the one typed in.
    let id = str_of(&list[0], "id");
    let checked = tenant.api.post(&format!("{CONNECTIONS}/{id}/check"), json!({})).await.ok(200);
    assert_eq!(checked["check"]["ok"], true, "{checked}");
    let seen = fake.verify_requests("header");
    assert_eq!(seen[0].header(KEY_HEADER), Some(format!("{KEY_PREFIX}{key}").as_str()));
}

async fn field_errors_are_shown_next_to_the_fields(
    server: Arc<TestServer>,
    fake: Arc<FakeProvider>,
    browser: Arc<Browser>,
) {
    let tenant = server.tenant().await;
    log_in(&server, &browser, &tenant).await;

    // An empty key: the browser's own check is removed so that the server's answer is seen.
    browser.goto(&page_url(&server, HEADER_KEY, &tenant)).await;
    let field = browser.find("#field-api_key").await;
    browser.execute("arguments[0].removeAttribute('required');", vec![Browser::arg(&field)]).await;
    browser.click(&browser.find("#connect-submit").await).await;
    let error = browser.wait_for("#error-api_key").await;
    let message = browser.text(&error).await;
    assert!(!message.trim().is_empty(), "the field's error is shown: {}", browser.source().await);
    if let Some(result) = browser.try_find("section#result").await {
        assert_ne!(browser.attribute(&result, "data-status").await, "active");
    }
    assert!(connections(&tenant).await.is_empty());

    // A custom provider: a port that is not a number. The token must not come back into the page.
    browser.goto(&page_url(&server, CUSTOM, &tenant)).await;
    let port = browser.find("#field-port").await;
    assert_eq!(browser.attribute(&port, "type").await, "number");
    assert_eq!(browser.tag_name(&browser.find("#field-region").await).await, "select");
    assert_eq!(browser.tag_name(&browser.find("#field-notes").await).await, "textarea");
    assert_eq!(browser.attribute(&browser.find("#field-endpoint").await, "type").await, "url");
    assert!(browser.attribute(&browser.find("#field-notes").await, "required").await.is_null(), "notes are optional");
    // combobox: an input with a datalist of the options.
    let plan = browser.find("#field-plan").await;
    assert_eq!(browser.tag_name(&plan).await, "input");
    let list = browser.attribute(&plan, "list").await;
    let list = list.as_str().unwrap_or_else(|| panic!("the combobox has no datalist"));
    let suggestions = browser.find_all(&format!("datalist[id='{list}'] option")).await;
    assert_eq!(suggestions.len(), 2, "the combobox offers its two options");
    let options = browser.find_all("#field-region option").await;
    let mut values = Vec::new();
    for option in &options {
        values.push(browser.attribute(option, "value").await);
    }
    assert!(values.contains(&json!("eu")) && values.contains(&json!("us")), "select options: {values:?}");
    // The help text of `token`.
    let token_field = browser.find("#field-token").await;
    assert_eq!(browser.attribute(&token_field, "type").await, "password");
    let described = browser.attribute(&token_field, "aria-describedby").await;
    let help = browser.find(&format!("[id='{}']", described.as_str().unwrap_or("no-help"))).await;
    assert!(browser.text(&help).await.contains("From the console."));

    browser.send_keys(&browser.find("#field-endpoint").await, "https://api.example.test").await;
    browser.execute("arguments[0].type = 'text';", vec![Browser::arg(&port)]).await;
    browser.send_keys(&port, "eighty").await;
    browser.execute("arguments[0].value = 'us';", vec![Browser::arg(&browser.find("#field-region").await)]).await;
    let token = fake.secret("customtoken");
    browser.send_keys(&token_field, &token).await;
    browser.click(&browser.find("#connect-submit").await).await;
    let error = browser.wait_for("#error-port").await;
    assert!(!browser.text(&error).await.trim().is_empty(), "{}", browser.source().await);
    for other in ["endpoint", "region", "token"] {
        if let Some(error) = browser.try_find(&format!("#error-{other}")).await {
            assert!(browser.text(&error).await.trim().is_empty(), "{other} is valid: {}", browser.source().await);
        }
    }
    let source = browser.source().await;
    assert!(!source.contains(&token), "a password value is sent back into the page");
    let token_field = browser.find("#field-token").await;
    assert_eq!(browser.property(&token_field, "value").await, "", "the password field comes back empty");
    assert!(connections(&tenant).await.is_empty());

    // Fixed, it connects.
    let port = browser.find("#field-port").await;
    browser.execute("arguments[0].type = 'text'; arguments[0].value = '';", vec![Browser::arg(&port)]).await;
    browser.send_keys(&port, "8443").await;
    let region = browser.find("#field-region").await;
    browser.execute("arguments[0].value = 'eu';", vec![Browser::arg(&region)]).await;
    let endpoint = browser.find("#field-endpoint").await;
    browser.execute("arguments[0].value = 'https://api.example.test';", vec![Browser::arg(&endpoint)]).await;
    browser.send_keys(&token_field, &token).await;
    browser.click(&browser.find("#connect-submit").await).await;
    let result = browser.wait_for("section#result").await;
    assert_eq!(browser.attribute(&result, "data-status").await, "active", "{}", browser.source().await);
    let list = connections(&tenant).await;
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["providerSlug"], CUSTOM);
}

async fn a_post_without_the_csrf_token_is_refused(
    server: Arc<TestServer>,
    fake: Arc<FakeProvider>,
    browser: Arc<Browser>,
) {
    let tenant = server.tenant().await;
    log_in(&server, &browser, &tenant).await;
    browser.goto(&page_url(&server, HEADER_KEY, &tenant)).await;
    let form = browser.find("form#connect-form").await;
    let action = browser.property(&form, "action").await;
    let action = action.as_str().unwrap_or_else(|| panic!("the form has no action")).to_owned();
    assert!(action.starts_with(&format!("{}/integrations/{HEADER_KEY}/connect", server.base_url())), "{action}");

    // The same form, posted by another page without the token (or with a wrong one).
    let token = session_token(&server, &tenant.owner).await;
    let key = fake.secret("apikey");
    let http = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let inputs = browser.find_all("form#connect-form input[type='hidden']").await;
    let mut hidden = Vec::new();
    for input in &inputs {
        let name = browser.attribute(input, "name").await.as_str().unwrap_or_default().to_owned();
        let value = browser.property(input, "value").await.as_str().unwrap_or_default().to_owned();
        hidden.push((name, value));
    }
    assert!(!hidden.is_empty(), "the form carries a CSRF token");
    // The CSRF token is the hidden field that is not the organization.
    let is_token = |name: &str, value: &str| value != tenant.org_id && name != "organizationId";
    assert!(hidden.iter().any(|(name, value)| is_token(name, value)), "no CSRF token among {hidden:?}");
    for forged in [None, Some("forged-token")] {
        let mut form: Vec<(String, String)> = hidden
            .iter()
            .filter_map(|(name, value)| match (is_token(name, value), forged) {
                (false, _) => Some((name.clone(), value.clone())),
                (true, None) => None,
                (true, Some(forged)) => Some((name.clone(), forged.to_owned())),
            })
            .collect();
        form.push(("cred.api_key".to_owned(), key.clone()));
        let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&form).finish();
        let answer = http
            .post(&action)
            .header("Cookie", format!("session_token={token}"))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 403, "a POST with the CSRF token {forged:?}");
    }
    assert!(connections(&tenant).await.is_empty());

    // Another user's session with this page's token is refused too: the token is bound to the session.
    let (colleague, _) = server.member(&tenant, "owner").await;
    let colleague_token = session_token(&server, &colleague).await;
    let mut form = hidden.clone();
    form.push(("cred.api_key".to_owned(), key.clone()));
    let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(&form).finish();
    let answer = http
        .post(&action)
        .header("Cookie", format!("session_token={colleague_token}"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 403, "the CSRF token of another session");
    assert!(connections(&tenant).await.is_empty());

    // The OAuth form too: no redirect to the provider without the token.
    configure_app(&fake, &tenant, OAUTH).await;
    browser.goto(&page_url(&server, OAUTH, &tenant)).await;
    let form = browser.find("form:has(#connect-oauth)").await;
    let action = browser.property(&form, "action").await.as_str().unwrap_or_default().to_owned();
    assert!(action.starts_with(&format!("{}/integrations/{OAUTH}/connect/oauth", server.base_url())), "{action}");
    let answer = http
        .post(&action)
        .header("Cookie", format!("session_token={token}"))
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(format!("organizationId={}", tenant.org_id))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 403, "the OAuth form without its CSRF token");
    assert!(fake.state().authorize.is_empty());
}

async fn the_oauth_button_goes_through_the_provider_and_back(
    server: Arc<TestServer>,
    fake: Arc<FakeProvider>,
    browser: Arc<Browser>,
) {
    let tenant = server.tenant().await;
    log_in(&server, &browser, &tenant).await;
    let page = page_url(&server, OAUTH, &tenant);
    browser.goto(&page).await;
    browser.find("#oauth-not-configured").await;
    assert!(browser.try_find("#connect-oauth").await.is_none(), "no Connect button without an OAuth app");
    assert!(browser.try_find("#field-api_key").await.is_none());

    configure_app(&fake, &tenant, OAUTH).await;
    browser.goto(&page).await;
    let button = browser.find("#connect-oauth").await;
    assert!(browser.try_find("#oauth-not-configured").await.is_none());
    browser.click(&button).await;

    // connect/oauth → the provider → the callback → back to this page.
    let landed = poll_every(Duration::from_millis(100), Duration::from_secs(15), || async {
        let url = browser.current_url().await;
        url.contains("status=").then_some(url)
    })
    .await;
    let Some(landed) = landed else {
        panic!("the browser got stuck at {}:\n{}", browser.current_url().await, browser.source().await)
    };
    let parsed = url::Url::parse(&landed).unwrap();
    let query: Vec<(String, String)> = parsed.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    let param = |name: &str| query.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
    assert_eq!(param("status"), Some("connected"), "{landed}");
    assert_eq!(param("provider"), Some(OAUTH), "{landed}");
    assert_eq!(parsed.path(), format!("/integrations/{OAUTH}/connect"), "{landed}");
    assert_eq!(param("organizationId"), Some(tenant.org_id.as_str()), "{landed}");
    assert_eq!(fake.state().authorize.len(), 1, "the browser went through the provider's authorize endpoint");

    let list = connections(&tenant).await;
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["providerSlug"], OAUTH);
    assert_eq!(list[0]["status"], "active");
    assert_eq!(param("connectionId"), list[0]["id"].as_str(), "{landed}");
    let source = browser.source().await;
    fake.assert_no_secret_in("the connect page", &source);
}
