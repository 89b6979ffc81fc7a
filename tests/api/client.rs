//! An HTTP client that sends one kind of credentials, and the responses it reads back.

use reqwest::Method;
use reqwest::header::{CONTENT_DISPOSITION, CONTENT_TYPE, HeaderName, RETRY_AFTER};
use serde_json::Value;

use crate::harness::TestServer;

/// The credentials a [`Client`] sends.
#[derive(Debug, Clone)]
pub enum Auth {
    Anonymous,
    /// `X-API-Key: cpk_…`
    ApiKey(String),
    /// `Cookie: session_token=cps_…`
    Session(String),
    /// Both an API key and a session cookie.
    Both {
        key: String,
        token: String,
    },
}

#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base_url: String,
    auth: Auth,
    org: Option<String>,
    /// Headers sent with every request besides the credentials (e.g. `Idempotency-Key`).
    headers: Vec<(String, String)>,
}

impl Client {
    pub fn new(http: reqwest::Client, base_url: &str, auth: Auth, org: Option<&str>) -> Self {
        Self { http, base_url: base_url.to_owned(), auth, org: org.map(str::to_owned), headers: Vec::new() }
    }

    /// The same client, sending `name: value` with every request too.
    pub fn with_header(&self, name: &str, value: &str) -> Self {
        let mut client = self.clone();
        client.headers.push((name.to_owned(), value.to_owned()));
        client
    }

    /// The API key this client sends, if it sends one.
    pub fn api_key(&self) -> Option<&str> {
        match &self.auth {
            Auth::ApiKey(key) | Auth::Both { key, .. } => Some(key),
            Auth::Anonymous | Auth::Session(_) => None,
        }
    }

    /// The same credentials with another `X-Organization-Id` (or none).
    pub fn with_org(&self, org: Option<&str>) -> Self {
        Self { org: org.map(str::to_owned), ..self.clone() }
    }

    pub async fn get(&self, path: &str) -> Response {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Response {
        self.send(Method::POST, path, Some(("application/json", body.to_string()))).await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Response {
        self.send(Method::PATCH, path, Some(("application/json", body.to_string()))).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Response {
        self.send(Method::PUT, path, Some(("application/json", body.to_string()))).await
    }

    /// `GET` of an absolute URL (such as a signed download URL), with this client's credentials.
    pub async fn get_url(&self, url: &str) -> Response {
        Response::read(format!("GET {url}"), self.with_credentials(self.http.get(url))).await
    }

    pub async fn delete(&self, path: &str) -> Response {
        self.send(Method::DELETE, path, None).await
    }

    /// `GET path` answered as it arrives: the body is the caller's to read, chunk by chunk.
    pub async fn get_streamed(&self, path: &str) -> reqwest::Response {
        self.request(Method::GET, path).send().await.unwrap_or_else(|err| panic!("GET {path}: {err}"))
    }

    /// `method path` with extra `headers` (such as `If-Match`) and an optional JSON body.
    pub async fn send_with(
        &self,
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> Response {
        let what = format!("{method} {path}");
        let mut request = self.request(method, path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.header(CONTENT_TYPE, "application/json").body(body.to_string());
        }
        Response::read(what, request).await
    }

    /// A request with a literal body and an optional `Content-Type`.
    pub async fn raw(&self, method: Method, path: &str, content_type: Option<&str>, body: &str) -> Response {
        let what = format!("{method} {path}");
        let mut request = self.request(method, path).body(body.to_owned());
        if let Some(content_type) = content_type {
            request = request.header(CONTENT_TYPE, content_type);
        }
        Response::read(what, request).await
    }

    async fn send(&self, method: Method, path: &str, body: Option<(&str, String)>) -> Response {
        let what = format!("{method} {path}");
        let mut request = self.request(method, path);
        if let Some((content_type, body)) = body {
            request = request.header(CONTENT_TYPE, content_type).body(body);
        }
        Response::read(what, request).await
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.with_credentials(self.http.request(method, format!("{}{path}", self.base_url)))
    }

    fn with_credentials(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let request = self.headers.iter().fold(request, |request, (name, value)| request.header(name, value));
        let request = match &self.auth {
            Auth::Anonymous => request,
            Auth::ApiKey(key) => request.header("X-API-Key", key),
            Auth::Session(token) => request.header("Cookie", format!("session_token={token}")),
            Auth::Both { key, token } => {
                request.header("X-API-Key", key).header("Cookie", format!("session_token={token}"))
            }
        };
        match &self.org {
            Some(org) => request.header("X-Organization-Id", org),
            None => request,
        }
    }
}

/// What the server answered: status, media type and the body as JSON (`Null` when empty,
/// a JSON string holding the text when it is not JSON).
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: String,
    /// The `Retry-After` header, if any.
    pub retry_after: Option<String>,
    /// The `Content-Disposition` header, if any.
    pub content_disposition: Option<String>,
    /// Every header.
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
    /// The body as received.
    pub bytes: Vec<u8>,
    what: String,
}

impl Response {
    /// The request this answers, as `METHOD PATH` (or `METHOD URL` for [`Client::get_url`]).
    pub fn request(&self) -> &str {
        &self.what
    }

    async fn read(what: String, request: reqwest::RequestBuilder) -> Self {
        let response = request.send().await.unwrap_or_else(|err| panic!("{what}: {err}"));
        let status = response.status().as_u16();
        let content_type =
            response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
        let header = |name: HeaderName| response.headers().get(name).and_then(|v| v.to_str().ok());
        let retry_after = header(RETRY_AFTER).map(str::to_owned);
        let content_disposition = header(CONTENT_DISPOSITION).map(str::to_owned);
        let headers = response.headers().clone();
        let bytes = response.bytes().await.unwrap_or_else(|err| panic!("{what}: reading the body: {err}")).to_vec();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let body =
            if text.is_empty() { Value::Null } else { serde_json::from_str(&text).unwrap_or(Value::String(text)) };
        crate::declared::assert_declared(&what, status, &body);
        Self { status, content_type, retry_after, content_disposition, headers, body, bytes, what }
    }

    /// The header `name` as text, if present.
    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    }

    /// Asserts a JSON answer with `status` and returns its body.
    #[track_caller]
    pub fn ok(self, status: u16) -> Value {
        assert_eq!(self.status, status, "{}: expected {status}, got {}: {}", self.what, self.status, self.body);
        assert!(
            self.content_type.starts_with("application/json"),
            "{}: Content-Type is {:?}, expected application/json",
            self.what,
            self.content_type
        );
        self.body
    }

    /// Asserts an RFC 9457 problem with `status` and the `type` docs/api.md gives for it; returns it.
    #[track_caller]
    pub fn problem(self, status: u16) -> Value {
        let what = &self.what;
        let body = &self.body;
        assert_eq!(self.status, status, "{what}: expected {status}, got {}: {body}", self.status);
        assert!(
            self.content_type.starts_with("application/problem+json"),
            "{what}: Content-Type is {:?}, expected application/problem+json ({body})",
            self.content_type
        );
        assert_eq!(body["type"], problem_type(status), "{what}: problem type in {body}");
        assert_eq!(body["status"], status, "{what}: problem status in {body}");
        assert!(body["title"].is_string(), "{what}: problem title in {body}");
        assert!(body["detail"].is_string(), "{what}: problem detail in {body}");
        self.body
    }

    /// Asserts a 400 validation problem whose `errors` name `field` (or a path inside it).
    #[track_caller]
    pub fn invalid(self, field: &str) -> Value {
        let what = self.what.clone();
        let body = self.problem(400);
        let errors = body["errors"].as_array().cloned().unwrap_or_default();
        let named = errors.iter().any(|e| {
            let name = e["field"].as_str().unwrap_or_default();
            e["message"].is_string()
                && (name == field || name.strip_prefix(field).is_some_and(|rest| rest.starts_with(['.', '[', '/'])))
        });
        assert!(named, "{what}: expected errors[] naming `{field}`, got {body}");
        body
    }
}

fn problem_type(status: u16) -> &'static str {
    match status {
        400 => "/problems/validation",
        401 => "/problems/unauthenticated",
        403 => "/problems/forbidden",
        404 => "/problems/not-found",
        405 => "/problems/method-not-allowed",
        409 => "/problems/conflict",
        413 => "/problems/payload-too-large",
        410 => "/problems/gone",
        415 => "/problems/unsupported-media-type",
        503 => "/problems/unavailable",
        _ => "(no problem type is documented for this status)",
    }
}

/// `GET {base}{path}` with `headers` and nothing else (no credentials of a [`Client`]), answered as is.
pub async fn get_with(base: &str, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    send_get(reqwest::Client::new(), base, path, headers).await
}

/// [`get_with`] from the local address `from`: any address of 127.0.0.0/8 reaches a server on
/// 127.0.0.1, which sees another client address.
pub async fn get_from(from: std::net::IpAddr, base: &str, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let http = reqwest::Client::builder().local_address(from).build().expect("reqwest client");
    send_get(http, base, path, headers).await
}

async fn send_get(http: reqwest::Client, base: &str, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = http.get(format!("{base}{path}"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.unwrap_or_else(|err| panic!("GET {path}: {err}"))
}

/// [`get_with`] on `server`.
pub async fn get(server: &TestServer, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    get_with(server.base_url(), path, headers).await
}

/// A fresh API key of the organization `org_id`, made for its member `user_id`.
pub async fn api_key(server: &TestServer, org_id: &str, user_id: &str) -> String {
    let key = server.admin().create_api_key(org_id, user_id).await;
    key["key"].as_str().unwrap().to_owned()
}

/// A fresh API key of a fresh organization.
pub async fn fresh_api_key(server: &TestServer) -> String {
    let tenant = server.tenant().await;
    api_key(server, &tenant.org_id, &tenant.owner.id).await
}
