//! What a call can fail with: a problem the API answered, or a transport or decoding failure.

use std::time::Duration;

use serde::Deserialize;

use crate::types::FieldError;

/// A failed call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API answered with an error status (4xx/5xx), usually an RFC 9457 problem.
    #[error("{0}")]
    Api(Box<ApiError>),
    /// The request could not be sent or its answer not read (connection, TLS, timeout).
    #[error("transport: {0}")]
    Transport(#[from] reqwest::Error),
    /// A successful answer whose body is not the documented type.
    #[error("the {status} answer to request {request_id:?} is not the documented type: {source}")]
    Decode {
        /// The answer's HTTP status.
        status: u16,
        /// The answer's `X-Request-Id`, to find the server's log lines.
        request_id: Option<String>,
        /// Where and why decoding failed.
        source: serde_json::Error,
    },
    /// A request body that could not be encoded.
    #[error("the request body cannot be encoded: {0}")]
    Encode(String),
    /// A base URL or credential that cannot be used (e.g. a key with a line break).
    #[error("invalid client configuration: {0}")]
    Config(String),
}

impl Error {
    /// The API's problem, when the API answered with one.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Self::Api(problem) => Some(problem),
            _ => None,
        }
    }

    /// The HTTP status the API answered with, when it answered with an error.
    pub fn status(&self) -> Option<u16> {
        self.api().map(|problem| problem.status)
    }
}

/// An error answer: the members of the API's `application/problem+json` body (docs/api.md,
/// "Errors"). An error answer that is not a problem (e.g. a proxy's HTML page) becomes one with
/// type `about:blank`, the status's reason as title and the body's start as detail.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiError {
    /// The HTTP status.
    pub status: u16,
    /// `/problems/{kind}`, e.g. `/problems/validation`.
    #[serde(rename = "type")]
    pub problem_type: String,
    /// A short summary of the kind of problem.
    pub title: String,
    /// What went wrong with this request.
    #[serde(default)]
    pub detail: String,
    /// The invalid fields of a validation problem, named as they are on the wire.
    #[serde(default)]
    pub errors: Vec<FieldError>,
    /// The request's `X-Request-Id`, to find its log lines.
    #[serde(default)]
    pub request_id: Option<String>,
    /// The answer's `Retry-After` (429 and 503), as a wait from when it was received.
    #[serde(skip)]
    pub retry_after: Option<Duration>,
}

impl ApiError {
    /// The problem kind, `validation` for `/problems/validation`.
    pub fn kind(&self) -> &str {
        self.problem_type.rsplit('/').next().unwrap_or(&self.problem_type)
    }

    /// The message of the invalid field `field`, when the problem names it.
    pub fn field_error(&self, field: &str) -> Option<&str> {
        self.errors.iter().find(|error| error.field == field).map(|error| error.message.as_str())
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "{} {}: {}", self.status, self.problem_type, self.detail)?;
        for error in &self.errors {
            write!(formatter, "; {}: {}", error.field, error.message)?;
        }
        if let Some(id) = &self.request_id {
            write!(formatter, " (request {id})")?;
        }
        Ok(())
    }
}

impl std::error::Error for ApiError {}

/// The bytes of a non-problem error body shown as its detail.
const DETAIL_LIMIT: usize = 300;

/// The error an answer with an error status stands for.
pub(crate) fn from_answer(
    status: reqwest::StatusCode,
    problem_json: bool,
    request_id: Option<String>,
    retry_after: Option<Duration>,
    body: &[u8],
) -> Error {
    let parsed = if problem_json { serde_json::from_slice::<ApiError>(body).ok() } else { None };
    let mut problem = parsed.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let detail = text.chars().take(DETAIL_LIMIT).collect::<String>();
        ApiError {
            status: status.as_u16(),
            problem_type: "about:blank".to_owned(),
            title: status.canonical_reason().unwrap_or("Error").to_owned(),
            detail,
            errors: Vec::new(),
            request_id: None,
            retry_after: None,
        }
    });
    problem.status = status.as_u16();
    problem.request_id = problem.request_id.or(request_id);
    problem.retry_after = retry_after;
    Error::Api(Box::new(problem))
}
