#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! Runs every flow of the provider client (and the credential model's callback before it) with a subscriber capturing all log lines at TRACE (ours, reqwest's, hyper's) and
//! checks that no secret appears in a log line or in any error's Display or Debug.
//! One test in this binary, because it installs the global subscriber.

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use compliance_credentials::{
    ApiKeyConfig, ApiKeyLocation, AuthorizationRequest, BasicConfig, CallbackCaller, CallbackParams, ClientAuthMethod,
    CodeExchange, CredentialField, CredentialValues, FieldType, OAuthState, PkceVerifier, RefreshRequest, RequestAuth,
    StateToken, accept_callback, authorization_url, validate_values,
};
use compliance_ports::ProviderClient;
use compliance_provider_client::{HttpProviderClient, HttpSettings};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use support::{CLIENT_SECRET, client, oauth_config};
use time::OffsetDateTime;
use wiremock::matchers::{body_string_contains, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const CODE_OK: &str = "code-ok-5d1f";
const CODE_BAD: &str = "code-bad-77ae";
const ACCESS: &str = "at-9c2e41";
const REFRESH: &str = "rt-3b7a90";
const REFRESH_REVOKED: &str = "rt-revoked-11f0";
const API_KEY: &str = "ak-live-4f0c";
const PASSWORD: &str = "pw-Tr0ub4dor";

#[tokio::test]
async fn no_secret_reaches_a_log_line_or_an_error() {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::new("trace,wiremock=off"))
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let provider = HttpProviderClient::new(HttpSettings::default()).unwrap();
    let verifier = PkceVerifier::generate();
    let verifier_text = verifier.secret().expose_secret().to_owned();
    let mut errors: Vec<String> = Vec::new();
    let mut keep = |e: &dyn std::error::Error| errors.push(format!("{e} | {e:?}"));

    let server = MockServer::start().await;
    Mock::given(path("/token"))
        .and(body_string_contains(CODE_OK))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"access_token": ACCESS, "refresh_token": REFRESH, "expires_in": 60})),
        )
        .mount(&server)
        .await;
    Mock::given(path("/token"))
        .and(body_string_contains(CODE_BAD))
        .respond_with(
            ResponseTemplate::new(401)
                .set_body_json(json!({"error": "invalid_client", "error_description": CLIENT_SECRET})),
        )
        .mount(&server)
        .await;
    Mock::given(path("/token"))
        .and(body_string_contains(REFRESH_REVOKED))
        .respond_with(ResponseTemplate::new(400).set_body_json(json!({"error": "invalid_grant"})))
        .mount(&server)
        .await;
    Mock::given(path("/token"))
        .and(body_string_contains("grant_type=refresh_token"))
        .respond_with(ResponseTemplate::new(503).set_body_string(ACCESS))
        .mount(&server)
        .await;
    Mock::given(path("/api")).respond_with(ResponseTemplate::new(200)).mount(&server).await;

    // Submitted values with a bad one.
    let fields = [CredentialField {
        id: "password".into(),
        label: "Password".into(),
        field_type: FieldType::Number,
        required: true,
        placeholder: None,
        help_text: None,
        options: None,
    }];
    let submitted =
        BTreeMap::from([("password".to_owned(), SecretString::from(PASSWORD)), ("x".to_owned(), API_KEY.into())]);
    keep(&validate_values(&fields, submitted).unwrap_err());

    // Authorization, callback (provider error, bad state, good state), exchange (good and bad).
    for method in [ClientAuthMethod::Body, ClientAuthMethod::Header] {
        let config = oauth_config(&server.uri(), method, true);
        let state = StateToken::generate();
        let challenge = verifier.challenge();
        authorization_url(
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
        let mut record =
            OAuthState::new(&state, "org_1", "usr_1", "acme", OffsetDateTime::now_utc(), Some(verifier.clone()));
        let caller = CallbackCaller { organization_id: "org_1", user_id: "usr_1", provider: "acme" };
        let now = OffsetDateTime::now_utc();
        let params = |code: &str, state: &str, error: Option<&str>| CallbackParams {
            code: Some(code.into()),
            state: Some(state.to_owned()),
            error: error.map(str::to_owned),
        };
        keep(
            &accept_callback(params(CODE_OK, "forged", Some("access_denied")), Some(&mut record), caller, now)
                .unwrap_err(),
        );
        keep(&accept_callback(params(CODE_OK, "forged", None), Some(&mut record), caller, now).unwrap_err());
        let code =
            accept_callback(params(CODE_OK, state.value().expose_secret(), None), Some(&mut record), caller, now)
                .unwrap();
        let exchange = |code| CodeExchange {
            provider: "acme",
            config: &config,
            client: &CLIENT,
            code,
            redirect_uri: "https://app.test/cb",
            pkce_verifier: Some(&verifier),
        };
        provider.exchange(&exchange(&code)).await.unwrap();
        let bad = SecretString::from(CODE_BAD);
        keep(&provider.exchange(&exchange(&bad)).await.unwrap_err());
    }

    // Refresh: 503, then invalid_grant.
    let config = oauth_config(&server.uri(), ClientAuthMethod::Header, false);
    for refresh in [REFRESH, REFRESH_REVOKED] {
        let refresh_token = SecretString::from(refresh);
        let request =
            RefreshRequest { provider: "acme", config: &config, client: &CLIENT, refresh_token: &refresh_token };
        keep(&provider.refresh(&request).await.unwrap_err());
    }

    // Signed requests with each static strategy, to the service and to a closed port.
    let key_values = values(&[("api_key", API_KEY)]);
    let basic_values = values(&[("username", "alice"), ("password", PASSWORD)]);
    for auth in [
        RequestAuth::ApiKey {
            config: ApiKeyConfig { location: ApiKeyLocation::Header, name: "X-Key".into(), prefix: "Token ".into() },
            values: key_values.clone(),
        },
        RequestAuth::ApiKey {
            config: ApiKeyConfig { location: ApiKeyLocation::Query, name: "key".into(), prefix: String::new() },
            values: key_values,
        },
        RequestAuth::Basic { config: BasicConfig::default(), values: basic_values },
        RequestAuth::Bearer(ACCESS.into()),
    ] {
        assert_eq!(provider.signed_get(&format!("{}/api", server.uri()), &auth).await.unwrap().status, 200);
        keep(&provider.signed_get("http://127.0.0.1:9/api", &auth).await.unwrap_err());
    }

    let logs = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    for expected in [
        "OAuth completed for acme",
        "OAuth callback error",
        "Token exchange failed",
        "Invalid state",
        "Token refresh failed",
    ] {
        assert!(logs.contains(expected), "missing log line {expected:?}");
    }
    assert!(logs.lines().count() > 20, "the capture should hold reqwest and hyper lines too");
    assert_eq!(errors.len(), 13);
    let secrets =
        [CLIENT_SECRET, CODE_OK, CODE_BAD, ACCESS, REFRESH, REFRESH_REVOKED, API_KEY, PASSWORD, &verifier_text];
    for secret in secrets {
        assert!(!logs.contains(secret), "a log line holds {secret:?}:\n{logs}");
        for error in &errors {
            assert!(!error.contains(secret), "an error holds {secret:?}: {error}");
        }
    }
}

static CLIENT: std::sync::LazyLock<compliance_credentials::ClientCredentials> = std::sync::LazyLock::new(client);

fn values(pairs: &[(&str, &str)]) -> CredentialValues {
    CredentialValues::from_validated(pairs.iter().map(|(k, v)| ((*k).to_owned(), SecretString::from(*v))).collect())
}
