#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]
//! Runs every flow with a subscriber capturing all log lines at TRACE (ours, reqwest's, hyper's) and
//! checks that no secret appears in a log line or in any error's Display or Debug.
//! One test in this binary, because it installs the global subscriber.

mod support;

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use compliance_credentials::{
    AccessTokenError, ApiKeyConfig, ApiKeyLocation, AuthorizationRequest, BasicConfig, Binding, CallbackCaller,
    CallbackParams, CheckAuth, CheckContext, ClientAuthMethod, CodeExchange, ConnectionKey, CredentialField,
    CredentialValues, FieldType, HttpSettings, InMemoryTokenStore, Key, Keyring, OAuthConnection, OAuthState,
    PkceVerifier, StateToken, TokenRefresher, TokenSet, TokenStore, accept_callback, authorization_url,
    build_http_client, complete_authorization, validate_values,
};
use reqwest::Method;
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;
use support::{CLIENT_SECRET, client, oauth_config, token_client};
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

    let master = Key::generate();
    let master_b64 = master.to_base64().expose_secret().to_owned();
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
        complete_authorization(&token_client(), &exchange(&code)).await.unwrap();
        let bad = SecretString::from(CODE_BAD);
        keep(&complete_authorization(&token_client(), &exchange(&bad)).await.unwrap_err());
    }

    // Refresh: 503, then invalid_grant, through the single-flight refresher.
    let store = Arc::new(InMemoryTokenStore::default());
    let refresher = Arc::new(TokenRefresher::new(token_client(), store.clone()));
    for (refresh, id) in [(REFRESH, "con_1"), (REFRESH_REVOKED, "con_2")] {
        let key = ConnectionKey { organization_id: "org_1".into(), connection_id: id.into() };
        let stale = TokenSet {
            access_token: ACCESS.into(),
            refresh_token: Some(refresh.into()),
            expires_at: Some(OffsetDateTime::now_utc()),
            token_type: None,
            scope: None,
        };
        store.save(&key, &stale).await.unwrap();
        let connection = OAuthConnection {
            key,
            provider: "acme".into(),
            config: oauth_config(&server.uri(), ClientAuthMethod::Header, false),
            client: client(),
        };
        let error: AccessTokenError = refresher.access_token(&connection).await.unwrap_err();
        keep(&error);
        let ctx = CheckContext::new(
            http(),
            CheckAuth::OAuth2 { refresher: refresher.clone(), connection: Box::new(connection) },
            CredentialValues::default(),
        );
        keep(&ctx.fetch(ctx.request(Method::GET, &format!("{}/api", server.uri()))).await.unwrap_err());
    }

    // Fetch with each static strategy, to the service and to a closed port.
    let key_values = values(&[("api_key", API_KEY)]);
    let basic_values = values(&[("username", "alice"), ("password", PASSWORD)]);
    for (auth, credentials) in [
        (
            CheckAuth::ApiKey(ApiKeyConfig {
                location: ApiKeyLocation::Header,
                name: "X-Key".into(),
                prefix: "Token ".into(),
            }),
            key_values.clone(),
        ),
        (
            CheckAuth::ApiKey(ApiKeyConfig {
                location: ApiKeyLocation::Query,
                name: "key".into(),
                prefix: String::new(),
            }),
            key_values,
        ),
        (CheckAuth::Basic(BasicConfig::default()), basic_values),
    ] {
        let ctx = CheckContext::new(http(), auth, credentials);
        assert_eq!(ctx.fetch(ctx.request(Method::GET, &format!("{}/api", server.uri()))).await.unwrap().status(), 200);
        keep(&ctx.fetch(ctx.request(Method::GET, "http://127.0.0.1:9/api")).await.unwrap_err());
    }

    // Vault.
    let ring = Keyring::from_base64_keys(&master_b64.clone().into(), &[]).unwrap();
    let sealed = ring.encrypt_secret(&PASSWORD.into(), Binding::connection("org_1", "con_1")).unwrap();
    keep(&ring.decrypt_secret(&sealed, Binding::connection("org_2", "con_1")).unwrap_err());
    keep(&Keyring::from_base64_keys(&format!("{master_b64}x").into(), &[]).unwrap_err());
    tracing::info!(?ring, ?master, "keyring in use");

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
    assert_eq!(errors.len(), 16);
    let secrets = [
        CLIENT_SECRET,
        CODE_OK,
        CODE_BAD,
        ACCESS,
        REFRESH,
        REFRESH_REVOKED,
        API_KEY,
        PASSWORD,
        &master_b64,
        &verifier_text,
    ];
    for secret in secrets {
        assert!(!logs.contains(secret), "a log line holds {secret:?}:\n{logs}");
        for error in &errors {
            assert!(!error.contains(secret), "an error holds {secret:?}: {error}");
        }
    }
}

static CLIENT: std::sync::LazyLock<compliance_credentials::ClientCredentials> = std::sync::LazyLock::new(client);

fn http() -> reqwest::Client {
    build_http_client(HttpSettings::default()).unwrap()
}

fn values(pairs: &[(&str, &str)]) -> CredentialValues {
    CredentialValues::from_validated(pairs.iter().map(|(k, v)| ((*k).to_owned(), SecretString::from(*v))).collect())
}
