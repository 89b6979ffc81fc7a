//! RFC 9457 problem details for every error the API returns.

use std::num::NonZeroU32;

use actix_web::http::StatusCode;
use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpResponse, ResponseError};
use compliance_app::AppError;
use compliance_domain::{FieldError, ValidationErrors};
use serde::Serialize;
use utoipa::ToSchema;

/// Seconds a client should wait before retrying after a 503.
const RETRY_AFTER_SECONDS: NonZeroU32 = NonZeroU32::MIN;

/// An error as the API answers it.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    kind: &'static str,
    title: &'static str,
    detail: String,
    errors: Vec<FieldError>,
    /// The members some 412 problems add (boxed: most errors have none).
    members: Option<Box<Members>>,
    /// Seconds after which a retry may succeed, sent as `Retry-After`.
    /// (4 bytes, which fit beside `status`: a larger error would make every `Result` larger.)
    retry_after: Option<NonZeroU32>,
    /// The failing operations of an atomic bulk request, each by its index (boxed: most errors
    /// have none).
    operations: Option<Box<[(usize, ApiError)]>>,
}

/// What a 412 problem adds to the standard members.
#[derive(Debug)]
enum Members {
    /// What an administrator must set up first.
    Setup(Setup),
    /// An `If-Match` that no longer holds: the record's current tag, also sent as `ETag`.
    Precondition { current_etag: Option<String> },
}

#[derive(Debug)]
struct Setup {
    instructions: Option<String>,
    create_app_url: Option<String>,
}

/// RFC 9457 problem details, as `error.rs` writes them; some problems add members (e.g. `setupInstructions`).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Problem<'a> {
    /// `/problems/{kind}`, e.g. `/problems/validation`.
    #[serde(rename = "type")]
    kind: String,
    title: &'a str,
    status: u16,
    detail: &'a str,
    /// The invalid fields of a validation problem.
    #[serde(skip_serializing_if = "<[FieldError]>::is_empty")]
    #[schema(value_type = Vec<FieldError>, required = false)]
    errors: &'a [FieldError],
    /// The request's `X-Request-Id`, to find its log lines.
    // `None` when an error is answered: the middleware, which knows the request, adds it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    request_id: Option<&'a str>,
}

/// The 400 problem of an atomic bulk request that wrote nothing: each failing operation with its
/// index in the request and the problem the single write would have answered.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct BulkFailed<'a> {
    #[serde(flatten)]
    problem: Problem<'a>,
    /// The failing operations, in the request's order. Absent when the request as a whole is
    /// invalid (no operations, more than 500, a malformed one): then the 400 is a plain problem.
    #[schema(required = false)]
    operations: Vec<OperationProblem<'a>>,
}

/// One failing operation of a bulk request: its index and its problem.
#[derive(Serialize, ToSchema)]
pub(crate) struct OperationProblem<'a> {
    /// The operation's index in `operations` (from 0).
    pub(crate) index: usize,
    #[serde(flatten)]
    pub(crate) problem: Problem<'a>,
}

/// A 412 problem of a write whose `If-Match` no longer holds: nothing was changed.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PreconditionFailed<'a> {
    #[serde(flatten)]
    problem: Problem<'a>,
    /// The record's current `ETag` (quoted, as the header shows it): read the record again,
    /// then retry with this in `If-Match`. Absent when the record does not exist (a `PUT` that
    /// would create it was sent with `If-Match`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    current_etag: Option<&'a str>,
}

/// A 412 problem: what an administrator must set up first.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct SetupRequired<'a> {
    #[serde(flatten)]
    problem: Problem<'a>,
    /// Markdown, from the provider's manifest.
    #[schema(required = true)]
    setup_instructions: Option<&'a str>,
    #[schema(required = true)]
    create_app_url: Option<&'a str>,
}

impl ApiError {
    fn new(status: StatusCode, kind: &'static str, title: &'static str, detail: impl Into<String>) -> Self {
        let errors = Vec::new();
        Self { status, kind, title, detail: detail.into(), errors, members: None, retry_after: None, operations: None }
    }

    /// The 400 of an atomic bulk request whose operations `failed` (index, error).
    fn bulk_failed(failed: Vec<(usize, AppError)>) -> Self {
        let detail = format!("{} operations failed, so none was applied", failed.len());
        let operations: Vec<_> = failed.into_iter().map(|(index, error)| (index, Self::from(error))).collect();
        let error = Self::new(StatusCode::BAD_REQUEST, "validation", "Bulk operations failed", detail);
        Self { operations: Some(operations.into_boxed_slice()), ..error }
    }

    /// The problem details this error answers (without a bulk error's operations).
    pub(crate) fn problem(&self) -> Problem<'_> {
        Problem {
            kind: format!("/problems/{}", self.kind),
            title: self.title,
            status: self.status.as_u16(),
            detail: &self.detail,
            errors: &self.errors,
            request_id: None,
        }
    }

    pub fn validation(errors: ValidationErrors) -> Self {
        let detail = match errors.0.as_slice() {
            [only] => format!("{}: {}", only.field, only.message),
            many => format!("{} fields are invalid", many.len()),
        };
        Self { errors: errors.0, ..Self::new(StatusCode::BAD_REQUEST, "validation", "Invalid request", detail) }
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The human-readable explanation, with no secret in it.
    pub fn detail(&self) -> String {
        self.detail.clone()
    }

    /// The invalid fields of a validation error.
    pub fn field_errors(&self) -> &[FieldError] {
        &self.errors
    }

    pub fn invalid_field(field: &str, message: impl Into<String>) -> Self {
        Self::validation(ValidationErrors::field(field, message))
    }

    /// The OAuth callback's refusal of a state (unknown, expired, used, someone else's).
    fn invalid_oauth_state(detail: String) -> Self {
        let errors = vec![FieldError::new("state", detail.clone())];
        Self { errors, ..Self::new(StatusCode::BAD_REQUEST, "validation", "Invalid OAuth state", detail) }
    }

    pub fn malformed_json(detail: String) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "validation", "Malformed JSON", detail)
    }

    pub fn bad_query(detail: &str) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "validation", "Invalid query", detail.to_owned())
    }

    pub fn not_found(what: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not-found", "Not found", format!("no such {what}"))
    }

    pub fn method_not_allowed() -> Self {
        Self::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "method-not-allowed",
            "Method not allowed",
            "this path does not take that method",
        )
    }

    pub fn forbidden(detail: &str) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", "Forbidden", detail.to_owned())
    }

    pub fn unauthenticated(detail: &str) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthenticated", "Authentication required", detail.to_owned())
    }

    pub fn payload_too_large(limit: usize) -> Self {
        Self::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload-too-large",
            "Payload too large",
            format!("the body may be at most {limit} bytes"),
        )
    }

    pub fn unsupported_media_type() -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "Unsupported media type",
            "send the body as application/json",
        )
    }

    fn unavailable() -> Self {
        let error = Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "Service unavailable",
            "a store (the database, or Redis for chat) is unavailable; retry shortly",
        );
        Self { retry_after: Some(RETRY_AFTER_SECONDS), ..error }
    }

    /// 503 with `Retry-After`: capacity the request needs (the browsers that print) stayed busy.
    fn busy(detail: String, retry_after: std::time::Duration) -> Self {
        let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
        let seconds = NonZeroU32::new(u32::try_from(seconds).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN);
        let error = Self::new(StatusCode::SERVICE_UNAVAILABLE, "busy", "Busy", detail);
        Self { retry_after: Some(seconds), ..error }
    }

    /// The caller used up its request rate; `Retry-After` says when a request passes again.
    pub fn rate_limited(retry_after: std::time::Duration) -> Self {
        let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
        let seconds = NonZeroU32::new(u32::try_from(seconds).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN);
        let detail = format!("too many requests; retry after {seconds} s");
        let error = Self::new(StatusCode::TOO_MANY_REQUESTS, "rate-limited", "Too many requests", detail);
        Self { retry_after: Some(seconds), ..error }
    }

    pub fn uri_too_long(limit: usize) -> Self {
        let detail = format!("the path and query may be at most {limit} bytes");
        Self::new(StatusCode::URI_TOO_LONG, "uri-too-long", "URI too long", detail)
    }

    pub fn headers_too_large(limit: usize) -> Self {
        let detail = format!("the request headers may be at most {limit} bytes together");
        Self::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers-too-large",
            "Request header fields too large",
            detail,
        )
    }

    /// 422: the `Idempotency-Key` was used for another request (see `middleware::idempotency`).
    pub fn idempotency_key_reused() -> Self {
        Self::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "idempotency-key-reused",
            "Idempotency key reused",
            "this Idempotency-Key was used for another request (another body, path or caller); send a new key \
             for a new request",
        )
    }

    /// 409 with `Retry-After`: the request with this `Idempotency-Key` is still running.
    pub fn idempotency_in_flight(retry_after: std::time::Duration) -> Self {
        let seconds = retry_after.as_secs() + u64::from(retry_after.subsec_nanos() > 0);
        let seconds = NonZeroU32::new(u32::try_from(seconds).unwrap_or(u32::MAX)).unwrap_or(NonZeroU32::MIN);
        let detail = format!("the request with this Idempotency-Key is still being processed; retry after {seconds} s");
        let error = Self::new(StatusCode::CONFLICT, "idempotency-in-flight", "Request in progress", detail);
        Self { retry_after: Some(seconds), ..error }
    }

    /// 409: the request with this `Idempotency-Key` was applied, but its answer is not kept;
    /// `detail` names the record it changed.
    pub fn idempotency_response_not_kept(detail: String) -> Self {
        Self::new(StatusCode::CONFLICT, "idempotency-response-not-kept", "Response not kept", detail)
    }

    fn internal() -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", "Internal error", "an unexpected error occurred")
    }
}

impl From<AppError> for ApiError {
    fn from(error: AppError) -> Self {
        match error {
            AppError::Validation(errors) => Self::validation(errors),
            AppError::Unauthenticated(why) => Self::unauthenticated(why),
            AppError::Forbidden(why) => Self::forbidden(why),
            AppError::Denied(why) => Self::forbidden(&why),
            AppError::NotFound(what) => Self::not_found(what),
            AppError::NotEnabled(what) => Self::new(StatusCode::NOT_FOUND, "not-found", "Not found", what),
            AppError::Gone(what) => Self::new(StatusCode::GONE, "gone", "Gone", what),
            AppError::Conflict(what) => Self::new(StatusCode::CONFLICT, "conflict", "Conflict", what),
            AppError::TooLarge(what) => {
                Self::new(StatusCode::PAYLOAD_TOO_LARGE, "payload-too-large", "Payload too large", what)
            }
            AppError::SetupRequired { detail, setup_instructions, create_app_url } => {
                let setup = Setup { instructions: setup_instructions, create_app_url };
                let error = Self::new(StatusCode::PRECONDITION_FAILED, "setup-required", "Setup required", detail);
                Self { members: Some(Box::new(Members::Setup(setup))), ..error }
            }
            AppError::PreconditionFailed(failed) => {
                let precondition =
                    Members::Precondition { current_etag: failed.current.as_ref().map(ToString::to_string) };
                let error = Self::new(
                    StatusCode::PRECONDITION_FAILED,
                    "precondition-failed",
                    "Precondition failed",
                    failed.to_string(),
                );
                Self { members: Some(Box::new(precondition)), ..error }
            }
            AppError::InvalidOAuthState(why) => Self::invalid_oauth_state(why.to_owned()),
            AppError::NotConfigured(detail) => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "not-configured", "Not configured", detail)
            }
            AppError::Upstream { timeout: true, detail } => {
                Self::new(StatusCode::GATEWAY_TIMEOUT, "upstream-timeout", "Upstream timeout", detail)
            }
            AppError::Upstream { timeout: false, detail } => {
                Self::new(StatusCode::BAD_GATEWAY, "upstream-error", "Upstream error", detail)
            }
            AppError::Unavailable(why) => {
                tracing::warn!(reason = %why, "store unavailable");
                crate::middleware::count_store_unavailable();
                Self::unavailable()
            }
            AppError::Busy { detail, retry_after } => Self::busy(detail, retry_after),
            AppError::BulkFailed(failed) => Self::bulk_failed(failed),
            AppError::Internal(why) => {
                tracing::error!(reason = %why, "internal error");
                Self::internal()
            }
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.title, self.detail)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let problem = self.problem();
        let mut response = HttpResponse::build(self.status);
        response.insert_header((header::CONTENT_TYPE, HeaderValue::from_static("application/problem+json")));
        // Retrying helps when the database is away, not when something is not configured.
        if let Some(seconds) = self.retry_after {
            response.insert_header((header::RETRY_AFTER, HeaderValue::from(seconds.get())));
        }
        let body = match (self.members.as_deref(), self.operations.as_deref()) {
            (_, Some(failed)) => serde_json::to_vec(&BulkFailed {
                problem,
                operations: failed
                    .iter()
                    .map(|(index, error)| OperationProblem { index: *index, problem: error.problem() })
                    .collect(),
            }),
            (Some(Members::Setup(setup)), None) => serde_json::to_vec(&SetupRequired {
                problem,
                setup_instructions: setup.instructions.as_deref(),
                create_app_url: setup.create_app_url.as_deref(),
            }),
            (Some(Members::Precondition { current_etag }), None) => {
                if let Some(Ok(value)) = current_etag.as_deref().map(HeaderValue::from_str) {
                    response.insert_header((header::ETAG, value));
                }
                serde_json::to_vec(&PreconditionFailed { problem, current_etag: current_etag.as_deref() })
            }
            (None, None) => serde_json::to_vec(&problem),
        };
        response.body(body.unwrap_or_default())
    }
}

impl actix_web::Responder for ApiError {
    type Body = actix_web::body::BoxBody;
    fn respond_to(self, _: &actix_web::HttpRequest) -> HttpResponse {
        self.error_response()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, reason = "a test fails loudly")]

    use futures_util::FutureExt as _;

    use super::*;

    fn body(error: &ApiError) -> serde_json::Value {
        let bytes = actix_web::body::to_bytes(error.error_response().into_body()).now_or_never().unwrap().unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// A 412 carries both setup members, `null` when the manifest has none; other problems neither.
    #[test]
    fn a_setup_problem_adds_its_members() {
        let setup = ApiError::from(AppError::SetupRequired {
            detail: "no OAuth app".into(),
            setup_instructions: Some("Create an app.".into()),
            create_app_url: None,
        });
        assert_eq!(
            body(&setup),
            serde_json::json!({
                "type": "/problems/setup-required", "title": "Setup required", "status": 412,
                "detail": "no OAuth app", "setupInstructions": "Create an app.", "createAppUrl": null,
            })
        );
        let plain = body(&ApiError::not_found("risk"));
        assert_eq!(plain["type"], "/problems/not-found");
        assert!(plain.get("setupInstructions").is_none() && plain.get("errors").is_none(), "{plain}");
    }
}
