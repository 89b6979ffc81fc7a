//! Sending a request: the base URL, authentication headers, retries, and decoding the answer.

use std::time::{Duration, SystemTime};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::from_answer;
use crate::retry::parse_retry_after;
use crate::{Client, Error, RawResponse};

/// One operation's request, as the generated methods describe it.
pub(crate) struct Request {
    pub method: Method,
    /// The path with its parameters already encoded.
    pub path: String,
    pub query: Vec<(&'static str, String)>,
    pub body: Body,
}

/// A request body, encoded once so that a retry sends the same bytes.
pub(crate) enum Body {
    None,
    Json(Vec<u8>),
    Form(String),
}

impl Body {
    pub fn json<T: Serialize>(value: &T) -> Result<Self, Error> {
        serde_json::to_vec(value).map(Self::Json).map_err(|error| Error::Encode(error.to_string()))
    }

    pub fn form<T: Serialize>(value: &T) -> Result<Self, Error> {
        serde_urlencoded::to_string(value).map(Self::Form).map_err(|error| Error::Encode(error.to_string()))
    }
}

/// Characters a path segment keeps as they are (RFC 3986 unreserved).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'.').remove(b'_').remove(b'~');

/// A path parameter, percent-encoded so that it stays one segment.
pub(crate) fn segment(value: impl std::fmt::Display) -> String {
    utf8_percent_encode(&value.to_string(), SEGMENT).to_string()
}

/// A query value as the API reads it: strings and enumerations as their text, numbers and
/// booleans as JSON writes them.
pub(crate) fn query_value<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(text)) => text,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A successful answer, its body read.
struct Answer {
    status: StatusCode,
    headers: HeaderMap,
    body: Vec<u8>,
}

impl Answer {
    fn request_id(&self) -> Option<String> {
        request_id(&self.headers)
    }
}

fn request_id(headers: &HeaderMap) -> Option<String> {
    headers.get("x-request-id").and_then(|value| value.to_str().ok()).map(str::to_owned)
}

impl Client {
    /// Sends `request` and decodes a JSON answer.
    pub(crate) async fn json<T: DeserializeOwned>(&self, request: Request) -> Result<T, Error> {
        let answer = self.send(request, false).await?;
        serde_json::from_slice(&answer.body).map_err(|source| Error::Decode {
            status: answer.status.as_u16(),
            request_id: answer.request_id(),
            source,
        })
    }

    /// Sends `request`, whose answer has no body.
    pub(crate) async fn empty(&self, request: Request) -> Result<(), Error> {
        self.send(request, false).await.map(drop)
    }

    /// Sends `request` and returns the answer as it is (CSV, HTML, images, redirects).
    pub(crate) async fn raw(&self, request: Request) -> Result<RawResponse, Error> {
        let answer = self.send(request, true).await?;
        Ok(RawResponse { status: answer.status.as_u16(), headers: answer.headers, body: answer.body })
    }

    /// Sends `request`, again while the policy allows, and reads the answer. `redirects_succeed`:
    /// a 3xx is the answer (the operations that redirect a browser), not an error.
    async fn send(&self, request: Request, redirects_succeed: bool) -> Result<Answer, Error> {
        let url = self.url(&request.path)?;
        let mut attempt = 1;
        loop {
            let mut builder = self.http.request(request.method.clone(), url.clone()).headers(self.headers.clone());
            if !request.query.is_empty() {
                builder = builder.query(&request.query);
            }
            builder = match &request.body {
                Body::None => builder,
                Body::Json(bytes) => builder.header(CONTENT_TYPE, "application/json").body(bytes.clone()),
                Body::Form(text) => {
                    builder.header(CONTENT_TYPE, "application/x-www-form-urlencoded").body(text.clone())
                }
            };
            let response = builder.send().await?;
            let status = response.status();
            let headers = response.headers().clone();
            let body = response.bytes().await?.to_vec();
            if status.is_success() || (redirects_succeed && status.is_redirection()) {
                return Ok(Answer { status, headers, body });
            }
            let retry_after = headers
                .get(RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| parse_retry_after(value, SystemTime::now()));
            match self.retry.wait(&request.method, status, retry_after, attempt) {
                Some(wait) => {
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                None => {
                    let problem_json = headers
                        .get(CONTENT_TYPE)
                        .and_then(|value| value.to_str().ok())
                        .is_some_and(|value| value.starts_with("application/problem+json"));
                    return Err(from_answer(status, problem_json, request_id(&headers), retry_after, &body));
                }
            }
        }
    }

    fn url(&self, path: &str) -> Result<reqwest::Url, Error> {
        let joined = format!("{}{path}", self.base_url.as_str().trim_end_matches('/'));
        reqwest::Url::parse(&joined).map_err(|error| Error::Config(format!("cannot build a URL for {path}: {error}")))
    }
}

/// How long [`Client`] waits for a connection and for a whole answer by default.
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
pub(crate) const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
