//! A real OpenID provider for the sign-in tests: the npm package `oidc-provider` (pinned in
//! tests/oidc/package-lock.json), run by Node on loopback, and a browser that signs in through its
//! real login and consent pages.

use std::future::Future;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::LOCATION;
use reqwest::redirect::Policy;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use crate::harness::{Backend, PATIENCE, TestServer, run_with_owned_env};

/// Our server's client at the provider.
pub const CLIENT_ID: &str = "compliance";
pub const CLIENT_SECRET: &str = "compliance-client-secret-for-tests";
/// A second client registered with the same callback: its codes are for another audience.
pub const OTHER_CLIENT_ID: &str = "another-app";
const OTHER_CLIENT_SECRET: &str = "another-app-secret-for-tests";

/// Runs `test` on `backend` against a server configured for a fresh provider, with `env` besides.
pub async fn run<F, Fut>(backend: Backend, env: &[(&str, &str)], test: F)
where
    F: FnOnce(Arc<TestServer>, OidcProvider) -> Fut + Send + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    let provider = StartingProvider::spawn().await;
    let mut server_env = vec![
        ("OIDC_ISSUER_URL".to_owned(), provider.issuer.clone()),
        ("OIDC_CLIENT_ID".to_owned(), CLIENT_ID.to_owned()),
        ("OIDC_CLIENT_SECRET".to_owned(), CLIENT_SECRET.to_owned()),
    ];
    server_env.extend(env.iter().map(|(name, value)| ((*name).to_owned(), (*value).to_owned())));
    run_with_owned_env(backend, server_env, move |server| async move {
        // the server discovers the provider at the first sign-in, so the provider may learn the
        // server's callback now
        let provider = provider.register_clients(&format!("{}/auth/callback", server.base_url())).await;
        test(server, provider).await;
    })
    .await;
}

/// The running provider; stopped when dropped.
pub struct OidcProvider {
    pub issuer: String,
    _child: Child,
}

/// The provider listening at its issuer, its clients not yet registered (it answers 503).
struct StartingProvider {
    issuer: String,
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
}

fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/oidc")
}

impl StartingProvider {
    /// Starts `node provider.mjs` on a port it picks and waits for its issuer.
    async fn spawn() -> Self {
        let dir = fixture_dir();
        assert!(
            dir.join("node_modules/oidc-provider").is_dir(),
            "the OpenID provider fixture is not installed: run `npm ci` in tests/oidc (cargo xtask ci does)"
        );
        let mut child = Command::new("node")
            .arg("provider.mjs")
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start node tests/oidc/provider.mjs (is Node.js installed?)");
        let mut lines = BufReader::new(child.stdout.take().expect("provider stdout")).lines();
        let issuer = next_line(&mut lines).await.strip_prefix("listening ").map(str::to_owned);
        let issuer = issuer.unwrap_or_else(|| panic!("the OpenID provider did not say where it listens"));
        Self { issuer, child, lines }
    }

    /// Registers our server's client and another one, both sending the browser back to `callback`.
    async fn register_clients(mut self, callback: &str) -> OidcProvider {
        let clients = serde_json::json!({"clients": [
            {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET, "redirect_uris": [callback]},
            {"client_id": OTHER_CLIENT_ID, "client_secret": OTHER_CLIENT_SECRET, "redirect_uris": [callback]},
        ]});
        let mut stdin = self.child.stdin.take().expect("provider stdin");
        stdin.write_all(format!("{clients}\n").as_bytes()).await.expect("write the provider's clients");
        let ready = next_line(&mut self.lines).await;
        assert_eq!(ready, "ready", "the OpenID provider did not take its clients");
        // keep reading: a closed pipe would end the provider at its next line of output
        let mut lines = self.lines;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        OidcProvider { issuer: self.issuer, _child: self.child }
    }
}

/// The provider's next line on stdout, within [`PATIENCE`].
async fn next_line(lines: &mut Lines<BufReader<ChildStdout>>) -> String {
    match tokio::time::timeout(PATIENCE, lines.next_line()).await {
        Ok(Ok(Some(line))) => line,
        other => panic!("the OpenID provider did not start: {other:?}"),
    }
}

/// A browser: keeps cookies (ours and the provider's) and follows no redirect by itself.
pub struct Browser {
    pub http: reqwest::Client,
    base_url: String,
}

/// Where a sign-in stopped: the provider's redirect to our callback, not yet followed.
pub struct CallbackUrl(pub String);

impl Browser {
    pub fn new(server: &TestServer) -> Self {
        let http = reqwest::Client::builder()
            .cookie_store(true)
            .redirect(Policy::none())
            .timeout(Duration::from_secs(30))
            .build()
            .expect("browser client");
        Self { http, base_url: server.base_url().to_owned() }
    }

    /// `GET /auth/login?redirect=…`: the provider's authorization URL it redirects to.
    pub async fn start(&self, redirect: &str) -> String {
        let response = self.get(&format!("{}/auth/login?redirect={}", self.base_url, encode(redirect))).await;
        assert_eq!(response.status(), StatusCode::FOUND, "{}", response.text().await.unwrap_or_default());
        location(&response)
    }

    /// Logs `login` in at the provider from `authorization_url` and consents: our callback URL.
    pub async fn authorize(&self, authorization_url: &str, login: &str) -> CallbackUrl {
        let mut url = authorization_url.to_owned();
        for _ in 0..20 {
            if url.starts_with(&format!("{}/auth/callback", self.base_url)) {
                return CallbackUrl(url);
            }
            let response = self.get(&url).await;
            url = match response.status() {
                status if status.is_redirection() => absolute(&url, &location(&response)),
                StatusCode::OK => self.submit_interaction(&url, &response.text().await.expect("page"), login).await,
                status => {
                    panic!("the provider answered {status} at {url}: {}", response.text().await.unwrap_or_default())
                }
            };
        }
        panic!("the provider never sent the browser back to the callback");
    }

    /// Posts the provider's login form (with `login`) or consent form: where it redirects.
    async fn submit_interaction(&self, page_url: &str, html: &str, login: &str) -> String {
        let action = html
            .split("action=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap_or_else(|| panic!("no form on the provider's page {page_url}: {html}"));
        // the package's forms: a hidden `prompt`, and on the login page `login` and `password`
        let form: Vec<(&str, &str)> = if html.contains("name=\"login\"") {
            vec![("prompt", "login"), ("login", login), ("password", "any")]
        } else {
            vec![("prompt", "consent")]
        };
        let response = self.http.post(absolute(page_url, action)).form(&form).send().await.expect("post the form");
        assert!(response.status().is_redirection(), "the form answered {}", response.status());
        absolute(page_url, &location(&response))
    }

    /// Follows the callback: our answer.
    pub async fn finish(&self, callback: &CallbackUrl) -> reqwest::Response {
        self.get(&callback.0).await
    }

    /// The whole sign-in of `login`, returning to `/`: the session token our callback set.
    pub async fn sign_in(&self, login: &str) -> String {
        let authorization = self.start("/").await;
        let callback = self.authorize(&authorization, login).await;
        let response = self.finish(&callback).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER, "{}", response.text().await.unwrap_or_default());
        session_cookie(&response).expect("the callback sets session_token")
    }

    pub async fn get(&self, url: &str) -> reqwest::Response {
        self.http.get(url).send().await.unwrap_or_else(|e| panic!("GET {url}: {e}"))
    }
}

/// The `session_token` a response sets.
pub fn session_cookie(response: &reqwest::Response) -> Option<String> {
    response.cookies().find(|c| c.name() == "session_token" && !c.value().is_empty()).map(|c| c.value().to_owned())
}

pub fn location(response: &reqwest::Response) -> String {
    let value = response.headers().get(LOCATION).unwrap_or_else(|| panic!("no Location in {response:?}"));
    value.to_str().expect("Location is text").to_owned()
}

fn absolute(base: &str, location: &str) -> String {
    url::Url::parse(base).and_then(|b| b.join(location)).expect("a URL").to_string()
}

pub fn encode(text: &str) -> String {
    url::form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// `url` with its query parameter `name` set to `value`.
pub fn with_param(url: &str, name: &str, value: &str) -> String {
    let mut parsed = url::Url::parse(url).expect("a URL");
    let pairs: Vec<(String, String)> =
        parsed.query_pairs().filter(|(key, _)| key != name).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
    parsed.query_pairs_mut().clear().extend_pairs(pairs).append_pair(name, value);
    parsed.to_string()
}

/// The query parameter `name` of `url`.
pub fn param(url: &str, name: &str) -> Option<String> {
    url::Url::parse(url).ok()?.query_pairs().find(|(key, _)| key == name).map(|(_, v)| v.into_owned())
}
