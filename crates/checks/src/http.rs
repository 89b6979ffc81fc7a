//! What every provider's checks share: one HTTP client (no redirects, bounded time), answers read
//! to a bounded size, throttled requests retried with backoff within a run's budget, the `Link`
//! header's next page kept on the provider's own origin, and a refused request cut to a
//! [`ReadFailure`] (code, the start of the message, the action).

use std::time::Duration;

use compliance_credentials::RequestAuth;
use compliance_domain::check_result::ReadFailure;
use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use secrecy::ExposeSecret;

/// Tunables of the checks' HTTP client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckHttpSettings {
    /// Connecting to a provider.
    pub connect_timeout: Duration,
    /// One request, from connecting to the last body byte.
    pub request_timeout: Duration,
    /// The largest answer read; a larger one is an error (`too_large`).
    pub max_body_bytes: usize,
    /// Attempts of a throttled (429, GitHub's rate-limit 403) or unavailable (5xx) request.
    pub attempts: u32,
    /// The first wait before a retry; it doubles, and a provider's `Retry-After` wins when longer.
    pub first_backoff: Duration,
    /// The longest wait a retry may take; a `Retry-After` beyond it is not waited for.
    pub max_backoff: Duration,
}

impl Default for CheckHttpSettings {
    fn default() -> Self {
        Self {
            connect_timeout: Duration::from_secs(5),
            request_timeout: Duration::from_secs(30),
            max_body_bytes: 16 * 1024 * 1024,
            attempts: 4,
            first_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
        }
    }
}

/// The client could not be built.
#[derive(Debug, thiserror::Error)]
#[error("the checks' HTTP client could not be built")]
pub struct HttpClientError(#[source] reqwest::Error);

/// A provider's successful answer.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
    /// The `Link` header's `rel="next"` page, when it is on the same origin as the request.
    pub(crate) next: Option<String>,
}

impl Answer {
    /// The body as JSON of type `T`, or a failure naming `action`.
    pub(crate) fn json<T: serde::de::DeserializeOwned>(&self, action: &str) -> Result<T, ReadFailure> {
        serde_json::from_slice(&self.body).map_err(|error| {
            ReadFailure::new("unreadable_answer", &format!("the answer was not the JSON expected: {error}"), action)
        })
    }
}

/// The shared client and its settings.
#[derive(Debug, Clone)]
pub(crate) struct CheckHttp {
    client: reqwest::Client,
    settings: CheckHttpSettings,
}

impl CheckHttp {
    pub(crate) fn new(settings: CheckHttpSettings) -> Result<Self, HttpClientError> {
        // Redirects are never followed: one would carry the credentials to a host nobody named.
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.request_timeout)
            .user_agent(concat!(env!("CARGO_PKG_NAME"), "/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| HttpClientError(e.without_url()))?;
        Ok(Self { client, settings })
    }

    /// The client itself, for requests signed otherwise (AWS).
    pub(crate) fn client(&self) -> &reqwest::Client {
        &self.client
    }

    /// The settings, for retries of requests sent otherwise.
    pub(crate) fn settings(&self) -> &CheckHttpSettings {
        &self.settings
    }

    /// `GET url` with `auth` (a bearer token; other strategies send nothing) and `extra` headers,
    /// retried while throttled or unavailable. A non-2xx answer is a [`ReadFailure`] naming `action`
    /// with the provider's code (`read_code` reads it from the body) and message.
    pub(crate) async fn get(
        &self,
        url: &str,
        auth: &RequestAuth,
        extra: &HeaderMap,
        action: &str,
    ) -> Result<Answer, ReadFailure> {
        self.get_accepting(url, auth, extra, action, &[]).await
    }

    /// [`CheckHttp::get`], where the statuses of `accepted` are answers too (a 404 that means "not
    /// set up", not "refused"); the caller reads [`Answer::status`].
    pub(crate) async fn get_accepting(
        &self,
        url: &str,
        auth: &RequestAuth,
        extra: &HeaderMap,
        action: &str,
        accepted: &[StatusCode],
    ) -> Result<Answer, ReadFailure> {
        let mut backoff = self.settings.first_backoff;
        let mut attempt = 1;
        loop {
            let mut request = self.client.request(Method::GET, url).headers(extra.clone());
            if let RequestAuth::Bearer(token) = auth {
                let mut value = HeaderValue::from_str(&format!("Bearer {}", token.expose_secret())).map_err(|_| {
                    ReadFailure::new("invalid_credentials", "the token cannot be sent in a header", action)
                })?;
                value.set_sensitive(true);
                request = request.header(AUTHORIZATION, value);
            }
            let response = request.send().await.map_err(|error| transport_failure(&error, action))?;
            let status = response.status();
            let headers = response.headers().clone();
            if status.is_redirection() {
                return Err(ReadFailure::new(
                    status.as_str(),
                    "the provider answered with a redirect, which is not followed",
                    action,
                ));
            }
            let body = read_limited(response, self.settings.max_body_bytes, action).await?;
            if status.is_success() || accepted.contains(&status) {
                let next = next_link(&headers, url);
                return Ok(Answer { status: status.as_u16(), body, next });
            }
            let retry = throttled(status, &headers) || status.is_server_error();
            if retry && attempt < self.settings.attempts {
                let wait = retry_after(&headers).map_or(backoff, |after| after.max(backoff));
                if wait <= self.settings.max_backoff {
                    tokio::time::sleep(wait).await;
                    backoff = (backoff * 2).min(self.settings.max_backoff);
                    attempt += 1;
                    continue;
                }
            }
            return Err(provider_failure(status, &body, action));
        }
    }
}

/// A rate limit: 429, or GitHub's 403 with no requests remaining or a `Retry-After`.
fn throttled(status: StatusCode, headers: &HeaderMap) -> bool {
    status == StatusCode::TOO_MANY_REQUESTS
        || (status == StatusCode::FORBIDDEN
            && (headers.get("x-ratelimit-remaining").is_some_and(|v| v.as_bytes() == b"0")
                || headers.contains_key(RETRY_AFTER)))
}

/// `Retry-After` in seconds (the HTTP-date form is not waited on).
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds: u64 = headers.get(RETRY_AFTER)?.to_str().ok()?.trim().parse().ok()?;
    Some(Duration::from_secs(seconds))
}

async fn read_limited(mut response: reqwest::Response, max: usize, action: &str) -> Result<Vec<u8>, ReadFailure> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(|error| transport_failure(&error, action))? {
        if body.len() + chunk.len() > max {
            return Err(ReadFailure::new("too_large", &format!("the answer is larger than {max} bytes"), action));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The transport's error, without the URL (a query may hold a key).
fn transport_failure(error: &reqwest::Error, action: &str) -> ReadFailure {
    let (code, message) = if error.is_timeout() {
        ("timeout", "the provider did not answer in time")
    } else if error.is_connect() {
        ("unreachable", "the provider could not be reached")
    } else {
        ("request_failed", "the request failed")
    };
    ReadFailure::new(code, message, action)
}

/// A provider's refusal: its code and message from the body when it has the usual JSON shapes
/// (GitHub's `{message}`, Google's `{error: {status, message}}`), else the HTTP status alone.
pub(crate) fn provider_failure(status: StatusCode, body: &[u8], action: &str) -> ReadFailure {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    let error = parsed.as_ref().and_then(|v| v.get("error"));
    let code = error
        .and_then(|e| e.get("status").and_then(|s| s.as_str()))
        .map_or_else(|| status.as_u16().to_string(), str::to_owned);
    let message = error
        .and_then(|e| e.get("message"))
        .or_else(|| parsed.as_ref().and_then(|v| v.get("message")))
        .and_then(|m| m.as_str())
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("the provider refused the request"));
    ReadFailure::new(code, message, action)
}

/// The `rel="next"` URL of a `Link` header (RFC 8288), kept only on `current`'s origin.
fn next_link(headers: &HeaderMap, current: &str) -> Option<String> {
    let current = url::Url::parse(current).ok()?;
    headers.get_all(reqwest::header::LINK).iter().filter_map(|v| v.to_str().ok()).find_map(|value| {
        value.split(',').find_map(|part| {
            let (target, params) = part.split_once(';')?;
            let target = target.trim().strip_prefix('<')?.strip_suffix('>')?;
            let is_next = params.split(';').any(|p| {
                let p = p.trim().replace(' ', "");
                p == "rel=\"next\"" || p == "rel=next"
            });
            let next = current.join(target).ok()?;
            (is_next && next.origin() == current.origin()).then(|| next.to_string())
        })
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "a test fails loudly")]

    use super::*;

    fn link(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(reqwest::header::LINK, HeaderValue::from_str(value).unwrap());
        headers
    }

    #[test]
    fn the_next_page_is_read_from_the_link_header_on_the_same_origin_only() {
        let here = "https://api.github.com/orgs/acme/repos?per_page=100";
        let both = link(
            "<https://api.github.com/orgs/acme/repos?per_page=100&page=2>; rel=\"next\", \
             <https://api.github.com/orgs/acme/repos?per_page=100&page=5>; rel=\"last\"",
        );
        assert_eq!(next_link(&both, here).unwrap(), "https://api.github.com/orgs/acme/repos?per_page=100&page=2");
        let last_only = link("<https://api.github.com/orgs/acme/repos?page=1>; rel=\"prev\"");
        assert_eq!(next_link(&last_only, here), None);
        let elsewhere = link("<https://evil.example/steal?page=2>; rel=\"next\"");
        assert_eq!(next_link(&elsewhere, here), None);
    }

    #[test]
    fn a_refusal_keeps_the_providers_code_and_message_only() {
        let google = br#"{"error":{"code":403,"status":"PERMISSION_DENIED","message":"Not Authorized\nto access"}}"#;
        let failure = provider_failure(StatusCode::FORBIDDEN, google, "GET /admin/directory/v1/users");
        assert_eq!(failure.code, "PERMISSION_DENIED");
        assert_eq!(failure.message, "Not Authorized to access");
        let github =
            br#"{"message":"Must have admin rights to Repository.","documentation_url":"https://docs.github.com"}"#;
        let failure = provider_failure(StatusCode::FORBIDDEN, github, "GET /repos/{owner}/{repo}/vulnerability-alerts");
        assert_eq!((failure.code.as_str(), failure.message.as_str()), ("403", "Must have admin rights to Repository."));
        let html = b"<html>Bad gateway token=abc</html>";
        assert_eq!(provider_failure(StatusCode::BAD_GATEWAY, html, "x").message, "Bad Gateway");
    }
}
