#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! RFC 7009 revocation against a local HTTP server playing the provider.

mod support;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use compliance_credentials::{ClientAuthMethod, RevokeRequest, TokenError, TokenTypeHint};
use secrecy::SecretString;
use serde_json::json;
use support::{CLIENT_SECRET, client, form_pairs, oauth_config, token_client};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "rt-Secret+/= value";

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

async fn provider(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/revoke")).respond_with(response).mount(&server).await;
    server
}

async fn revoke(server: &MockServer, auth: ClientAuthMethod, hint: TokenTypeHint) -> Result<(), TokenError> {
    let config = oauth_config(&server.uri(), auth, false);
    let url = format!("{}/revoke", server.uri());
    let token = SecretString::from(TOKEN);
    token_client()
        .revoke(&RevokeRequest {
            provider: "acme",
            url: &url,
            client: &client(),
            config: &config,
            token: &token,
            token_type_hint: hint,
        })
        .await
}

#[tokio::test]
async fn body_method_sends_token_hint_and_client_credentials_in_the_form() {
    let server = provider(ResponseTemplate::new(200)).await;
    revoke(&server, ClientAuthMethod::Body, TokenTypeHint::RefreshToken).await.unwrap();
    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.method.as_str(), "POST");
    assert_eq!(request.headers.get("content-type").unwrap(), "application/x-www-form-urlencoded");
    assert!(request.headers.get("authorization").is_none());
    assert_eq!(
        form_pairs(&request.body),
        pairs(&[
            ("token", TOKEN),
            ("token_type_hint", "refresh_token"),
            ("client_id", "client:id 1"),
            ("client_secret", CLIENT_SECRET),
        ])
    );
}

#[tokio::test]
async fn header_method_sends_basic_credentials_and_only_the_token_in_the_form() {
    let server = provider(ResponseTemplate::new(200).set_body_json(json!({}))).await;
    revoke(&server, ClientAuthMethod::Header, TokenTypeHint::AccessToken).await.unwrap();
    let request = &server.received_requests().await.unwrap()[0];
    assert_eq!(request.headers.get("content-type").unwrap(), "application/x-www-form-urlencoded");
    let header = request.headers.get("authorization").unwrap().to_str().unwrap();
    let decoded = STANDARD.decode(header.strip_prefix("Basic ").unwrap()).unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), "client%3Aid+1:cs-Zq8%21kP2+%2F%2B%26%3Dsecret");
    assert_eq!(form_pairs(&request.body), pairs(&[("token", TOKEN), ("token_type_hint", "access_token")]));
}

#[tokio::test]
async fn any_2xx_is_success() {
    let server = provider(ResponseTemplate::new(204)).await;
    revoke(&server, ClientAuthMethod::Body, TokenTypeHint::RefreshToken).await.unwrap();
}

#[tokio::test]
async fn a_503_is_retryable_and_keeps_the_token_out_of_the_error() {
    let server = provider(ResponseTemplate::new(503).insert_header("retry-after", "5")).await;
    let error = revoke(&server, ClientAuthMethod::Body, TokenTypeHint::RefreshToken).await.unwrap_err();
    assert!(matches!(error, TokenError::Transient { status: Some(503) }), "{error:?}");
    assert!(error.is_retryable() && !error.needs_reauthorization());
    assert!(!format!("{error} {error:?}").contains("Secret"));
}

#[tokio::test]
async fn a_refusal_is_a_rejection_with_the_providers_code_only_when_it_is_a_plain_word() {
    let server = provider(ResponseTemplate::new(400).set_body_json(json!({"error": "unsupported_token_type"}))).await;
    let error = revoke(&server, ClientAuthMethod::Body, TokenTypeHint::AccessToken).await.unwrap_err();
    assert!(
        matches!(error, TokenError::Rejected { status: 400, ref error } if error == "unsupported_token_type"),
        "{error:?}"
    );
    assert!(!error.is_retryable());

    let server = provider(ResponseTemplate::new(401).set_body_json(json!({"error": TOKEN}))).await;
    let error = revoke(&server, ClientAuthMethod::Header, TokenTypeHint::RefreshToken).await.unwrap_err();
    assert!(matches!(error, TokenError::Rejected { status: 401, .. }), "{error:?}");
    assert!(!format!("{error} {error:?}").contains("Secret"));

    let server = provider(ResponseTemplate::new(403).set_body_string("<html>no</html>")).await;
    let error = revoke(&server, ClientAuthMethod::Body, TokenTypeHint::RefreshToken).await.unwrap_err();
    assert!(matches!(error, TokenError::Rejected { status: 403, ref error } if error == "no_error_code"));
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let server = MockServer::start().await;
    Mock::given(path("/revoke"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", format!("{}/elsewhere", server.uri())))
        .mount(&server)
        .await;
    Mock::given(path("/elsewhere")).respond_with(ResponseTemplate::new(200)).expect(0).mount(&server).await;
    let error = revoke(&server, ClientAuthMethod::Body, TokenTypeHint::RefreshToken).await.unwrap_err();
    assert!(matches!(error, TokenError::Redirected { status: 307 }));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn an_unreachable_endpoint_is_retryable() {
    // A port that was just free: wiremock pools its servers, so a dropped one may still answer.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let config = oauth_config(&uri, ClientAuthMethod::Body, false);
    let url = format!("{uri}/revoke");
    let token = SecretString::from(TOKEN);
    let error = token_client()
        .revoke(&RevokeRequest {
            provider: "acme",
            url: &url,
            client: &client(),
            config: &config,
            token: &token,
            token_type_hint: TokenTypeHint::RefreshToken,
        })
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
}
