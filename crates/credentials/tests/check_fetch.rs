#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! `CheckContext::fetch` against real local services.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;

use compliance_credentials::{
    ApiKeyConfig, ApiKeyLocation, BasicConfig, CheckAuth, CheckContext, ClientAuthMethod, ConnectionKey,
    CredentialValues, FetchError, HttpSettings, InMemoryTokenStore, OAuthConnection, TokenRefresher, TokenSet,
    TokenStore, build_http_client,
};
use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use support::{client, oauth_config, token_client};
use time::OffsetDateTime;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn values(pairs: &[(&str, &str)]) -> CredentialValues {
    CredentialValues::from_validated(pairs.iter().map(|(k, v)| ((*k).to_owned(), SecretString::from(*v))).collect())
}

fn context(auth: CheckAuth, credentials: CredentialValues) -> CheckContext {
    CheckContext::new(build_http_client(HttpSettings::default()).unwrap(), auth, credentials)
}

async fn service() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(path("/api/users")).respond_with(ResponseTemplate::new(200)).mount(&server).await;
    server
}

async fn only_request(server: &MockServer) -> wiremock::Request {
    let mut requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    requests.remove(0)
}

#[tokio::test]
async fn api_key_in_header_carries_the_prefix() {
    let server = service().await;
    let auth = CheckAuth::ApiKey(ApiKeyConfig {
        location: ApiKeyLocation::Header,
        name: "Authorization".into(),
        prefix: "Token ".into(),
    });
    let ctx = context(auth, values(&[("api_key", "k-123")]));
    let response = ctx.fetch(ctx.request(Method::GET, &format!("{}/api/users", server.uri()))).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(only_request(&server).await.headers.get("authorization").unwrap(), "Token k-123");
    assert_eq!(ctx.credentials().get("api_key").unwrap().expose_secret(), "k-123");
}

#[tokio::test]
async fn api_key_in_query_is_a_parameter_without_prefix() {
    let server = service().await;
    let auth = CheckAuth::ApiKey(ApiKeyConfig {
        location: ApiKeyLocation::Query,
        name: "api_key".into(),
        prefix: "Bearer ".into(),
    });
    let ctx = context(auth, values(&[("api_key", "k 1&2")]));
    ctx.fetch(ctx.request(Method::GET, &format!("{}/api/users?page=2", server.uri()))).await.unwrap();
    let request = only_request(&server).await;
    let query: BTreeMap<String, String> =
        request.url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    assert_eq!(query, BTreeMap::from([("api_key".into(), "k 1&2".into()), ("page".into(), "2".into())]));
    assert!(request.headers.get("authorization").is_none());
}

#[tokio::test]
async fn basic_uses_the_configured_field_ids() {
    let server = MockServer::start().await;
    Mock::given(path("/api/users"))
        .and(header("authorization", "Basic YWxpY2U6cDpzcyB3b3Jk"))
        .respond_with(ResponseTemplate::new(200))
        .expect(1)
        .mount(&server)
        .await;
    let auth = CheckAuth::Basic(BasicConfig { username_field: "email".into(), password_field: "pw".into() });
    let ctx = context(auth, values(&[("email", "alice"), ("pw", "p:ss word")]));
    let response = ctx.fetch(ctx.request(Method::GET, &format!("{}/api/users", server.uri()))).await.unwrap();
    assert_eq!(response.status(), 200);
}

#[tokio::test]
async fn custom_adds_nothing() {
    let server = service().await;
    let ctx = context(CheckAuth::Custom, values(&[("domain", "acme"), ("token", "t-1")]));
    ctx.fetch(ctx.request(Method::GET, &format!("{}/api/users", server.uri()))).await.unwrap();
    let request = only_request(&server).await;
    assert!(request.headers.get("authorization").is_none());
    assert!(request.url.query().is_none());
    assert!(matches!(ctx.access_token().await, Err(FetchError::NoAccessToken)));
}

#[tokio::test]
async fn a_missing_credential_is_reported_by_field_id() {
    let auth = CheckAuth::Basic(BasicConfig::default());
    let ctx = context(auth, values(&[("username", "alice")]));
    let error = ctx.fetch(ctx.request(Method::GET, "http://127.0.0.1:9/")).await.unwrap_err();
    assert!(matches!(error, FetchError::MissingCredential(ref id) if id == "password"));
}

#[tokio::test]
async fn oauth_refreshes_when_due_then_sends_the_bearer_token() {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({"access_token": "at-fresh", "expires_in": 3600})))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(path("/api/users"))
        .and(header("authorization", "Bearer at-fresh"))
        .respond_with(ResponseTemplate::new(200))
        .expect(2)
        .mount(&server)
        .await;
    let store = Arc::new(InMemoryTokenStore::default());
    let key = ConnectionKey { organization_id: "org_1".into(), connection_id: "con_1".into() };
    let stale = TokenSet {
        access_token: "at-stale".into(),
        refresh_token: Some("rt-1".into()),
        expires_at: Some(OffsetDateTime::now_utc() + time::Duration::minutes(1)),
        token_type: None,
        scope: None,
    };
    store.save(&key, &stale).await.unwrap();
    let connection = OAuthConnection {
        key,
        provider: "acme".into(),
        config: oauth_config(&server.uri(), ClientAuthMethod::Body, false),
        client: client(),
    };
    let refresher = Arc::new(TokenRefresher::new(token_client(), store));
    let ctx = context(CheckAuth::OAuth2 { refresher, connection: Box::new(connection) }, CredentialValues::default());
    for _ in 0..2 {
        let response = ctx.fetch(ctx.request(Method::GET, &format!("{}/api/users", server.uri()))).await.unwrap();
        assert_eq!(response.status(), 200);
    }
    assert_eq!(ctx.access_token().await.unwrap().expose_secret(), "at-fresh");
}

#[tokio::test]
async fn fetch_does_not_follow_redirects_with_credentials() {
    let server = MockServer::start().await;
    Mock::given(path("/api/users"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", format!("{}/leak", server.uri())))
        .mount(&server)
        .await;
    Mock::given(path("/leak")).respond_with(ResponseTemplate::new(200)).expect(0).mount(&server).await;
    let auth = CheckAuth::ApiKey(ApiKeyConfig {
        location: ApiKeyLocation::Header,
        name: "X-Api-Key".into(),
        prefix: String::new(),
    });
    let ctx = context(auth, values(&[("api_key", "k-1")]));
    let response = ctx.fetch(ctx.request(Method::GET, &format!("{}/api/users", server.uri()))).await.unwrap();
    assert_eq!(response.status(), 302);
}
