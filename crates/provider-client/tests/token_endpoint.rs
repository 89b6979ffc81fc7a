#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! The token client against a real local HTTP server playing the provider. (Single-flight
//! refreshing is a use case: crates/app/tests/integrations.rs.)

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use compliance_credentials::{
    AuthorizationRequest, ClientAuthMethod, CodeExchange, PkceVerifier, RefreshRequest, StateToken, TokenError,
    TokenSet, authorization_url,
};
use compliance_provider_client::{HttpSettings, TokenClient};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use support::{CLIENT_SECRET, client, form_pairs, oauth_config, token_client};
use time::OffsetDateTime;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

async fn provider(status: u16, body: serde_json::Value) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST"))
        .and(path("/token"))
        .respond_with(ResponseTemplate::new(status).set_body_json(body))
        .mount(&server)
        .await;
    server
}

fn granted() -> serde_json::Value {
    json!({"access_token": "at-new", "token_type": "bearer", "expires_in": 3600, "refresh_token": "rt-new", "scope": "read"})
}

#[tokio::test]
async fn body_method_with_pkce_sends_the_exact_form_and_a_verifier_matching_the_challenge() {
    let server = provider(200, granted()).await;
    let config = oauth_config(&server.uri(), ClientAuthMethod::Body, true);
    let verifier = PkceVerifier::generate();
    let state = StateToken::generate();
    let challenge = verifier.challenge();
    let url = authorization_url(
        &config,
        &AuthorizationRequest {
            client_id: "client:id 1",
            redirect_uri: "https://app.test/cb",
            settings: &BTreeMap::new(),
            state: &state,
            pkce_challenge: Some(&challenge),
        },
    )
    .unwrap();
    let sent_challenge = url.query_pairs().find(|(k, _)| k == "code_challenge").unwrap().1.into_owned();

    let code = SecretString::from("the-code");
    let tokens = token_client()
        .exchange_code(&CodeExchange {
            provider: "acme",
            config: &config,
            client: &client(),
            code: &code,
            redirect_uri: "https://app.test/cb",
            pkce_verifier: Some(&verifier),
        })
        .await
        .unwrap();
    assert_eq!(tokens.access_token.expose_secret(), "at-new");
    assert_eq!(tokens.refresh_token.unwrap().expose_secret(), "rt-new");
    let expires_in = tokens.expires_at.unwrap() - OffsetDateTime::now_utc();
    assert!(expires_in.whole_seconds() > 3500 && expires_in.whole_seconds() <= 3600);

    let requests = server.received_requests().await.unwrap();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.headers.get("content-type").unwrap(), "application/x-www-form-urlencoded");
    assert!(request.headers.get("authorization").is_none());
    let mut form = form_pairs(&request.body);
    let sent_verifier = form.iter().find(|(k, _)| k == "code_verifier").unwrap().1.clone();
    // Exactly these fields, each once; their order carries no meaning.
    let mut expected = pairs(&[
        ("grant_type", "authorization_code"),
        ("code", "the-code"),
        ("redirect_uri", "https://app.test/cb"),
        ("code_verifier", verifier.secret().expose_secret()),
        ("client_id", "client:id 1"),
        ("client_secret", CLIENT_SECRET),
    ]);
    form.sort();
    expected.sort();
    assert_eq!(form, expected);
    let recomputed = PkceVerifier::from_secret(sent_verifier.into()).unwrap().challenge();
    assert_eq!(recomputed.as_str(), sent_challenge);
}

#[tokio::test]
async fn header_method_sends_rfc6749_basic_credentials_and_none_in_the_form_plus_token_params() {
    let server = provider(200, granted()).await;
    let mut config = oauth_config(&server.uri(), ClientAuthMethod::Header, false);
    config.token_params.insert("audience".into(), "https://api.acme.test".into());
    let code = SecretString::from("the-code");
    token_client()
        .exchange_code(&CodeExchange {
            provider: "acme",
            config: &config,
            client: &client(),
            code: &code,
            redirect_uri: "https://app.test/cb",
            pkce_verifier: None,
        })
        .await
        .unwrap();
    let request = &server.received_requests().await.unwrap()[0];
    let header = request.headers.get("authorization").unwrap().to_str().unwrap();
    let decoded = STANDARD.decode(header.strip_prefix("Basic ").unwrap()).unwrap();
    assert_eq!(String::from_utf8(decoded).unwrap(), "client%3Aid+1:cs-Zq8%21kP2+%2F%2B%26%3Dsecret");
    assert_eq!(
        form_pairs(&request.body),
        pairs(&[
            ("grant_type", "authorization_code"),
            ("code", "the-code"),
            ("redirect_uri", "https://app.test/cb"),
            ("audience", "https://api.acme.test"),
        ])
    );
}

async fn refresh_with(server: &MockServer) -> Result<TokenSet, TokenError> {
    let config = oauth_config(&server.uri(), ClientAuthMethod::Body, false);
    let old = SecretString::from("rt-old");
    token_client()
        .refresh(&RefreshRequest { provider: "acme", config: &config, client: &client(), refresh_token: &old })
        .await
}

#[tokio::test]
async fn refresh_sends_the_refresh_grant_and_takes_a_new_refresh_token() {
    let server = provider(200, granted()).await;
    let tokens = refresh_with(&server).await.unwrap();
    assert_eq!(tokens.refresh_token.unwrap().expose_secret(), "rt-new");
    let request = &server.received_requests().await.unwrap()[0];
    assert_eq!(
        form_pairs(&request.body),
        pairs(&[
            ("grant_type", "refresh_token"),
            ("refresh_token", "rt-old"),
            ("client_id", "client:id 1"),
            ("client_secret", CLIENT_SECRET)
        ])
    );
}

#[tokio::test]
async fn refresh_keeps_the_old_refresh_token_when_none_is_returned() {
    let server = provider(200, json!({"access_token": "at-2", "token_type": "bearer", "expires_in": 60})).await;
    let tokens = refresh_with(&server).await.unwrap();
    assert_eq!(tokens.access_token.expose_secret(), "at-2");
    assert_eq!(tokens.refresh_token.unwrap().expose_secret(), "rt-old");
}

#[tokio::test]
async fn invalid_grant_is_distinct_and_not_retryable() {
    let server = provider(400, json!({"error": "invalid_grant", "error_description": "revoked"})).await;
    let error = refresh_with(&server).await.unwrap_err();
    assert!(matches!(error, TokenError::InvalidGrant));
    assert!(error.needs_reauthorization() && !error.is_retryable());
}

#[tokio::test]
async fn invalid_client_is_a_rejection() {
    let server = provider(401, json!({"error": "invalid_client"})).await;
    let error = refresh_with(&server).await.unwrap_err();
    assert!(matches!(error, TokenError::Rejected { status: 401, ref error } if error == "invalid_client"));
    assert!(!error.is_retryable() && !error.needs_reauthorization());
}

#[tokio::test]
async fn a_503_is_retryable() {
    let server = MockServer::start().await;
    Mock::given(path("/token")).respond_with(ResponseTemplate::new(503)).mount(&server).await;
    let error = refresh_with(&server).await.unwrap_err();
    assert!(matches!(error, TokenError::Transient { status: Some(503) }));
    assert!(error.is_retryable() && !error.needs_reauthorization());
}

#[tokio::test]
async fn a_timeout_is_retryable() {
    let server = MockServer::start().await;
    Mock::given(path("/token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(granted()).set_delay(Duration::from_secs(3)))
        .mount(&server)
        .await;
    let config = oauth_config(&server.uri(), ClientAuthMethod::Body, false);
    let quick = TokenClient::new(HttpSettings {
        connect_timeout: Duration::from_secs(1),
        total_timeout: Duration::from_millis(300),
    })
    .unwrap();
    let old = SecretString::from("rt-old");
    let error = quick
        .refresh(&RefreshRequest { provider: "acme", config: &config, client: &client(), refresh_token: &old })
        .await
        .unwrap_err();
    assert!(error.is_retryable(), "{error:?}");
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let server = MockServer::start().await;
    Mock::given(path("/token"))
        .respond_with(ResponseTemplate::new(307).insert_header("location", format!("{}/elsewhere", server.uri())))
        .mount(&server)
        .await;
    Mock::given(path("/elsewhere"))
        .respond_with(ResponseTemplate::new(200).set_body_json(granted()))
        .expect(0)
        .mount(&server)
        .await;
    let error = refresh_with(&server).await.unwrap_err();
    assert!(matches!(error, TokenError::Redirected { status: 307 }));
    assert_eq!(server.received_requests().await.unwrap().len(), 1);
}

#[tokio::test]
async fn supports_refresh_token_false_never_refreshes() {
    let server = provider(200, granted()).await;
    let mut config = oauth_config(&server.uri(), ClientAuthMethod::Body, false);
    config.supports_refresh_token = false;
    let old = SecretString::from("rt-old");
    let error = token_client()
        .refresh(&RefreshRequest { provider: "acme", config: &config, client: &client(), refresh_token: &old })
        .await
        .unwrap_err();
    assert!(matches!(error, TokenError::RefreshNotSupported));
    assert!(server.received_requests().await.unwrap().is_empty());
}

// What the HTTP client under the oauth2 crate guarantees, for exchanges and refreshes alike.

/// A token some providers echo back in error pages and descriptions; no error may quote it.
const ECHOED: &str = "at-Echoed-5f3a";

async fn exchange_with(tokens: &TokenClient, base: &str) -> Result<TokenSet, TokenError> {
    let config = oauth_config(base, ClientAuthMethod::Header, false);
    let code = SecretString::from("the-code");
    tokens
        .exchange_code(&CodeExchange {
            provider: "acme",
            config: &config,
            client: &client(),
            code: &code,
            redirect_uri: "https://app.test/cb",
            pkce_verifier: None,
        })
        .await
}

async fn answering(response: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("POST")).and(path("/token")).respond_with(response).mount(&server).await;
    server
}

fn assert_quotes_nothing(error: &TokenError) {
    let mut text = format!("{error} | {error:?}");
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(" | {cause} | {cause:?}"));
        source = cause.source();
    }
    // Also as the list of bytes a `Vec<u8>` body prints as.
    let bytes = format!("{:?}", &ECHOED.as_bytes()[..6]);
    let bytes = bytes.trim_matches(['[', ']']);
    assert!(!text.contains("Echoed") && !text.contains(bytes), "an error quotes the answer: {text}");
}

#[tokio::test]
async fn a_5xx_or_429_is_transient_whatever_its_body_and_is_never_parsed() {
    let answers = [
        (500, ResponseTemplate::new(500).set_body_string(format!("<html>crash near {ECHOED}</html>"))),
        (502, ResponseTemplate::new(502).set_body_json(json!({"access_token": ECHOED, "token_type": "bearer"}))),
        (503, ResponseTemplate::new(503).set_body_json(json!({"error": "invalid_grant", "error_description": ECHOED}))),
        (504, ResponseTemplate::new(504)),
        (429, ResponseTemplate::new(429).insert_header("retry-after", "3").set_body_string(ECHOED)),
    ];
    for (status, response) in answers {
        let server = answering(response).await;
        for error in
            [exchange_with(&token_client(), &server.uri()).await.unwrap_err(), refresh_with(&server).await.unwrap_err()]
        {
            assert!(matches!(error, TokenError::Transient { status: Some(s) } if s == status), "{status}: {error:?}");
            assert!(error.is_retryable() && !error.needs_reauthorization());
            assert_quotes_nothing(&error);
        }
    }
}

#[tokio::test]
async fn an_answer_holding_a_token_never_reaches_an_error() {
    let cases = [
        // Refusals: only the RFC 6749 error code is kept, never the description or the body.
        (
            ResponseTemplate::new(400).set_body_json(
                json!({"error": "invalid_request", "error_description": ECHOED, "error_uri": format!("https://x.test/{ECHOED}")}),
            ),
            "Rejected",
        ),
        (ResponseTemplate::new(401).set_body_string(format!("unauthorised: {ECHOED}")), "Rejected"),
        (ResponseTemplate::new(400).set_body_json(json!({"error": ECHOED})), "Rejected"),
        (ResponseTemplate::new(200).set_body_json(json!({"error": "bad_verification_code", "access_token": ECHOED})), "Rejected"),
        // Successes oauth2 cannot read: its parse error carries the body; ours does not.
        (ResponseTemplate::new(200).set_body_json(json!({"access_token": ECHOED, "expires_in": "soon"})), "InvalidResponse"),
        (ResponseTemplate::new(200).set_body_json(json!({"access_token": ECHOED, "token_type": 7})), "InvalidResponse"),
        (ResponseTemplate::new(200).set_body_json(json!({"refresh_token": ECHOED})), "InvalidResponse"),
        (ResponseTemplate::new(200).set_body_string(format!("access_token={ECHOED}&token_type=bearer")), "InvalidResponse"),
        (ResponseTemplate::new(200).set_body_json(json!({"access_token": ""})), "InvalidResponse"),
        (ResponseTemplate::new(200), "InvalidResponse"),
    ];
    for (response, expected) in cases {
        let server = answering(response).await;
        for error in
            [exchange_with(&token_client(), &server.uri()).await.unwrap_err(), refresh_with(&server).await.unwrap_err()]
        {
            assert!(format!("{error:?}").starts_with(expected), "expected {expected}: {error:?}");
            assert!(!error.is_retryable());
            assert_quotes_nothing(&error);
        }
    }
}

#[tokio::test]
async fn exchanges_refuse_redirects_and_time_out_like_refreshes() {
    let server = MockServer::start().await;
    Mock::given(path("/token"))
        .respond_with(ResponseTemplate::new(302).insert_header("location", format!("{}/elsewhere", server.uri())))
        .mount(&server)
        .await;
    Mock::given(path("/elsewhere"))
        .respond_with(ResponseTemplate::new(200).set_body_json(granted()))
        .expect(0)
        .mount(&server)
        .await;
    let error = exchange_with(&token_client(), &server.uri()).await.unwrap_err();
    assert!(matches!(error, TokenError::Redirected { status: 302 }), "{error:?}");
    assert_eq!(server.received_requests().await.unwrap().len(), 1, "the redirect is not followed");

    let slow = answering(ResponseTemplate::new(200).set_body_json(granted()).set_delay(Duration::from_secs(3))).await;
    let quick = TokenClient::new(HttpSettings {
        connect_timeout: Duration::from_secs(1),
        total_timeout: Duration::from_millis(300),
    })
    .unwrap();
    let error = exchange_with(&quick, &slow.uri()).await.unwrap_err();
    assert!(matches!(error, TokenError::Transient { status: None }), "{error:?}");

    // A port that was just free: nothing listens there.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed = format!("http://{}", listener.local_addr().unwrap());
    drop(listener);
    let error = exchange_with(&token_client(), &closed).await.unwrap_err();
    assert!(matches!(error, TokenError::Transient { status: None }), "{error:?}");
}

#[tokio::test]
async fn answers_of_real_providers_that_bend_rfc_6749_are_taken() {
    // No token_type, expires_in as a string, an unknown member, JSON sent as text/plain, status 201.
    let server = answering(ResponseTemplate::new(201).set_body_raw(
        r#"{"access_token":"at-1","expires_in":"120","scope":"repo,user gist","vendor":{"x":1}}"#,
        "text/plain",
    ))
    .await;
    let tokens = exchange_with(&token_client(), &server.uri()).await.unwrap();
    assert_eq!(tokens.access_token.expose_secret(), "at-1");
    assert!(tokens.token_type.is_none() && tokens.refresh_token.is_none());
    assert_eq!(tokens.scope.as_deref(), Some("repo,user gist"));
    let lifetime = tokens.expires_at.unwrap() - OffsetDateTime::now_utc();
    assert!((100..=120).contains(&lifetime.whole_seconds()), "{lifetime}");

    // token_type in any case, kept as written.
    let server =
        answering(ResponseTemplate::new(200).set_body_json(json!({"access_token": "at-2", "token_type": "Bearer"})))
            .await;
    let tokens = exchange_with(&token_client(), &server.uri()).await.unwrap();
    assert_eq!(tokens.token_type.as_deref(), Some("Bearer"));
    assert!(tokens.expires_at.is_none(), "no expires_in: a long-lived token");

    // GitHub answers a bad code with 200 and an error body.
    let server = answering(ResponseTemplate::new(200).set_body_json(json!({"error": "bad_verification_code"}))).await;
    let error = exchange_with(&token_client(), &server.uri()).await.unwrap_err();
    assert!(matches!(error, TokenError::Rejected { status: 200, ref error } if error == "bad_verification_code"));
}
