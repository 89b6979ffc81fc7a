//! A fake third-party provider on a real local HTTP server (wiremock), and the provider manifests
//! that point the server at it through `PROVIDERS_DIR`.
//!
//! It plays an OAuth authorization server (authorize, token, RFC 7009 revoke) and an API whose
//! verify endpoints accept only the credentials a test declared valid. Everything it receives is
//! recorded, and every secret it hands out (codes, tokens) or a test makes up (client secrets, API
//! keys, passwords) is registered, so that the runner can check the server never logs one.

// Panicking is how a test fails.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use wiremock::matchers::{method, path, path_regex};
use wiremock::{Mock, MockServer, Request, Respond, ResponseTemplate};

use crate::checks::base64;
use crate::client::Response;
use crate::harness::{Backend, TestServer, random_hex, run_with_owned_env};

/// OAuth2 provider: PKCE, `authorizationParams`, client credentials in the form body, a revoke
/// endpoint and a verify request.
pub const OAUTH: &str = "fake-oauth";
/// OAuth2 provider: client credentials in a Basic header, no PKCE, no revoke, a `{WORKSPACE}`
/// placeholder in its authorize URL filled from a required custom setting.
pub const OAUTH_HEADER: &str = "fake-oauth-header";
/// api_key sent as the header `X-Fake-Key: Token <key>`.
pub const HEADER_KEY: &str = "fake-header-key";
/// api_key sent as the query parameter `apikey=<key>`.
pub const QUERY_KEY: &str = "fake-query-key";
/// basic, with the field ids `login` and `secret`.
pub const BASIC: &str = "fake-basic";
/// basic, without a `verify` request.
pub const NO_VERIFY: &str = "fake-no-verify";
/// custom: `endpoint` (url), `port` (number), `region` (select), `token` (password, required),
/// `notes` (textarea, optional), `plan` (combobox, optional).
pub const CUSTOM: &str = "fake-custom";

/// The header [`HEADER_KEY`] sends its key in, and the prefix before the key.
pub const KEY_HEADER: &str = "X-Fake-Key";
pub const KEY_PREFIX: &str = "Token ";
/// The query parameter of [`QUERY_KEY`].
pub const KEY_QUERY: &str = "apikey";

/// The scopes of [`OAUTH`].
pub const OAUTH_SCOPES: [&str; 2] = ["read:things", "read:people"];
/// The `authorizationParams` of [`OAUTH`].
pub const OAUTH_EXTRA_PARAMS: [(&str, &str); 2] = [("access_type", "offline"), ("prompt", "consent")];

/// An origin other than `PUBLIC_URL`'s that the server is told to accept as a redirect target.
pub const FOREIGN_ORIGIN: &str = "https://app.example.test";

/// One request the fake received: path, query, headers (lowercase names) and form body.
#[derive(Debug, Clone, Default)]
pub struct Seen {
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub headers: BTreeMap<String, String>,
    pub form: BTreeMap<String, String>,
}

impl Seen {
    fn of(request: &Request) -> Self {
        let query = request.url.query_pairs().map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let headers = request
            .headers
            .iter()
            .map(|(name, value)| (name.as_str().to_ascii_lowercase(), String::from_utf8_lossy(value.as_bytes()).into()))
            .collect();
        let form = url::form_urlencoded::parse(&request.body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        Self { path: request.url.path().to_owned(), query, headers, form }
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(&name.to_ascii_lowercase()).map(String::as_str)
    }
}

/// A code handed out by the authorize endpoint.
#[derive(Debug, Clone)]
struct IssuedCode {
    client_id: String,
    redirect_uri: String,
    code_challenge: Option<String>,
    used: bool,
}

/// What the fake remembers and how it is told to behave.
#[derive(Debug, Default)]
pub struct State {
    /// Every request to an authorize endpoint.
    pub authorize: Vec<Seen>,
    /// Every request to the token endpoint.
    pub token: Vec<Seen>,
    /// Every request to a verify endpoint.
    pub verify: Vec<Seen>,
    /// Every request to the revoke endpoint.
    pub revoke: Vec<Seen>,
    /// The OAuth client the token endpoint accepts, `(client_id, client_secret)`.
    pub client: Option<(String, String)>,
    /// `expires_in` of the next authorization_code answer (seconds).
    pub code_expires_in: u64,
    /// The refresh_token grant answers `invalid_grant`.
    pub refresh_rejected: bool,
    /// The authorize endpoint sends the user back with `error=<this>` instead of a code.
    pub authorize_error: Option<String>,
    codes: BTreeMap<String, IssuedCode>,
    /// Access tokens the verify endpoint accepts (as `Bearer <token>`).
    pub access_tokens: BTreeSet<String>,
    /// Refresh tokens the token endpoint accepts.
    pub refresh_tokens: BTreeSet<String>,
    /// Every access token issued, in order.
    pub issued_access: Vec<String>,
    /// Every refresh token issued, in order.
    pub issued_refresh: Vec<String>,
    /// Credentials the non-OAuth verify endpoints accept: `X-Fake-Key` header values, `apikey` query
    /// values, `Authorization: Basic …` values.
    pub valid: BTreeSet<String>,
    /// Every secret value known to the test; none may appear in a response or a log line.
    pub secrets: Vec<String>,
    /// The verify endpoints answer this status whatever they receive.
    pub verify_status: Option<u16>,
    /// The revoke endpoint answers this status (and revokes nothing).
    pub revoke_status: Option<u16>,
}

/// The fake provider.
#[derive(Debug)]
pub struct FakeProvider {
    server: MockServer,
    state: Arc<Mutex<State>>,
}

impl FakeProvider {
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let state = Arc::new(Mutex::new(State { code_expires_in: 3600, ..State::default() }));
        let responder = Responder(Arc::clone(&state));
        Mock::given(method("GET"))
            .and(path_regex(r"^/oauth/(?:[^/]+/)?authorize$"))
            .respond_with(Authorize(responder.clone()))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/oauth/token"))
            .respond_with(Token(responder.clone()))
            .mount(&server)
            .await;
        Mock::given(method("POST"))
            .and(path("/oauth/revoke"))
            .respond_with(Revoke(responder.clone()))
            .mount(&server)
            .await;
        Mock::given(path_regex(r"^/verify/[a-z-]+$")).respond_with(Verify(responder)).mount(&server).await;
        Self { server, state }
    }

    /// `http://127.0.0.1:PORT`
    pub fn uri(&self) -> String {
        self.server.uri()
    }

    pub fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A fresh random secret such as `apikey-3f…`, registered as one that must never leak.
    pub fn secret(&self, kind: &str) -> String {
        let value = format!("{kind}-{}", random_hex(16));
        self.state().secrets.push(value.clone());
        value
    }

    /// Every registered secret.
    pub fn secrets(&self) -> Vec<String> {
        self.state().secrets.clone()
    }

    /// The OAuth client the token endpoint accepts from now on.
    pub fn accept_client(&self, client_id: &str, client_secret: &str) {
        self.state().client = Some((client_id.to_owned(), client_secret.to_owned()));
    }

    /// A credential value the verify endpoints accept from now on.
    pub fn accept(&self, value: &str) {
        self.state().valid.insert(value.to_owned());
    }

    /// Fails the test when any registered secret occurs in `text`.
    #[track_caller]
    pub fn assert_no_secret_in(&self, what: &str, text: &str) {
        for secret in self.secrets() {
            assert!(!text.contains(&secret), "{what} contains the secret {secret:?}:\n{text}");
        }
    }

    /// Fails the test when a registered secret occurs in the response body; returns the response.
    #[track_caller]
    pub fn clean(&self, response: Response) -> Response {
        let text = String::from_utf8_lossy(&response.bytes).into_owned();
        self.assert_no_secret_in("a response body", &text);
        response
    }

    /// The verify requests received so far on `/verify/{kind}`.
    pub fn verify_requests(&self, kind: &str) -> Vec<Seen> {
        let path = format!("/verify/{kind}");
        self.state().verify.iter().filter(|seen| seen.path == path).cloned().collect()
    }
}

#[derive(Debug, Clone)]
struct Responder(Arc<Mutex<State>>);

impl Responder {
    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `base64url` without padding (RFC 7636 §4.2).
fn base64url(bytes: &[u8]) -> String {
    base64(bytes).trim_end_matches('=').replace('+', "-").replace('/', "_")
}

fn oauth_error(status: u16, code: &str) -> ResponseTemplate {
    ResponseTemplate::new(status).set_body_json(json!({"error": code, "error_description": format!("fake: {code}")}))
}

/// `GET /oauth[/{workspace}]/authorize`: 302 back to `redirect_uri` with `code` (or `error`) and
/// the same `state`.
struct Authorize(Responder);

impl Respond for Authorize {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let seen = Seen::of(request);
        let mut state = self.0.state();
        state.authorize.push(seen.clone());
        let Some(redirect_uri) = seen.query.get("redirect_uri") else {
            return ResponseTemplate::new(400).set_body_string("fake: no redirect_uri");
        };
        let Ok(mut back) = url::Url::parse(redirect_uri) else {
            return ResponseTemplate::new(400).set_body_string("fake: redirect_uri is not a URL");
        };
        if let Some(error) = state.authorize_error.clone() {
            back.query_pairs_mut().append_pair("error", &error);
        } else {
            let code = format!("code-{}", random_hex(16));
            state.secrets.push(code.clone());
            let issued = IssuedCode {
                client_id: seen.query.get("client_id").cloned().unwrap_or_default(),
                redirect_uri: redirect_uri.clone(),
                code_challenge: seen.query.get("code_challenge").cloned(),
                used: false,
            };
            state.codes.insert(code.clone(), issued);
            back.query_pairs_mut().append_pair("code", &code);
        }
        if let Some(value) = seen.query.get("state") {
            back.query_pairs_mut().append_pair("state", value);
        }
        ResponseTemplate::new(302).insert_header("Location", back.as_str())
    }
}

/// `POST /oauth/token`: the authorization_code and refresh_token grants.
struct Token(Responder);

impl Token {
    /// The client id and secret of the request, from a Basic header or from the form.
    fn client(seen: &Seen) -> Option<(String, String)> {
        if let Some(basic) = seen.header("authorization").and_then(|h| h.strip_prefix("Basic ")) {
            let decoded = decode_base64(basic)?;
            let (id, secret) = decoded.split_once(':')?;
            return Some((form_decode(id), form_decode(secret)));
        }
        Some((seen.form.get("client_id")?.clone(), seen.form.get("client_secret")?.clone()))
    }
}

impl Respond for Token {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let seen = Seen::of(request);
        let mut state = self.0.state();
        state.token.push(seen.clone());
        let content_type = seen.header("content-type").unwrap_or_default();
        if !content_type.starts_with("application/x-www-form-urlencoded") {
            return oauth_error(400, "invalid_request");
        }
        if Self::client(&seen).is_none_or(|client| Some(client) != state.client) {
            return oauth_error(401, "invalid_client");
        }
        match seen.form.get("grant_type").map(String::as_str) {
            Some("authorization_code") => {
                let code = seen.form.get("code").cloned().unwrap_or_default();
                let Some(issued) = state.codes.get_mut(&code) else {
                    return oauth_error(400, "invalid_grant");
                };
                if issued.used {
                    return oauth_error(400, "invalid_grant");
                }
                issued.used = true;
                let issued = issued.clone();
                if seen.form.get("redirect_uri") != Some(&issued.redirect_uri)
                    || Some(issued.client_id.as_str()) != state.client.as_ref().map(|c| c.0.as_str())
                {
                    return oauth_error(400, "invalid_grant");
                }
                if let Some(verifier) = seen.form.get("code_verifier") {
                    state.secrets.push(verifier.clone());
                }
                if let Some(challenge) = &issued.code_challenge {
                    let verifier = seen.form.get("code_verifier").cloned().unwrap_or_default();
                    if base64url(&Sha256::digest(verifier.as_bytes())) != *challenge {
                        return oauth_error(400, "invalid_grant");
                    }
                }
                let access = format!("access-{}", random_hex(16));
                let refresh = format!("refresh-{}", random_hex(16));
                state.secrets.extend([access.clone(), refresh.clone()]);
                state.access_tokens.insert(access.clone());
                state.refresh_tokens.insert(refresh.clone());
                state.issued_access.push(access.clone());
                state.issued_refresh.push(refresh.clone());
                let body = json!({
                    "access_token": access,
                    "refresh_token": refresh,
                    "token_type": "Bearer",
                    "expires_in": state.code_expires_in,
                    "scope": OAUTH_SCOPES.join(" "),
                });
                ResponseTemplate::new(200).set_body_json(body)
            }
            Some("refresh_token") => {
                let refresh = seen.form.get("refresh_token").cloned().unwrap_or_default();
                if state.refresh_rejected || !state.refresh_tokens.contains(&refresh) {
                    return oauth_error(400, "invalid_grant");
                }
                // The access tokens issued before stop working, as after a real refresh they would
                // soon expire.
                state.access_tokens.clear();
                let access = format!("access-{}", random_hex(16));
                state.secrets.push(access.clone());
                state.access_tokens.insert(access.clone());
                state.issued_access.push(access.clone());
                let body = json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600});
                ResponseTemplate::new(200).set_body_json(body)
            }
            _ => oauth_error(400, "unsupported_grant_type"),
        }
    }
}

/// `POST /oauth/revoke` (RFC 7009): records the form and answers 200.
struct Revoke(Responder);

impl Respond for Revoke {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let seen = Seen::of(request);
        let mut state = self.0.state();
        state.revoke.push(seen.clone());
        if let Some(status) = state.revoke_status {
            return oauth_error(status, "temporarily_unavailable");
        }
        if let Some(token) = seen.form.get("token") {
            state.refresh_tokens.remove(token);
            state.access_tokens.remove(token);
        }
        ResponseTemplate::new(200)
    }
}

/// `/verify/{oauth,header,query,basic,custom}`: 200 for an accepted credential, else 401.
struct Verify(Responder);

impl Respond for Verify {
    fn respond(&self, request: &Request) -> ResponseTemplate {
        let seen = Seen::of(request);
        let mut state = self.0.state();
        state.verify.push(seen.clone());
        if let Some(status) = state.verify_status {
            return ResponseTemplate::new(status).set_body_json(json!({"error": "fake"}));
        }
        let ok = match seen.path.trim_start_matches("/verify/") {
            "oauth" => seen
                .header("authorization")
                .and_then(|h| h.strip_prefix("Bearer "))
                .is_some_and(|token| state.access_tokens.contains(token)),
            "header" => seen.header(KEY_HEADER).is_some_and(|v| state.valid.contains(v)),
            "query" => seen.query.get(KEY_QUERY).is_some_and(|v| state.valid.contains(v)),
            "basic" => seen.header("authorization").is_some_and(|v| state.valid.contains(v)),
            "custom" => true,
            _ => false,
        };
        if ok {
            ResponseTemplate::new(200).set_body_json(json!({"ok": true}))
        } else {
            ResponseTemplate::new(401).set_body_json(json!({"error": "unauthorized"}))
        }
    }
}

fn decode_base64(text: &str) -> Option<String> {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut bits = 0u32;
    let mut count = 0;
    let mut out = Vec::new();
    for byte in text.trim_end_matches('=').bytes() {
        let value = ALPHABET.iter().position(|&c| c == byte)?;
        bits = (bits << 6) | u32::try_from(value).ok()?;
        count += 6;
        if count >= 8 {
            count -= 8;
            out.push(u8::try_from((bits >> count) & 0xff).ok()?);
        }
    }
    String::from_utf8(out).ok()
}

/// RFC 6749 §2.3.1 form-encodes the client id and secret before they go into a Basic header.
fn form_decode(text: &str) -> String {
    url::form_urlencoded::parse(format!("x={text}").as_bytes()).next().map(|(_, v)| v.into_owned()).unwrap_or_default()
}

/// `Authorization: Basic …` for `user:password`.
pub fn basic_header(user: &str, password: &str) -> String {
    format!("Basic {}", base64(format!("{user}:{password}").as_bytes()))
}

/// The manifests, one per test provider, pointing at `base` (the fake's URI).
pub fn manifests(base: &str) -> Vec<(String, Value)> {
    let oauth = json!({
        "slug": OAUTH,
        "name": "Fake OAuth",
        "description": "A fake OAuth provider for the tests.",
        "auth": {"type": "oauth2", "config": {
            "authorizeUrl": format!("{base}/oauth/authorize"),
            "tokenUrl": format!("{base}/oauth/token"),
            "scopes": OAUTH_SCOPES,
            "pkce": true,
            "clientAuthMethod": "body",
            "authorizationParams": OAUTH_EXTRA_PARAMS.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>(),
            "setupInstructions": "Create an **OAuth app** at the fake provider.",
            "createAppUrl": format!("{base}/apps/new"),
        }},
        "verify": {"method": "GET", "url": format!("{base}/verify/oauth")},
        "revoke": format!("{base}/oauth/revoke"),
    });
    let oauth_header = json!({
        "slug": OAUTH_HEADER,
        "name": "Fake OAuth (header)",
        "description": "A fake OAuth provider taking client credentials in a header.",
        "auth": {"type": "oauth2", "config": {
            "authorizeUrl": format!("{base}/oauth/{{WORKSPACE}}/authorize"),
            "tokenUrl": format!("{base}/oauth/token"),
            "scopes": ["read"],
            "clientAuthMethod": "header",
            "customSettings": [
                {"id": "WORKSPACE", "label": "Workspace", "type": "text", "required": true, "token": "{WORKSPACE}"}
            ],
        }},
        "verify": {"method": "GET", "url": format!("{base}/verify/oauth")},
    });
    let header_key = json!({
        "slug": HEADER_KEY,
        "name": "Fake Header Key",
        "description": "A fake API taking a key in a header.",
        "auth": {"type": "api_key", "config": {"in": "header", "name": KEY_HEADER, "prefix": KEY_PREFIX}},
        "setupInstructions": "Copy the key from *Settings → API*. <script>alert(1)</script> [bad](javascript:alert(1))",
        "verify": {"method": "GET", "url": format!("{base}/verify/header")},
    });
    let query_key = json!({
        "slug": QUERY_KEY,
        "name": "Fake Query Key",
        "description": "A fake API taking a key in the query.",
        "auth": {"type": "api_key", "config": {"in": "query", "name": KEY_QUERY}},
        "verify": {"method": "GET", "url": format!("{base}/verify/query?format=json")},
    });
    let basic = json!({
        "slug": BASIC,
        "name": "Fake Basic",
        "description": "A fake API taking a username and a password.",
        "auth": {"type": "basic", "config": {"usernameField": "login", "passwordField": "secret"}},
        "verify": {"method": "GET", "url": format!("{base}/verify/basic")},
    });
    let custom = json!({
        "slug": CUSTOM,
        "name": "Fake Custom",
        "description": "A fake API with several credential fields.",
        "auth": {"type": "custom", "config": {
            "description": "Endpoint, port, region and token of the fake API.",
            "setupInstructions": "Ask your administrator.",
            "credentialFields": [
                {"id": "endpoint", "label": "Endpoint", "type": "url", "required": true, "placeholder": "https://…"},
                {"id": "port", "label": "Port", "type": "number", "required": true},
                {"id": "region", "label": "Region", "type": "select", "required": true,
                 "options": [{"value": "eu", "label": "Europe"}, {"value": "us", "label": "United States"}]},
                {"id": "token", "label": "Token", "type": "password", "required": true, "helpText": "From the console."},
                {"id": "notes", "label": "Notes", "type": "textarea", "required": false},
                {"id": "plan", "label": "Plan", "type": "combobox", "required": false,
                 "options": [{"value": "free", "label": "Free"}, {"value": "team", "label": "Team"}]},
            ],
        }},
        "verify": {"method": "GET", "url": format!("{base}/verify/custom")},
    });
    let no_verify = json!({
        "slug": NO_VERIFY,
        "name": "Fake Without Verify",
        "description": "A fake API that cannot be checked.",
        "auth": {"type": "basic", "config": {}},
    });
    [oauth, oauth_header, header_key, query_key, basic, custom, no_verify]
        .into_iter()
        .map(|manifest| (format!("{}.json", manifest["slug"].as_str().unwrap()), manifest))
        .collect()
}

/// A directory removed on drop.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    pub fn new(prefix: &str) -> Self {
        let path = std::env::temp_dir().join(format!("{prefix}-{}", random_hex(8)));
        std::fs::create_dir_all(&path).expect("create a temp dir");
        Self(path)
    }

    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `test` against a server whose `PROVIDERS_DIR` holds [`manifests`] of a fresh
/// [`FakeProvider`], with `RUST_LOG=info` (so that info-level lines are checked for secrets too)
/// and [`FOREIGN_ORIGIN`] in `OAUTH_REDIRECT_ORIGINS`. Afterwards no registered secret may appear
/// in the server's stderr.
pub async fn run<F, Fut>(backend: Backend, test: F)
where
    F: FnOnce(Arc<TestServer>, Arc<FakeProvider>) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let fake = Arc::new(FakeProvider::start().await);
    let dir = ScratchDir::new("compliance-providers");
    for (file, manifest) in manifests(&fake.uri()) {
        std::fs::write(dir.path().join(file), serde_json::to_vec_pretty(&manifest).unwrap()).expect("write a manifest");
    }
    std::fs::write(dir.path().join("README.txt"), "not a manifest: ignored").expect("write a non-manifest");
    let env = vec![
        ("PROVIDERS_DIR".to_owned(), dir.path().display().to_string()),
        ("OAUTH_REDIRECT_ORIGINS".to_owned(), FOREIGN_ORIGIN.to_owned()),
        ("RUST_LOG".to_owned(), "info".to_owned()),
    ];
    run_with_owned_env(backend, env, move |server| async move {
        test(Arc::clone(&server), Arc::clone(&fake)).await;
        // Stopped first, so that the last lines are in.
        fake.assert_no_secret_in("the server's stderr", &server.stop().await);
    })
    .await;
    drop(dir);
}

#[cfg(test)]
mod tests {
    use super::{base64url, basic_header, decode_base64, form_decode};
    use sha2::{Digest, Sha256};

    #[test]
    fn pkce_s256_matches_rfc_7636_appendix_b() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        assert_eq!(base64url(&Sha256::digest(verifier.as_bytes())), "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    }

    #[test]
    fn basic_headers_decode() {
        let header = basic_header("Aladdin", "open sesame");
        assert_eq!(header, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
        assert_eq!(decode_base64(header.trim_start_matches("Basic ")).as_deref(), Some("Aladdin:open sesame"));
        assert_eq!(form_decode("a%3Ab+c"), "a:b c");
    }

    #[tokio::test]
    #[should_panic(expected = "contains the secret")]
    async fn a_registered_secret_is_found() {
        let fake = super::FakeProvider::start().await;
        let secret = fake.secret("apikey");
        fake.assert_no_secret_in("a log", &format!("{{\"key\":\"{secret}\"}}"));
    }
}
