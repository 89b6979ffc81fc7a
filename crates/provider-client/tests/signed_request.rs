#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! Signed requests (`verify`, `signed_get`) against real local services.

use std::collections::BTreeMap;

use compliance_credentials::{
    ApiKeyConfig, ApiKeyLocation, BasicConfig, CredentialValues, RequestAuth, VerifyMethod, VerifyRequest,
};
use compliance_ports::{ProviderClient, ProviderRequestError};
use compliance_provider_client::{HttpProviderClient, HttpSettings};
use secrecy::SecretString;
use wiremock::matchers::{header, method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn values(pairs: &[(&str, &str)]) -> CredentialValues {
    CredentialValues::from_validated(pairs.iter().map(|(k, v)| ((*k).to_owned(), SecretString::from(*v))).collect())
}

fn provider() -> HttpProviderClient {
    HttpProviderClient::new(HttpSettings::default()).unwrap()
}

async fn service() -> MockServer {
    let server = MockServer::start().await;
    Mock::given(path("/api/users"))
        .respond_with(ResponseTemplate::new(200).set_body_string("[1]"))
        .mount(&server)
        .await;
    server
}

async fn only_request(server: &MockServer) -> wiremock::Request {
    let mut requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    requests.remove(0)
}

#[tokio::test]
async fn api_key_in_header_carries_the_prefix_and_the_body_comes_back() {
    let server = service().await;
    let config =
        ApiKeyConfig { location: ApiKeyLocation::Header, name: "Authorization".into(), prefix: "Token ".into() };
    let auth = RequestAuth::ApiKey { config, values: values(&[("api_key", "k-123")]) };
    let answer = provider().signed_get(&format!("{}/api/users", server.uri()), &auth).await.unwrap();
    assert_eq!((answer.status, answer.body.as_slice()), (200, b"[1]".as_slice()));
    assert_eq!(only_request(&server).await.headers.get("authorization").unwrap(), "Token k-123");
}

#[tokio::test]
async fn api_key_in_query_is_a_parameter_without_prefix() {
    let server = service().await;
    let config = ApiKeyConfig { location: ApiKeyLocation::Query, name: "api_key".into(), prefix: "Bearer ".into() };
    let auth = RequestAuth::ApiKey { config, values: values(&[("api_key", "k 1&2")]) };
    provider().signed_get(&format!("{}/api/users?page=2", server.uri()), &auth).await.unwrap();
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
    let config = BasicConfig { username_field: "email".into(), password_field: "pw".into() };
    let auth = RequestAuth::Basic { config, values: values(&[("email", "alice"), ("pw", "p:ss word")]) };
    let answer = provider().signed_get(&format!("{}/api/users", server.uri()), &auth).await.unwrap();
    assert_eq!(answer.status, 200);
}

#[tokio::test]
async fn custom_adds_nothing() {
    let server = service().await;
    provider().signed_get(&format!("{}/api/users", server.uri()), &RequestAuth::Custom).await.unwrap();
    let request = only_request(&server).await;
    assert!(request.headers.get("authorization").is_none());
    assert!(request.url.query().is_none());
}

#[tokio::test]
async fn a_missing_credential_is_reported_by_field_id() {
    let auth = RequestAuth::Basic { config: BasicConfig::default(), values: values(&[("username", "alice")]) };
    let error = provider().signed_get("http://127.0.0.1:9/", &auth).await.unwrap_err();
    assert_eq!(error, ProviderRequestError::MissingCredential("password".into()));
}

#[tokio::test]
async fn verify_sends_the_manifests_method_with_the_bearer_token() {
    let server = MockServer::start().await;
    Mock::given(method("HEAD"))
        .and(path("/api/me"))
        .and(header("authorization", "Bearer at-fresh"))
        .respond_with(ResponseTemplate::new(204))
        .expect(1)
        .mount(&server)
        .await;
    let verify = VerifyRequest { method: VerifyMethod::Head, url: format!("{}/api/me", server.uri()) };
    let status = provider().verify(&verify, &RequestAuth::Bearer("at-fresh".into())).await.unwrap();
    assert_eq!(status, 204);
}

#[tokio::test]
async fn nothing_follows_a_redirect_with_credentials_and_a_closed_port_is_unreachable() {
    let server = MockServer::start().await;
    Mock::given(path("/api/users"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", format!("{}/leak", server.uri())))
        .mount(&server)
        .await;
    Mock::given(path("/leak")).respond_with(ResponseTemplate::new(200)).expect(0).mount(&server).await;
    let config = ApiKeyConfig { location: ApiKeyLocation::Header, name: "X-Api-Key".into(), prefix: String::new() };
    let auth = RequestAuth::ApiKey { config, values: values(&[("api_key", "k-1")]) };
    let answer = provider().signed_get(&format!("{}/api/users", server.uri()), &auth).await.unwrap();
    assert_eq!(answer.status, 302);
    let closed = provider().signed_get("http://127.0.0.1:9/api", &auth).await.unwrap_err();
    assert_eq!(closed, ProviderRequestError::Unreachable);
    let relative = provider().signed_get("/api/users", &auth).await.unwrap_err();
    assert_eq!(relative, ProviderRequestError::InvalidUrl);
}
